package model

import (
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// TestIdleSliceIsExact: a slice in which the target never ran (every reading enabled
// for 0 ns, as the last slice of a run can be when the target exited just after the
// previous read) counted nothing that a counter could have missed. A run of events
// counted whole everywhere else stays exact over that slice: before, the slice made
// every event of the run inferred, and `bayesperf stat` printed a nonzero ± on an exact
// count (major-faults, sched:sched_switch) when the machine was loaded.
func TestIdleSliceIsExact(t *testing.T) {
	md, err := New([]string{"a", "b"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const d = 1e6
	counts := [][2]uint64{{100, 0}, {120, 3}, {90, 0}, {110, 1}, {105, 0}}
	var want [2]float64
	for i, c := range counts {
		sl := inference.Slice{Index: i, Duration: d}
		for e := range 2 {
			sl.Readings = append(sl.Readings, inference.Reading{Event: inference.EventID(e), Count: c[e], Enabled: d, Running: d})
			want[e] += float64(c[e])
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	idle := inference.Slice{Index: len(counts), Duration: 1, Readings: []inference.Reading{{Event: 0}, {Event: 1}}}
	if err := md.Observe(idle); err != nil {
		t.Fatal(err)
	}
	md.Finish()
	for e, est := range md.Estimate(0, len(counts)+1) {
		if est.Status != inference.StatusExact || est.Value != want[e] || est.Lo != want[e] || est.Hi != want[e] {
			t.Errorf("event %d: %+v, want exactly %v", e, est, want[e])
		}
	}
	if est := md.Estimate(len(counts), len(counts)+1); est[0].Status != inference.StatusExact || est[0].Value != 0 {
		t.Errorf("the idle slice alone: %+v, want exactly 0", est[0])
	}
}
