package vpmu

import (
	"fmt"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Kernel counts events of one task (inherited by the threads and processes it creates),
// or of every task on one CPU, as the kernel schedules them, with no budget of its own: its steps carry the raw
// deltas of (count, time_enabled, time_running) the kernel gave (pipeline.Deltas), so
// on a CPU whose PMU the kernel multiplexes they show its real multiplexing, and on a
// machine without one every event runs all the time and its values are exact. {a,b}
// groups are opened as kernel groups, scheduled together as under perf stat. It steps
// like a PMU of one view without truth, and is not safe for concurrent use.
type Kernel struct {
	c         *perf.ReadCollector // owns the events
	prev, cur []perf.Count
	idx       int
}

// OpenKernel opens events on task pid (cpu perf.AnyCPU), or on every task of cpu (pid
// -1), counting at once.
func OpenKernel(events []perf.EventDesc, pid, cpu int) (*Kernel, error) {
	var (
		evs    []*perf.Event
		leader *perf.Event
	)
	closeAll := func() {
		for i := len(evs) - 1; i >= 0; i-- {
			evs[i].Close()
		}
	}
	for i, d := range events {
		a := d.Attr
		a.Flags = a.Flags &^ (perfabi.FlagDisabled | perfabi.FlagEnableOnExec | perfabi.FlagInherit)
		if pid != -1 {
			a.Flags |= perfabi.FlagInherit // a CPU's events see every task anyway
		}
		a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
		var lead *perf.Event
		if d.Grouped && i > 0 && events[i-1].Grouped && events[i-1].Group == d.Group {
			lead = leader
		}
		e, err := perf.Open(a, pid, cpu, lead)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("open %s: %w", d.Name, err)
		}
		e.Name = d.Name
		if lead == nil {
			leader = e
		}
		evs = append(evs, e)
	}
	c, err := perf.NewReadCollector(evs, 0, true)
	if err != nil {
		closeAll()
		return nil, err
	}
	return &Kernel{c: c, prev: make([]perf.Count, len(evs)), cur: make([]perf.Count, len(evs))}, nil
}

// Step ends the current slice: the deltas since the last one. A step in which the task
// did not run is Idle, as the PMU's.
func (k *Kernel) Step() (Step, error) { return k.step(false) }

// Flush is Step for the last slice of a run, which it ends even if the task did not run.
func (k *Kernel) Flush() (Step, error) { return k.step(true) }

func (k *Kernel) step(force bool) (Step, error) {
	if err := k.c.ReadAll(k.cur); err != nil {
		return Step{}, err
	}
	sl, enabled := pipeline.Deltas(k.idx, k.prev, k.cur)
	if enabled == 0 && !force {
		return Step{Index: k.idx, Idle: true}, nil
	}
	copy(k.prev, k.cur)
	k.idx++
	return Step{Index: sl.Index, Views: []inference.Slice{sl}}, nil
}

// Close closes the events.
func (k *Kernel) Close() error { return k.c.Close() }
