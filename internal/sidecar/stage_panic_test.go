package sidecar

import (
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// panickyStage doubles every value (so its work is visible) and panics on its third
// call, halfway through rewriting.
type panickyStage struct {
	mu    sync.Mutex
	calls int
}

func (*panickyStage) Name() string { return "panicky" }

func (p *panickyStage) Correct(_ int64, _ []Event, values []shim.Values) {
	p.mu.Lock()
	p.calls++
	n := p.calls
	p.mu.Unlock()
	for i := range values {
		for j := range values[i].Members {
			values[i].Members[j].Value = 2*values[i].Members[j].Value + 1000
		}
		if n == 3 {
			panic("a bug in the stage")
		}
	}
}

// TestServerSurvivesStagePanic: a stage that panics does not take the sidecar down;
// from then on the mirrors carry the kernel's values (not the half-rewritten ones), the
// stats say so, the log has the panic once, and the connection still answers.
func TestServerSurvivesStagePanic(t *testing.T) {
	var logMu sync.Mutex
	var logged []string
	st := &panickyStage{}
	srv, path := startServer(t, Config{Period: time.Millisecond, Stage: st, Logf: func(f string, a ...any) {
		logMu.Lock()
		logged = append(logged, f)
		logMu.Unlock()
	}})
	c := helloClient(t, path)
	const format = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
	fd, m := registerPageFaults(t, c, 1, format)
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		t.Fatal(err)
	}
	touchPages(100)
	unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	// Enough rounds for the third call to have panicked.
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		st.mu.Lock()
		n := st.calls
		st.mu.Unlock()
		if n >= 3 {
			break
		}
	}
	if rep, _ := c.call(shim.MsgRefresh, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != 0 {
		t.Fatalf("refresh after the panic: %+v", rep)
	}
	_, v, _ := m.Snapshot()
	k := readKernel(t, fd, format)
	if len(v.Members) != 1 || v.Members[0].Value != k.Members[0].Value {
		t.Errorf("after the stage panicked the mirror has %+v, the kernel %+v; want the kernel's value", v, k)
	}
	st.mu.Lock()
	calls := st.calls
	st.mu.Unlock()
	if calls != 3 {
		t.Errorf("the stage was called %d times; want 3 (off after its panic)", calls)
	}
	if !srv.Stats().StagePanicked {
		t.Error("stats do not say the stage panicked")
	}
	logMu.Lock()
	defer logMu.Unlock()
	panics := 0
	for _, l := range logged {
		if strings.Contains(l, "panicked") {
			panics++
		}
	}
	if panics != 1 {
		t.Errorf("%d log lines about the panic; want 1: %q", panics, logged)
	}
}

// panickyPacer corrects nothing and panics when asked for its pace.
type panickyPacer struct{}

func (panickyPacer) Name() string                          { return "panicky-pacer" }
func (panickyPacer) Correct(int64, []Event, []shim.Values) {}
func (panickyPacer) Pace(int) time.Duration                { panic("a bug in Pace") }

// TestServerSurvivesPacerPanic: a panic in an optional interface (here Pacer, called by
// the publisher after each client's round) switches the stage off like one in Correct.
func TestServerSurvivesPacerPanic(t *testing.T) {
	srv, path := startServer(t, Config{Period: time.Millisecond, Stage: panickyPacer{}})
	c := helloClient(t, path)
	registerPageFaults(t, c, 1, perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning)
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && !srv.Stats().StagePanicked; time.Sleep(time.Millisecond) {
	}
	if !srv.Stats().StagePanicked {
		t.Fatal("the pacer's panic was not recorded")
	}
	if rep, _ := c.call(shim.MsgRefresh, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != 0 {
		t.Errorf("refresh after the panic: %+v", rep)
	}
}
