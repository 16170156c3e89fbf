package vpmu

import (
	"errors"
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Open opens every copy (views disabled, truth and clock enabled). Call Start to begin.
func Open(cfg Config) (*PMU, error) {
	if len(cfg.Events) == 0 {
		return nil, errors.New("open virtual PMU: no events")
	}
	if len(cfg.Views) == 0 {
		return nil, errors.New("open virtual PMU: no view (schedule) to enforce")
	}
	for _, v := range cfg.Views {
		if v.Schedule == nil {
			return nil, fmt.Errorf("open virtual PMU: view %q has no schedule", v.Name)
		}
	}
	p := &PMU{cfg: cfg}
	ok := false
	defer func() {
		if !ok {
			p.Close()
		}
	}()
	var err error
	if cfg.Snapshots != nil {
		err = p.openSnapshots()
	} else {
		err = p.openCopies()
	}
	if err != nil {
		return nil, err
	}
	ok = true
	return p, nil
}

// openCopies opens the copies that read(2) reads: the clock, the always-on copies (the
// truth, and the copies derivable views are computed from) and every view's own copies.
func (p *PMU) openCopies() error {
	cfg := p.cfg
	c := newCopies(len(cfg.Events), len(cfg.Views), cfg.Truth)
	p.bc = c
	flags := uint64(0)
	if cfg.Inherit {
		flags |= perfabi.FlagInherit
	}
	onExec := uint64(0) // for copies that must count from the start
	if cfg.EnableOnExec {
		onExec = perfabi.FlagDisabled | perfabi.FlagEnableOnExec
	}
	// The clock is a dummy event: only its times are read, so it counts nothing in
	// kernel mode either way, and excluding the kernel lets a user open it where
	// perf_event_paranoid allows user-mode measurement only (2), as with :u events.
	ca := perf.Attr{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWDummy,
		ReadFormat: perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning,
		Flags:      flags | onExec | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV}
	var err error
	if c.clock, err = perf.Open(ca, cfg.Pid, cfg.CPU, nil); err != nil {
		return fmt.Errorf("open virtual clock: %w", err)
	}
	c.clock.Name = "vpmu-clock"
	// The always-on copies, one per distinct event: identical events (perf stat -e
	// x,x) count the same, so they share one.
	seen := map[perf.Attr]int{}
	// open opens (once per distinct attr) an always-on copy and returns its index.
	open := func(a perf.Attr, name string) (int, error) {
		a.Flags = a.Flags&^(perfabi.FlagDisabled|perfabi.FlagEnableOnExec|perfabi.FlagPinned|perfabi.FlagExclusive) | flags | onExec
		a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
		if !derivable(a) {
			// Another PMU's truth must count all the time, or the kernel would multiplex
			// it with the views' copies: pinned, it keeps a counter or reports an error.
			a.Flags |= perfabi.FlagPinned
		}
		if k, ok := seen[a]; ok {
			return k, nil
		}
		// Singletons, not a group with the clock: the kernel refuses (ECHILD) group
		// reads of inherited groups while any child task's copy of the group differs
		// from the parent's, which under load lasted longer than any retry here.
		e, err := perf.Open(a, cfg.Pid, cfg.CPU, nil)
		if err != nil {
			return 0, fmt.Errorf("open always-on copy of %s: %w", name, err)
		}
		e.Name = name
		seen[a] = len(c.events)
		c.events = append(c.events, e)
		return len(c.events) - 1, nil
	}
	var parts [][]perf.Attr
	if cfg.Truth {
		parts = truthParts(cfg.Events)
	}
	for i, d := range cfg.Events {
		c.copyOf[i] = -1
		c.derived[i] = derivable(d.Attr)
		if c.derived[i] {
			k, err := open(d.Attr, d.Name)
			if err != nil {
				return err
			}
			c.copyOf[i] = k
			if cfg.Truth {
				c.truthOf[i] = []int{k}
			}
			continue
		}
		if !cfg.Truth {
			continue
		}
		for _, a := range parts[i] {
			k, err := open(a, d.Name)
			if err != nil {
				return err
			}
			c.truthOf[i] = append(c.truthOf[i], k)
		}
	}
	if err := c.openViews(cfg, flags, onExec); err != nil {
		return err
	}
	c.opened()
	p.init()
	p.pins = c.pins()
	return nil
}

// openViews opens, disabled, the views' own copies of the events that are not derivable;
// the copies a view counts in its first configuration are enabled at the exec with onExec.
func (c *copies) openViews(cfg Config, flags, onExec uint64) error {
	first := make([][]bool, len(cfg.Views)) // first configuration of each view
	for v, view := range cfg.Views {
		first[v] = make([]bool, len(cfg.Events))
		for _, e := range view.Schedule.Counted(0) {
			if int(e) >= 0 && int(e) < len(cfg.Events) {
				first[v][e] = true
			}
		}
	}
	for vi, v := range cfg.Views {
		for i, d := range cfg.Events {
			if c.derived[i] {
				continue
			}
			a := d.Attr
			// Pinned: the kernel schedules pinned events before flexible ones, so the
			// view's copies get the counters they are switched on for even while the
			// client's own events (which it opened, and which the virtual PMU serves
			// instead) sit in the same context and would otherwise be rotated with them.
			a.Flags = a.Flags&^(perfabi.FlagEnableOnExec|perfabi.FlagExclusive) | flags | perfabi.FlagDisabled | perfabi.FlagPinned
			if first[vi][i] {
				a.Flags |= onExec
				c.on[vi][i] = onExec != 0 // enabled by the kernel at the exec
			}
			a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
			e, err := perf.Open(a, cfg.Pid, cfg.CPU, nil)
			if err != nil {
				return fmt.Errorf("open %s copy of %s: %w", v.Name, d.Name, err)
			}
			e.Name = d.Name
			c.views[vi][i] = e
		}
	}
	return nil
}

// derivable says whether an event's views can be derived from one always-on copy of it:
// software events and tracepoints, which the kernel never multiplexes, so keeping every
// one of them enabled changes nothing they count. A hardware event (or a breakpoint, or
// any other PMU's) always enabled would be multiplexed by the kernel itself on a real CPU
// (or fail for want of a debug register): its views keep copies of their own, switched
// by ioctl, so that a view of at most as many events as there are counters is counted
// exactly, as before.
func derivable(a perf.Attr) bool {
	return !viewCopies && Derivable(a)
}

// Derivable says whether the kernel never multiplexes events of a's type (software
// events and tracepoints), so that one always-on copy can stand for every view of it.
func Derivable(a perf.Attr) bool {
	return a.Type == perf.TypeSoftware || a.Type == perf.TypeTracepoint
}

// viewCopies makes every event keep view copies of its own, as hardware events do: tests
// set it to exercise that path on machines without hardware events.
var viewCopies = false

// truthParts returns, per event, the attrs of the always-on copies whose counts add up
// to its truth (nil for derivable events, which have one copy of their own). A hardware
// event's truth copies are pinned so that the kernel never multiplexes them, and each
// takes a counter: where events differ only in the privilege levels they count
// (instructions, instructions:u, instructions:k), one copy per level, user and kernel,
// gives every one of them its truth exactly (instructions = the user copy + the kernel
// copy), in two counters instead of three. The hypervisor level is taken as empty, as
// relation.BindUniverse takes it, and so is guest time: perf sets exclude_guest on
// some of one event's variants and not on others (instructions:k but not :u, here),
// and copies that differ in it alone would take counters of their own for the same
// count. A family's copies carry the guest bits of its first event.
func truthParts(events []perf.EventDesc) [][]perf.Attr {
	const (
		priv  = perfabi.FlagExcludeUser | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV
		guest = perfabi.FlagExcludeGuest | perfabi.FlagExcludeHost
	)
	// family is what decides the count (perf.CountKey) but for the privilege levels.
	family := func(a perf.Attr) perf.Attr {
		f := perf.CountKey(a)
		f.Flags &^= priv
		return f
	}
	// levels: bit 0 user, bit 1 kernel.
	levels := func(a perf.Attr) int {
		l := 0
		if a.Flags&perfabi.FlagExcludeUser == 0 {
			l |= 1
		}
		if a.Flags&perfabi.FlagExcludeKern == 0 {
			l |= 2
		}
		return l
	}
	split := map[perf.Attr]bool{}    // families whose events count different levels
	first := map[perf.Attr]int{}     // family → levels of its first event
	guests := map[perf.Attr]uint64{} // family → guest bits of its first event
	for _, d := range events {
		if derivable(d.Attr) {
			continue
		}
		f := family(d.Attr)
		if l, ok := first[f]; ok {
			split[f] = split[f] || l != levels(d.Attr)
			continue
		}
		first[f], guests[f] = levels(d.Attr), d.Attr.Flags&guest
	}
	out := make([][]perf.Attr, len(events))
	for i, d := range events {
		if derivable(d.Attr) {
			continue
		}
		key := family(d.Attr)
		f := key
		f.Flags |= guests[key]
		l := levels(d.Attr)
		if !split[key] || l == 0 {
			a := f
			a.Flags |= d.Attr.Flags & priv
			out[i] = []perf.Attr{a}
			continue
		}
		// Spelled from the family so that :u (which also excludes the hypervisor) and
		// the user part of an unmodified event are one copy.
		if l == 3 {
			out[i] = perf.LevelParts(f)
			continue
		}
		a := f
		a.Flags |= perfabi.FlagExcludeHV | perfabi.FlagExcludeKern
		if l == 2 {
			a.Flags ^= perfabi.FlagExcludeKern | perfabi.FlagExcludeUser
		}
		out[i] = []perf.Attr{a}
	}
	return out
}
