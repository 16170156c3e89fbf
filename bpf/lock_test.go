package bpf

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// TestFollowingHoldsNoLock: following a new thread opens its events (a system call per
// event) and, when every slot is taken, waits up to 10ms for an exited thread's slot
// (freeSlot). Neither may hold the lock that Peek, a tool's read through a virtual PMU,
// takes. Here the exited threads never count as finished (c.finished), so once one wave
// of threads has used the slots, each thread of the later waves makes the consumer wait
// the full 10ms for a slot and is lost. c.finished, which freeSlot calls under the lock
// on every round of its wait, tells a goroutine that a wait has begun; the goroutine
// Peeks and says so. A Peek that returns before the same wait's next round proves the
// wait let it in: under the lock, a Peek could only return after the wait (the thread
// counted lost), so never. Scheduling decides how many waits see one, not whether.
func TestFollowingHoldsNoLock(t *testing.T) {
	cmd, in, out, initial := startWaves(t)
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Events: workEvents(t),
		Slice: 5 * time.Millisecond, MaxThreads: len(initial) + waveThreads})

	// A wait is known by c.lost while it lasts: the thread is counted lost at its end.
	var peekedIn atomic.Int64 // the wait during which the last Peek began, +1
	var inWait atomic.Int64   // likewise for the wait the consumer is in
	var seen atomic.Int64     // waits in which a Peek returned
	waiting := make(chan struct{}, 1)
	c.mu.Lock()
	c.finished = func(int) bool { // called under c.mu, by freeSlot only here
		w := int64(c.lost) + 1
		if peekedIn.Load() == w {
			seen.Add(1)
			peekedIn.Store(0)
		}
		inWait.Store(w)
		select {
		case waiting <- struct{}{}:
		default:
		}
		return false
	}
	c.mu.Unlock()
	stop := make(chan struct{})
	peeked := make(chan error, 1)
	go func() {
		out := make([]perf.Count, 1)
		for {
			select {
			case <-stop:
				peeked <- nil
				return
			case <-waiting:
			}
			w := inWait.Load()
			if err := c.Peek([]int{0}, out); err != nil {
				peeked <- err
				return
			}
			peekedIn.Store(w)
		}
	}()
	in.Write([]byte{'g'})
	const waves = 3 // the first takes the free slots; the others wait for slots
	for w := range waves {
		readIDs(t, out, waveThreads, fmt.Sprintf("wave %d: worker tid", w))
		time.Sleep(20 * time.Millisecond) // long enough to follow a wave, or to give up on it
		in.Write([]byte{'g'})
	}
	time.Sleep(50 * time.Millisecond) // the last wave's waits
	close(stop)
	if err := <-peeked; err != nil {
		t.Fatal(err)
	}
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d Peeks returned during a wait, over %d waits of 10ms for a slot; stats %+v", seen.Load(), st.LostThreads, st)
	if st.LostThreads < waveThreads {
		t.Fatalf("only %d threads waited for a slot: the test proves nothing", st.LostThreads)
	}
	if seen.Load() == 0 {
		t.Errorf("no Peek returned while the consumer waited for a slot (%d waits): Peek waits for the consumer following threads", st.LostThreads)
	}
}

// TestExitWaitHoldsNoLock: once the target has exited, the final snapshot waits for its
// threads to get past the point where the kernel detaches their events, which a target
// freeing a large address space reaches tens of milliseconds after its exit record (see
// awaitExit). That wait must hold no lock a reader needs: a virtual PMU steps as this
// test's stepper does (Wait without its lock, Next under it) and answers a tool's read
// with Peek under the same lock, so before, a read issued while Next waited in final
// (holding the collector's lock too) returned only when the wait did, up to a second.
// The slow exit is made here by c.finished, which says the thread is not finished until
// the test releases it. A Peek is a read(2) per thread, microseconds; the bound, 250ms,
// leaves room for goroutine wake-ups on a loaded 2-core VM (40-170ms were seen, see
// Stats.MaxSliceLag) and is a quarter of the wait it must not include (exitWait).
func TestExitWaitHoldsNoLock(t *testing.T) {
	cmd, in, _ := startHelper(t, "sleep")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Events: []perfabi.Attr{softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK)},
		Slice: 4 * time.Millisecond})
	release := make(chan struct{})
	c.finished = func(tid int) bool {
		select {
		case <-release:
			return perf.TaskFinished(tid)
		default:
			return false
		}
	}

	var mu sync.Mutex // the virtual PMU's lock
	type result struct {
		last perf.Snapshot
		held time.Duration // the longest Next, which the virtual PMU makes under mu
		err  error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		for {
			if r.err = c.Wait(); r.err != nil {
				done <- r
				return
			}
			mu.Lock()
			t0 := time.Now()
			s, err := c.Next()
			r.held = max(r.held, time.Since(t0))
			mu.Unlock()
			if err == io.EOF {
				done <- r
				return
			}
			if err != nil {
				r.err = err
				done <- r
				return
			}
			r.last = s
		}
	}()

	in.Write([]byte{'g'})
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		gone := c.gone
		c.mu.Unlock()
		if gone {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the collector did not see the target exit within 5s")
		}
	}
	time.Sleep(50 * time.Millisecond) // the stepper is now waiting for the exit to finish
	var peek [1]perf.Count
	t0 := time.Now()
	mu.Lock()
	perr := c.Peek([]int{0}, peek[:])
	mu.Unlock()
	took := time.Since(t0)
	close(release)
	var r result
	select {
	case r = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("no final snapshot 5s after the exit was released")
	}
	if perr != nil || r.err != nil {
		t.Fatalf("peek: %v; stepping: %v", perr, r.err)
	}
	const bound = 250 * time.Millisecond
	if took > bound {
		t.Errorf("a read during the target's exit took %v, want at most %v", took, bound)
	}
	if r.held > bound {
		t.Errorf("a Next after Wait took %v (under the virtual PMU's lock), want at most %v", r.held, bound)
	}
	if r.last.Counts == nil || r.last.Counts[0].Value < peek[0].Value || peek[0].Value == 0 {
		t.Errorf("final task-clock %+v, peek during the exit %+v: want a final snapshot at least the peek, which saw the helper run",
			r.last.Counts, peek[0])
	}
}
