package model

import (
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference/relation"
)

// realTraces are programs recorded by testdata/gen.sh.
var realTraces = []string{"tar-gzip", "find-grep", "go-vet", "sqlite"}

// realFixed are the events that sit on fixed counters in the replays, the way cycles
// and instructions do on a real CPU: the busiest, always-on events.
var realFixed = []string{"task-clock", "raw_syscalls:sys_enter"}

const (
	realCounters = 4
	realWindow   = 10 // reporting interval: 10 slices of 10 ms, as perf stat -I 100
)

func TestRealTraces(t *testing.T) {
	for _, name := range realTraces {
		t.Run(name, func(t *testing.T) {
			tr := readTrace(t, name)
			var fixed []int
			for _, f := range realFixed {
				fixed = append(fixed, slices.Index(tr.events, f))
			}
			rels := relation.Bind(relation.Builtins(), tr.events)
			truth := truthOf(tr)
			rr := simulate(tr, roundRobin(len(tr.events), realCounters, fixed))
			linux := run(t, &linuxEst{n: len(tr.events)}, rr, truth, realWindow)
			linear := run(t, &linearEst{n: len(tr.events)}, rr, truth, realWindow)
			md, err := New(tr.events, rels, Options{})
			if err != nil {
				t.Fatal(err)
			}
			bp := run(t, md, rr, truth, realWindow)
			t.Logf("%s: %d slices, %d events, %d relations", name, len(tr.counts), len(tr.events), len(rels))
			t.Log(fmtScore("linux", linux, linux))
			t.Log(fmtScore("linear", linux, linear))
			t.Log(fmtScore("bayesperf-rr", linux, bp))
		})
	}
}
