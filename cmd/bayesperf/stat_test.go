package main

import (
	"flag"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

func TestSplitShortValues(t *testing.T) {
	fs := flag.NewFlagSet("stat", flag.ContinueOnError)
	var f statFlags
	f.register(fs)
	fs.Int("p", 0, "")
	for _, tc := range []struct{ in, want []string }{
		{[]string{"-x,", "-I100", "-etask-clock", "--", "ls", "-x,"}, []string{"-x", ",", "-I", "100", "-e", "task-clock", "--", "ls", "-x,"}},
		{[]string{"-p1234", "--json"}, []string{"-p", "1234", "--json"}},
		// A flag's value that looks like a short flag is left alone, and so is the
		// command after the flags (no "--").
		{[]string{"-x", "-I", "ls", "-x,"}, []string{"-x", "-I", "ls", "-x,"}},
		{[]string{"--summary", "-e=page-faults", "true"}, []string{"--summary", "-e=page-faults", "true"}},
	} {
		if got := splitShortValues(fs, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("splitShortValues(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// observe sums the threads' steps as perf sums a process's threads, skips idle steps and
// empty final slices, and the lines report the summed enabled and running times.
func TestObserveMergesThreads(t *testing.T) {
	f := statFlags{events: listFlag{"page-faults,minor-faults"}, vcounters: 1, sched: "kernel"}
	s, err := newStatSession(&f, func(string) {})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(c0, c1, en, r0, r1 uint64) vpmu.Step {
		return vpmu.Step{Views: []inference.Slice{{Duration: float64(en), Readings: []inference.Reading{
			{Event: 0, Count: c0, Enabled: en, Running: r0}, {Event: 1, Count: c1, Enabled: en, Running: r1}}}}}
	}
	tr, err := s.newTrack(-1, nil)
	if err != nil {
		t.Fatal(err)
	}
	unit := s.unit
	steps := [][]vpmu.Step{
		{mk(10, 0, uint64(unit), uint64(unit), 0), mk(0, 4, uint64(unit)/2, 0, uint64(unit)/2)},
		{{Idle: true}, {Idle: true}},
		{mk(0, 0, 0, 0, 0), {Idle: true}}, // a Flush after the exit: nothing ran
		{mk(0, 6, uint64(unit), 0, uint64(unit)), {Idle: true}},
	}
	for _, st := range steps {
		if err := s.observe(tr, st); err != nil {
			t.Fatal(err)
		}
	}
	if len(tr.slices) != 2 {
		t.Fatalf("%d slices, want 2 (idle and empty steps add none)", len(tr.slices))
	}
	if d := tr.slices[0].Duration; d != 1.5 {
		t.Errorf("first slice lasts %v multiplexing intervals, want 1.5 (two threads)", d)
	}
	cs := s.counters(tr, 0, 2)
	u := uint64(unit)
	if cs[0].Enabled != u+u/2+u || cs[0].Running != u {
		t.Errorf("page-faults enabled %d running %d, want %d and %d", cs[0].Enabled, cs[0].Running, u+u/2+u, u)
	}
	if cs[1].Running != u/2+u || !cs[1].Counted {
		t.Errorf("minor-faults running %d, want %d", cs[1].Running, u/2+u)
	}
	for _, c := range cs {
		if c.Lo > c.Value || c.Value > c.Hi {
			t.Errorf("%s: %v outside [%v, %v]", c.Event, c.Value, c.Lo, c.Hi)
		}
	}
	// No slices: every line is <not counted>.
	for _, c := range s.counters(tr, 2, 2) {
		if c.Counted || c.Status != "not-counted" {
			t.Errorf("empty span: %+v", c)
		}
	}
}
