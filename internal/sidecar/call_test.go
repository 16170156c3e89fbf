package sidecar

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// callLog records, in order, every call a stage gets: "round [1 2]", "read [1]",
// "unregistered 2", "forget 1"; Correct calls (without the call's kind) as "correct".
type callLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *callLog) add(format string, args ...any) {
	l.mu.Lock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

func (l *callLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// callStage logs what the server tells it.
type callStage struct{ log *callLog }

func handles(events []Event) []uint32 {
	hs := make([]uint32, len(events))
	for i, e := range events {
		hs[i] = e.Handle
	}
	return hs
}

func (callStage) Name() string { return "calls" }
func (s callStage) Correct(_ int64, events []Event, _ []shim.Values) {
	s.log.add("correct %v", handles(events))
}
func (s callStage) CorrectCall(_ int64, call Call, events []Event, _ []shim.Values) {
	s.log.add("%v %v", call, handles(events))
}
func (s callStage) Unregistered(e Event) { s.log.add("unregistered %d", e.Handle) }
func (s callStage) Forget(c int)         { s.log.add("forget %d", c) }

// TestChainCallsAndUnregistered: a Chain tells what each call is to the stages that
// ask (CorrectCall) and calls Correct on the others; Unregistered reaches every
// Unregisterer.
func TestChainCallsAndUnregistered(t *testing.T) {
	log := &callLog{}
	a := &addStage{n: 1}
	ch := Chain{callStage{log}, a, callStage{log}}
	vs := []shim.Values{{Members: []shim.MirrorValue{{Value: 3}}}}
	ch.CorrectCall(0, CallRead, []Event{{Handle: 4}}, vs)
	if got := vs[0].Members[0].Value; got != 31 {
		t.Errorf("value %d after the chain, want 31: the stage without CorrectCall did not run", got)
	}
	ch.Unregistered(Event{Handle: 4})
	want := []string{"read [4]", "read [4]", "unregistered 4", "unregistered 4"}
	if got := log.snapshot(); !slices.Equal(got, want) {
		t.Errorf("calls %q, want %q", got, want)
	}
}

// TestServerTellsCalls: a CallCorrector stage is told registrations, periodic rounds
// and reads apart, a round of a client left with one live event included (it passes
// as many events as a read); an unregistered event is reported to an Unregisterer and
// is in no call after that; a client gone is forgotten.
func TestServerTellsCalls(t *testing.T) {
	log := &callLog{}
	_, path := startServer(t, Config{Period: time.Millisecond, IdlePeriod: time.Millisecond, Stage: callStage{log}})
	c := helloClient(t, path)
	for h := range uint32(2) {
		registerPageFaults(t, c, h+1, perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning)
	}
	// waitFor waits until the log has line after index from; it returns its index.
	waitFor := func(line string, from int) int {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if i := slices.Index(log.snapshot()[from:], line); i >= 0 {
				return from + i
			}
		}
		t.Fatalf("no %q in %q", line, log.snapshot()[from:])
		return 0
	}
	reg := waitFor("register [2]", waitFor("register [1]", 0))
	// A read starts periodic rounds for Config.ActiveWindow.
	if rep, _ := c.call(shim.MsgRefresh, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != 0 {
		t.Fatalf("refresh %+v", rep)
	}
	read := waitFor("read [1]", reg)
	waitFor("round [1 2]", read)
	if rep, _ := c.call(shim.MsgUnregister, shim.Handle{Handle: 2}, -1); rep.(shim.Status).Status != 0 {
		t.Fatalf("unregister %+v", rep)
	}
	unreg := waitFor("unregistered 2", read)
	if rep, _ := c.call(shim.MsgRefresh, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != 0 {
		t.Fatalf("refresh %+v", rep)
	}
	waitFor("read [1]", unreg)
	waitFor("round [1]", unreg)
	c.conn.Close()
	gone := waitFor("forget 1", unreg)
	for _, l := range log.snapshot()[unreg+1 : gone] {
		if l != "round [1]" && l != "read [1]" {
			t.Errorf("after handle 2 was unregistered: %q, want only rounds and reads of handle 1", l)
		}
	}
	for _, l := range log.snapshot()[:unreg] {
		if strings.HasPrefix(l, "correct") {
			t.Errorf("%q: the server called Correct on a CallCorrector", l)
		}
	}
}
