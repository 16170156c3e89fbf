package model

import (
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
)

// Estimate returns per event the posterior mean of its count over slices [from, to)
// given everything observed so far, with a Level interval. An event counted whole in
// every slice of the range is reported exactly as counted. Values and bounds are
// clipped at zero (counts are never negative); Posterior gives the unclipped moments.
func (md *Model) Estimate(from, to int) []inference.Estimate {
	out := make([]inference.Estimate, md.n)
	mean, sd := md.Posterior(from, to)
	if mean == nil {
		return out
	}
	h := &md.hist
	from, to = max(from, 0), min(to, h.t)
	q0 := md.quantQ
	sOf := make([]float64, md.k)       // per state component: its event's standard deviation
	countedOf := make([]float64, md.n) // per event: what its slices counted whole saw
	// Single rates first: a sum's interval is at least as wide as its terms' together.
	for _, e := range md.byDependence {
		counted, un := md.countedIn(e, from, to)
		countedOf[e] = counted
		if un == 0 {
			out[e] = inference.Estimate{Value: counted, Lo: counted, Hi: counted, HasInterval: true, Status: inference.StatusExact}
			continue
		}
		if !md.informed(e) {
			// Never counted and tied to nothing counted: the prior is all there is.
			out[e] = inference.Estimate{Status: inference.StatusNotCounted}
			continue
		}
		val := mean[e]
		q := q0
		s := md.lrn.intervalScale(e) * math.Hypot(sd[e], md.levelError(e, from, to))
		val = md.withCounts(e, from, to, val)
		if v := md.scatter(e, from, to, counted, un, val); v > 0 {
			s = math.Sqrt(s*s + v)
		}
		if row := md.rows[e]; len(row) == 1 {
			sOf[row[0].i] = s
		} else {
			// A sum's own calibration, level error and scatter are never learned (no
			// reading of a sum is a reading of one rate): its interval is at least
			// that of its terms, taken as independent. Without this, the derived
			// totals of the callgrind traces covered their truth in 47-65% of
			// intervals, their terms in about 90%.
			v := 0.0
			for _, a := range row {
				v += a.c * a.c * sOf[a.i] * sOf[a.i]
			}
			s = max(s, math.Sqrt(v))
		}
		est := inference.Estimate{Value: val, Lo: val - q*s, Hi: val + q*s, HasInterval: true, Status: inference.StatusInferred}
		if !md.opt.AllowNegative {
			// Counts are never negative, so what the slices counted whole already
			// saw is a floor for the interval's count.
			est.Value = max(est.Value, counted)
			est.Lo = max(est.Lo, counted)
			est.Hi = max(est.Hi, counted)
		}
		if math.IsNaN(est.Value) || math.IsInf(est.Value, 0) || math.IsNaN(sd[e]) {
			est = inference.Estimate{Status: inference.StatusNotCounted}
		}
		out[e] = est
	}
	md.reconcile(out, countedOf)
	return out
}

// levelError is the standard deviation that the uncertainty of event e's level adds to
// its count over slices [from, to). The walk reverts uncounted rates to a level that
// is only an average of a few counts; the state treats the level as known, so the
// posterior leaves out an error that is the same in every slice of a gap and so adds
// up linearly over an interval, not in quadrature. The interval calibration already
// counts it (learner.calibrate standardises by it); here it enters the intervals the
// same way: per slice the level's weight 1 − a^g at g slices from the nearest count.
func (md *Model) levelError(e, from, to int) float64 {
	h := &md.hist
	f := &h.frozen
	sum := 0.0
	b0, b1 := f.blocks(from, to, h.lo)
	for b := b0; b < b1; b++ {
		sum += f.level[b*md.n+e]
	}
	return sum + md.keptLevelError(e, max(from, h.lo), to, nil)
}

// keptLevelError is levelError over kept slices [from, to) (from >= the history's lo).
func (md *Model) keptLevelError(e, from, to int, pw []float64) float64 {
	h := &md.hist
	const reach = levelReach
	n := md.n
	to = min(to, h.t)
	if from >= to {
		return 0
	}
	counted := func(t int) bool { return !math.IsNaN(h.exact[(t-h.lo)*n+e]) }
	last := -1 << 30
	if h.lo > 0 && from-h.lo < reach && h.frozen.last != nil && h.frozen.last[e] >= 0 {
		last = h.frozen.last[e]
	}
	for t := max(from-reach, h.lo); t < from; t++ {
		if counted(t) {
			last = t
		}
	}
	next := make([]int, to-from)
	nx := 1 << 30
	for t := min(to+reach, h.t) - 1; t >= from; t-- {
		if counted(t) {
			nx = t
		}
		if t < to {
			next[t-from] = nx
		}
	}
	sum := 0.0
	for t := from; t < to; t++ {
		if counted(t) {
			last = t
			continue
		}
		sum += md.sliceLevelError(e, min(t-last, next[t-from]-t), h.d[t-h.lo], pw)
	}
	return sum
}

// keptLevelErrorEach sets out[t-from] to keptLevelError(e, t, t+1) for every kept slice
// t in [from, to), the same values in one sweep each way rather than one scan of the
// slices around each t: freeze needs every slice's, and scanning per slice made it
// most of Observe's cost at 35 events.
func (md *Model) keptLevelErrorEach(e, from, to int, out, pw []float64) {
	h := &md.hist
	const reach = levelReach
	n := md.n
	to = min(to, h.t)
	counted := func(t int) bool { return !math.IsNaN(h.exact[(t-h.lo)*n+e]) }
	base := -1 << 30
	if h.lo > 0 && h.frozen.last != nil && h.frozen.last[e] >= 0 {
		base = h.frozen.last[e]
	}
	// next[t-from]: the first counted slice after t, at most reach slices on.
	next := make([]int, max(to-from, 0))
	nx := 1 << 30
	for t := min(to+reach, h.t) - 1; t >= from; t-- {
		if t < to {
			next[t-from] = nx
			if nx-t > reach {
				next[t-from] = 1 << 30
			}
		}
		if counted(t) {
			nx = t
		}
	}
	lc := -1 << 30 // the last counted slice before t
	for t := h.lo; t < from; t++ {
		if counted(t) {
			lc = t
		}
	}
	for t := from; t < to; t++ {
		if counted(t) {
			out[t-from] = 0
			lc = t
			continue
		}
		last := lc
		if last < max(t-reach, h.lo) {
			last = -1 << 30
			if t-h.lo < reach {
				last = base
			}
		}
		out[t-from] = md.sliceLevelError(e, min(t-last, next[t-from]-t), h.d[t-h.lo], pw)
	}
}

// levelReach is how far a counted slice bears on the level error: farther than this,
// it no longer matters.
const levelReach = 256

// sliceLevelError is the level error of event e in one uncounted slice of duration d,
// g slices from the nearest count: the level's weight there is 1 − a^g. pw, if not
// nil, is a table from levelPowers since the persistences last changed.
func (md *Model) sliceLevelError(e, g int, d float64, pw []float64) float64 {
	l := &md.lrn
	lv := 0.0
	for _, a := range md.rows[e] {
		if l.levelN[a.i] == 0 {
			continue
		}
		var ag float64
		if pw != nil && g <= levelReach {
			at := &pw[a.i*(levelReach+1)+g]
			if math.IsNaN(*at) {
				*at = math.Pow(l.a[a.i], float64(g))
			}
			ag = *at
		} else {
			ag = math.Pow(l.a[a.i], float64(g))
		}
		w := 1 - ag
		lv += a.c * a.c * w * w * l.levelVar(a.i, d)
	}
	return d * math.Sqrt(lv)
}

// levelPowers returns an empty table (NaN: not computed yet) of a^g for every
// component's current persistence a and g up to levelReach, which sliceLevelError fills
// as it goes: freeze asks for the same few powers at every slice of a window and every
// event, which made math.Pow a tenth of Observe's cost at 35 events.
func (md *Model) levelPowers() []float64 {
	n := md.k * (levelReach + 1)
	md.pw = slices.Grow(md.pw[:0], n)[:n]
	for i := range md.pw {
		md.pw[i] = math.NaN()
	}
	return md.pw
}

// informed reports whether anything observed bears on event e: one of its state
// components was counted, or is correlated with another component.
func (md *Model) informed(e int) bool {
	k := md.k
	for _, a := range md.rows[e] {
		if md.seen[a.i] {
			return true
		}
		for j := range k {
			if j != a.i && md.P[a.i*k+j] != 0 {
				return true
			}
		}
	}
	return false
}

// Posterior returns per event the posterior mean and standard deviation of its count
// over slices [from, to), smoothed given everything observed so far, before any
// clipping or interval calibration: the moments that the model's identities hold in.
// It returns nil for an empty range.
func (md *Model) Posterior(from, to int) (mean, sd []float64) {
	h := &md.hist
	from, to = max(from, 0), min(to, h.t)
	if from >= to {
		return nil, nil
	}
	k, kk := md.k, md.k*md.k
	// Slices whose covariances are kept: mean Σ_t d_t x_t; variance with G_t =
	// Σ_{u≥t} d_u Cov(x_t, x_u), G_t = d_t Ps_t + J_t G_{t+1} and Var = Σ_t d_t (G_t +
	// J_t G_{t+1}).
	zm := make([]float64, k)
	v := make([]float64, kk)
	if lo := max(from, h.lo); lo < to {
		md.smooth(lo)
		c := &md.cache
		g := make([]float64, kk)
		jg := make([]float64, kk)
		for t := to - 1; t >= lo; t-- {
			i := t - c.base
			d := h.d[t-h.lo]
			ms := c.ms[i*k : (i+1)*k]
			for j := range k {
				zm[j] += d * ms[j]
			}
			ps := c.ps[i*kk : (i+1)*kk]
			if t == to-1 {
				clear(jg)
			} else {
				matMul(c.j[i*kk:(i+1)*kk], g, jg, k)
			}
			for j := range kk {
				g[j] = d*ps[j] + jg[j]
				v[j] += d * (g[j] + jg[j])
			}
		}
	}
	f := &h.frozen
	b0, b1 := f.blocks(from, to, h.lo)
	mean = make([]float64, md.n)
	sd = make([]float64, md.n)
	for e := range md.n {
		row := md.rows[e]
		val, vr := 0.0, rowVar(row, v, k)
		for _, a := range row {
			val += a.c * zm[a.i]
		}
		// Frozen slices: their cross-slice covariances are gone; take them as fully
		// correlated, which can only widen the interval.
		fsd := 0.0
		for b := b0; b < b1; b++ {
			val += f.m[b*md.n+e]
			fsd += f.sd[b*md.n+e]
		}
		vr = max(vr, 0)
		if fsd > 0 {
			vr += fsd*fsd + 2*fsd*math.Sqrt(vr)
		}
		mean[e], sd[e] = val, math.Sqrt(vr)
	}
	return mean, sd
}

// Finish marks the end of the run and runs the smoother once over every kept slice, so
// that the final Estimates of all intervals share one pass. Estimate answers with the
// posterior given everything observed before and after Finish alike; Observe after
// Finish is an error.
func (md *Model) Finish() {
	if !md.finished {
		md.refilter()
		// Observe after Finish is an error: the slices kept for the second pass are of
		// no more use, also where refilter kept the first pass.
		md.run.drop()
	}
	md.finished = true
	if h := &md.hist; h.t > h.lo {
		md.smooth(h.lo)
	}
}

// tQuantile returns the p-quantile of Student's t with dof degrees of freedom (dof <= 0
// or large: the normal quantile), by the Cornish-Fisher expansion, accurate to about
// 1e-3 for dof >= 3.
func tQuantile(p, dof float64) float64 {
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	if dof <= 0 || dof > 1e6 {
		return z
	}
	z3, z5, z7 := z*z*z, z*z*z*z*z, z*z*z*z*z*z*z
	return z + (z3+z)/(4*dof) + (5*z5+16*z3+3*z)/(96*dof*dof) + (3*z7+19*z5+17*z3-15*z)/(384*dof*dof*dof)
}

// scatter is the variance that event e's un uncounted slices of [from, to), whose
// counted slices saw counted, add to its count there beyond the state's: a count is not
// its rate, what a slice counts scatters around the rate the state describes by about
// dispersion·count (Poisson-like, widened by bursts), independently from slice to slice.
// The count is the larger of the estimate's (val) and the usual level's, so that an
// estimate near zero does not call a burst impossible. Where every reading in and around
// the range read zero, what the run counted between two zero readings (quietScatter) may
// say the range is quieter than that; it never widens the interval.
func (md *Model) scatter(e, from, to int, counted float64, un int, val float64) float64 {
	if to <= from {
		return 0
	}
	share := float64(un) / float64(to-from)
	v := md.lrn.countScatter(e, val*share, float64(un))
	if mean, msq, ok := md.quietScatter(e, from, to, counted, un); ok {
		// The uncounted slices as draws of what the run counted between two zero
		// readings: their spread, and how far their mean is from the estimate's share.
		u := float64(un)
		miss := u*mean - val*share
		v = min(v, max(md.lrn.dispersion(e)*val*share, u*max(msq-mean*mean, 0)+miss*miss))
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// quietScatter reports whether [from, to) lies in a quiet stretch of event e: its counted
// slices there (countedIn: counted, and un uncounted of them) saw nothing, and so did the
// last whole reading before it and the first after it (there must be one reading in all).
// If so it returns the mean and mean square of the readings the run took between two
// zero readings, each shrunk towards the run's (the usual level, the count scatter of a
// slice) by one reading's weight. The run's count scatter is learned mostly where bursts
// begin: callgrind's syscall count in bzip2, 0 in 20 of its 24 intervals, got 95%
// intervals of 0 to 95 there on estimates of 0.1 from it.
func (md *Model) quietScatter(e, from, to int, counted float64, un int) (mean, msq float64, ok bool) {
	if counted != 0 {
		return 0, 0, false
	}
	h := &md.hist
	n := md.n
	seen := un < to-from // a slice of the range was counted, at zero
	// at returns the reading of the first kept slice from t on (by step) that counted e
	// whole; found is false past the kept history.
	at := func(t, step int) (x float64, found bool) {
		for ; t >= h.lo && t < h.t; t += step {
			if x := h.exact[(t-h.lo)*n+e]; !math.IsNaN(x) {
				return x, true
			}
		}
		return 0, false
	}
	before, foundBefore := at(from-1, -1)
	after, foundAfter := at(max(to, h.lo), 1)
	if before != 0 || after != 0 || !(seen || foundBefore || foundAfter) {
		return 0, 0, false
	}
	q := md.quietStats()
	w := q.m[e] + 1
	return (q.s[e] + md.lrn.dispM[e]) / w, (q.sq[e] + md.lrn.countScatter(e, 0, 1)) / w, true
}

// quietStats is quietScatter's statistic over the slices recorded before at: per
// event, the sum (s), the sum of squares (sq) and the number (m) of the whole readings
// taken between two zero readings, and its last two readings (r1 the latest, r2 the one
// before; have counts them), from which the next slices carry on.
type quietStats struct {
	at               int
	s, sq, m, r1, r2 []float64
	have             []int
}

// quietStats returns quietScatter's statistic, brought up to the latest slice.
func (md *Model) quietStats() *quietStats {
	h := &md.hist
	q := &md.quiet
	n := md.n
	if q.sq == nil {
		*q = quietStats{s: make([]float64, n), sq: make([]float64, n), m: make([]float64, n), r1: make([]float64, n),
			r2: make([]float64, n), have: make([]int, n)}
	}
	for t := max(q.at, h.lo); t < h.t; t++ {
		for e := range n {
			x := h.exact[(t-h.lo)*n+e]
			if math.IsNaN(x) {
				continue
			}
			if q.have[e] >= 2 && q.r2[e] == 0 && x == 0 {
				q.s[e] += q.r1[e]
				q.sq[e] += q.r1[e] * q.r1[e]
				q.m[e]++
			}
			q.r2[e], q.r1[e] = q.r1[e], x
			q.have[e]++
		}
	}
	q.at = max(q.at, h.t)
	return q
}

// withCounts replaces, in event e's sum over [from, to), the smoothed rate of the
// slices where e was counted whole (or exact identities determine it from counts, see
// derive) by their counts.
func (md *Model) withCounts(e, from, to int, val float64) float64 {
	h := &md.hist
	c := &md.cache
	k := md.k
	row := md.rows[e]
	if len(row) == 0 || !c.valid {
		return val
	}
	for t := max(from, h.lo, c.lo); t < min(to, c.upTo); t++ {
		x := h.exact[(t-h.lo)*md.n+e]
		if math.IsNaN(x) {
			continue
		}
		ms := c.ms[(t-c.base)*k : (t-c.base+1)*k]
		sm := 0.0
		for _, a := range row {
			sm += a.c * ms[a.i]
		}
		val += x - h.d[t-h.lo]*sm
	}
	return val
}

// countedIn returns the sum of event e's counts over the slices of [from, to) in which
// it was counted whole, and the number of slices in which it was not.
func (md *Model) countedIn(e, from, to int) (sum float64, uncounted int) {
	h := &md.hist
	f := &h.frozen
	b0, b1 := f.blocks(from, to, h.lo)
	for b := b0; b < b1; b++ {
		sum += f.counted[b*md.n+e]
		uncounted += int(f.un[b*md.n+e])
	}
	for t := max(from, h.lo); t < min(to, h.t); t++ {
		if x := h.exact[(t-h.lo)*md.n+e]; !math.IsNaN(x) {
			sum += x
		} else {
			uncounted++
		}
	}
	return sum, uncounted
}
