package sidecar

import (
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// addStage appends the digit n to every value (v*10 + n), so the result shows the order
// the stages ran in; it records Forget calls and paces as told.
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

// pacedStage asks for rounds every pace and marks every mirror MirrorSync.
type pacedStage struct {
	Identity
	pace time.Duration
}

func (p pacedStage) Name() string                          { return "paced" }
func (p pacedStage) Pace(int) time.Duration                { return p.pace }
func (p pacedStage) Sync(Event) bool                       { return true }
func (p pacedStage) Correct(int64, []Event, []shim.Values) {}

// TestServerPaceAndSync: with no client reading and no sampling ring, there are no
// rounds at all, unless a Pacer stage asks for them; a Syncer stage's events are
// published with MirrorSync. The server asks a Pacer after a round of the client's
// events (a registration brings one), so the count starts 150 ms after it.
func TestServerPaceAndSync(t *testing.T) {
	rounds := func(st Stage) (uint64, shim.MirrorHdr) {
		srv, path := startServer(t, Config{Period: time.Millisecond, IdlePeriod: 100 * time.Millisecond, Stage: st})
		c := helloClient(t, path)
		_, m := registerPageFaults(t, c, 1, perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning)
		time.Sleep(150 * time.Millisecond) // one idle round sees the event
		before := srv.Stats().Publishes
		time.Sleep(250 * time.Millisecond)
		h, _, _ := m.Snapshot()
		return srv.Stats().Publishes - before, h
	}
	idle, h := rounds(Identity{})
	if idle != 0 || h.Flags&shim.MirrorSync != 0 {
		t.Errorf("identity stage, nobody reading: %d rounds in 250 ms (want none), flags %#x", idle, h.Flags)
	}
	paced, h := rounds(pacedStage{pace: 5 * time.Millisecond})
	if paced < 20 || h.Flags&shim.MirrorSync == 0 {
		t.Errorf("stage pacing at 5 ms: %d rounds in 250 ms, flags %#x (want MirrorSync)", paced, h.Flags)
	}
}
