package eval

import (
	"fmt"
	"math"
	"os/exec"
	"time"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

// OwnSchedule builds bayesperf's own schedule for a run, or returns nil when no such
// scheduler is available (then bayesperf is reported absent).
func OwnSchedule(sp schedule.Spec, events []string, rels []relation.Relation) (*schedule.Schedule, error) {
	return ownSchedule(sp, events, rels)
}

// FromTrace replays a trace at counters programmable counters with the named fixed
// events: the kernel's round robin (singleton flexible groups in column order) and, when
// available, bayesperf's schedule.
func FromTrace(tr *replay.Trace, counters int, fixed []string, rels []relation.Relation) (Observations, error) {
	return FromTraceAt(tr, counters, fixed, rels, 0)
}

// FromTraceAt is FromTrace with bayesperf's schedule started phase configurations into
// its cycle (schedule.Schedule.Rotated); the kernel's round robin is the same.
func FromTraceAt(tr *replay.Trace, counters int, fixed []string, rels []relation.Relation, phase int) (Observations, error) {
	sp, err := replay.KernelSpec(tr, counters, fixed)
	if err != nil {
		return Observations{}, err
	}
	ks, err := schedule.Kernel(sp)
	if err != nil {
		return Observations{}, fmt.Errorf("build kernel schedule: %w", err)
	}
	obs := Observations{Events: tr.Events, Truth: tr.Counts, Kernel: replay.Simulate(tr, ks)}
	own, err := OwnSchedule(sp, tr.Events, rels)
	if err != nil {
		return Observations{}, fmt.Errorf("build bayesperf schedule: %w", err)
	}
	if own != nil {
		obs.Own = replay.Simulate(tr, own.Rotated(phase))
		obs.Phases = own.Len()
	}
	return obs, nil
}

// Live describes a live run.
type Live struct {
	Events   []perf.EventDesc
	Fixed    []int // indices into Events
	Counters int
	Interval time.Duration // multiplexing interval; 0: the kernel's
	Rels     []relation.Relation
	// Collector is "read" (default) or "bpf": how the virtual PMU reads its copies
	// (ResolveCollector turns "auto" into one of them).
	Collector string
}

// LiveRun is a live run's observations plus what the command did.
type LiveRun struct {
	Obs      Observations
	Interval time.Duration
	WallNs   int64
	ExitErr  error
	// Collector is the collector the run used: "read" or "bpf".
	Collector string
	// SliceWallNs is each slice's wall-clock length.
	SliceWallNs []int64
}

// Trace returns the run's truth as a trace (replay's CSV format): one row per slice with
// the exact count of every event, the slice's running time in ns in column time_ns and
// its wall-clock length in wall_ns. Replaying it with --time-column time_ns at the same
// counters simulates the same kernel round robin on the same truth.
func (lr *LiveRun) Trace() *replay.Trace {
	tr := &replay.Trace{Events: lr.Obs.Events, Counts: lr.Obs.Truth, Meta: map[string][]float64{}}
	unit := float64(lr.Interval.Nanoseconds())
	for t, s := range lr.Obs.Kernel {
		ns := s.Duration * unit
		tr.Durations = append(tr.Durations, ns)
		tr.Meta["time_ns"] = append(tr.Meta["time_ns"], math.Round(ns))
		if t < len(lr.SliceWallNs) {
			tr.Meta["wall_ns"] = append(tr.Meta["wall_ns"], float64(lr.SliceWallNs[t]))
		}
	}
	return tr
}

// RunLive runs cmd under the virtual PMU with the kernel's round robin, bayesperf's own
// schedule (when available) and truth copies, and returns the observations.
func RunLive(l Live, cmd *exec.Cmd) (*LiveRun, error) {
	names, views, err := liveViews(l)
	if err != nil {
		return nil, err
	}
	own := len(views) > 1
	cfg := vpmu.Config{Events: l.Events, Views: views, Truth: true}
	switch l.Collector {
	case "", "read":
	case "bpf":
		cfg.Snapshots = BPFSnapshots
	default:
		return nil, fmt.Errorf("run live: unknown collector %q (want read or bpf)", l.Collector)
	}
	res, err := vpmu.RunCommand(cfg, cmd, l.Interval)
	if err != nil {
		return nil, err
	}
	lr := liveRun(res, names, own)
	if cfg.Snapshots != nil {
		lr.Collector = "bpf"
	}
	return lr, nil
}

// liveRun turns a run of the virtual PMU with the kernel's view first (and bayesperf's
// second, when own) into observations.
func liveRun(res *vpmu.Result, names []string, own bool) *LiveRun {
	lr := &LiveRun{Interval: res.Interval, WallNs: res.WallNs, ExitErr: res.ExitErr, Collector: "read"}
	lr.Obs.Events = names
	// Slice durations (the target's running time) are expressed in multiplexing
	// intervals (~1 for a slice the target ran throughout), the unit replayed traces
	// use, so that the estimators see live and replayed runs on the same scale; Enabled
	// and Running stay in ns, only their ratio matters.
	unit := float64(res.Interval.Nanoseconds())
	for _, st := range res.Steps {
		lr.SliceWallNs = append(lr.SliceWallNs, st.WallNs)
		lr.Obs.Truth = append(lr.Obs.Truth, st.Truth)
		for v := range st.Views {
			st.Views[v].Duration /= unit
		}
		lr.Obs.Kernel = append(lr.Obs.Kernel, st.Views[0])
		if own {
			lr.Obs.Own = append(lr.Obs.Own, st.Views[1])
		}
	}
	return lr
}

// liveViews are the names of a live run's events and the virtual PMU's views: the
// kernel's round robin, then bayesperf's own schedule when one is available.
func liveViews(l Live) ([]string, []vpmu.View, error) {
	names := make([]string, len(l.Events))
	for i, e := range l.Events {
		names[i] = e.Name
	}
	// A repeated event (-e x,x) is x and x#2, as the sidecar names it, so that the
	// relations bind x#2 = x and the trace's columns are distinct.
	names = perf.Distinct(names)
	sp := vpmu.Spec(l.Events, l.Counters, l.Fixed)
	ks, err := schedule.Kernel(sp)
	if err != nil {
		return nil, nil, fmt.Errorf("build kernel schedule: %w", err)
	}
	views := []vpmu.View{{Name: "kernel", Schedule: ks}}
	own, err := OwnSchedule(sp, names, l.Rels)
	if err != nil {
		return nil, nil, fmt.Errorf("build bayesperf schedule: %w", err)
	}
	if own != nil {
		views = append(views, vpmu.View{Name: "bayesperf", Schedule: own})
	}
	return names, views, nil
}
