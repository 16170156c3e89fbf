package replay

import (
	"fmt"
	"math"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// KernelSpec is the counter setup of a replay: the trace's events as singleton flexible
// groups in column order, counters programmable counters, and the named events on fixed
// counters. Unknown fixed names are an error.
func KernelSpec(tr *Trace, counters int, fixed []string) (schedule.Spec, error) {
	sp := schedule.Spec{Events: len(tr.Events), Counters: counters}
	for _, name := range fixed {
		i := tr.EventIndex(name)
		if i < 0 {
			return sp, fmt.Errorf("set fixed counters: event %q is not in the trace", name)
		}
		sp.Fixed = append(sp.Fixed, inference.EventID(i))
	}
	return sp, nil
}

// KernelSchedule is the kernel's round robin for a replay: singleton flexible groups in
// column order, the list rotated by t groups at slice t, the first counters non-fixed
// events in that order counted (schedule.Kernel with the KernelSpec).
func KernelSchedule(tr *Trace, counters int, fixed []string) (*schedule.Schedule, error) {
	sp, err := KernelSpec(tr, counters, fixed)
	if err != nil {
		return nil, err
	}
	return schedule.Kernel(sp)
}

// Simulate multiplexes the trace under the schedule, reporting what the kernel would:
// slice t has one reading per event of the trace, in EventID order, with Enabled = the
// slice's duration (rounded to whole units, at least 1) for every event, and for the
// events the schedule counts in slice t Running = Enabled and Count = the exact count;
// for the others Running = 0 and Count = 0 (enabled but not running, as a multiplexed-out
// event is). Events the schedule names that are not in the trace are ignored.
func Simulate(tr *Trace, s *schedule.Schedule) []inference.Slice {
	out := make([]inference.Slice, len(tr.Counts))
	on := make([]bool, len(tr.Events))
	for t, counts := range tr.Counts {
		d := tr.Durations[t]
		ns := uint64(math.Max(1, math.Round(d)))
		clear(on)
		for _, e := range s.Counted(t) {
			if int(e) >= 0 && int(e) < len(on) {
				on[e] = true
			}
		}
		sl := inference.Slice{Index: t, Duration: d, Readings: make([]inference.Reading, len(counts))}
		for e, c := range counts {
			r := inference.Reading{Event: inference.EventID(e), Enabled: ns}
			if on[e] {
				r.Count, r.Running = c, ns
			}
			sl.Readings[e] = r
		}
		out[t] = sl
	}
	return out
}

// Intervals splits n slices into reporting intervals of window slices, as [from, to)
// pairs. The last interval holds the remainder and may be shorter, as perf's last -I line
// covers the tail of the run. window < 1 is treated as 1.
func Intervals(n, window int) [][2]int {
	window = max(window, 1)
	var out [][2]int
	for from := 0; from < n; from += window {
		out = append(out, [2]int{from, min(from+window, n)})
	}
	return out
}
