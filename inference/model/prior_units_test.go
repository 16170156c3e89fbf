package model

import (
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// A rate's prior is sized by the other events' rates in the first slice (see start), and
// a clock event's rate is nanoseconds a slice, not counts. In a drop-in run of stress-ng
// --perf (59 events on 2 virtual counters, task-clock a clock) a major-fault count whose
// truth was 0 came out with an interval up to 20,887,327 over 400 slices, where the
// window had 486 page faults: 4 of 40 runs had an interval over 1000 times its event's
// truth (or 100). Here b is only ever read for half of a slice, so its prior is never
// replaced by a count of a whole slice: 50 readings of 3 know its rate to about ±17%
// (Poisson, 95%), and an interval wider than the value is the prior's, not theirs.
func TestPriorNotInClockUnits(t *testing.T) {
	md := mustNew(t, []string{"task-clock", "a", "b"}, nil, Options{Clocks: []string{"task-clock"}})
	const T = 200
	const en = 4_000_000 // ns the target ran in each slice
	for s := range T {
		sl := inference.Slice{Index: s, Duration: 1}
		switch s % 4 {
		case 0:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 1, Count: 30, Enabled: en, Running: en})
		case 2:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 2, Count: 3, Enabled: en, Running: en / 2})
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	e := md.Estimate(0, T)[2]
	t.Logf("b: %.1f [%.1f, %.1f] over the run", e.Value, e.Lo, e.Hi)
	if e.Hi-e.Lo > e.Value {
		t.Errorf("b: %.1f [%.1f, %.1f]: the interval is wider than the value that 50 readings of 3 counts give", e.Value, e.Lo, e.Hi)
	}
}
