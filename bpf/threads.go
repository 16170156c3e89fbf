package bpf

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// addThread opens the events of thread tid, gives it a slot and publishes the slot in the
// threads map with flags (BPF_EXIST for a thread on_fork marked pending). Called with c.mu
// held, which it releases while it opens the events and while it waits for a slot (see
// unlocked).
func (c *Collector) addThread(tid int, flags uint64) error {
	if !c.opts.Threads && c.nfollowed >= 1 {
		return errNoSlot
	}
	c.alive++ // while it waits for a slot, as in addSlot
	idx, err := c.freeSlot()
	c.alive--
	if err != nil {
		return err
	}
	if err := c.addSlot(tid, -1, idx); err != nil {
		if idx < len(c.slots) && c.slots[idx] == nil {
			c.free = append(c.free, idx)
		}
		return err
	}
	if err := c.thrMap.Update(uint32(tid), uint32(idx), ebpf.MapUpdateFlags(flags)); err != nil {
		// The thread exited between on_fork and now: its events hold its final counts.
		c.exit(idx)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		return fmt.Errorf("track thread %d: %w", tid, err)
	}
	return nil
}

var errNoSlot = errors.New("no free slot: more live threads than Options.MaxThreads")

// freeSlot returns a slot for a new thread: a never used one, else one of a retired
// thread. An exited thread is retired once the kernel has detached its events, which
// follows its exit record by microseconds, so freeSlot waits a little for that.
func (c *Collector) freeSlot() (int, error) {
	if len(c.slots) < c.nslots {
		return len(c.slots), nil
	}
	deadline := time.Now().Add(10 * time.Millisecond)
	for {
		c.retireFinished()
		if n := len(c.free); n > 0 {
			idx := c.free[n-1]
			c.free = c.free[:n-1]
			return idx, nil
		}
		if len(c.exited) == 0 || time.Now().After(deadline) {
			return 0, errNoSlot
		}
		c.unlocked(func() { time.Sleep(100 * time.Microsecond) })
	}
}

// unlocked runs f without c.mu, which the caller holds, so that a sleep or system calls
// in f do not hold up Next, Peek, Wait and SetEnabled (a tool's read waits for Peek).
// Only the consumer goroutine, or start before it exists, follows threads, so no other
// follows one meanwhile; whoever re-takes c.mu finds the collector possibly changed
// (slots retired, events switched, the collector closed) and must not rely on what it
// saw before. Close releases the slots only after the consumer has returned.
func (c *Collector) unlocked(f func()) {
	c.mu.Unlock()
	defer c.mu.Lock()
	f()
}

// exit marks slot idx's thread as exited.
func (c *Collector) exit(idx int) {
	s := c.slots[idx]
	if !s.live {
		return
	}
	s.live = false
	c.alive--
	delete(c.byTid, s.tid)
	if s.tid >= 0 {
		c.exited = append(c.exited, idx)
	}
}

// retireFinished retires the exited threads whose events the kernel has detached: it
// reads their final values into c.retired, closes their events and frees their slots.
func (c *Collector) retireFinished() {
	// Closing fds must wait for a SetEnabled in progress; rather than block following new
	// threads behind it, retire later.
	if !c.fdMu.TryLock() {
		return
	}
	defer c.fdMu.Unlock()
	kept := c.exited[:0]
	for _, idx := range c.exited {
		s := c.slots[idx]
		if !c.finished(s.tid) || c.readSlot(s) != nil {
			kept = append(kept, idx)
			continue
		}
		for i, v := range s.last {
			c.retired[i].Value += v.Value
			c.retired[i].Enabled += v.Enabled
			c.retired[i].Running += v.Running
			c.array.Delete(uint32(idx*c.nr + i))
		}
		closeAll(s.fds)
		c.slots[idx] = nil
		c.free = append(c.free, idx)
	}
	c.exited = kept
}

// addSlot opens the events for (tid, cpu), stores them at slot idx of the event array and
// appends the slot. Called with c.mu held; the events are opened without it (unlocked).
// Slot idx must be free and stay so: taken from c.free, or the next never used one.
func (c *Collector) addSlot(tid, cpu, idx int) error {
	s := &slot{tid: tid, cpu: cpu, last: make([]perf.Count, c.nr), live: true}
	on := make([]bool, c.nr) // the state each event is opened in
	for i := range on {
		on[i] = c.opts.SwitchAtSnapshots || c.enabled[i]
	}
	onExec := c.onExec
	// Counted alive from now: whoever takes c.mu meanwhile (Next's sweep) must not take
	// the target for gone while its new thread is being followed.
	c.alive++
	var err error
	c.unlocked(func() { s.fds, err = c.openSlot(tid, cpu, idx, on, onExec) })
	if err != nil {
		c.alive--
		return err
	}
	// A SetEnabled that came meanwhile did not see this slot: apply its state here.
	for i, fd := range s.fds {
		want := c.opts.SwitchAtSnapshots || c.enabled[i]
		if want == on[i] || onExec {
			continue
		}
		req := uint(unix.PERF_EVENT_IOC_DISABLE)
		if want {
			req = unix.PERF_EVENT_IOC_ENABLE
		}
		if err := unix.IoctlSetInt(fd, req, 0); err != nil {
			closeAll(s.fds)
			c.alive--
			return fmt.Errorf("set event %d enabled=%v for tid %d: %w", i, want, tid, err)
		}
	}
	// s.last starts at zero, which is what the events held when opened: no read needed,
	// which keeps the time to follow a new thread short.
	for len(c.slots) < idx {
		c.slots = append(c.slots, nil) // CPUs missing from a sparse online list
	}
	if idx == len(c.slots) {
		c.slots = append(c.slots, s)
	} else {
		c.slots[idx] = s
	}
	if tid >= 0 {
		c.byTid[tid] = idx
		c.nfollowed++
		if len(c.recent) == recentTids {
			// Shift in place: a target forking all day must not grow the collector.
			copy(c.recent, c.recent[1:])
			c.recent = c.recent[:recentTids-1]
		}
		c.recent = append(c.recent, tid)
	}
	return nil
}

// openSlot opens the events for (tid, cpu), each enabled as on says (with onExec, at the
// target's next exec), and stores them at slot idx of the event array. It touches no
// state c.mu guards.
func (c *Collector) openSlot(tid, cpu, idx int, on []bool, onExec bool) ([]int, error) {
	var fds []int
	for i, a := range c.kevents {
		a.Size = perfabi.AttrSize
		a.Flags &^= perfabi.FlagInherit | perfabi.FlagDisabled
		switch {
		case !on[i]:
			a.Flags |= perfabi.FlagDisabled
		case onExec:
			a.Flags |= perfabi.FlagDisabled | perfabi.FlagEnableOnExec
		}
		a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
		fd, err := perfabi.Open(&a, tid, cpu, -1)
		if err != nil {
			closeAll(fds)
			if errors.Is(err, unix.ESRCH) {
				return nil, fmt.Errorf("open event %d for thread %d: %w", i, tid, err)
			}
			op := fmt.Sprintf("open event %d (type %d config %#x) for tid %d cpu %d", i, a.Type, a.Config, tid, cpu)
			// Only a refusal is about privilege; an event this machine lacks (ENOENT,
			// EOPNOTSUPP) would fail the read() collector just the same.
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				return nil, &UnavailableError{Op: op, Err: err}
			}
			return nil, fmt.Errorf("%s: %w", op, err)
		}
		fds = append(fds, fd)
		if err := c.array.Update(uint32(idx*c.nr+i), uint32(fd), ebpf.UpdateAny); err != nil {
			closeAll(fds)
			return nil, classify("store event in perf event array", err)
		}
	}
	return fds, nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// sweepEvery is how long Next waits for records before checking that the threads it
// believes alive still are; each check that finds no record since doubles the wait, up
// to sweepMax.
const (
	sweepEvery = 100 * time.Millisecond
	sweepMax   = 3200 * time.Millisecond
)

// sweep marks as exited the followed threads that are gone although no exit record said so
// (a thread that changed tid by exec-ing from a non-leader thread, say), so that Next
// cannot wait forever for an exit that will not be reported. Called with c.mu held.
func (c *Collector) sweep() {
	if c.systemWide() || c.closed {
		return
	}
	for idx, s := range c.slots {
		if s != nil && s.live && perf.TaskFinished(s.tid) {
			c.exit(idx)
		}
	}
	if c.alive == 0 {
		c.gone = true
	}
}

// cont continues held process tid and forgets it.
func (c *Collector) cont(tid int) {
	_ = unix.Kill(tid, unix.SIGCONT) // ESRCH: killed meanwhile
	_ = c.heldMap.Delete(uint32(tid))
}

// contAllHeld continues every process still held: those whose notice was not consumed.
// Called after the hold program is detached.
func (c *Collector) contAllHeld() {
	var tid, v uint32
	var tids []int
	it := c.heldMap.Iterate()
	for it.Next(&tid, &v) {
		tids = append(tids, int(tid))
	}
	for _, t := range tids {
		c.cont(t)
	}
}

// recentTids bounds the tids Threads returns: a collector following a process that
// forks without end keeps a fixed amount of state.
const recentTids = 4096

// Threads returns the tids followed so far, the last recentTids of them (nil for a
// system-wide collector).
func (c *Collector) Threads() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recent)
}
