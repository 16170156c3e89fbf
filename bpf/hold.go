package bpf

import (
	"fmt"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
)

// Holding new processes (Options.HoldProcesses) has two programs, because the one meant
// for it needs the kernel's BTF and decoding that is slow:
//
//   - on_fork_hold, a BTF tracepoint program on sched_process_fork, stops the child from
//     its parent's fork with the bpf_send_signal_task kfunc (6.13+). It costs nothing
//     outside forks. cilium/ebpf decodes the kernel's BTF for it once per process, 43ms
//     of CPU (on the 2-core VMs, more than everything else a tool's start waits for).
//   - on_first_exit, a raw tracepoint program on sys_exit, stops the child itself on its
//     first return to user space (marked in unheld by on_fork), with the plain
//     bpf_send_signal helper: no BTF. But it runs at every system call's exit on the
//     machine, so it serves only until on_fork_hold is attached in its place.
//
// A collector loaded before the BTF is decoded starts with on_first_exit (early); the
// decoding starts holdBTFDelay after the first such collector, when the tool whose start
// it would have slowed has started, and each early collector then loads on_fork_hold on
// its maps, attaches it and detaches on_fork and on_first_exit (upgradeHold).
const holdBTFDelay = 200 * time.Millisecond

// holdMode picks how a collector holds new processes; tests set it to reach each program.
type holdMode int

const (
	holdAuto      holdMode = iota // on_first_exit until the BTF is decoded, then on_fork_hold
	holdFirstExit                 // on_first_exit only, never upgraded
	holdEarly                     // on_first_exit, upgraded once the BTF is decoded
)

// kernelBTF keeps the kernel's BTF, decoded once, for every collector of the process.
var kernelBTF = btf.NewCache()

var (
	btfOnce, btfLater sync.Once
	btfDone           = make(chan struct{}) // closed once Preload has run
)

// Preload decodes the kernel's BTF (and the kfunc's types, the slow first lookup) now,
// once per process; collectors loaded afterwards hold with on_fork_hold from the start.
// Errors are the first collector's to report.
func Preload() {
	btfOnce.Do(func() {
		if spec, err := kernelBTF.Kernel(); err == nil {
			var fn *btf.Func
			_ = spec.TypeByName("bpf_send_signal_task", &fn)
		}
		close(btfDone)
	})
}

// preloadLater has Preload run holdBTFDelay from the first call on.
func preloadLater() {
	btfLater.Do(func() { time.AfterFunc(holdBTFDelay, Preload) })
}

// btfDecoded reports whether Preload has run.
func btfDecoded() bool {
	select {
	case <-btfDone:
		return true
	default:
		return false
	}
}

// upgradeHold waits for the kernel's BTF, then replaces on_fork and on_first_exit by
// on_fork_hold, in an order that leaves no child unheld: on_fork_hold is attached (while
// both fork programs are, on_fork, attached first, runs first and on_fork_hold leaves its
// children alone); on_fork is detached (on_fork_hold holds every child from then on);
// once the children on_fork marked have all been back to user space (unheld is empty,
// or drainWait has passed), on_first_exit is detached. If on_fork_hold cannot be had (no
// kfunc: a kernel before 6.13), the collector keeps holding with on_first_exit
// (Stats.HoldErr says why).
func (c *Collector) upgradeHold() {
	if c.opts.holdMode == holdFirstExit {
		return
	}
	preloadLater()
	select {
	case <-btfDone:
	case <-c.quit:
		return
	}
	if c.opts.upgradeAt != nil {
		select {
		case <-c.opts.upgradeAt:
		case <-c.quit:
			return
		}
	}
	prog, err := c.loadForkHold()
	var l link.Link
	if err == nil {
		if l, err = link.AttachTracing(link.TracingOptions{Program: prog}); err != nil {
			prog.Close()
			err = classify("attach sched_process_fork (BTF, to hold new processes)", err)
		}
	}
	// Attaching and detaching wait for the kernel (RCU grace periods): not under c.mu,
	// which the consumer needs to follow and continue new processes meanwhile. Close
	// waits for this function before it releases the links.
	c.mu.Lock()
	if err != nil {
		c.holdErr = err
		c.mu.Unlock()
		return
	}
	c.links = append(c.links, l)
	c.holdProg = prog
	fork := c.earlyFork
	c.earlyFork = nil
	c.mu.Unlock()
	fork.Close()
	c.drainUnheld()
	c.mu.Lock()
	exit := c.earlyExit
	c.earlyExit = nil
	c.mu.Unlock()
	exit.Close()
}

// drainWait bounds how long upgradeHold waits for the children on_fork marked to pass
// on_first_exit: each needs only to be scheduled once.
const drainWait = time.Second

// drainUnheld waits until unheld is empty, drainWait at most, or the collector closes.
func (c *Collector) drainUnheld() {
	unheld := c.coll.Maps[snapshotMapUnheld]
	deadline := time.Now().Add(drainWait)
	for time.Now().Before(deadline) {
		var k, v uint32
		if !unheld.Iterate().Next(&k, &v) {
			return
		}
		select {
		case <-c.quit:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// loadForkHold loads on_fork_hold on the collector's maps.
func (c *Collector) loadForkHold() (*ebpf.Program, error) {
	spec, err := loadSnapshot()
	if err != nil {
		return nil, fmt.Errorf("load bpf object: %w", err)
	}
	repl := map[string]*ebpf.Map{
		snapshotMapThreads: c.thrMap,
		snapshotMapHeld:    c.heldMap,
		snapshotMapStats:   c.stats,
		snapshotMapRecords: c.coll.Maps[snapshotMapRecords],
	}
	for name, m := range repl {
		spec.Maps[name].MaxEntries = m.MaxEntries()
	}
	for name, v := range map[string]uint32{
		snapshotVarSystemWide:    0,
		snapshotVarFollowForks:   1,
		snapshotVarHoldProcesses: 1,
	} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("set %s: %w", name, err)
		}
	}
	var objs struct {
		Prog *ebpf.Program `ebpf:"on_fork_hold"`
	}
	err = spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{Cache: kernelBTF, MapReplacements: repl})
	if err != nil {
		return nil, classify("load sched_process_fork program (BTF, to hold new processes)", err)
	}
	return objs.Prog, nil
}

// attachEarlyHold attaches on_first_exit; on_fork is attached with the other tracepoints.
func (c *Collector) attachEarlyHold() error {
	l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: "sys_exit", Program: c.coll.Programs[snapshotProgOnFirstExit]})
	if err != nil {
		return classify("attach sys_exit (to hold new processes)", err)
	}
	c.earlyExit = l
	return nil
}
