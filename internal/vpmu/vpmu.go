package vpmu

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/schedule"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// MuxInterval returns the kernel's multiplexing interval: perf_event_mux_interval_ms of the
// cpu PMU, else of the software PMU, else of any PMU, else 4 ms.
func MuxInterval() time.Duration {
	dir := "/sys/bus/event_source/devices"
	cands := []string{"cpu", "cpu_core", "software"}
	if ents, err := os.ReadDir(dir); err == nil {
		for _, e := range ents {
			cands = append(cands, e.Name())
		}
	}
	for _, p := range cands {
		b, err := os.ReadFile(filepath.Join(dir, p, "perf_event_mux_interval_ms"))
		if err != nil {
			continue
		}
		if ms, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return 4 * time.Millisecond
}

// Spec builds the scheduling problem of events: the {a,b} groups as user groups, fixed
// events on fixed counters, counters programmable counters.
func Spec(events []perf.EventDesc, counters int, fixed []int) schedule.Spec {
	sp := schedule.Spec{Events: len(events), Counters: counters}
	for _, f := range fixed {
		sp.Fixed = append(sp.Fixed, inference.EventID(f))
	}
	for i := 0; i < len(events); {
		j := i + 1
		for j < len(events) && events[j].Grouped && events[i].Grouped && events[j].Group == events[i].Group {
			j++
		}
		if j-i > 1 {
			g := make([]inference.EventID, 0, j-i)
			for k := i; k < j; k++ {
				g = append(g, inference.EventID(k))
			}
			sp.Groups = append(sp.Groups, g)
		}
		i = j
	}
	return sp
}

// KernelSchedule is the kernel's round robin of the events' flexible groups (see
// schedule.Kernel).
func KernelSchedule(events []perf.EventDesc, counters int, fixed []int) (*schedule.Schedule, error) {
	return schedule.Kernel(Spec(events, counters, fixed))
}

// View is one schedule enforced on its own copy of the events.
type View struct {
	Name     string
	Schedule *schedule.Schedule
}

// Config says what to virtualise.
type Config struct {
	Events []perf.EventDesc // the client's events, in order
	Views  []View           // at least one
	Truth  bool             // keep always-on truth copies
	Pid    int              // target task (perf.ThisPid = caller, -1 = every task on CPU)
	CPU    int              // perf.AnyCPU for a task target
	// Inherit counts threads and processes the target creates after Open.
	Inherit bool
	// Snapshots, when set, reads every copy through a snapshotting collector instead of
	// read(2) at every Step: it is called once (see SnapshotRequest), and the collector
	// must follow the target's threads itself (and its children, with Inherit). Step then
	// blocks until the collector's next snapshot (a slice in which the target did not run
	// gives none, as the kernel does not rotate an inactive task context either) and
	// returns io.EOF after the target has exited and its final snapshot was returned.
	// Split, Flush, Virtual and TruthNow read the copies now through the collector's Peek.
	// Package bpf's collector fits (see internal/collect). Needs Pid > 0.
	Snapshots func(SnapshotRequest) (Switchable, error)
	// Interval is the snapshotting collector's slice; 0 means MuxInterval.
	Interval time.Duration
	// EnableOnExec makes every copy start counting at the target's next execve, as perf
	// stat's events do on the command it starts: the clock, the truth copies and each
	// view's first configuration are opened with enable_on_exec (with Snapshots, the
	// collector is asked to do the same: SnapshotRequest.EnableOnExec).
	EnableOnExec bool
}

// PMU is an open virtual PMU. See the package doc.
type PMU struct {
	cfg   Config
	clock *perf.Event // dummy, always on: virtual time_enabled
	// copies are the always-on copies: one per distinct derived event (see derivable),
	// and with Truth the pinned truth copies of the others (see truthParts). copyOf[i]
	// is derived event i's copy (-1: none).
	copies []*perf.Event
	copyOf []int
	// truthOf[i] are the copies whose counts add up to event i's truth: its own copy, or,
	// for a hardware event whose privilege levels other events split (instructions next
	// to instructions:u and instructions:k), one pinned copy per level (see truthParts).
	truthOf [][]int
	derived []bool // event i's views are derived from its always-on copy: no view copies
	// views[v][i] is view v's own copy of event i, switched by ioctl; nil for derived
	// events and with a snapshotting collector.
	views [][]*perf.Event

	step      int
	pos       int            // schedule position: configurations entered so far (Split keeps it)
	on        [][]bool       // per view, per event: enabled now
	wasOn     [][]bool       // scratch: enabled during the slice being ended
	next      [][]bool       // scratch: the next configuration
	viewVals  [][]perf.Count // scratch: cumulative view values read at this step
	prevView  [][]perf.Count // cumulative at the last read, per view and event
	running   [][]uint64     // virtual time_running accrued at completed slices
	prevTruth []uint64
	prevClock uint64
	lastWall  int64

	truthVals []uint64     // cumulative truth values of the current read
	copyVals  []uint64     // per copy: cumulative value at this step's read
	prevCopy  []uint64     // per copy: cumulative value at the last step's read
	readAt    []int        // per copy: the round (gen) in which copyVals was read
	gen       int          // read rounds begun
	srd       perf.Reading // scratch for single reads
	sbuf      [24]byte
	started   bool

	bc      Switchable // with Snapshots: every copy, in bpfIndex order
	eof     bool
	peekIdx []int        // with Snapshots: every copy's index, for Peek
	peekBuf []perf.Count // scratch for peekAll
	peekTwo [2]perf.Count
}

// peekAll reads every copy now through the snapshotting collector.
func (p *PMU) peekAll() ([]perf.Count, error) {
	if len(p.peekIdx) == 0 {
		n := p.bpfIndex(len(p.cfg.Views), 0)
		p.peekIdx, p.peekBuf = make([]int, n), make([]perf.Count, n)
		for k := range p.peekIdx {
			p.peekIdx[k] = k
		}
	}
	if err := p.bc.Peek(p.peekIdx, p.peekBuf); err != nil {
		return nil, err
	}
	return p.peekBuf, nil
}

// bpfIndex is the position of a copy in the bpf collector's event list: the clock, the
// truth copies, then each view's copies.
func (p *PMU) bpfIndex(view, i int) int {
	base := 1
	if p.cfg.Truth {
		base += len(p.cfg.Events)
	}
	return base + view*len(p.cfg.Events) + i
}

// SnapshotRequest is what Config.Snapshots is asked to collect.
type SnapshotRequest struct {
	// Attrs are all the copies: the clock, the truth copies, then each view's copies
	// (view copies carry the disabled bit until scheduled); no inherit, no
	// enable_on_exec bits (Inherit and EnableOnExec say those).
	Attrs []perf.Attr
	Pid   int           // the target task
	Slice time.Duration // snapshot period
	// Inherit: count the threads and processes the target creates, as inherited events
	// do (Config.Inherit).
	Inherit bool
	// EnableOnExec: the copies of the target's present threads start counting at its
	// next execve (Config.EnableOnExec).
	EnableOnExec bool
}

// Switchable is a snapshotting collector whose events can be switched on and off at its
// snapshots, all the virtual PMU needs from one.
type Switchable interface {
	perf.Collector
	SetEnabled(i int, on bool) error
	// Wait blocks until Next would return at once (a slice ended, the target is gone and
	// its final values can be read, or the collector failed or was closed), without
	// consuming anything. Whatever Next must wait for, Wait waits for: the Runner calls
	// Next with its lock held, so a tool's reads wait for as long as Next takes (a bpf
	// collector that waited for an exiting target's threads in Next held them up to 1s).
	Wait() error
	// Peek returns what Next would report for the events listed if the slice ended
	// now, without ending it.
	Peek(events []int, out []perf.Count) error
}

// Step is what one multiplexing slice produced.
type Step struct {
	Index int
	// Idle says the target did not run since the previous step: nothing was recorded
	// and no view rotated, as the kernel does not rotate an inactive task context; what
	// happened meanwhile goes to the next slice. Views and Truth are nil.
	Idle   bool
	WallNs int64             // wall-clock length of the slice
	Views  []inference.Slice // one per view, Readings in EventID order
	Truth  []uint64          // exact per-event deltas (nil without Truth)
}

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
	if cfg.Snapshots != nil {
		if err := p.openSnapshots(); err != nil {
			return nil, err
		}
		ok = true
		return p, nil
	}
	flags := uint64(0)
	if cfg.Inherit {
		flags |= perf.FlagInherit
	}
	onExec := uint64(0) // for copies that must count from the start
	if cfg.EnableOnExec {
		onExec = perf.FlagDisabled | perf.FlagEnableOnExec
	}
	first := make([][]bool, len(cfg.Views)) // first configuration of each view
	for v, view := range cfg.Views {
		first[v] = make([]bool, len(cfg.Events))
		for _, e := range view.Schedule.Counted(0) {
			if int(e) >= 0 && int(e) < len(cfg.Events) {
				first[v][e] = true
			}
		}
	}
	// The clock is a dummy event: only its times are read, so it counts nothing in
	// kernel mode either way, and excluding the kernel lets a user open it where
	// perf_event_paranoid allows user-mode measurement only (2), as with :u events.
	ca := perf.Attr{Type: perf.TypeSoftware, Size: perf.AttrSize, Config: perf.SWDummy,
		ReadFormat: perf.FormatTotalTimeEnabled | perf.FormatTotalTimeRunning,
		Flags:      flags | onExec | perf.FlagExcludeKern | perf.FlagExcludeHV}
	var err error
	if p.clock, err = perf.Open(ca, cfg.Pid, cfg.CPU, nil); err != nil {
		return nil, fmt.Errorf("open virtual clock: %w", err)
	}
	p.clock.Name = "vpmu-clock"
	// The always-on copies, one per distinct event: identical events (perf stat -e
	// x,x) count the same, so they share one.
	p.copyOf = make([]int, len(cfg.Events))
	p.truthOf = make([][]int, len(cfg.Events))
	p.derived = make([]bool, len(cfg.Events))
	seen := map[perf.Attr]int{}
	// open opens (once per distinct attr) an always-on copy and returns its index.
	open := func(a perf.Attr, name string) (int, error) {
		a.Flags = a.Flags&^(perf.FlagDisabled|perf.FlagEnableOnExec|perf.FlagPinned|perf.FlagExclusive) | flags | onExec
		a.ReadFormat = perf.FormatTotalTimeEnabled | perf.FormatTotalTimeRunning
		if !derivable(a) {
			// Another PMU's truth must count all the time, or the kernel would multiplex
			// it with the views' copies: pinned, it keeps a counter or reports an error.
			a.Flags |= perf.FlagPinned
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
		seen[a] = len(p.copies)
		p.copies = append(p.copies, e)
		return len(p.copies) - 1, nil
	}
	var parts [][]perf.Attr
	if cfg.Truth {
		parts = truthParts(cfg.Events)
	}
	for i, d := range cfg.Events {
		p.copyOf[i] = -1
		p.derived[i] = derivable(d.Attr)
		if p.derived[i] {
			k, err := open(d.Attr, d.Name)
			if err != nil {
				return nil, err
			}
			p.copyOf[i] = k
			if cfg.Truth {
				p.truthOf[i] = []int{k}
			}
			continue
		}
		if !cfg.Truth {
			continue
		}
		for _, a := range parts[i] {
			k, err := open(a, d.Name)
			if err != nil {
				return nil, err
			}
			p.truthOf[i] = append(p.truthOf[i], k)
		}
	}
	for vi, v := range cfg.Views {
		var evs []*perf.Event
		for i, d := range cfg.Events {
			if p.derived[i] {
				evs = append(evs, nil)
				continue
			}
			a := d.Attr
			// Pinned: the kernel schedules pinned events before flexible ones, so the
			// view's copies get the counters they are switched on for even while the
			// client's own events (which it opened, and which the virtual PMU serves
			// instead) sit in the same context and would otherwise be rotated with them.
			a.Flags = a.Flags&^(perf.FlagEnableOnExec|perf.FlagExclusive) | flags | perf.FlagDisabled | perf.FlagPinned
			if first[vi][i] {
				a.Flags |= onExec
			}
			a.ReadFormat = perf.FormatTotalTimeEnabled | perf.FormatTotalTimeRunning
			e, err := perf.Open(a, cfg.Pid, cfg.CPU, nil)
			if err != nil {
				return nil, fmt.Errorf("open %s copy of %s: %w", v.Name, d.Name, err)
			}
			e.Name = d.Name
			evs = append(evs, e)
		}
		p.views = append(p.views, evs)
		p.on = append(p.on, make([]bool, len(cfg.Events)))
		p.wasOn = append(p.wasOn, make([]bool, len(cfg.Events)))
		p.next = append(p.next, make([]bool, len(cfg.Events)))
		p.viewVals = append(p.viewVals, make([]perf.Count, len(cfg.Events)))
		p.prevView = append(p.prevView, make([]perf.Count, len(cfg.Events)))
		p.running = append(p.running, make([]uint64, len(cfg.Events)))
	}
	p.prevTruth = make([]uint64, len(cfg.Events))
	p.truthVals = make([]uint64, len(cfg.Events))
	p.copyVals = make([]uint64, len(p.copies))
	p.prevCopy = make([]uint64, len(p.copies))
	p.readAt = make([]int, len(p.copies))
	ok = true
	return p, nil
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

// Pins reports whether the PMU holds pinned copies (hardware events: views and truth).
// They take real counters from the moment they are enabled until closed, so a PMU
// replaced by another must be closed before its successor starts, or the two together
// may want more counters than the PMU has and the kernel puts a copy in error state for
// good.
func (p *PMU) Pins() bool {
	for _, d := range p.derived {
		if !d {
			return true
		}
	}
	return false
}

// Events is the number of client events.
func (p *PMU) Events() int { return len(p.cfg.Events) }

// Start enables the first configuration of every view.
func (p *PMU) Start() error {
	if p.started {
		return errors.New("start virtual PMU: already started")
	}
	p.started = true
	p.lastWall = perf.MonotonicNs()
	if p.cfg.EnableOnExec && p.bc == nil {
		// The first configuration is enabled by the kernel at exec.
		for v, view := range p.cfg.Views {
			for _, e := range view.Schedule.Counted(0) {
				if int(e) >= 0 && int(e) < len(p.on[v]) {
					p.on[v][e] = true
				}
			}
		}
		return nil
	}
	return p.apply(0)
}

// want fills p.next with configuration t of every view.
func (p *PMU) want(t int) {
	for v, view := range p.cfg.Views {
		clear(p.next[v])
		for _, e := range view.Schedule.Counted(t) {
			if int(e) >= 0 && int(e) < len(p.next[v]) {
				p.next[v][e] = true
			}
		}
	}
}

// apply switches every view to configuration t: disable leaving events, enable entering.
func (p *PMU) apply(t int) error {
	for v, view := range p.cfg.Views {
		want := make([]bool, len(p.cfg.Events))
		for _, e := range view.Schedule.Counted(t) {
			if int(e) >= 0 && int(e) < len(want) {
				want[e] = true
			}
		}
		for i := range p.views[v] {
			if p.on[v][i] && !want[i] {
				if err := p.toggle(v, i, false); err != nil {
					return err
				}
				p.on[v][i] = false
			}
		}
		for i := range p.views[v] {
			if !p.on[v][i] && want[i] {
				if err := p.toggle(v, i, true); err != nil {
					return err
				}
				p.on[v][i] = true
			}
		}
	}
	return nil
}

func (p *PMU) toggle(v, i int, on bool) error {
	if p.bc != nil {
		return p.bc.SetEnabled(p.bpfIndex(v, i), on)
	}
	if p.views[v][i] == nil {
		return nil // derived: switching is p.on alone
	}
	if on {
		return p.views[v][i].Enable(false)
	}
	return p.views[v][i].Disable(false)
}

// Step ends the current slice: it reads what counted during it, returns the per-view
// observations and truth, and moves every view to its next configuration. Events of an
// exited target can still be read, so a final Step after the target ends is valid.
//
// With the bpf collector, Step blocks until the collector's next snapshot (a slice in
// which the target did not run gives none, as the kernel does not rotate an inactive
// task context either) and returns io.EOF once the target has exited and its final
// snapshot was returned. A snapshot that finds nothing new since the last step or Split
// (one that came between the end of the collector's slice and this step) is idle.
func (p *PMU) Step() (Step, error) { return p.stepSlice(false, true) }

// Split ends the current slice now without rotating: the next slice keeps the current
// configuration until the next Step. A reader uses it to have a slice boundary at the
// instant it reads, without changing which events count when. With a snapshotting
// collector the copies are read through its Peek, and its next snapshot ends the rest of
// the slice.
func (p *PMU) Split() (Step, error) { return p.stepSlice(false, false) }

// Flush is Step for the last slice of a run: it ends the slice even if the target did
// not run in it, so that nothing counted is left out.
func (p *PMU) Flush() (Step, error) { return p.stepSlice(true, true) }

func (p *PMU) stepSlice(force, rotate bool) (Step, error) {
	if !p.started {
		return Step{}, errors.New("step virtual PMU: not started")
	}
	var (
		clock uint64
		truth func(i int) uint64
		view  func(v, i int) (perf.Count, error)
		now   int64
		// switched: the next configuration is already applied, and wasOn holds the
		// events that counted in the ending slice.
		switched bool
	)
	if p.bc != nil && rotate && !force {
		if p.eof {
			return Step{}, io.EOF
		}
		snap, err := p.bc.Next()
		if errors.Is(err, io.EOF) {
			p.eof = true
			return Step{}, io.EOF
		}
		if err != nil {
			return Step{}, fmt.Errorf("step virtual PMU: %w", err)
		}
		if snap.Counts[0].Enabled <= p.prevClock {
			// A split (a tool's read, which took the Runner's lock after this slice
			// ended and before the step) already reported the slice, and the target has
			// not run since: idle, as a read(2) step after no run, rather than a slice
			// of no time. The views keep their configuration for the next slice, which
			// the collector gates with the events enabled now.
			return Step{Index: p.step, Idle: true}, nil
		}
		now = perf.MonotonicNs()
		clock = snap.Counts[0].Enabled
		truth = func(i int) uint64 { return snap.Counts[1+i].Value }
		view = func(v, i int) (perf.Count, error) { return snap.Counts[p.bpfIndex(v, i)], nil }
	} else if p.bc != nil {
		// Split or Flush: every copy as it is now, read through the collector without
		// ending its slice, so that the next snapshot covers the rest of it. Nothing
		// rotates (a Flush ends the run): the collector applies a switch to the slice
		// since its last snapshot, which this one has already partly reported.
		rotate = false
		counts, err := p.peekAll()
		if err != nil {
			return Step{}, fmt.Errorf("step virtual PMU: %w", err)
		}
		if counts[0].Enabled <= p.prevClock && !force {
			return Step{Index: p.step, Idle: true}, nil
		}
		now = perf.MonotonicNs()
		clock = counts[0].Enabled
		truth = func(i int) uint64 { return counts[1+i].Value }
		view = func(v, i int) (perf.Count, error) { return counts[p.bpfIndex(v, i)], nil }
	} else {
		// One read of the clock says whether the target ran at all, before anything is
		// switched (an idle step must not rotate).
		c, err := p.readOne(p.clock)
		if err != nil {
			return Step{}, err
		}
		if c.Enabled == p.prevClock && !force {
			return Step{Index: p.step, Idle: true}, nil
		}
		// Then, event by event, read the always-on copy: that read is the event's slice
		// boundary. A derived event's views advance by exactly what the copy counted
		// since the last step if they scheduled it in the ending slice, and switch by
		// bookkeeping alone, atomically at the boundary as a real PMU switches. An event
		// with view copies of its own (hardware events, see derivable) has them switched
		// and read right after its truth: a leaving copy is disabled before it is read,
		// so nothing leaks into its next turn, and an entering one is enabled at once;
		// the few events that happen in between land in the neighbouring slice. Reads
		// of another task's active events cost an IPI each, hundreds of microseconds a
		// round on a loaded VM, so the copies are read once per step.
		if rotate {
			p.want(p.pos + 1)
		} else {
			p.want(p.pos)
		}
		now = perf.MonotonicNs()
		clock = c.Enabled
		p.gen++
		for i := range p.cfg.Events {
			if ks := p.truthOf[i]; len(ks) > 0 || p.copyOf[i] >= 0 {
				if len(ks) == 0 {
					ks = []int{p.copyOf[i]}
				}
				p.truthVals[i] = 0
				for _, k := range ks {
					if p.readAt[k] != p.gen {
						tc, err := p.readOne(p.copies[k])
						if err != nil {
							return Step{}, err
						}
						p.copyVals[k], p.readAt[k] = tc.Value, p.gen
					}
					p.truthVals[i] += p.copyVals[k]
				}
			}
			for v := range p.views {
				was, will := p.on[v][i], p.next[v][i]
				p.wasOn[v][i] = was
				if p.derived[i] {
					if k := p.copyOf[i]; was {
						p.viewVals[v][i] = p.prevView[v][i]
						if p.copyVals[k] >= p.prevCopy[k] {
							p.viewVals[v][i].Value += p.copyVals[k] - p.prevCopy[k]
						}
					}
					p.on[v][i] = will
					continue
				}
				if was && !will {
					if err := p.toggle(v, i, false); err != nil {
						return Step{}, err
					}
				}
				if was {
					vc, err := p.readOne(p.views[v][i])
					if err != nil {
						return Step{}, err
					}
					p.viewVals[v][i] = vc
				}
				p.on[v][i] = will
			}
		}
		// Entering copies are enabled once every leaving one is off: a view's copies are
		// pinned, and a pinned copy enabled while the counters are all taken would go
		// into error state instead of counting.
		for v := range p.views {
			for i := range p.cfg.Events {
				if !p.derived[i] && !p.wasOn[v][i] && p.on[v][i] {
					if err := p.toggle(v, i, true); err != nil {
						return Step{}, err
					}
				}
			}
		}
		copy(p.prevCopy, p.copyVals)
		switched = true
		truth = func(i int) uint64 { return p.truthVals[i] }
		view = func(v, i int) (perf.Count, error) { return p.viewVals[v][i], nil }
	}
	st := Step{Index: p.step, WallNs: now - p.lastWall}
	p.lastWall = now
	// Running totals never decrease: a delta is only counted once the totals pass what
	// was already reported. read(2) never goes back, and package bpf's collector makes
	// its next snapshot at least what a Peek (a split) read; a Switchable that did not
	// would have the difference counted once, later, rather than twice.
	enabled := uint64(0)
	if clock > p.prevClock {
		enabled = clock - p.prevClock
		p.prevClock = clock
	}
	if p.cfg.Truth {
		st.Truth = make([]uint64, len(p.cfg.Events))
		for i := range st.Truth {
			if v := truth(i); v > p.prevTruth[i] {
				st.Truth[i] = v - p.prevTruth[i]
				p.prevTruth[i] = v
			}
		}
	}
	// The slice lasts the time the target ran in it (its virtual enabled time), the
	// time base of the kernel's own scaling; idle stretches were merged into it above.
	dur := float64(max(enabled, 1))
	if !switched {
		for v := range p.on {
			copy(p.wasOn[v], p.on[v])
		}
	}
	for v := range p.views {
		sl := inference.Slice{Index: p.step, Duration: dur, Readings: make([]inference.Reading, len(p.cfg.Events))}
		for i := range p.views[v] {
			r := inference.Reading{Event: inference.EventID(i), Enabled: enabled}
			if p.wasOn[v][i] {
				c, err := view(v, i)
				if err != nil {
					return Step{}, err
				}
				if c.Value >= p.prevView[v][i].Value {
					r.Count = c.Value - p.prevView[v][i].Value
					p.prevView[v][i] = c
				}
				// Scheduled for the whole slice: on a real PMU its running time is the
				// slice's enabled time. The copy's own running time falls short by the
				// instants spent switching, an artefact of emulation, not multiplexing.
				r.Running = enabled
				p.running[v][i] += enabled
			}
			sl.Readings[i] = r
		}
		st.Views = append(st.Views, sl)
	}
	p.step++
	if rotate {
		p.pos++
	}
	if !switched {
		if err := p.apply(p.pos); err != nil {
			return Step{}, err
		}
	}
	return st, nil
}

// Virtual returns what a client reading event i through view v sees now: the copy's
// cumulative count, the virtual clock's enabled time, and as running time the enabled
// time of the slices in which the event was scheduled (including the current one so far).
func (p *PMU) Virtual(v, i int) (perf.Count, error) {
	if v < 0 || v >= len(p.views) || i < 0 || i >= len(p.cfg.Events) {
		return perf.Count{}, fmt.Errorf("read virtual count: view %d event %d out of range", v, i)
	}
	var c perf.Count
	var clk perf.Count
	if p.bc != nil {
		// The copy and the clock now, as the collector would report them if the slice
		// ended here: a tool reading between snapshots sees values of the instant it
		// reads, as with read(2). Never below what the last step reported.
		if err := p.bc.Peek([]int{0, p.bpfIndex(v, i)}, p.peekTwo[:]); err != nil {
			return perf.Count{}, fmt.Errorf("read virtual count: %w", err)
		}
		c, clk = p.peekTwo[1], p.peekTwo[0]
		if c.Value < p.prevView[v][i].Value {
			c = p.prevView[v][i]
		}
	} else if p.derived[i] {
		// The view's count at the last step, plus what the always-on copy has counted
		// since if the view schedules the event now.
		c = p.prevView[v][i]
		if p.on[v][i] {
			k := p.copyOf[i]
			tc, err := p.readOne(p.copies[k])
			if err != nil {
				return perf.Count{}, err
			}
			if tc.Value >= p.prevCopy[k] {
				c.Value += tc.Value - p.prevCopy[k]
			}
		}
	} else {
		var err error
		if c, err = p.views[v][i].ReadCount(); err != nil {
			return perf.Count{}, err
		}
	}
	if p.bc == nil {
		var err error
		if clk, err = p.readOne(p.clock); err != nil {
			return perf.Count{}, err
		}
	}
	c.Enabled = max(clk.Enabled, p.prevClock)
	c.Running = p.running[v][i]
	if p.on[v][i] && clk.Enabled > p.prevClock {
		c.Running += clk.Enabled - p.prevClock
	}
	return c, nil
}

// TruthNow returns the truth copy of event i's cumulative count now (Truth must be set),
// for a reader that wants the truth at the instant it read Virtual.
func (p *PMU) TruthNow(i int) (uint64, error) {
	if p.bc != nil && p.cfg.Truth && i >= 0 && i < len(p.cfg.Events) {
		if err := p.bc.Peek([]int{1 + i}, p.peekTwo[:1]); err != nil {
			return 0, fmt.Errorf("read truth of event %d: %w", i, err)
		}
		return max(p.peekTwo[0].Value, p.prevTruth[i]), nil
	}
	if !p.cfg.Truth || p.bc != nil || i < 0 || i >= len(p.truthOf) || len(p.truthOf[i]) == 0 {
		return 0, fmt.Errorf("read truth of event %d: no truth copy (Truth unset or out of range)", i)
	}
	var v uint64
	for _, k := range p.truthOf[i] {
		c, err := p.readOne(p.copies[k])
		if err != nil {
			return 0, err
		}
		v += c.Value
	}
	return v, nil
}

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
		priv  = perf.FlagExcludeUser | perf.FlagExcludeKern | perf.FlagExcludeHV
		guest = perf.FlagExcludeGuest | perf.FlagExcludeHost
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
		if a.Flags&perf.FlagExcludeUser == 0 {
			l |= 1
		}
		if a.Flags&perf.FlagExcludeKern == 0 {
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
		a.Flags |= perf.FlagExcludeHV | perf.FlagExcludeKern
		if l == 2 {
			a.Flags ^= perf.FlagExcludeKern | perf.FlagExcludeUser
		}
		out[i] = []perf.Attr{a}
	}
	return out
}

// readOne reads one non-group event without allocating.
func (p *PMU) readOne(e *perf.Event) (perf.Count, error) {
	if err := e.ReadInto(p.sbuf[:], &p.srd); err != nil {
		return perf.Count{}, err
	}
	if len(p.srd.Values) != 1 {
		return perf.Count{}, fmt.Errorf("read %s: %d values, want 1", e.Name, len(p.srd.Values))
	}
	return perf.Count{Value: p.srd.Values[0].Value, Enabled: p.srd.Enabled, Running: p.srd.Running}, nil
}

// Close closes every event. It is safe on a partly opened PMU.
func (p *PMU) Close() error {
	var first error
	cl := func(e *perf.Event) {
		if e != nil && e.FD() >= 0 {
			if err := e.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	for _, vs := range p.views {
		for _, e := range vs {
			cl(e)
		}
	}
	for _, e := range p.copies {
		cl(e)
	}
	cl(p.clock)
	if p.bc != nil {
		if err := p.bc.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
