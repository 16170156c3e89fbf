package model

import (
	"math"
	"testing"
)

// TestNearestFeasible checks the reconciling solver on problems small enough to solve by
// hand: the nearest point to x0 in the metric of the variances w that keeps every
// constraint, exact identities included.
func TestNearestFeasible(t *testing.T) {
	ge := func(k float64, terms ...entry) constraint { return constraint{row: terms, k: k} }
	eq := func(k float64, terms ...entry) constraint { return constraint{row: terms, k: k, eq: true} }
	for _, c := range []struct {
		name  string
		x0, w []float64
		cons  []constraint
		want  []float64
	}{
		{"already feasible: nothing moves", []float64{5, 1}, []float64{1, 1},
			[]constraint{ge(0, entry{0, 1}, entry{1, -1})}, []float64{5, 1}},
		{"a violated bound meets halfway at equal variances", []float64{1, 5}, []float64{1, 1},
			[]constraint{ge(0, entry{0, 1}, entry{1, -1})}, []float64{3, 3}},
		// a ≥ 1 is violated first and holds a at 1, but a + b ≥ 4 with b ≤ 1 needs a at
		// 3: a solver that held each violated bound for good had no feasible point left.
		{"a bound taken in early is let go", []float64{0, 0}, []float64{1, 1},
			[]constraint{ge(1, entry{0, 1}), ge(4, entry{0, 1}, entry{1, 1}), ge(-1, entry{1, -1})}, []float64{3, 1}},
		// s = a + b with s exact at 10; a at least 8: b takes the rest.
		{"an exact sum holds its terms", []float64{2, 5, 10}, []float64{1, 1, 0},
			[]constraint{eq(0, entry{2, 1}, entry{0, -1}, entry{1, -1}), ge(8, entry{0, 1})}, []float64{8, 2, 10}},
		// s = a + b with every value free: the variances decide who moves.
		{"an identity shared by variance", []float64{1, 1, 8}, []float64{1, 1, 4},
			[]constraint{eq(0, entry{2, 1}, entry{0, -1}, entry{1, -1})}, []float64{2, 2, 4}},
		// a + b = 10 over two exact values 3 and 4 cannot hold: it is left out, and c's
		// bound is still kept.
		{"an identity the exact values break is left out", []float64{3, 4, 0}, []float64{0, 0, 1},
			[]constraint{eq(10, entry{0, 1}, entry{1, 1}), ge(2, entry{2, 1})}, []float64{3, 4, 2}},
	} {
		got, ok := nearestFeasible(c.x0, c.w, c.cons)
		if !ok {
			t.Errorf("%s: no solution", c.name)
			continue
		}
		for j, w := range c.want {
			if math.Abs(got[j]-w) > 1e-9*math.Max(1, math.Abs(w)) {
				t.Errorf("%s: x = %v, want %v", c.name, got, c.want)
				break
			}
		}
	}
}
