package bpf

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	cringbuf "github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
)

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
	spec.Maps[snapshotMapUnheld].MaxEntries = uint32(2 * max(nslots, 1))
	// The fork programs (hold.go): on_fork_hold needs the kernel's BTF and a 6.13+ kfunc,
	// so it is loaded only when asked for and the BTF is decoded; until then on_fork and
	// on_first_exit hold.
	c.early = c.opts.HoldProcesses && (c.opts.holdMode != holdAuto || !btfDecoded())
	switch {
	case c.early:
		delete(spec.Programs, snapshotProgOnForkHold)
	case c.opts.HoldProcesses:
		delete(spec.Programs, snapshotProgOnFork)
		delete(spec.Programs, snapshotProgOnFirstExit)
	default:
		delete(spec.Programs, snapshotProgOnForkHold)
		delete(spec.Programs, snapshotProgOnFirstExit)
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
		snapshotVarEarlyHold:     b2u(c.early),
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
		if err := c.attachTracepoints(); err != nil {
			return err
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
		attr := perfabi.Attr{
			Type:         unix.PERF_TYPE_SOFTWARE,
			Config:       unix.PERF_COUNT_SW_CPU_CLOCK,
			Size:         perfabi.AttrSize,
			SamplePeriod: uint64(c.slice.Nanoseconds()),
			Flags:        perfabi.FlagDisabled,
		}
		fd, err := perfabi.Open(&attr, -1, cpu, -1)
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

// attachTracepoints attaches the programs that follow a target's tasks: its exits, forks
// (held, with HoldProcesses) and switches.
func (c *Collector) attachTracepoints() error {
	for _, tp := range []struct{ name, prog string }{
		{"sched_process_exit", snapshotProgOnExit},
		{"sched_process_fork", snapshotProgOnFork},
		{"sched_switch", snapshotProgOnSwitch},
	} {
		if c.opts.HoldProcesses && !c.early && tp.prog == snapshotProgOnFork {
			continue
		}
		l, err := link.Tracepoint("sched", tp.name, c.coll.Programs[tp.prog], nil)
		if err != nil {
			return classify("attach "+tp.name, err)
		}
		if c.early && tp.prog == snapshotProgOnFork {
			c.earlyFork = l // upgradeHold detaches it
			continue
		}
		c.links = append(c.links, l)
	}
	if c.early {
		return c.attachEarlyHold()
	}
	if c.opts.HoldProcesses {
		l, err := link.AttachTracing(link.TracingOptions{Program: c.coll.Programs[snapshotProgOnForkHold]})
		if err != nil {
			return classify("attach sched_process_fork (BTF, to hold new processes)", err)
		}
		c.links = append(c.links, l)
	}
	return nil
}
