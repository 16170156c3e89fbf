package bpf

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	cringbuf "github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
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
	Events []unix.PerfEventAttr
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
	// never held. Needs the kernel's BTF and the bpf_send_signal_task kfunc (6.13+):
	// without them NewCollector fails.
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
	sweepWait time.Duration        // block's wait before the next sweep (guarded by mu)
	nr        int                  // events opened per thread (or CPU): len(kevents)
	kevents   []unix.PerfEventAttr // the events opened per thread
	kidx      []int                // with SwitchAtSnapshots: opts.Events[i] is kevents[kidx[i]]
	onExec    bool                 // start is opening the first threads: EnableOnExec applies
	slice     time.Duration
	coll      *ebpf.Collection
	array     *ebpf.Map // the PERF_EVENT_ARRAY, owned here
	thrMap    *ebpf.Map
	heldMap   *ebpf.Map
	stats     *ebpf.Map
	rd        *cringbuf.Reader
	timers    []int
	links     []link.Link

	togMu     sync.Mutex   // serialises SetEnabled calls
	fdMu      sync.RWMutex // read-held while fds are used without mu; write-held to close them
	mu        sync.Mutex   // guards everything below; the consumer holds it while applying a record
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
	gone       bool // every tracked thread has exited
	exitWaited bool // the wait for gone threads to be finished (awaitExit) is over
	exitBy     time.Time
	done       bool // the final snapshot has been returned
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
func NewCollector(opts Options) (*Collector, error) {
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
		opts.MaxThreads = 1024
	}
	if opts.RingBytes == 0 {
		opts.RingBytes = 1 << 20
	}
	page := os.Getpagesize()
	if opts.RingBytes < page || opts.RingBytes&(opts.RingBytes-1) != 0 {
		return nil, fmt.Errorf("new bpf collector: ring size %d is not a power of two of at least %d", opts.RingBytes, page)
	}
	systemWide := opts.Pid == -1
	cpus, err := onlineCPUs()
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
		c.enabled[i] = a.Bits&unix.PerfBitDisabled == 0
	}
	if err := c.load(nslots, systemWide); err != nil {
		c.release()
		return nil, err
	}
	if err := c.start(cpus, systemWide); err != nil {
		c.release()
		return nil, err
	}
	c.wake, c.quit, c.stopped = make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	go c.consume()
	return c, nil
}

// kernelEvents returns the events to open in the kernel for each thread, and for each of
// opts.Events its index among them. With SwitchAtSnapshots every event counts all the
// time, so events that differ only in their disabled bit (a virtual PMU's truth copy and
// its views' copies of one event) are one kernel event, read once per snapshot: a third
// of the reads per tick and per context switch for eval's two views.
func kernelEvents(opts Options) ([]unix.PerfEventAttr, []int) {
	if !opts.SwitchAtSnapshots {
		return opts.Events, nil
	}
	var out []unix.PerfEventAttr
	idx := make([]int, len(opts.Events))
	seen := map[unix.PerfEventAttr]int{}
	for i, a := range opts.Events {
		a.Bits &^= unix.PerfBitDisabled
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

// load creates the maps and loads the programs.
func (c *Collector) load(nslots int, systemWide bool) error {
	// Needed only before 5.11, where BPF memory was charged to RLIMIT_MEMLOCK; a no-op after.
	// Without privilege it fails too; the map creation below then says why, better.
	_ = rlimit.RemoveMemlock()
	spec, err := loadSnapshot()
	if err != nil {
		return fmt.Errorf("load bpf object: %w", err)
	}
	arr, err := newPerfEventArray(uint32(nslots * c.nr))
	if err != nil {
		return classify("create perf event array", err)
	}
	c.array = arr
	// cilium/ebpf clamps a PERF_EVENT_ARRAY to the possible CPUs, so the array is made
	// above and wired into the programs by hand instead of being declared a replacement.
	delete(spec.Maps, snapshotMapEvents)
	for name, p := range spec.Programs {
		if err := p.Instructions.AssociateMap(snapshotMapEvents, arr); err != nil && !errors.Is(err, asm.ErrUnreferencedSymbol) {
			return fmt.Errorf("associate event array with %s: %w", name, err)
		}
	}
	spec.Maps[snapshotMapThreads].MaxEntries = uint32(2 * max(nslots, 1))
	spec.Maps[snapshotMapHeld].MaxEntries = uint32(2 * max(nslots, 1))
	// One of the two fork programs: on_fork_hold needs the kernel's BTF and a 6.13+ kfunc,
	// so it is loaded only when asked for.
	if c.opts.HoldProcesses {
		delete(spec.Programs, snapshotProgOnFork)
	} else {
		delete(spec.Programs, snapshotProgOnForkHold)
	}
	spec.Maps[snapshotMapRecords].MaxEntries = uint32(c.opts.RingBytes)
	forkOff := uint32(0)
	if c.opts.Threads && !systemWide {
		if forkOff, err = forkChildOffset(); err != nil {
			return fmt.Errorf("find new threads' tids: %w", err)
		}
	}
	set := map[string]uint32{
		snapshotVarNrEvents:      uint32(c.nr),
		snapshotVarSystemWide:    b2u(systemWide),
		snapshotVarFollowForks:   b2u(c.opts.Threads && !systemWide),
		snapshotVarForkChildOff:  forkOff,
		snapshotVarHoldProcesses: b2u(c.opts.HoldProcesses),
	}
	for name, v := range set {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{Cache: kernelBTF})
	if err != nil {
		return classify("load bpf programs", err)
	}
	c.coll = coll
	c.thrMap = coll.Maps[snapshotMapThreads]
	c.heldMap = coll.Maps[snapshotMapHeld]
	c.stats = coll.Maps[snapshotMapStats]
	if c.rd, err = cringbuf.NewReader(coll.Maps[snapshotMapRecords]); err != nil {
		return classify("open bpf ring buffer", err)
	}
	return nil
}

// kernelBTF keeps the kernel's BTF, decoded once, for every collector of the process:
// on_fork_hold (a BTF tracepoint program calling a kfunc) needs it, and decoding it took
// 40-150ms of the 45-160ms a collector with HoldProcesses took to load, 6ms without (a
// sidecar builds one for every registration of perf stat's events).
var kernelBTF = btf.NewCache()

// Preload decodes the kernel's BTF ahead of the first collector that holds processes,
// which would otherwise wait for it (a sidecar calls it as it starts). Errors are the
// first NewCollector's to report.
func Preload() { _, _ = kernelBTF.Kernel() }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// newPerfEventArray creates a BPF_MAP_TYPE_PERF_EVENT_ARRAY of n entries with a raw
// BPF_MAP_CREATE, since cilium/ebpf would clamp n to the number of possible CPUs.
func newPerfEventArray(n uint32) (*ebpf.Map, error) {
	attr := struct {
		mapType, keySize, valueSize, maxEntries, mapFlags uint32
	}{uint32(ebpf.PerfEventArray), 4, 4, n, 0}
	fd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	if errno != 0 {
		return nil, errno
	}
	m, err := ebpf.NewMapFromFD(int(fd))
	if err != nil {
		unix.Close(int(fd))
		return nil, err
	}
	return m, nil
}

// start opens the events and the timers and attaches the programs.
func (c *Collector) start(cpus []int, systemWide bool) error {
	// Tracepoints first, so that a thread created while the present ones are being opened
	// is reported once its parent is in the threads map.
	if !systemWide {
		for _, tp := range []struct{ name, prog string }{
			{"sched_process_exit", snapshotProgOnExit},
			{"sched_process_fork", snapshotProgOnFork},
			{"sched_switch", snapshotProgOnSwitch},
		} {
			if c.opts.HoldProcesses && tp.prog == snapshotProgOnFork {
				continue
			}
			l, err := link.Tracepoint("sched", tp.name, c.coll.Programs[tp.prog], nil)
			if err != nil {
				return classify("attach "+tp.name, err)
			}
			c.links = append(c.links, l)
		}
		if c.opts.HoldProcesses {
			l, err := link.AttachTracing(link.TracingOptions{Program: c.coll.Programs[snapshotProgOnForkHold]})
			if err != nil {
				return classify("attach sched_process_fork (BTF, to hold new processes)", err)
			}
			c.links = append(c.links, l)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onExec = c.opts.EnableOnExec
	defer func() { c.onExec = false }()
	switch {
	case systemWide:
		for _, cpu := range cpus {
			if err := c.addSlot(-1, cpu, cpu); err != nil {
				return err
			}
		}
	case c.opts.Threads && c.opts.Descendants:
		// Tasks Pid creates from now on are reported by on_fork once Pid is tracked;
		// what it created before is not followed, as inherit does not reach it either.
		if err := c.addThread(c.opts.Pid, unix.BPF_ANY); err != nil {
			return err
		}
	case c.opts.Threads:
		// Re-list until stable: a thread created before its parent was tracked was not
		// reported by on_fork.
		for {
			tids, err := listThreads(c.opts.Pid)
			if err != nil {
				return err
			}
			added := 0
			for _, tid := range tids {
				if _, ok := c.byTid[tid]; ok {
					continue
				}
				if err := c.addThread(tid, unix.BPF_ANY); err != nil {
					if errors.Is(err, unix.ESRCH) {
						continue // exited meanwhile
					}
					return err
				}
				added++
			}
			if added == 0 {
				break
			}
		}
		if c.alive == 0 {
			return fmt.Errorf("new bpf collector: target %d has no live threads", c.opts.Pid)
		}
	default:
		if err := c.addThread(c.opts.Pid, unix.BPF_ANY); err != nil {
			return err
		}
	}
	prog := c.coll.Programs[snapshotProgOnTick].FD()
	for _, cpu := range cpus {
		attr := unix.PerfEventAttr{
			Type:   unix.PERF_TYPE_SOFTWARE,
			Config: unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
			Sample: uint64(c.slice.Nanoseconds()),
			Bits:   unix.PerfBitDisabled,
		}
		fd, err := unix.PerfEventOpen(&attr, -1, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			return classify(fmt.Sprintf("open slice timer on cpu %d", cpu), err)
		}
		c.timers = append(c.timers, fd)
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog); err != nil {
			return classify("attach tick program", err)
		}
	}
	for _, fd := range c.timers {
		if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
			return fmt.Errorf("enable slice timer: %w", err)
		}
	}
	return nil
}

// addThread opens the events of thread tid, gives it a slot and publishes the slot in the
// threads map with flags (BPF_EXIST for a thread on_fork marked pending).
func (c *Collector) addThread(tid int, flags uint64) error {
	if !c.opts.Threads && c.nfollowed >= 1 {
		return errNoSlot
	}
	idx, err := c.freeSlot()
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
		time.Sleep(100 * time.Microsecond)
	}
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
		if !perf.TaskFinished(s.tid) || c.readSlot(s) != nil {
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
// appends the slot.
func (c *Collector) addSlot(tid, cpu, idx int) error {
	s := &slot{tid: tid, cpu: cpu, last: make([]perf.Count, c.nr), live: true}
	for i, a := range c.kevents {
		a.Size = uint32(unsafe.Sizeof(a))
		a.Bits &^= unix.PerfBitInherit | unix.PerfBitDisabled
		on := c.opts.SwitchAtSnapshots || c.enabled[i]
		switch {
		case !on:
			a.Bits |= unix.PerfBitDisabled
		case c.onExec:
			a.Bits |= unix.PerfBitDisabled | unix.PerfBitEnableOnExec
		}
		a.Read_format = unix.PERF_FORMAT_TOTAL_TIME_ENABLED | unix.PERF_FORMAT_TOTAL_TIME_RUNNING
		fd, err := unix.PerfEventOpen(&a, tid, cpu, -1, unix.PERF_FLAG_FD_CLOEXEC)
		if err != nil {
			closeAll(s.fds)
			if errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("open event %d for thread %d: %w", i, tid, err)
			}
			op := fmt.Sprintf("open event %d (type %d config %#x) for tid %d cpu %d", i, a.Type, a.Config, tid, cpu)
			// Only a refusal is about privilege; an event this machine lacks (ENOENT,
			// EOPNOTSUPP) would fail the read() collector just the same.
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				return &UnavailableError{Op: op, Err: err}
			}
			return fmt.Errorf("%s: %w", op, err)
		}
		s.fds = append(s.fds, fd)
		if err := c.array.Update(uint32(idx*c.nr+i), uint32(fd), ebpf.UpdateAny); err != nil {
			closeAll(s.fds)
			return classify("store event in perf event array", err)
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
	c.alive++
	return nil
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// Name returns "bpf".
func (c *Collector) Name() string { return "bpf" }

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

func (c *Collector) systemWide() bool { return c.opts.Pid == -1 }

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
	case kindFork, kindHeld:
		tid := int(r.Tid)
		if r.Kind == kindHeld {
			// Stopped before its first instruction: let it run once its events are open
			// (or it is known lost). The program made the SIGSTOP pending before this
			// record could be read, so the SIGCONT cannot come first.
			defer c.cont(tid)
			c.held++
		}
		if _, ok := c.byTid[tid]; ok {
			return // already found by listing /proc
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

// readCount reads one event opened with read_format (value, enabled, running).
func readCount(fd int) (perf.Count, error) {
	var buf [24]byte
	n, err := unix.Read(fd, buf[:])
	if err != nil {
		return perf.Count{}, err
	}
	if n != len(buf) {
		return perf.Count{}, fmt.Errorf("got %d bytes, want %d", n, len(buf))
	}
	return perf.Count{Value: le64(buf[0:]), Enabled: le64(buf[8:]), Running: le64(buf[16:])}, nil
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

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

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

// Stats returns the kernel-side counters and the collector's own.
func (c *Collector) Stats() (Stats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Threads: max(c.nfollowed, len(c.slots)), LostThreads: c.lost, BadRecords: c.bad, MaxFollowLatency: c.followLat, MaxSliceLag: c.sliceLag, Held: c.held}
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
	for _, l := range c.links {
		errs = append(errs, l.Close())
	}
	c.links = nil
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
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_SOFTWARE,
		Config: unix.PERF_COUNT_SW_CPU_CLOCK,
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Sample: uint64(time.Millisecond),
		Bits:   unix.PerfBitDisabled,
	}
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return classify("open slice timer", err)
	}
	defer unix.Close(fd)
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, c.coll.Programs[snapshotProgOnTick].FD()); err != nil {
		return classify("attach tick program", err)
	}
	return nil
}
