package model

import (
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
)

// reconcile makes the reported values of slices [from, to) satisfy the exact
// identities and the homogeneous inequalities (misses <= accesses). The posterior means
// satisfy the identities by construction, the reported values need not: a slice counted
// whole is reported as counted while the state took the count as a noisy reading of its
// rate, and values are clipped at zero (a derived total came out 3x its terms' sum on a
// callgrind trace). The filter imposes inequalities only where a slice's posterior
// clearly violates one, and the smoother can undo that: an event read in a start-up
// burst and carried over the slices after it came out above the accesses it is a miss
// of, those accesses far below it.
//
// The unknowns are the free rates' counts (the state's components), each event in a
// relation their combination as in the state, so that the identities hold by
// construction here too: a sum is its terms' total and takes up whatever they move by.
// Among the counts that satisfy the inequalities and are at least what their counted
// slices saw (zero for none), it takes the nearest to the reported ones in the metric
// of their variances (weighted least squares, as hierarchical forecasts are reconciled:
// the mode of the values' Gaussian truncated to the constraints); exact values do not
// move, and an exact sum holds its terms to its count. An interval moves with its value
// and keeps covering the value before the move. Events made of a rate without an
// estimate, and relations over them, are left alone, and so is an inequality that the
// exact values alone break.
func (md *Model) reconcile(out []inference.Estimate, counted []float64) {
	if len(md.identities)+len(md.bounds) == 0 {
		return
	}
	usable := func(e int) bool {
		o := out[e]
		return o.Status != inference.StatusNotCounted && o.HasInterval
	}
	inPlay := func(e int) bool {
		if !usable(e) {
			return false
		}
		for _, a := range md.rows[e] {
			if !usable(md.free[a.i]) {
				return false
			}
		}
		return true
	}
	// The unknowns: the components the events in play are made of.
	col := make([]int, md.k) // state component -> unknown, -1: none
	for i := range col {
		col[i] = -1
	}
	n := 0
	for _, e := range md.idEvents {
		if !inPlay(e) {
			continue
		}
		for _, a := range md.rows[e] {
			if col[a.i] < 0 {
				col[a.i] = n
				n++
			}
		}
	}
	if n == 0 {
		return
	}
	inUnknowns := func(row []entry, scale float64, acc []entry) []entry {
		for _, a := range row {
			j := col[a.i]
			if k := slices.IndexFunc(acc, func(t entry) bool { return t.i == j }); k >= 0 {
				acc[k].c += scale * a.c
			} else {
				acc = append(acc, entry{j, scale * a.c})
			}
		}
		return acc
	}
	// Each unknown's target and variance, from the events that are it alone (a free
	// rate, and any event that repeats it): precision-weighted, an exact one fixing it.
	x0 := make([]float64, n)
	w := make([]float64, n)
	prec := make([]float64, n)
	fixed := make([]bool, n)
	var cons []constraint
	floor := make([]float64, md.n)
	for _, e := range md.idEvents {
		if !inPlay(e) {
			continue
		}
		o := out[e]
		row := md.rows[e]
		exact := o.Status != inference.StatusInferred
		s := (o.Hi - o.Lo) / (2 * md.quantQ)
		if len(row) > 1 {
			// A sum: its terms' total, held to its count where it is exact.
			c := constraint{row: inUnknowns(row, 1, nil), k: o.Value, eq: exact}
			if !exact {
				floor[e] = counted[e]
				c.k = floor[e]
			}
			cons = append(cons, c)
			continue
		}
		j, c := col[row[0].i], row[0].c
		switch {
		case fixed[j]:
		case exact || !(s > 0):
			x0[j], fixed[j] = o.Value/c, true
		default:
			p := c * c / (s * s)
			x0[j] = (x0[j]*prec[j] + o.Value/c*p) / (prec[j] + p)
			prec[j] += p
		}
		if !exact {
			floor[e] = counted[e]
			cons = append(cons, constraint{row: []entry{{j, c}}, k: floor[e]})
		}
	}
	for j := range w {
		if !fixed[j] && prec[j] > 0 {
			w[j] = 1 / prec[j]
		}
	}
	for _, b := range md.bounds {
		var row []entry
		ok := true
		for _, t := range b {
			e := md.idEvents[t.i]
			if !inPlay(e) {
				ok = false
				break
			}
			row = inUnknowns(md.rows[e], t.c, row)
		}
		if ok {
			cons = append(cons, constraint{row: row})
		}
	}
	z, ok := nearestFeasible(x0, w, cons)
	if !ok {
		return
	}
	for _, e := range md.idEvents {
		if !inPlay(e) || out[e].Status != inference.StatusInferred {
			continue
		}
		v := 0.0
		for _, a := range md.rows[e] {
			v += a.c * z[col[a.i]]
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		d := v - out[e].Value
		out[e].Value = v
		// The interval moves with the value and keeps covering the value before the
		// move: the shift is a correction the model's own variances did not foresee.
		out[e].Lo = max(min(out[e].Lo, out[e].Lo+d), floor[e])
		out[e].Hi = max(max(out[e].Hi, out[e].Hi+d), out[e].Value)
	}
}

// constraint is Σ c·x = k (eq) or Σ c·x >= k over the values being reconciled.
type constraint struct {
	row []entry
	k   float64
	eq  bool
}

// slack is Σ c·x − k and the scale it is judged against (Σ|c·x| + |k|).
func (c constraint) slack(x []float64) (s, scale float64) {
	for _, t := range c.row {
		s += t.c * x[t.i]
		scale += math.Abs(t.c * x[t.i])
	}
	return s - c.k, scale + math.Abs(c.k)
}

// nearestFeasible returns the x nearest to x0 in the metric of the variances w
// (minimising Σ (x_j − x0_j)²/w_j; w_j = 0 holds x_j at x0_j) that satisfies every
// constraint, by the dual active-set method of Goldfarb and Idnani (1983): start from x0,
// the unconstrained minimum, and take the constraints in one at a time (the equalities
// first, then the most violated inequality), each step the least change that satisfies
// the new one while keeping those already taken in, and letting go of an inequality
// taken in earlier whose multiplier would turn negative, that is one that no longer
// holds the solution back. Each iterate is the optimum over the constraints taken in, so
// at the end it is the optimum over all of them; the method, unlike holding each
// violated bound at equality for good, never keeps a constraint that the others have
// since made slack (a sum held at the count of its own slices, below its terms'
// counts, broke its identity on the whole run of a callgrind trace).
//
// A constraint that cannot hold together with those taken in, given the fixed values
// (an identity over exact counts that breaks it, or bounds that contradict each
// other), is left out and the rest solved. It reports false, leaving x0 as it was, when
// the steps fail numerically or do not settle.
func nearestFeasible(x0, w []float64, cons []constraint) ([]float64, bool) {
	n := len(x0)
	x := append([]float64(nil), x0...)
	var active []int  // indices into cons, in the order taken in
	var lam []float64 // their multipliers
	sign := make([]float64, len(cons))
	left := make([]bool, len(cons))    // left out: cannot hold with the rest
	in := make([]bool, len(cons))      // active
	implied := make([]bool, len(cons)) // an equality the active ones imply, met
	for i := range sign {
		sign[i] = 1
	}
	z := make([]float64, n)
	// Scratch for the steps' systems, sized once: a constraint is taken in only when
	// its normal is independent of those in (a full step), so at most n are active.
	mBuf, rBuf := make([]float64, n*n), make([]float64, n)
	sBuf, tBuf := make([]float64, n*n), make([]float64, n)
	for iter := 0; iter < 4*(len(cons)+n)+8; iter++ {
		// The next constraint: an equality not yet in, else the most violated inequality.
		p, worst := -1, 0.0
		for i, c := range cons {
			if in[i] || left[i] {
				continue
			}
			s, scale := c.slack(x)
			if c.eq && implied[i] && math.Abs(s) <= 1e-9*scale+1e-9 {
				continue
			}
			if c.eq {
				p = i
				sign[i] = 1
				if s > 0 {
					sign[i] = -1 // taken in as −row >= −k, violated or met at equality
				}
				break
			}
			if v := -s / (scale + 1e-300); s < -1e-9*scale-1e-9 && v > worst {
				p, worst = i, v
			}
		}
		if p < 0 {
			// The steps add up rounding: solve once more, from x0, for the point
			// nearest to it on the constraints taken in, held at equality.
			polish(x, x0, w, cons, active, sign, mBuf, rBuf, sBuf, tBuf)
			return x, true
		}
		lp := 0.0
		pw := dotW(cons[p].row, 1, cons[p].row, 1, w) // p's own size in the metric
		for {
			// Step direction: z = W(n_p − N r), r = (NᵀWN)⁻¹NᵀW n_p, so that z keeps
			// every active constraint where it is.
			a := len(active)
			r := rBuf[:a]
			if a > 0 {
				m := gram(mBuf, cons, active, sign, w)
				for u, cu := range active {
					r[u] = dotW(cons[cu].row, sign[cu], cons[p].row, sign[p], w)
				}
				if !solveRegularised(m, r, a, sBuf, tBuf) {
					return x0, false
				}
			}
			clear(z)
			for _, t := range cons[p].row {
				z[t.i] += sign[p] * t.c
			}
			for u, cu := range active {
				for _, t := range cons[cu].row {
					z[t.i] -= r[u] * sign[cu] * t.c
				}
			}
			for j := range z {
				z[j] *= w[j]
			}
			zn := sign[p] * dot(cons[p].row, z)
			s, scale := cons[p].slack(x)
			s *= sign[p]
			// t2: the full step, to the new constraint; t1: the partial step at which
			// an active inequality's multiplier reaches zero and it is let go.
			t2 := math.Inf(1)
			if zn > 1e-12*pw && zn > 0 {
				t2 = -s / zn
			}
			t1, l := math.Inf(1), -1
			for u, cu := range active {
				if !cons[cu].eq && r[u] > 0 {
					if v := lam[u] / r[u]; v < t1 {
						t1, l = v, u
					}
				}
			}
			if math.IsInf(t2, 1) && math.IsInf(t1, 1) {
				// p cannot hold with the constraints in (nor be met by moving the
				// free values): leave it out, unless it already holds.
				if !(math.Abs(s) <= 1e-9*scale+1e-9) {
					left[p] = true
				} else if cons[p].eq {
					implied[p] = true // met, and held by those in while they are
				}
				break
			}
			if math.IsInf(t2, 1) {
				// The constraint's normal is a combination of the active ones': move
				// the multipliers only, and let go of the one that reaches zero.
				for u := range lam {
					lam[u] -= t1 * r[u]
				}
				lp += t1
				in[active[l]] = false
				active, lam = drop(active, lam, l)
				continue
			}
			t := min(t1, t2)
			for j := range x {
				x[j] += t * z[j]
			}
			for u := range lam {
				lam[u] -= t * r[u]
			}
			lp += t
			if t2 <= t1 {
				active = append(active, p)
				lam = append(lam, lp)
				in[p] = true
				break
			}
			in[active[l]] = false
			active, lam = drop(active, lam, l)
		}
		if !finite(x) {
			return x0, false
		}
	}
	return x0, false
}

// gram sets buf[:a²] to N W Nᵀ for the a constraints active (their rows signed as
// taken in) and returns it: the system both a step and polish solve.
func gram(buf []float64, cons []constraint, active []int, sign, w []float64) []float64 {
	a := len(active)
	m := buf[:a*a]
	for u, cu := range active {
		for v, cv := range active {
			m[u*a+v] = dotW(cons[cu].row, sign[cu], cons[cv].row, sign[cv], w)
		}
	}
	return m
}

// dotW is (sa·a)ᵀ W (sb·b) for sparse rows a and b and the diagonal W of w.
func dotW(a []entry, sa float64, b []entry, sb float64, w []float64) float64 {
	s := 0.0
	for _, ta := range a {
		for _, tb := range b {
			if ta.i == tb.i {
				s += ta.c * tb.c * w[ta.i]
			}
		}
	}
	return sa * sb * s
}

// dot is Σ c·v over the sparse row.
func dot(row []entry, v []float64) float64 {
	s := 0.0
	for _, t := range row {
		s += t.c * v[t.i]
	}
	return s
}

// drop removes the u-th active constraint and its multiplier.
func drop(active []int, lam []float64, u int) ([]int, []float64) {
	return append(active[:u], active[u+1:]...), append(lam[:u], lam[u+1:]...)
}

// polish sets x to the point nearest to x0 in the metric of w at which the constraints
// active hold at equality: x = x0 + W Nᵀ λ with (N W Nᵀ) λ = k − N x0. It leaves x as it
// was when that system cannot be solved.
//
// The system squares the conditioning of the constraints in the metric, and variances
// a dozen orders apart (a sparse rate's and a dense rate's, under one bound) lose most of
// the digits of λ: one solve left cg-od's instruction-cache misses 0.0096 below the
// 1526 last-level ones, a subset of them. So it refines: solves again for what the
// active constraints still miss at the new point and adds that, while the largest miss,
// relative to its row's scale, falls.
// mBuf, rBuf, sBuf and tBuf are the step's scratch (nearestFeasible), free by then.
func polish(x, x0, w []float64, cons []constraint, active []int, sign, mBuf, rBuf, sBuf, tBuf []float64) {
	if len(active) == 0 {
		copy(x, x0)
		return
	}
	step := func(y []float64) bool {
		b := rBuf[:len(active)]
		for u, cu := range active {
			s, _ := cons[cu].slack(y)
			b[u] = -sign[cu] * s // k − row·y, signed as taken in
		}
		if !solveRegularised(gram(mBuf, cons, active, sign, w), b, len(active), sBuf, tBuf) {
			return false
		}
		for u, cu := range active {
			for _, t := range cons[cu].row {
				y[t.i] += w[t.i] * sign[cu] * t.c * b[u]
			}
		}
		return finite(y)
	}
	miss := func(y []float64) float64 {
		m := 0.0
		for _, cu := range active {
			s, scale := cons[cu].slack(y)
			m = max(m, math.Abs(s)/(scale+1e-300))
		}
		return m
	}
	y := append([]float64(nil), x0...)
	if !step(y) {
		return
	}
	copy(x, y)
	for range polishRefinements {
		was := miss(x)
		if was <= 1e-15 || !step(y) || !(miss(y) < was) {
			return
		}
		copy(x, y)
	}
}

// polishRefinements bounds polish's extra solves: each gains the digits one solve
// keeps, and one sufficed where variances spanned 11 orders (TestNearestFeasible).
const polishRefinements = 3

// solveRegularised solves m·x = b (m r×r, x into b) as solveSmall does, and where m is
// singular (a constraint that repeats others, or one over fixed values only) solves it
// again with m's diagonal raised by a trillionth, so that such rows take no share. It
// regularises only then: on a well-posed system a trillionth of a variance of 5e7
// moved a bound's two sides apart by 0.004 counts. sBuf and tBuf are scratch of at
// least r² and r.
func solveRegularised(m, b []float64, r int, sBuf, tBuf []float64) bool {
	mc, bc := sBuf[:r*r], tBuf[:r]
	copy(mc, m)
	copy(bc, b)
	if solveSmall(mc, bc, r) && finite(bc) {
		copy(b, bc)
		return true
	}
	for u := range r {
		m[u*r+u] += 1e-12 * (1 + m[u*r+u])
	}
	return solveSmall(m, b, r)
}
