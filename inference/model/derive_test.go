package model

import (
	"math"
	"testing"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// TestDerive: a slice's whole counts carry, through exact identities, to the events they
// determine (u, k, w = u + k, u2 = u), and to nothing else.
func TestDerive(t *testing.T) {
	rows := [][]entry{{{0, 1}}, {{1, 1}}, {{0, 1}, {1, 1}}, {{0, 1}}}
	nan := math.NaN()
	for _, c := range []struct {
		name     string
		in, want []float64
	}{
		{"terms counted", []float64{3, 4, nan, nan}, []float64{3, 4, 7, 3}},
		{"sum and a repeat", []float64{nan, nan, 7, 3}, []float64{3, 4, 7, 3}},
		{"sum alone", []float64{nan, nan, 7, nan}, []float64{nan, nan, 7, nan}},
		{"a repeat alone", []float64{nan, nan, nan, 3}, []float64{3, nan, nan, 3}},
		{"inconsistent: no negative count", []float64{nan, nan, 2, 3}, []float64{3, nan, 2, 3}},
	} {
		ex := append([]float64(nil), c.in...)
		derive(ex, rows, nil)
		for e := range ex {
			if ex[e] != c.want[e] && !(math.IsNaN(ex[e]) && math.IsNaN(c.want[e])) {
				t.Errorf("%s: got %v, want %v", c.name, ex, c.want)
				break
			}
		}
	}
}

// TestDeriveShortSlices replays a trace of the arm64 testbed (testdata/pmu/README.md):
// instructions:u, :k and whole, four times, on 2 counters. Both the kernel's round robin
// and the overlap schedule count a basis of (u, k) in every slice, so every event's
// count is determined exactly in every slice. In the sleep phases the target runs about
// 40µs per 4ms slice, and the filter skips readings of such short slices: the relatives
// of the counted events took the walk's rates instead (instructions:u 140% high,
// instructions:k 80% low in some intervals; error reduction 1.9x and 2.3x). Every
// interval's estimate must now be the truth.
func TestDeriveShortSlices(t *testing.T) {
	tr := timedTrace(t, "testdata/pmu/arm64-mixed-1s-i3x4.csv")
	rels := relation.BindUniverse(relation.Builtins(), tr.Events, nil)
	kern, own := schedules(t, tr.Events, rels, schedule.Spec{Events: len(tr.Events), Counters: 2})
	rr := mustNew(t, tr.Events, rels, Options{})
	bp := mustNew(t, tr.Events, rels, Options{})
	res := replayScore(t, tr, replay.Options{Counters: 2}, replay.Contender{Estimator: named{rr, "bayesperf-rr"}, Schedule: kern},
		replay.Contender{Estimator: bp, Schedule: own})
	for _, name := range []string{"bayesperf-rr", "bayesperf"} {
		worst := 0.0
		for i, truth := range res.Truth {
			for e, c := range truth {
				if d := math.Abs(res.Estimates[name][i][e].Value - c); d > 0.5 {
					worst = max(worst, d/c)
					t.Errorf("%s: %s interval %d: %.0f, truth %.0f", name, res.EventNames[e], i, res.Estimates[name][i][e].Value, c)
				}
			}
		}
		if worst > 0 {
			t.Logf("%s: worst relative error %.3g", name, worst)
		}
	}
}
