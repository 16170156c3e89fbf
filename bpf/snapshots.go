package bpf

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	cringbuf "github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Next blocks until the target has run through a slice tick and returns the cumulative
// counts, summed over the target's threads (or CPUs). Snapshots are cumulative, so nothing
// is lost when Next is called late: it then covers several slices. Ticks of different CPUs
// within 200µs (or a quarter slice) of each other give one snapshot. A slice in which no tracked thread
// ran gives none.
//
// When every tracked thread has exited, Next returns a last snapshot read with read(2)
// from the events (their final values), and io.EOF afterwards. It first waits, holding
// no lock, for the threads to get past the point where the kernel detaches their events
// (awaitExit), unless Wait has already done so. After Close it returns ErrClosed.
func (c *Collector) Next() (perf.Snapshot, error) {
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return perf.Snapshot{}, ErrClosed
		case c.done:
			c.mu.Unlock()
			return perf.Snapshot{}, io.EOF
		case c.gone && !c.exitWaited:
			c.mu.Unlock()
			c.awaitExit()
			continue
		case c.gone:
			s, err := c.final()
			c.mu.Unlock()
			return s, err
		case c.err != nil:
			err := c.err
			c.mu.Unlock()
			return perf.Snapshot{}, err
		case c.fresh:
			// Let the other CPUs' ticks of the same slice arrive: their timers were started
			// together, so they fire microseconds apart. The wait is short because a caller
			// that reconfigures events at each snapshot (a virtual PMU) wants it at once.
			wait := time.Duration(c.firstNs + int64(c.batchGrace()) - monotonicNow())
			c.mu.Unlock()
			if wait > 0 {
				select {
				case <-time.After(wait):
				case <-c.quit:
				}
			}
			c.mu.Lock()
			if c.closed {
				c.mu.Unlock()
				return perf.Snapshot{}, ErrClosed
			}
			c.fresh = false
			c.sliceLag = max(c.sliceLag, time.Duration(monotonicNow()-c.firstNs))
			if len(c.exited) > 0 {
				// What an exited thread counted after its exit snapshot (its own
				// sched:sched_process_exit, which the kernel counts after the programs
				// ran) is in its events only: read them now, or it would reach no slice
				// before the final snapshot.
				c.retireFinished()
			}
			s := c.gate(c.sum())
			c.mu.Unlock()
			return s, nil
		}
		c.mu.Unlock()
		c.block()
	}
}

// block waits, without the lock, for the consumer to apply records (notify), for Close,
// or until the next sweep of exited threads is due, which it then runs: the waiting step
// of Next and Wait.
func (c *Collector) block() {
	c.mu.Lock()
	wait := c.sweepWait
	c.mu.Unlock()
	if wait == 0 {
		wait = sweepEvery
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.wake:
		c.mu.Lock()
		c.sweepWait = sweepEvery
		c.mu.Unlock()
	case <-c.quit:
	case <-t.C:
		c.mu.Lock()
		c.sweep()
		// A target that sleeps sends no records for as long as it sleeps: back off, so
		// that its silence costs the machine no periodic wake-ups (a lost exit is then
		// noticed up to sweepMax late).
		c.sweepWait = min(2*wait, sweepMax)
		c.mu.Unlock()
	}
}

// Wait blocks until Next would return without waiting for a record: a slice has ended,
// every tracked thread has exited and got past the point where the kernel detaches its
// events (the final snapshot, or io.EOF after it; see awaitExit), the collector failed,
// or it was closed (ErrClosed, which Wait returns too). It consumes nothing, so a caller
// that must not be blocked in Next while holding its own lock (a virtual PMU serving
// reads between slices) waits here, then takes its lock and calls Next, which returns at
// once but for the short wait for the other CPUs' ticks of the slice.
func (c *Collector) Wait() error {
	for {
		c.mu.Lock()
		switch {
		case c.closed:
			c.mu.Unlock()
			return ErrClosed
		case c.gone && !c.exitWaited && !c.done:
			c.mu.Unlock()
			c.awaitExit()
			continue
		case c.done, c.gone, c.err != nil, c.fresh:
			c.mu.Unlock()
			return nil
		}
		c.mu.Unlock()
		c.block()
	}
}

// Peek returns, for each of events (indices into Options.Events), what Next would report
// for it if the current slice ended now, read with read(2) from every thread's event,
// without ending the slice: the next Next still reports the whole slice since the last
// one. With SwitchAtSnapshots an event advances by what it counted since the last
// snapshot only if it is enabled now, as Next's would. It serves a reader that wants
// values at the instant it reads (a virtual PMU answering a tool's read between slices,
// or splitting a slice there). A running thread's events are read with a cross-CPU call,
// as read(2) always does; a thread that has exited reads its final values.
//
// The values read are taken into the threads' latest values, so that the next snapshot
// reports at least what Peek did. A thread's snapshots alone would not: its switch
// snapshot precedes the context switch the kernel then counts, an exited thread's
// events count its own sched:sched_process_exit after its exit snapshot, and a Peek
// after a tick whose snapshot Next has not returned yet reads past that tick. Without
// this, a virtual PMU that answered a read from a Peek and then switched the event off
// at that snapshot served a lower count at the next read (vstage's
// TestPerfStatLikeClient/bpf: 1320 -> 1126 raw_syscalls:sys_enter, and context-switches
// 1 to 4 lower, in most runs). The events peeked (a virtual PMU's clock and one copy, at
// a tool's read) then end their slice at the Peek, the others at the tick.
func (c *Collector) Peek(events []int, out []perf.Count) error {
	if len(out) < len(events) {
		return fmt.Errorf("peek %d events into %d values", len(events), len(out))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	for n, i := range events {
		if i < 0 || i >= len(c.opts.Events) {
			return fmt.Errorf("peek event %d: out of range [0,%d)", i, len(c.opts.Events))
		}
		k := i
		if c.kidx != nil {
			k = c.kidx[i]
		}
		raw := c.retired[k]
		for _, sl := range c.slots {
			if sl == nil {
				continue
			}
			v, err := sl.readEvent(k)
			if err != nil {
				return fmt.Errorf("peek event %d: %w", i, err)
			}
			raw.Value += v.Value
			raw.Enabled += v.Enabled
			raw.Running += v.Running
		}
		if !c.opts.SwitchAtSnapshots {
			out[n] = raw
			continue
		}
		v, p := c.gated[i], c.rawPrev[i]
		if c.enabled[i] && raw.Value >= p.Value && raw.Enabled >= p.Enabled && raw.Running >= p.Running {
			v.Value += raw.Value - p.Value
			v.Enabled += raw.Enabled - p.Enabled
			v.Running += raw.Running - p.Running
		}
		out[n] = v
	}
	return nil
}

// batchGrace is how long after the first tick record of a slice Next waits for the ticks of
// other CPUs. One thread runs on one CPU at a time, so with one live thread found running
// by the tick there is nothing to wait for (and the wait, a timer wake-up, costs as much
// CPU as the rest of a slice); a round record (a CPU found none running) may precede the
// tick of the CPU the thread now runs on. Called with c.mu held.
func (c *Collector) batchGrace() time.Duration {
	if c.alive <= 1 && !c.systemWide() && !c.firstRound {
		return 0
	}
	return min(c.slice/4, 200*time.Microsecond)
}

// consume reads the BPF ring buffer until Close, applying every record as it comes, so that
// new threads are followed at once however late Next is called.
func (c *Collector) consume() {
	defer close(c.stopped)
	// Following a new thread races with the thread itself, and a target that saturates the
	// CPUs would otherwise starve this goroutine (perf bench sched messaging -t on 2 cores:
	// 30 of 80 threads lost). So it gets its own OS thread at nice -10 when allowed (root);
	// the thread dies with the goroutine (it never unlocks), so no other goroutine inherits
	// the priority.
	runtime.LockOSThread()
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), -10)
	var rec cringbuf.Record
	var vals []perf.Count
	for {
		err := c.rd.ReadInto(&rec)
		c.mu.Lock()
		if c.closed || errors.Is(err, cringbuf.ErrClosed) {
			c.mu.Unlock()
			return
		}
		if err != nil {
			c.err = fmt.Errorf("read bpf ring buffer: %w", err)
			c.mu.Unlock()
			c.notify()
			return
		}
		r, err := decodeRecord(rec.RawSample, vals)
		if err != nil {
			c.bad++
			c.mu.Unlock()
			continue
		}
		vals = r.Vals
		c.handle(r)
		// Only a tick ends a slice: an exit (a shell loop's every command) would otherwise
		// end one too, and a virtual PMU would rotate its schedule at every process exit.
		// The ticks of one round (every CPU's timer fires within microseconds of the others)
		// end one slice: a tick record arriving after Next returned its round's snapshot
		// (another CPU's, late) adds its values to the next slice without ending one.
		if (r.Kind == kindTick || r.Kind == kindRound) && int64(r.TimeNs) >= c.boundaryNs+int64(c.slice)/2 {
			c.nslices++
			if !c.moved {
				c.idleSlices++
			}
			c.moved, c.boundaryNs = false, int64(r.TimeNs)
		}
		if (r.Kind == kindTick || r.Kind == kindRound) && !c.fresh && int64(r.TimeNs) >= c.roundNs+int64(c.slice)/2 {
			c.fresh, c.firstNs, c.roundNs = true, int64(r.TimeNs), int64(r.TimeNs)
			c.firstRound = r.Kind == kindRound
		}
		if c.alive == 0 && !c.systemWide() {
			c.gone = true
		}
		c.mu.Unlock()
		if rec.Remaining > 0 {
			// More records are already in the ring (a late consumer finds the other CPUs'
			// ticks of the slice there): apply them before waking Next.
			continue
		}
		if c.notify() {
			// Let a waiting Next run on this thread now, rather than behind the blocking
			// read this goroutine is about to make, which would take another thread's
			// wake-up (the dearest part of a slice here).
			runtime.Gosched()
		}
	}
}

func (c *Collector) notify() bool {
	select {
	case c.wake <- struct{}{}:
		return true
	default:
		return false
	}
}

// handle applies one record. Called with c.mu held.
func (c *Collector) handle(r record) {
	switch r.Kind {
	case kindTick, kindExit, kindSwitch:
		if int(r.Slot) >= len(c.slots) || c.slots[r.Slot] == nil || len(r.Vals) != c.nr {
			c.bad++
			return
		}
		s := c.slots[r.Slot]
		if s.tid >= 0 && s.tid != int(r.Tid) {
			c.bad++
			return
		}
		for i, v := range r.Vals {
			// A value that could not be read comes as zeros; counters never go backwards.
			if v.Value >= s.last[i].Value && v.Enabled >= s.last[i].Enabled && (v != perf.Count{}) {
				c.moved = c.moved || v.Enabled > s.last[i].Enabled || v.Value > s.last[i].Value
				s.last[i] = v
			}
		}
		if int64(r.TimeNs) > c.lastNs {
			c.lastNs = int64(r.TimeNs)
		}
		if r.Kind == kindExit {
			c.exit(int(r.Slot))
		}
	case kindRound:
		// The values of every thread not running now are already applied (its switch or
		// exit snapshot): the sums are current as of this tick.
		if int64(r.TimeNs) > c.lastNs {
			c.lastNs = int64(r.TimeNs)
		}
	case kindFork, kindHeld, kindHeldEarly:
		tid := int(r.Tid)
		if r.Kind == kindHeldEarly {
			c.heldEarly++
		}
		if r.Kind != kindFork {
			// Stopped before its first instruction: let it run once its events are open
			// (or it is known lost). The program made the SIGSTOP pending before this
			// record could be read, so the SIGCONT cannot come first.
			defer c.cont(tid)
			c.held++
		}
		if _, ok := c.byTid[tid]; ok || (r.Kind == kindHeldEarly && tid == c.lostTid) {
			return // already found by listing /proc, or by its kindFork notice
		}
		if err := c.addThread(tid, unix.BPF_EXIST); err != nil {
			c.thrMap.Delete(uint32(tid))
			c.lostTid = tid // its GONE record may follow: count it once
			c.lost++
			return
		}
		c.followLat = max(c.followLat, time.Duration(monotonicNow()-int64(r.TimeNs)))
	case kindGone:
		// A thread whose slot was assigned just as it exited is not lost: its events
		// hold its counts.
		if int(r.Tid) != c.lostTid && !slices.Contains(c.recent[max(0, len(c.recent)-64):], int(r.Tid)) {
			c.lost++
		}
	}
}

// sum adds the latest values over slots. Called with c.mu held.
func (c *Collector) sum() perf.Snapshot {
	s := perf.Snapshot{TimeNs: c.lastNs, Counts: slices.Clone(c.retired)}
	for _, sl := range c.slots {
		if sl == nil {
			continue
		}
		for i, v := range sl.last {
			s.Counts[i].Value += v.Value
			s.Counts[i].Enabled += v.Enabled
			s.Counts[i].Running += v.Running
		}
	}
	return s
}

// exitWait bounds how long the final snapshot waits for the target's exited threads to
// be finished (awaitExit).
const exitWait = time.Second

// awaitExit waits until every exited thread has passed the point where the kernel
// detaches its events (zombie or reaped), for at most exitWait since the first call, so
// that the final snapshot reads final values. A thread's exit record comes from
// sched_process_exit, before the kernel frees its memory and files (on this 6.18
// kernel): a target freeing 1 GiB of 4 KiB pages took 66ms to get there, 2 GiB 106ms.
// It holds no lock while it waits (it polls /proc): Next used to wait in final with the
// collector's lock held, and a virtual PMU calls Next under its own lock, so a tool's
// reads (Peek, and the virtual PMU's) waited for the target's exit, up to exitWait.
// Called without c.mu; Close ends the wait.
func (c *Collector) awaitExit() {
	c.mu.Lock()
	if c.exitWaited {
		c.mu.Unlock()
		return
	}
	if c.exitBy.IsZero() {
		c.exitBy = time.Now().Add(exitWait)
	}
	by, finished := c.exitBy, c.finished
	var tids []int
	for _, s := range c.slots {
		if s != nil && s.tid >= 0 {
			tids = append(tids, s.tid)
		}
	}
	c.mu.Unlock()
	for _, tid := range tids {
		for !finished(tid) && time.Now().Before(by) {
			select {
			case <-c.quit:
				return
			default:
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	c.mu.Lock()
	c.exitWaited = true
	c.mu.Unlock()
}

// final reads every thread's events, once awaitExit has waited for the kernel to detach
// them. Called with c.mu held.
func (c *Collector) final() (perf.Snapshot, error) {
	c.done = true
	if c.fresh {
		// A slice ended but was not returned before the target was gone: this snapshot
		// takes it in.
		c.sliceLag = max(c.sliceLag, time.Duration(monotonicNow()-c.firstNs))
	}
	if err := c.readSlots(); err != nil {
		return perf.Snapshot{}, err
	}
	s := c.gate(c.sum())
	s.TimeNs = monotonicNow()
	return s, nil
}

// gate turns the raw sums of a snapshot Next is about to return into what it reports: with
// SwitchAtSnapshots, each event advances by its raw delta since the previous snapshot if it
// is enabled now (it was enabled over that slice, as SetEnabled takes effect at the last
// snapshot returned), and not at all otherwise. Called with c.mu held.
func (c *Collector) gate(s perf.Snapshot) perf.Snapshot {
	if !c.opts.SwitchAtSnapshots {
		return s
	}
	raw := s.Counts
	s.Counts = make([]perf.Count, len(c.kidx))
	for i, k := range c.kidx {
		v, p := raw[k], c.rawPrev[i]
		if c.enabled[i] && v.Value >= p.Value && v.Enabled >= p.Enabled && v.Running >= p.Running {
			c.gated[i].Value += v.Value - p.Value
			c.gated[i].Enabled += v.Enabled - p.Enabled
			c.gated[i].Running += v.Running - p.Running
		}
		c.rawPrev[i] = v
		s.Counts[i] = c.gated[i]
	}
	return s
}

// readSlots reads every event with read(2) into the slots' latest values. Called with
// c.mu held.
func (c *Collector) readSlots() error {
	for _, s := range c.slots {
		if s == nil {
			continue
		}
		if err := c.readSlot(s); err != nil {
			return err
		}
	}
	return nil
}

// readSlot reads a slot's events with read(2) into its latest values.
func (c *Collector) readSlot(s *slot) error {
	for i := range s.fds {
		if _, err := s.readEvent(i); err != nil {
			return err
		}
	}
	return nil
}

// readEvent reads the slot's event i with read(2) into its latest values, unless they
// are already higher (counters never go back: the lower value is the older one, a
// record applied after it was read), and returns them.
func (s *slot) readEvent(i int) (perf.Count, error) {
	v, err := readCount(s.fds[i])
	if err != nil {
		return perf.Count{}, fmt.Errorf("read event %d of tid %d: %w", i, s.tid, err)
	}
	if v.Value >= s.last[i].Value {
		s.last[i] = v
	}
	return s.last[i], nil
}

// countLayout is where read(2) puts the triple of the events the collector opens.
var countLayout = perfabi.LayoutRead(perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning, 1)

// readCount reads one event opened with read_format (value, enabled, running).
func readCount(fd int) (perf.Count, error) {
	var buf [24]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return perf.Count{}, err
	}
	if n != countLayout.Size {
		return perf.Count{}, fmt.Errorf("got %d bytes, want %d", n, countLayout.Size)
	}
	bo, l := perfabi.ByteOrder, countLayout
	return perf.Count{Value: bo.Uint64(buf[l.Values:]), Enabled: bo.Uint64(buf[l.Enabled:]), Running: bo.Uint64(buf[l.Running:])}, nil
}

// ReadNow reads every event with read(2), bypassing BPF, and returns the sums. It is the
// read() collector's view of the same events, for comparison and tests. With
// SwitchAtSnapshots the values are the kernel's, which count all the time.
func (c *Collector) ReadNow() (perf.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return perf.Snapshot{}, ErrClosed
	}
	s := perf.Snapshot{Counts: slices.Clone(c.retired)}
	for _, sl := range c.slots {
		if sl == nil {
			continue
		}
		for i, fd := range sl.fds {
			v, err := readCount(fd)
			if err != nil {
				return perf.Snapshot{}, fmt.Errorf("read event %d of tid %d: %w", i, sl.tid, err)
			}
			s.Counts[i].Value += v.Value
			s.Counts[i].Enabled += v.Enabled
			s.Counts[i].Running += v.Running
		}
	}
	s.TimeNs = monotonicNow()
	if c.kidx != nil {
		raw := s.Counts
		s.Counts = make([]perf.Count, len(c.kidx))
		for i, k := range c.kidx {
			s.Counts[i] = raw[k]
		}
	}
	return s, nil
}

func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}
