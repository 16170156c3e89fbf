package bpf

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
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
	cmd, in, out := startHelper(t, "waves")
	time.Sleep(100 * time.Millisecond) // let the runtime start its threads
	initial, err := listThreads(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
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
