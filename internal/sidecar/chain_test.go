package sidecar

import (
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/shim"
)

// addStage adds n to every value; it keeps per-client state and paces as told.
type addStage struct {
	n       uint64
	forgot  []int
	pace    time.Duration
	inexact bool
}

func (a *addStage) Name() string { return "add" }
func (a *addStage) Correct(_ int64, _ []Event, vs []shim.Values) {
	for i := range vs {
		for m := range vs[i].Members {
			vs[i].Members[m].Value = vs[i].Members[m].Value*10 + a.n
		}
	}
}
func (a *addStage) Forget(c int)           { a.forgot = append(a.forgot, c) }
func (a *addStage) Pace(int) time.Duration { return a.pace }
func (a *addStage) KernelExact() bool      { return !a.inexact }

// TestChain: stages run in order on what the previous left; Forget reaches every
// Forgetter, KernelExact needs every stage, Pace is the shortest asked for.
func TestChain(t *testing.T) {
	a, b := &addStage{n: 1, pace: 4 * time.Millisecond}, &addStage{n: 2, inexact: true}
	ch := Chain{a, Identity{}, b}
	vs := []shim.Values{{Members: []shim.MirrorValue{{Value: 3}}}}
	ch.Correct(0, []Event{{}}, vs)
	if got := vs[0].Members[0].Value; got != (3*10+1)*10+2 {
		t.Errorf("chained value %d, want %d (a, then b)", got, (3*10+1)*10+2)
	}
	if ch.Name() != "add+identity+add" {
		t.Errorf("name %q", ch.Name())
	}
	ch.Forget(7)
	if len(a.forgot) != 1 || len(b.forgot) != 1 || a.forgot[0] != 7 {
		t.Errorf("forgot %v and %v, want client 7 in both", a.forgot, b.forgot)
	}
	if ch.KernelExact() {
		t.Errorf("KernelExact with an inexact stage in the chain")
	}
	if !(Chain{a, Identity{}}).KernelExact() {
		t.Errorf("a chain of exact stages is not KernelExact")
	}
	b.pace = time.Millisecond
	if p := ch.Pace(1); p != time.Millisecond {
		t.Errorf("pace %v, want the shortest, 1ms", p)
	}
	if p := (Chain{Identity{}}).Pace(1); p != 0 {
		t.Errorf("pace %v of a chain that asks nothing, want 0", p)
	}
}
