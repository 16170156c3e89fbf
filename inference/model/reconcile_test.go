package model

import (
	"math"
	"math/rand/v2"
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
		// cg-od's first interval: instruction misses I (sparse: 0, variance 0.15) bounded
		// below by last-level ones L (3404, variance 3e10), and L by the 1526 its counted
		// slices saw. The normal equations of the two bounds lose 11 digits: one solve
		// left I at 1525.9904, under L (polish refines).
		{"variances eleven orders apart", []float64{0, 3403.675167602074}, []float64{0.15493676936138376, 3.1867864460118603e+10},
			[]constraint{ge(1526, entry{1, 1}), ge(0, entry{0, 1}, entry{1, -1})}, []float64{1526, 1526}},
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

// TestNearestFeasibleRandom solves random feasible problems (a random point satisfies
// every constraint by construction, some values fixed at it): the answer must keep every
// constraint and be at least as near to x0 as that point.
func TestNearestFeasibleRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 29))
	for trial := range 3000 {
		n := 2 + rng.IntN(7)
		star := make([]float64, n) // a feasible point
		x0 := make([]float64, n)
		w := make([]float64, n)
		for j := range n {
			star[j] = math.Round(rng.Float64() * 1000)
			x0[j] = star[j] + math.Round(rng.NormFloat64()*300)
			w[j] = math.Pow(10, rng.Float64()*12) // variances over twelve orders of magnitude
			if rng.IntN(6) == 0 {
				x0[j], w[j] = star[j], 0 // fixed: an exact value
			}
		}
		var cons []constraint
		for range 1 + rng.IntN(2*n) {
			var row []entry
			for j := range n {
				if rng.IntN(3) == 0 {
					row = append(row, entry{j, float64(1 - 2*rng.IntN(2))})
				}
			}
			if len(row) == 0 {
				continue
			}
			v := 0.0
			for _, e := range row {
				v += e.c * star[e.i]
			}
			if rng.IntN(4) == 0 {
				cons = append(cons, constraint{row: row, k: v, eq: true})
			} else {
				cons = append(cons, constraint{row: row, k: v - math.Round(rng.Float64()*50)})
			}
		}
		x, ok := nearestFeasible(x0, w, cons)
		if !ok {
			t.Fatalf("trial %d: no solution to a feasible problem (x0 %v, w %v, cons %v)", trial, x0, w, cons)
		}
		for _, c := range cons {
			s, scale := c.slack(x)
			tol := 1e-7*scale + 1e-6
			if (c.eq && math.Abs(s) > tol) || s < -tol {
				t.Fatalf("trial %d: %v broken by %g at %v (x0 %v, w %v)", trial, c, s, x, x0, w)
			}
		}
		obj := func(y []float64) float64 {
			f := 0.0
			for j := range y {
				if w[j] > 0 {
					f += (y[j] - x0[j]) * (y[j] - x0[j]) / w[j]
				}
			}
			return f
		}
		if obj(x) > obj(star)*(1+1e-9)+1e-9 {
			t.Fatalf("trial %d: %v is farther from x0 (%g) than the feasible %v (%g)", trial, x, obj(x), star, obj(star))
		}
		for j := range x {
			if w[j] == 0 && x[j] != x0[j] {
				t.Fatalf("trial %d: fixed value %d moved from %g to %g", trial, j, x0[j], x[j])
			}
		}
	}
}
