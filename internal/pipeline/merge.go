package pipeline

import "github.com/bayesperf/bayesperf/inference"

// Merge adds up slices of n events that cover the same span, one per source (a
// followed thread's PMU), as perf sums a process's threads: durations, counts, enabled
// and running times add up. ok is false when there is nothing to learn from: no slice,
// or only slices in which nothing was enabled or counted (a final slice in which the
// target did not run would otherwise read as one where no event was counted, and turn
// exact values into inferred ones). Readings of events outside [0, n) are dropped.
func Merge(index, n int, parts []inference.Slice) (sl inference.Slice, ok bool) {
	sl = inference.Slice{Index: index, Readings: make([]inference.Reading, n)}
	for i := range sl.Readings {
		sl.Readings[i].Event = inference.EventID(i)
	}
	for _, p := range parts {
		sl.Duration += p.Duration
		for _, r := range p.Readings {
			if int(r.Event) < 0 || int(r.Event) >= n {
				continue
			}
			d := &sl.Readings[r.Event]
			d.Count += r.Count
			d.Enabled += r.Enabled
			d.Running += r.Running
		}
	}
	for _, r := range sl.Readings {
		if r.Enabled != 0 || r.Count != 0 {
			return sl, true
		}
	}
	return sl, false
}

// Multiplexed says some event of sl ran less than it was enabled.
func Multiplexed(sl inference.Slice) bool {
	for _, r := range sl.Readings {
		if r.Running < r.Enabled {
			return true
		}
	}
	return false
}
