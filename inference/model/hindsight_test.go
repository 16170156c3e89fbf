package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// hindsightRun feeds a model with event 0 counted whole in every slice (the activity,
// 1000 or 4000 a slice at random), event 1 in every third slice and event 2 in the
// slices after those, event 1 counting exactly twice the activity. It returns the model and the true count of event 1 over
// the first slices.
func hindsightRun(t *testing.T, opt Options, T, first int) (*Model, float64) {
	t.Helper()
	md, err := NewLinear(3, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	truth := 0.0
	rng := rand.New(rand.NewPCG(1, 2))
	for s := range T {
		g := 1000.0
		if rng.IntN(2) == 1 {
			g = 4000
		}
		x := 2 * g
		if s < first {
			truth += x
		}
		rs := []inference.Reading{{Event: 0, Count: uint64(g), Enabled: 1, Running: 1}}
		switch s % 3 {
		case 1:
			rs = append(rs, inference.Reading{Event: 1, Count: uint64(x), Enabled: 1, Running: 1})
		case 2:
			rs = append(rs, inference.Reading{Event: 2, Count: 500, Enabled: 1, Running: 1})
		}
		if err := md.Observe(inference.Slice{Index: s, Duration: 1, Readings: rs}); err != nil {
			t.Fatal(err)
		}
	}
	return md, truth
}

// TestRefilterUsesLaterRatios: online, the first slices of a run have no activity ratio
// yet, so an event counted in every third slice is interpolated between its readings
// and misses how the activity moved in between; after Finish (the second pass, with the
// ratio learned from the readings around each slice) its count over those slices
// follows the activity. A run longer than the history keeps the first pass.
func TestRefilterUsesLaterRatios(t *testing.T) {
	const T, first = 200, 16
	md, truth := hindsightRun(t, Options{}, T, first)
	before := math.Abs(md.Estimate(0, first)[1].Value-truth) / truth
	md.Finish()
	if md.run.rs != nil || !md.run.dropped {
		t.Error("Finish kept the slices of the run")
	}
	after := math.Abs(md.Estimate(0, first)[1].Value-truth) / truth
	t.Logf("event 1 over the first %d slices: relative error %.4f online, %.4f after Finish", first, before, after)
	if !(after < 0.01) || !(after < before/4) {
		t.Errorf("relative error after the second pass %.4f (before %.4f): want < 0.01 and a quarter of before", after, before)
	}

	// A run without activity levels keeps the first pass; Finish still drops its slices.
	off, _ := hindsightRun(t, Options{NoActivity: true}, T, first)
	if off.run.slices() != T {
		t.Fatalf("%d slices kept for the second pass, want %d", off.run.slices(), T)
	}
	off.Finish()
	if off.run.rs != nil || !off.run.dropped {
		t.Error("Finish without a second pass kept the slices of the run")
	}

	// History of 64 slices: the history froze, no second pass, Finish only smooths.
	short, _ := hindsightRun(t, Options{History: 64}, T, first)
	if !short.run.dropped {
		t.Fatal("a run longer than its history still keeps its slices")
	}
	b := short.Estimate(T-25, T)[1].Value
	short.Finish()
	if a := short.Estimate(T-25, T)[1].Value; a != b {
		t.Errorf("a frozen run changed its last interval at Finish: %v -> %v", b, a)
	}
}
