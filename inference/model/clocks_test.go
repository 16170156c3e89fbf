package model

import (
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// A clock event (Options.Clocks) is reported, in every interval, as the enabled time of
// its slices, exactly, whether or not a reading of it was given; the caller's slices are
// left untouched; and an unknown clock name is an error.
func TestClocks(t *testing.T) {
	if _, err := New([]string{"a", "task-clock"}, nil, Options{Clocks: []string{"cpu-clock"}}); err == nil {
		t.Error("a clock event that is not in the run: no error")
	}
	md := mustNew(t, []string{"a", "task-clock", "b"}, nil, Options{Clocks: []string{"task-clock"}})
	const T, w = 120, 10
	want := make([]float64, T/w)
	for s := range T {
		en := uint64(3_000_000 + 150_000*(s%7)) // the target ran for en ns of this slice
		want[s/w] += float64(en)
		sl := inference.Slice{Index: s, Duration: float64(en) / 4e6}
		// One event counted per slice, in turn: task-clock's own counter every third
		// slice, with a count that disagrees with the clock (as a copy read a little
		// later does), which the clock must override.
		switch s % 3 {
		case 0:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 0, Count: 40, Enabled: en, Running: en})
		case 1:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 1, Count: en + 500_000, Enabled: en, Running: en})
		case 2:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 2, Count: 7, Enabled: en, Running: en})
		}
		before := append([]inference.Reading(nil), sl.Readings...)
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
		if len(sl.Readings) != len(before) || sl.Readings[0] != before[0] {
			t.Fatalf("slice %d: Observe changed the caller's readings: %+v, was %+v", s, sl.Readings, before)
		}
	}
	md.Finish()
	for i := range want {
		e := md.Estimate(i*w, (i+1)*w)[1]
		if e.Status != inference.StatusExact || e.Value != want[i] {
			t.Errorf("interval %d: task-clock %v (%v), want the enabled time %v, exact", i, e.Value, e.Status, want[i])
		}
	}
	// Slices without enabled times (unit-time traces) are left as they are.
	md2 := mustNew(t, []string{"a", "task-clock"}, nil, Options{Clocks: []string{"task-clock"}})
	if err := md2.Observe(inference.Slice{Duration: 1, Readings: []inference.Reading{{Event: 0, Count: 3, Running: 1}}}); err != nil {
		t.Fatal(err)
	}
	if e := md2.Estimate(0, 1)[1]; e.Status == inference.StatusExact {
		t.Errorf("a slice without enabled times made task-clock exact: %+v", e)
	}
}
