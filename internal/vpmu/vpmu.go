package vpmu

import (
	"errors"
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
	// read(2) at every Step: it is called once (see perf.SnapshotRequest), and the collector
	// must follow the target's threads itself (and its children, with Inherit). Step then
	// blocks until the collector's next snapshot (a slice in which the target did not run
	// gives none, as the kernel does not rotate an inactive task context either) and
	// returns io.EOF after the target has exited and its final snapshot was returned.
	// Split, Flush, Virtual and TruthNow read the copies now through the collector's Peek.
	// Package bpf's collector fits (bpf.Snapshots). Needs Pid > 0.
	Snapshots func(perf.SnapshotRequest) (perf.Collector, error)
	// Interval is the snapshotting collector's slice; 0 means MuxInterval.
	Interval time.Duration
	// EnableOnExec makes every copy start counting at the target's next execve, as perf
	// stat's events do on the command it starts: the clock, the truth copies and each
	// view's first configuration are opened with enable_on_exec (with Snapshots, the
	// collector is asked to do the same: perf.SnapshotRequest.EnableOnExec).
	EnableOnExec bool
}

// PMU is an open virtual PMU. See the package doc.
type PMU struct {
	cfg Config
	// bc reads every copy, in bpfIndex order: the snapshotting collector with
	// Config.Snapshots, else the read(2) collector of the copies Open opened (copies).
	bc    perf.Collector
	paced bool // bc paces the steps (a snapshotting collector): Step waits for its snapshot
	pins  bool // some copies are pinned (hardware events): see Pins

	step      int
	pos       int            // schedule position: configurations entered so far (Split keeps it)
	on        [][]bool       // per view, per event: enabled now
	wasOn     [][]bool       // scratch: enabled during the slice being ended
	prevView  [][]perf.Count // cumulative at the last read, per view and event
	running   [][]uint64     // virtual time_running accrued at completed slices
	prevTruth []uint64
	prevClock uint64
	lastWall  int64
	started   bool

	eof     bool
	peekIdx []int        // every copy's index, for Peek
	peekBuf []perf.Count // scratch for peekAll
	peekAt  [2]int       // scratch indices for Virtual and TruthNow
	peekTwo [2]perf.Count
}

// init makes the per-view and per-event state.
func (p *PMU) init() {
	n := len(p.cfg.Events)
	for range p.cfg.Views {
		p.on = append(p.on, make([]bool, n))
		p.wasOn = append(p.wasOn, make([]bool, n))
		p.prevView = append(p.prevView, make([]perf.Count, n))
		p.running = append(p.running, make([]uint64, n))
	}
	p.prevTruth = make([]uint64, n)
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

// Pins reports whether the PMU holds pinned copies (hardware events: views and truth).
// They take real counters from the moment they are enabled until closed, so a PMU
// replaced by another must be closed before its successor starts, or the two together
// may want more counters than the PMU has and the kernel puts a copy in error state for
// good.
func (p *PMU) Pins() bool { return p.pins }

// Events is the number of client events.
func (p *PMU) Events() int { return len(p.cfg.Events) }

// Start enables the first configuration of every view.
func (p *PMU) Start() error {
	if p.started {
		return errors.New("start virtual PMU: already started")
	}
	p.started = true
	p.lastWall = perf.MonotonicNs()
	return p.apply(0)
}

// Close closes every event. It is safe on a partly opened PMU.
func (p *PMU) Close() error {
	if p.bc == nil {
		return nil
	}
	return p.bc.Close()
}
