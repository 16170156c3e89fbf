package bpf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	cringbuf "github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Options says what to collect.
type Options struct {
	// Pid is the target process (or, with Threads false, the one thread Pid). -1 means
	// every CPU: Events are opened per CPU and snapshots are summed over CPUs.
	Pid int
	// Threads follows every thread of Pid present at NewCollector and every task created
	// later by a followed one: threads and child processes, as perf's inherit does (a
	// child's tid is then summed like a thread's). Without it only the thread Pid counts.
	Threads bool
	// Events are the counting events to snapshot, in Snapshot.Counts order. The collector
	// opens them itself for each thread or CPU, with inherit cleared (the kernel cannot read
	// inherited events from BPF) and read_format set to (value, enabled, running). An event
	// with the disabled bit starts disabled; see SetEnabled.
	Events []perfabi.Attr
	// Descendants (with Threads) follows only the thread Pid and the tasks it creates
	// after NewCollector (and theirs), as an event opened on Pid with inherit counts, not
	// the other threads of Pid's process already present. For a target that has one
	// thread (a command just started) it changes nothing; for `perf stat -p` of a running
	// multi-threaded process, whose tool opens one event per thread, it keeps the copies
	// of the first thread's event from counting its siblings too.
	Descendants bool
	// HoldProcesses (with Threads) stops every new child process before its first user
	// instruction until its events are open, so that a short-lived one (a shell loop's cat)
	// is counted from its start, as inherited events count it: a program in the child's
	// first moment on a CPU sends it SIGSTOP, and the collector sends SIGCONT once its
	// events are open (see the package doc for what its parent can notice). New threads are
	// never held. Until the kernel's BTF is decoded (once per process, off the caller's
	// start: hold.go) the program is one on every system call's exit, which stops the child
	// on its first return to user space; then one on the fork, which stops it through the
	// bpf_send_signal_task kfunc (Linux 6.13+). Without the kfunc the first one stays
	// (Stats.HoldErr).
	HoldProcesses bool
	// Slice is the snapshot period in wall-clock time; 0 means 4ms, the kernel's default
	// multiplexing interval.
	Slice time.Duration
	// MaxThreads bounds the threads followed (0 means 1024). Threads beyond it are counted
	// in Stats.LostThreads and not collected.
	MaxThreads int
	// RingBytes is the BPF ring buffer size, a power of two multiple of the page size
	// (0 means 1 MiB).
	RingBytes int
	// SwitchAtSnapshots makes SetEnabled act at slice boundaries instead of in the kernel:
	// every event counts in the kernel all the time, and an event's reported values (count,
	// enabled and running) advance only by what it counted in the slices (between two
	// snapshots Next returned) during which it was enabled, that is, enabled when the
	// snapshot ending the slice is returned. A virtual PMU rotating its events at every
	// snapshot then sees each event counted over exactly the slices it scheduled, with no
	// ioctl and no lag between the snapshot and the switch. Not for hardware events on a
	// real PMU: keeping them all enabled would make the kernel multiplex them.
	SwitchAtSnapshots bool
	// EnableOnExec makes the events of the threads present at NewCollector start counting
	// at the target's next execve, as perf stat's events (enable_on_exec) do on the
	// command it has forked but not exec'd yet: they are opened disabled with
	// enable_on_exec, and the kernel enables them in the exec. Tasks followed later (the
	// command's threads and children) count from the moment their events are open, as
	// before. Before the exec the events read as zero (time_enabled too), so nothing of
	// the forked tool's own code reaches a snapshot. An event opened with the disabled
	// bit is not concerned without SwitchAtSnapshots: it counts from its SetEnabled,
	// before the exec if that comes first (with SwitchAtSnapshots every event counts in
	// the kernel from the exec, and SetEnabled only gates what is reported).
	EnableOnExec bool

	// holdMode, for tests, picks the fork programs instead of the kernel's BTF being
	// decoded or not (hold.go); with holdEarly, upgradeAt (if not nil) is when to upgrade.
	holdMode  holdMode
	upgradeAt <-chan struct{}
}

// Stats describes a collector's work so far.
type Stats struct {
	Ticks       uint64 // timer interrupts seen by the program, on any CPU
	Records     uint64 // snapshot records the program submitted
	Drops       uint64 // records lost because the ring buffer was full
	ReadErrors  uint64 // values bpf_perf_event_read_value could not read
	BadRecords  uint64 // records Next could not use (malformed or for an unknown slot)
	Threads     int    // threads (or CPUs) that have had events opened
	LostThreads int    // new threads that could not be followed
	Held        uint64 // new processes sent SIGSTOP at their fork (HoldProcesses) and continued once followed
	// HeldEarly of them were stopped on their first return to user space, before the
	// kernel's BTF was decoded (hold.go); HoldErr says why the collector kept holding so
	// (no bpf_send_signal_task kfunc before Linux 6.13), nil otherwise.
	HeldEarly uint64
	HoldErr   error
	// MaxFollowLatency is the longest time from a thread's creation (the fork tracepoint)
	// to its events being in the BPF map: what the thread counted meanwhile is not seen.
	MaxFollowLatency time.Duration
	// MaxSliceLag is the longest time from the tick that ended a slice to the Next that
	// returned it (or to the final snapshot that took it in): how far the collector's
	// user side, the consuming goroutine and Next's caller, fell behind the kernel. The
	// kernel's ticks keep time; on a saturated machine the Go side does not, whatever its
	// priority (its goroutines need a P, which an M at normal priority may hold while the
	// scheduler keeps it off the CPU), and under a loaded 2-core VM it reached 40-170ms.
	// A late slice is merged into the next snapshot: nothing is lost.
	MaxSliceLag time.Duration
	// Slices counts the slice boundaries the kernel's ticks made, whether Next returned
	// each as a snapshot or a late Next merged several; IdleSlices those of them at which
	// no tracked thread had run since the previous one. Unlike the number of snapshots,
	// neither depends on how promptly the Go side ran.
	Slices, IdleSlices uint64
}

// slot is one thread (or CPU) and its events.
type slot struct {
	tid  int // -1 for a CPU slot
	cpu  int
	fds  []int
	last []perf.Count // latest cumulative values seen
	live bool         // not yet seen exiting
}

// Collector snapshots events through BPF. It implements perf.Collector.
type Collector struct {
	opts      Options
	sweepWait time.Duration  // block's wait before the next sweep (guarded by mu)
	nr        int            // events opened per thread (or CPU): len(kevents)
	kevents   []perfabi.Attr // the events opened per thread
	kidx      []int          // with SwitchAtSnapshots: opts.Events[i] is kevents[kidx[i]]
	onExec    bool           // start is opening the first threads: EnableOnExec applies
	slice     time.Duration
	coll      *ebpf.Collection
	array     *ebpf.Map // the PERF_EVENT_ARRAY, owned here
	thrMap    *ebpf.Map
	heldMap   *ebpf.Map
	stats     *ebpf.Map
	rd        *cringbuf.Reader
	timers    []int
	links     []link.Link
	// early: holding with on_first_exit until upgradeHold attaches on_fork_hold (hold.go);
	// earlyFork and earlyExit are on_fork's and on_first_exit's links, which it then closes.
	early                bool
	earlyFork, earlyExit link.Link
	holdProg             *ebpf.Program // on_fork_hold loaded by upgradeHold, owned here
	holdErr              error         // why upgradeHold could not attach on_fork_hold
	upgraded             chan struct{} // closed when upgradeHold returns (nil when not early)
	heldEarly            uint64

	togMu     sync.Mutex   // serialises SetEnabled calls
	fdMu      sync.RWMutex // read-held while fds are used without mu; write-held to close them
	mu        sync.Mutex   // guards everything below; the consumer holds it while applying a record, but for opening a thread's events (unlocked)
	closed    bool
	slots     []*slot
	byTid     map[int]int  // live threads' slots
	nslots    int          // slots in the event array
	free      []int        // slots of retired threads, for reuse
	exited    []int        // slots of exited threads not yet retired
	retired   []perf.Count // final values of retired threads, summed
	nfollowed int          // threads followed since the start
	recent    []int        // the last recentTids tids followed, in order
	enabled   []bool
	alive     int
	lost      int
	lostTid   int // the last thread that could not be followed
	held      uint64
	followLat time.Duration
	sliceLag  time.Duration // see Stats.MaxSliceLag
	bad       uint64
	lastNs    int64
	err       error // the consumer's failure, for Next
	fresh     bool  // a slice boundary arrived since the last Next
	firstNs   int64 // time of the boundary
	roundNs   int64 // time of the tick that ended the last slice: ticks within half a slice of it are the same round
	// firstRound: the boundary was a tick that found no tracked thread running, so a tracked
	// thread may be running on another CPU whose tick of the same round is still to come
	firstRound bool
	// Stats.Slices and IdleSlices: boundaryNs is roundNs as an on-time Next would have
	// kept it, moved whether a tracked thread ran since that boundary.
	nslices, idleSlices uint64
	boundaryNs          int64
	moved               bool
	gone                bool // every tracked thread has exited
	exitWaited          bool // the wait for gone threads to be finished (awaitExit) is over
	exitBy              time.Time
	done                bool // the final snapshot has been returned
	// finished says whether a thread has passed the point where the kernel detaches its
	// events (perf.TaskFinished; a test makes a target's exit slow with it).
	finished func(tid int) bool
	// With SwitchAtSnapshots: the raw sums at the last snapshot returned, and the values
	// reported for each event (advanced only over slices in which it was enabled).
	rawPrev []perf.Count
	gated   []perf.Count

	wake    chan struct{} // the consumer has applied records
	quit    chan struct{} // closed by Close
	stopped chan struct{} // closed when the consumer returns
}

var _ perf.Collector = (*Collector)(nil)

// NewCollector loads the BPF program, opens the events and starts the slice timers.
func NewCollector(opts Options) (*Collector, error) { return buildCollector(opts, nil) }

// buildCollector is NewCollector, with the programs and maps from l when not nil.
func buildCollector(opts Options, l *Loader) (*Collector, error) {
	kevents, kidx := kernelEvents(opts)
	if len(opts.Events) == 0 || len(kevents) > maxEvents {
		return nil, fmt.Errorf("new bpf collector: %d events, want 1 to %d", len(kevents), maxEvents)
	}
	if opts.Pid < -1 || opts.Pid == 0 {
		return nil, fmt.Errorf("new bpf collector: bad pid %d (want a process id, or -1 for every CPU)", opts.Pid)
	}
	if opts.Slice == 0 {
		opts.Slice = 4 * time.Millisecond
	}
	if opts.Slice < 10*time.Microsecond {
		return nil, fmt.Errorf("new bpf collector: slice %v is too short (at least 10µs)", opts.Slice)
	}
	if opts.EnableOnExec && opts.Pid == -1 {
		return nil, errors.New("new bpf collector: EnableOnExec needs a task target (pid > 0)")
	}
	if opts.HoldProcesses && (!opts.Threads || opts.Pid == -1) {
		return nil, errors.New("new bpf collector: HoldProcesses needs Threads and a task target (pid > 0)")
	}
	if opts.MaxThreads <= 0 {
		opts.MaxThreads = defaultMaxThreads
	}
	if opts.RingBytes == 0 {
		opts.RingBytes = defaultRingBytes
	}
	page := os.Getpagesize()
	if opts.RingBytes < page || opts.RingBytes&(opts.RingBytes-1) != 0 {
		return nil, fmt.Errorf("new bpf collector: ring size %d is not a power of two of at least %d", opts.RingBytes, page)
	}
	systemWide := opts.Pid == -1
	cpus, err := perf.OnlineCPUs()
	if err != nil {
		return nil, fmt.Errorf("new bpf collector: %w", err)
	}
	nslots := opts.MaxThreads
	if systemWide {
		nslots = 0
		for _, c := range cpus {
			nslots = max(nslots, c+1)
		}
	} else if !opts.Threads {
		nslots = 1
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", opts.Pid)); !systemWide && err != nil {
		return nil, fmt.Errorf("new bpf collector: find target %d: %w", opts.Pid, err)
	}

	c := &Collector{opts: opts, nr: len(kevents), kevents: kevents, kidx: kidx, slice: opts.Slice, byTid: map[int]int{}, nslots: nslots,
		finished: perf.TaskFinished}
	c.retired = make([]perf.Count, c.nr)
	c.enabled = make([]bool, len(opts.Events))
	c.rawPrev = make([]perf.Count, len(opts.Events))
	c.gated = make([]perf.Count, len(opts.Events))
	for i, a := range opts.Events {
		c.enabled[i] = a.Flags&perfabi.FlagDisabled == 0
	}
	load := c.load
	if l != nil {
		load = func(nslots int, systemWide bool) error { return l.load(c, nslots, systemWide) }
	}
	if err := load(nslots, systemWide); err != nil {
		c.release()
		return nil, err
	}
	if err := c.start(cpus, systemWide); err != nil {
		c.release()
		return nil, err
	}
	c.wake, c.quit, c.stopped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go c.consume()
	if c.early {
		c.upgraded = make(chan struct{})
		go func() {
			defer close(c.upgraded)
			c.upgradeHold()
		}()
	}
	return c, nil
}

// kernelEvents returns the events to open in the kernel for each thread, and for each of
// opts.Events its index among them. With SwitchAtSnapshots every event counts all the
// time, so events that differ only in their disabled bit (a virtual PMU's truth copy and
// its views' copies of one event) are one kernel event, read once per snapshot: a third
// of the reads per tick and per context switch for eval's two views.
func kernelEvents(opts Options) ([]perfabi.Attr, []int) {
	if !opts.SwitchAtSnapshots {
		return opts.Events, nil
	}
	var out []perfabi.Attr
	idx := make([]int, len(opts.Events))
	seen := map[perfabi.Attr]int{}
	for i, a := range opts.Events {
		a.Flags &^= perfabi.FlagDisabled
		a.Size = perfabi.AttrSize // addSlot opens every event with this size
		k, ok := seen[a]
		if !ok {
			k = len(out)
			seen[a] = k
			out = append(out, a)
		}
		idx[i] = k
	}
	return out, idx
}

// Name returns "bpf".
func (c *Collector) Name() string { return "bpf" }

func (c *Collector) systemWide() bool { return c.opts.Pid == -1 }

// SetEnabled enables or disables event i in every thread (or CPU), including threads
// followed later. It is what a sidecar multiplexing events itself needs. With
// Options.SwitchAtSnapshots it only records the state, which applies to the slice that
// began at the last snapshot Next returned (see there).
//
// Each ioctl on a thread running elsewhere costs a cross-CPU call (tens of µs in a VM), so
// toggling events of many threads is slow; it runs without holding the lock that following
// new threads needs.
func (c *Collector) SetEnabled(i int, on bool) error {
	if i < 0 || i >= len(c.enabled) {
		return fmt.Errorf("set event %d enabled: out of range [0,%d)", i, len(c.enabled))
	}
	c.togMu.Lock()
	defer c.togMu.Unlock()
	// Threads opened from now on get the new state; the ones already open get an ioctl.
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	c.enabled[i] = on
	if c.opts.SwitchAtSnapshots {
		c.mu.Unlock()
		return nil
	}
	type target struct {
		fd, tid int
		live    bool
	}
	targets := make([]target, 0, len(c.slots))
	for _, s := range c.slots {
		if s != nil {
			targets = append(targets, target{s.fds[i], s.tid, s.live})
		}
	}
	// Held until the ioctls are done: fds are closed only under fdMu's write lock.
	c.fdMu.RLock()
	defer c.fdMu.RUnlock()
	c.mu.Unlock()
	req := uint(unix.PERF_EVENT_IOC_DISABLE)
	if on {
		req = unix.PERF_EVENT_IOC_ENABLE
	}
	for _, t := range targets {
		if err := unix.IoctlSetInt(t.fd, req, 0); err != nil && t.live {
			return fmt.Errorf("set event %d enabled=%v for tid %d: %w", i, on, t.tid, err)
		}
	}
	return nil
}

// Stats returns the kernel-side counters and the collector's own.
func (c *Collector) Stats() (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Threads: max(c.nfollowed, len(c.slots)), LostThreads: c.lost, BadRecords: c.bad, MaxFollowLatency: c.followLat, MaxSliceLag: c.sliceLag, Held: c.held, HeldEarly: c.heldEarly, HoldErr: c.holdErr, Slices: c.nslices, IdleSlices: c.idleSlices}
	if c.closed {
		return st, ErrClosed
	}
	dst := []*uint64{&st.Ticks, &st.Records, &st.Drops, &st.ReadErrors}
	for k, d := range dst {
		var per []uint64
		if err := c.stats.Lookup(uint32(k), &per); err != nil {
			return st, fmt.Errorf("read bpf stats: %w", err)
		}
		for _, v := range per {
			*d += v
		}
	}
	return st, nil
}

// KernelTime returns the run time and run count of the collector's programs (the slice
// ticks, and the snapshots at context switches, forks and exits) as the kernel accounts
// them. Both stay zero unless BPF run-time statistics are enabled (EnableKernelStats or
// the sysctl kernel.bpf_stats_enabled).
func (c *Collector) KernelTime() (time.Duration, uint64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, 0, ErrClosed
	}
	var rt time.Duration
	var runs uint64
	for name, p := range c.coll.Programs {
		st, err := p.Stats()
		if err != nil {
			return 0, 0, fmt.Errorf("read stats of bpf program %s: %w", name, err)
		}
		rt += st.Runtime
		runs += st.RunCount
	}
	return rt, runs, nil
}

// EnableKernelStats turns on the kernel's BPF run-time accounting until the returned
// Closer is closed (BPF_ENABLE_STATS; it costs a little on every program run).
func EnableKernelStats() (io.Closer, error) {
	cl, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
	if err != nil {
		return nil, classify("enable bpf run-time stats", err)
	}
	return cl, nil
}

// Close stops the timers, detaches the programs and closes every fd. It makes a blocked
// Next return ErrClosed.
func (c *Collector) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.quit)
	c.mu.Unlock()
	c.rd.Close() // interrupts the consumer's read; it then sees closed and returns
	<-c.stopped
	if c.upgraded != nil {
		<-c.upgraded // it may be loading on_fork_hold on the maps release closes
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.release()
}

// release frees everything, in reverse order of acquisition.
func (c *Collector) release() error {
	c.fdMu.Lock()
	defer c.fdMu.Unlock()
	var errs []error
	closeAll(c.timers)
	c.timers = nil
	for _, l := range append(c.links, c.earlyFork, c.earlyExit) {
		if l != nil {
			errs = append(errs, l.Close())
		}
	}
	c.links, c.earlyFork, c.earlyExit = nil, nil, nil
	if c.holdProg != nil {
		c.holdProg.Close()
	}
	if c.heldMap != nil {
		c.contAllHeld()
	}
	if c.rd != nil {
		c.rd.Close() // may already be closed by Close; nothing to report either way
	}
	if c.coll != nil {
		c.coll.Close()
	}
	if c.array != nil {
		errs = append(errs, c.array.Close())
	}
	for _, s := range c.slots {
		if s != nil {
			closeAll(s.fds)
			s.fds = nil
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close bpf collector: %w", err)
	}
	return nil
}

// Probe says whether a Collector could be made here, without a target: it loads the BPF
// program and opens one slice timer, then frees them. It returns nil, an *UnavailableError
// (fall back to read(2)), or another error.
func Probe() error {
	c := &Collector{
		opts: Options{RingBytes: os.Getpagesize(), MaxThreads: 1},
		nr:   1,
	}
	defer c.release()
	if err := c.load(1, true); err != nil {
		return err
	}
	attr := perfabi.Attr{
		Type:         unix.PERF_TYPE_SOFTWARE,
		Config:       unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:         perfabi.AttrSize,
		SamplePeriod: uint64(time.Millisecond),
		Flags:        perfabi.FlagDisabled,
	}
	fd, err := perfabi.Open(&attr, -1, 0, -1)
	if err != nil {
		return classify("open slice timer", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, c.coll.Programs[snapshotProgOnTick].FD()); err != nil {
		return classify("attach tick program", err)
	}
	return nil
}
