package vpmu

import (
	"errors"
	"io"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// fakeSnaps is a snapshotting collector driven by the test: set changes what the copies
// count now (Peek), tick ends a slice there (Wait returns, Next reports it), exit makes
// Next return io.EOF after the last slice. It does not gate: the test sets each copy.
type fakeSnaps struct {
	mu      sync.Mutex
	now     []perf.Count
	ticks   [][]perf.Count // slices ended and not yet returned by Next
	gone    bool
	closed  bool
	wake    chan struct{}
	enabled map[int]bool
}

func newFakeSnaps(n int) *fakeSnaps {
	return &fakeSnaps{now: make([]perf.Count, n), wake: make(chan struct{}, 1), enabled: map[int]bool{}}
}

func (f *fakeSnaps) notify() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fakeSnaps) set(i int, c perf.Count) { f.mu.Lock(); f.now[i] = c; f.mu.Unlock() }

func (f *fakeSnaps) tick() {
	f.mu.Lock()
	f.ticks = append(f.ticks, slices.Clone(f.now))
	f.mu.Unlock()
	f.notify()
}

func (f *fakeSnaps) Name() string { return "fake" }

func (f *fakeSnaps) Wait() error {
	for {
		f.mu.Lock()
		closed, ready := f.closed, len(f.ticks) > 0 || f.gone
		f.mu.Unlock()
		if closed {
			return errors.New("closed")
		}
		if ready {
			return nil
		}
		<-f.wake
	}
}

func (f *fakeSnaps) Next() (perf.Snapshot, error) {
	if err := f.Wait(); err != nil {
		return perf.Snapshot{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ticks) == 0 {
		return perf.Snapshot{}, io.EOF
	}
	s := perf.Snapshot{Counts: f.ticks[0]}
	f.ticks = f.ticks[1:]
	return s, nil
}

func (f *fakeSnaps) Peek(events []int, out []perf.Count) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("closed")
	}
	for n, i := range events {
		out[n] = f.now[i]
	}
	return nil
}

func (f *fakeSnaps) SetEnabled(i int, on bool) error {
	f.mu.Lock()
	f.enabled[i] = on
	f.mu.Unlock()
	return nil
}

func (f *fakeSnaps) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.notify()
	return nil
}

// fakeSnapsConfig is a Config of page-faults and context-switches of this process on
// one counter, with the truth, whose snapshotting collector is the returned fakeSnaps.
func fakeSnapsConfig(t *testing.T) (*fakeSnaps, Config) {
	t.Helper()
	evs, ks := kernelEvents(t, "page-faults,context-switches", 1, nil)
	f := newFakeSnaps(1 + 2*len(evs)) // the clock, the truth copies, the view's copies
	return f, Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: true, Pid: os.Getpid(),
		Snapshots: func(perf.SnapshotRequest) (perf.Collector, error) { return f, nil }}
}

// openRunner opens the PMU of cfg, closed when the test ends, and a Runner stepping it
// that keeps its steps.
func openRunner(t *testing.T, cfg Config) (*PMU, *Runner) {
	t.Helper()
	p, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	r, err := NewRunner(p, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	return p, r
}

// within fails the test if fn has not returned after a second.
func within(t *testing.T, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { fn(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("%s: still blocked after 1s", what)
	}
}

// TestRunnerSnapshots: with a snapshotting collector, the Runner steps at its slices
// only, and while it waits for one (a target that sleeps gives none), reads, splits and
// Stop are served at once from Peek; Stop does not wait for the stepping goroutine,
// which returns once the PMU is closed.
func TestRunnerSnapshots(t *testing.T) {
	evs, ks := kernelEvents(t, "page-faults,context-switches", 1, nil)
	f := newFakeSnaps(1 + 2*len(evs)) // the clock, the truth copies, the view's copies
	p, err := Open(Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: true, Pid: os.Getpid(),
		Snapshots: func(req perf.SnapshotRequest) (perf.Collector, error) {
			if len(req.Attrs) != len(f.now) {
				t.Fatalf("%d copies asked for, want %d", len(req.Attrs), len(f.now))
			}
			return f, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRunner(p, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	on := 3 + int(ks.Counted(0)[0]) // the view copy of the event the first slice counts
	// First slice: 1000ns of the target, the scheduled event counts 10.
	f.set(0, perf.Count{Enabled: 1000})
	f.set(1, perf.Count{Value: 10})
	f.set(2, perf.Count{Value: 20})
	f.set(on, perf.Count{Value: uint64(10 * (on - 2))}) // as its truth copy
	var c perf.Count
	within(t, "Virtual while the runner waits for a slice", func() { c, err = r.Virtual(0, on-3) })
	if err != nil || c.Value != f.now[on].Value || c.Enabled != 1000 || c.Running != 1000 {
		t.Fatalf("Virtual before the first slice: %+v, %v; want the peeked value, enabled and running 1000", c, err)
	}
	f.tick()
	var steps []Step
	for deadline := time.Now().Add(time.Second); len(steps) == 0 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		steps = r.Drain()
	}
	if len(steps) != 1 || steps[0].Views[0].Duration != 1000 || steps[0].Truth[0] != 10 || steps[0].Truth[1] != 20 {
		t.Fatalf("after one slice: %+v, want one step of 1000ns with the truth 10, 20", steps)
	}
	// The target sleeps: no slice ends, and Stop must not wait for one.
	f.set(0, perf.Count{Enabled: 1500})
	f.set(1, perf.Count{Value: 15})
	within(t, "SplitNow while the runner waits", func() { err = r.SplitNow() })
	if err != nil {
		t.Fatal(err)
	}
	within(t, "Stop while the runner waits", func() { steps, err = r.Stop() })
	if err != nil {
		t.Fatal(err)
	}
	var en uint64
	var tr uint64
	for _, st := range steps {
		en += st.Views[0].Readings[0].Enabled
		tr += st.Truth[0]
	}
	if en != 500 || tr != 5 {
		t.Errorf("split and flush after the first slice: enabled %d, truth %d; want 500, 5", en, tr)
	}
	select {
	case <-r.done:
		t.Fatal("the stepping goroutine returned before the PMU was closed; want it waiting for a slice")
	default:
	}
	p.Close()
	select {
	case <-r.done:
	case <-time.After(time.Second):
		t.Fatal("the stepping goroutine still runs after the PMU was closed")
	}
}

// TestRunnerSplitBeforeStep: a tool's read can split the slice after the collector's
// slice ended and before the Runner stepped (it waits for the slice without its lock,
// and the read took the lock first). The split then reported everything up to the
// snapshot, and the step finds nothing new: it must be idle, not a slice of no time.
func TestRunnerSplitBeforeStep(t *testing.T) {
	f, cfg := fakeSnapsConfig(t)
	p, r := openRunner(t, cfg)
	f.set(0, perf.Count{Enabled: 1000})
	f.set(1, perf.Count{Value: 10})
	r.mu.Lock() // a read in progress
	f.tick()
	time.Sleep(20 * time.Millisecond) // the runner has its slice and waits for the lock
	st, err := p.Split()
	r.mu.Unlock()
	if err != nil || st.Idle || st.Views[0].Duration != 1000 {
		t.Fatalf("split: %+v, %v; want a slice of 1000ns", st, err)
	}
	f.set(0, perf.Count{Enabled: 1600})
	f.set(1, perf.Count{Value: 16})
	f.tick()
	var steps []Step
	for deadline := time.Now().Add(time.Second); len(steps) < 1 && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		steps = append(steps, r.Drain()...)
	}
	time.Sleep(20 * time.Millisecond)
	steps = append(steps, r.Drain()...)
	var durs []float64
	for _, s := range steps {
		durs = append(durs, s.Views[0].Duration)
	}
	if len(steps) != 1 || durs[0] != 600 || steps[0].Truth[0] != 6 {
		t.Errorf("steps after the split: durations %v, want one slice of 600ns (truth 6)", durs)
	}
	if _, err := r.Stop(); err != nil {
		t.Fatal(err)
	}
}

// TestRunnerNotifyBacklog: the backlog notification comes when the kept steps reach n
// (not before), once per time they do, and its callback may drain the runner.
func TestRunnerNotifyBacklog(t *testing.T) {
	f, cfg := fakeSnapsConfig(t)
	_, r := openRunner(t, cfg)
	drained := make(chan int, 4)
	r.NotifyBacklog(3, func() { drained <- len(r.Drain()) })
	en := uint64(0)
	slice := func() {
		en += 1000
		f.set(0, perf.Count{Enabled: en})
		f.tick()
		// The runner has stepped once the fake's slice is consumed.
		for deadline := time.Now().Add(time.Second); ; time.Sleep(time.Millisecond) {
			f.mu.Lock()
			n := len(f.ticks)
			f.mu.Unlock()
			if n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the runner never stepped")
			}
		}
	}
	for round := range 2 {
		slice()
		slice()
		select {
		case n := <-drained:
			t.Fatalf("round %d: notified with %d steps kept, before the third", round, n)
		default:
		}
		slice()
		select {
		case n := <-drained:
			if n != 3 {
				t.Errorf("round %d: the callback drained %d steps, want 3", round, n)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("round %d: no notification after 3 steps", round)
		}
	}
	if _, err := r.Stop(); err != nil {
		t.Fatal(err)
	}
}
