package model

import (
	"math"

	"github.com/bayesperf/bayesperf/inference/relation"
)

// applyNonlinear turns each non-linear relation into a Gaussian site for this slice by
// linearising it at the current posterior mean (a first-order EP site): an identity
// becomes a soft linear factor, an inequality an assumed-density truncation. Relations
// whose value cannot be computed at the mean (a division by zero) are skipped for the
// slice.
func (md *Model) applyNonlinear(d float64) {
	if len(md.nl) == 0 {
		return
	}
	// Current means of the events, as counts over the slice.
	x := md.xs
	for e := range md.n {
		v := 0.0
		for _, a := range md.rows[e] {
			v += a.c * md.m[a.i]
		}
		x[e] = v * d
	}
	for i := range md.nl {
		nl := &md.nl[i]
		val := func(name string) float64 {
			for _, e := range nl.events {
				if md.names[e] == name {
					return x[e]
				}
			}
			return math.NaN()
		}
		f0, err := diff(nl.rel, val)
		if err != nil || math.IsNaN(f0) || math.IsInf(f0, 0) {
			continue
		}
		// Gradient by central differences, one event at a time.
		coef := map[int]float64{}
		for _, e := range nl.events {
			old := x[e]
			step := 1e-4*math.Abs(old) + 1e-3
			x[e] = old + step
			fp, err1 := diff(nl.rel, val)
			x[e] = old - step
			fm, err2 := diff(nl.rel, val)
			x[e] = old
			if err1 != nil || err2 != nil || math.IsNaN(fp) || math.IsNaN(fm) {
				continue
			}
			if g := (fp - fm) / (2 * step); g != 0 && !math.IsInf(g, 0) {
				coef[e] = g
			}
		}
		if len(coef) == 0 {
			continue
		}
		// f(x) ≈ f0 + Σ g_e (x_e − x0_e) over counts; counts are d·rates.
		konst := f0
		acc := make([]float64, md.k)
		for e, g := range coef {
			konst -= g * x[e]
			for _, a := range md.rows[e] {
				acc[a.i] += g * d * a.c
			}
		}
		var h []entry
		for j, v := range acc {
			if v != 0 {
				h = append(h, entry{j, v})
			}
		}
		switch nl.rel.Op {
		case relation.Eq:
			sd := nl.tol*math.Abs(f0+scaleOf(coef, x)) + 0.5
			md.updateDense(h, -konst, sd*sd)
		case relation.Ge:
			md.truncate(h, konst, md.truncAt, false, true)
		case relation.Le:
			md.truncate(negate(h), -konst, md.truncAt, false, true)
		}
	}
}

// diff is LHS − RHS of the relation.
func diff(r relation.Relation, val func(string) float64) (float64, error) {
	l, rr, err := r.Eval(val)
	return l - rr, err
}

func scaleOf(coef map[int]float64, x []float64) float64 {
	s := 0.0
	for e, g := range coef {
		s += math.Abs(g * x[e])
	}
	return s
}
