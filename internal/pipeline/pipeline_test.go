package pipeline

import (
	"math"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

func TestSubAndAdvance(t *testing.T) {
	if Sub(5, 7) != 0 || Sub(7, 5) != 2 {
		t.Fatalf("Sub: %d %d", Sub(5, 7), Sub(7, 5))
	}
	// A total read low (a split's peek above the next snapshot) adds nothing, and the
	// difference is counted once, when the total passes it again.
	prev := uint64(100)
	var sum uint64
	for _, cur := range []uint64{110, 105, 108, 130} {
		sum += Advance(&prev, cur)
	}
	if sum != 30 || prev != 130 {
		t.Fatalf("Advance: sum %d prev %d, want 30 and 130", sum, prev)
	}
}

func TestDeltas(t *testing.T) {
	prev := []perf.Count{{Value: 10, Enabled: 100, Running: 50}, {Value: 7, Enabled: 100, Running: 100}}
	cur := []perf.Count{{Value: 30, Enabled: 300, Running: 260}, {Value: 5, Enabled: 250, Running: 260}}
	sl, en := Deltas(3, prev, cur)
	if en != 200 || sl.Duration != 200 || sl.Index != 3 {
		t.Fatalf("enabled %d duration %v index %d", en, sl.Duration, sl.Index)
	}
	want := []inference.Reading{{Event: 0, Count: 20, Enabled: 200, Running: 200}, {Event: 1, Count: 0, Enabled: 150, Running: 150}}
	for i, r := range sl.Readings {
		if r != want[i] {
			t.Errorf("reading %d: %+v, want %+v", i, r, want[i])
		}
	}
	if _, en := Deltas(4, cur, cur); en != 0 {
		t.Fatalf("no time enabled: got %d", en)
	}
}

func TestRoundAndFloor(t *testing.T) {
	for v, want := range map[float64]uint64{-3: 0, math.NaN(): 0, math.Inf(1): 0, 2.5: 3, 7: 7} {
		if got := Round(v); got != want {
			t.Errorf("Round(%v) = %d, want %d", v, got, want)
		}
	}
	f := make(Floor, 2)
	if f.Raise(0, 10) != 10 || f.Raise(0, 8) != 10 || f.Raise(0, 12) != 12 || f[1] != 0 {
		t.Fatalf("Floor: %v", f)
	}
	if Scaled(perf.Count{Value: 10, Enabled: 4, Running: 2}) != 20 || Scaled(perf.Count{Value: 10, Enabled: 4}) != 10 {
		t.Fatal("Scaled")
	}
}

func TestMerge(t *testing.T) {
	a := inference.Slice{Duration: 2, Readings: []inference.Reading{{Event: 0, Count: 1, Enabled: 2, Running: 2}, {Event: 5, Count: 9}}}
	b := inference.Slice{Duration: 3, Readings: []inference.Reading{{Event: 0, Count: 4, Enabled: 3, Running: 1}}}
	sl, ok := Merge(7, 2, []inference.Slice{a, b})
	if !ok || sl.Index != 7 || sl.Duration != 5 || sl.Readings[0] != (inference.Reading{Event: 0, Count: 5, Enabled: 5, Running: 3}) ||
		sl.Readings[1] != (inference.Reading{Event: 1}) {
		t.Fatalf("merged %+v ok %v", sl, ok)
	}
	if !Multiplexed(sl) {
		t.Fatal("event 0 ran 3 of 5: multiplexed")
	}
	if _, ok := Merge(0, 2, []inference.Slice{{Duration: 1, Readings: []inference.Reading{{Event: 1}}}}); ok {
		t.Fatal("a slice with nothing enabled or counted says nothing")
	}
}

func TestNewModelClocks(t *testing.T) {
	tc := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock}
	tcu := tc
	tcu.Flags |= perfabi.FlagExcludeKern
	if !IsClock(tc) || IsClock(tcu) || IsClock(perf.Attr{Type: perf.TypeSoftware, Config: perf.SWPageFaults}) {
		t.Fatal("IsClock")
	}
	names := []string{"task-clock", "page-faults", "minor-faults", "major-faults"}
	rels := relation.Bind(relation.Builtins(), names)
	md, err := NewModel(ModelConfig{Names: names, Relations: rels, Attrs: []perf.Attr{tc}})
	if err != nil {
		t.Fatal(err)
	}
	// task-clock is a clock: known in a slice that did not count it, as its enabled time.
	sl := inference.Slice{Duration: 1, Readings: []inference.Reading{{Event: 1, Count: 30, Enabled: 1000, Running: 1000},
		{Event: 2, Count: 28, Enabled: 1000, Running: 1000}, {Event: 3, Count: 2, Enabled: 1000, Running: 1000}}}
	f := Feed{Estimators: []inference.Estimator{md}, Unit: 1000}
	sl.Duration = 1000
	fed, err := f.Add(sl)
	if err != nil || f.Skipped != 0 || f.Slices != 1 || fed.Index != 0 || fed.Duration != 1 {
		t.Fatalf("feed: %+v, %+v, %v", f, fed, err)
	}
	est := md.Estimate(0, 1)
	if est[0].Value != 1000 || est[0].Status == inference.StatusNotCounted {
		t.Fatalf("task-clock as a clock: %+v", est[0])
	}
	if _, err := NewModel(ModelConfig{Names: names, Options: model.Options{Clocks: []string{"cpu-clock"}}}); err == nil {
		t.Fatal("a clock that is not an event must fail")
	}
}

// TestClocks: task-clock as perf stat opens it (exclude_guest set) counts its target's
// running time, every slice's enabled time; one that excludes user or kernel time does
// not, nor does any other event.
func TestClocks(t *testing.T) {
	tc := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock, Flags: perfabi.FlagExcludeGuest}
	ku := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock, Flags: perfabi.FlagExcludeKern}
	pf := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWPageFaults}
	got := Clocks([]perf.Attr{pf, tc, ku, tc}, []string{"page-faults", "task-clock", "task-clock:u", "task-clock#2"})
	if want := []string{"task-clock", "task-clock#2"}; !slices.Equal(got, want) {
		t.Errorf("clock events %q, want %q", got, want)
	}
}
