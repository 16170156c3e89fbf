package bpf

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// loaderRequest is what a virtual PMU of the first n of these events asks Snapshots for:
// its clock (a dummy event), then the events.
func loaderRequest(t *testing.T, pid, n int, inherit bool) perf.SnapshotRequest {
	t.Helper()
	attrs := []perf.Attr{
		{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWDummy},
		{Type: perf.TypeTracepoint, Size: perfabi.AttrSize, Config: tracepointAttr(t, "syscalls", "sys_enter_getppid").Config},
		{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWPageFaults},
		{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWContextSwitches},
		{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWTaskClock},
		{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWCPUMigrations},
	}
	return perf.SnapshotRequest{Attrs: attrs[:n+1], Pid: pid, Slice: 4 * time.Millisecond, Inherit: inherit}
}

// TestLoaderLoadsAhead: the design property behind a tool's start-up with the bpf
// collector (issue 15). A virtual PMU builds a collector at each of the tool's
// registrations; the Loader has the programs and maps of the first build loaded before
// it is asked (NewLoader starts loading them, as the sidecar starts), and each build
// has the next one's (an event more) loaded behind it, so no build loads on its caller's
// path: each takes a set ready or, at worst, waits for the rest of a load started ahead
// of it. A build that nothing predicted loads its own. The collectors count as
// NewCollector's do (the helper's getppid calls, exactly), and Close frees every set no
// build took (TestMain checks that no fd is left).
func TestLoaderLoadsAhead(t *testing.T) {
	l := NewLoader()
	defer l.Close()
	l.mu.Lock()
	first := l.find(snapshotsKey(1, true))
	l.mu.Unlock()
	if first == nil {
		t.Fatal("NewLoader does not prepare a PMU of one inherited event (perf stat's first registration)")
	}
	<-first.done // the sidecar starts it before a tool can register anything
	cmd, in, _ := startHelper(t, "work")
	pid := cmd.Process.Pid
	c1, err := l.Snapshots(loaderRequest(t, pid, 1, true))
	if err != nil {
		t.Fatalf("first build (requires root): %v", err)
	}
	c1.Close()
	if st := l.Stats(); st.Ready != 1 || st.Loaded != 0 {
		t.Fatalf("first build: %+v, want it served by the set loaded ahead", st)
	}
	c2, err := l.Snapshots(loaderRequest(t, pid, 2, true))
	if err != nil {
		t.Fatalf("second build: %v", err)
	}
	defer c2.Close()
	if st := l.Stats(); st.Ready+st.Waited != 2 || st.Loaded != 0 {
		t.Fatalf("second build: %+v, want it served by the set the first build had loaded ahead", st)
	}
	// Nothing predicts a PMU of five events on one task first.
	c3, err := l.Snapshots(loaderRequest(t, pid, 5, false))
	if err != nil {
		t.Fatalf("unpredicted build: %v", err)
	}
	c3.Close()
	if st := l.Stats(); st.Loaded != 1 {
		t.Fatalf("unpredicted build: %+v, want it to load its own", st)
	}
	in.Write([]byte{'g'})
	var last perf.Snapshot
	for {
		s, err := c2.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		last = s
	}
	if got := last.Counts[1].Value; got != workGetppid {
		t.Errorf("getppid through a preloaded collector: %d, want %d", got, workGetppid)
	}
	if last.Counts[2].Value < workPages {
		t.Errorf("page faults through a preloaded collector: %d, want at least %d", last.Counts[2].Value, workPages)
	}
}

// TestLoaderCloseWhileLoading: Close stops the loading, waits for a load under way and
// frees every set, including one queued that a build has claimed: that build then loads
// its own and succeeds.
func TestLoaderCloseWhileLoading(t *testing.T) {
	l := NewLoader()
	cmd, _, _ := startHelper(t, "sleep")
	req := loaderRequest(t, cmd.Process.Pid, 3, false)
	done := make(chan error, 1)
	go func() {
		c, err := l.Snapshots(req)
		if err == nil {
			c.Close()
		}
		done <- err
	}()
	l.Close()
	if err := <-done; err != nil {
		t.Fatalf("a build racing Close: %v", err)
	}
	l.mu.Lock()
	sets, queue, running := len(l.sets), len(l.queue), l.running
	l.mu.Unlock()
	if sets != 0 || queue != 0 {
		t.Errorf("after Close: %d sets kept, %d queued", sets, queue)
	}
	// The loading goroutines exit; a build after Close prepares nothing.
	deadline := time.Now().Add(5 * time.Second)
	for running > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		l.mu.Lock()
		running = l.running
		l.mu.Unlock()
	}
	if running != 0 {
		t.Errorf("%d loading goroutines still running 5s after Close", running)
	}
	st := l.Stats()
	if st.Prepared != st.Ready+st.Waited+st.Discarded {
		t.Errorf("stats %+v: every set loaded ahead is either taken or discarded", st)
	}
}
