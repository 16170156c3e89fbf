package model

import (
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
)

// history keeps, per slice, what the smoother needs: the predicted and filtered means
// and covariances, the persistence used, the slice's duration, and the counts of events
// counted whole (NaN otherwise, for exact reporting). All of it is kept for the last
// few thousand slices only (bounded memory, see Options.History); older slices are
// frozen into per-event sums over blocks of slices (frozen), smoothed if a smoothing
// pass had reached them, filtered otherwise. Storage is reused, so a slice costs no
// allocation of its own once the buffers have grown.
type history struct {
	k, n   int
	t      int       // slices recorded
	lo     int       // first slice whose covariances are kept
	limit  int       // most slices with covariances kept
	d      []float64 // (t−lo): durations
	exact  []float64 // (t−lo)·n
	a      []float64 // (t−lo)·k: persistence used to predict the slice
	qs     []float64 // (t−lo)·k: step standard deviations used to predict the slice
	qb     []float64 // (t−lo)·k: extra (burst) step variances, on the diagonal
	rid    []int     // (t−lo): id of the step correlation matrix used
	mp, mf []float64 // (t−lo)·k
	pf     []float64 // (t−lo)·k·k; predicted covariances are recomputed from these
	frozen frozen    // slices [0, lo)
}

// frozen is what is left of slices whose covariances were dropped: per block of
// consecutive slices and per event, sums over the block. A block is one slice, or with
// Options.Marked every slice from one mark to the next (Mark), so that a run of any
// length keeps as many blocks as the reader asked for boundaries.
type frozen struct {
	marked  bool
	start   []int     // per block: its first slice (a block ends where the next begins, the last at lo)
	m       []float64 // blocks·n: count mean
	sd      []float64 // blocks·n: sum of the slices' count standard deviations
	counted []float64 // blocks·n: counts of the slices in which the event was counted whole
	un      []float64 // blocks·n: slices in which it was not
	level   []float64 // blocks·n: level error (levelError) over the block, as it was at freezing
	last    []int     // per event: the last frozen slice it was counted whole in, −1 if none
	marks   []int     // boundaries asked for (Mark) not frozen yet, ascending
}

// blocks returns the frozen blocks [b0, b1) that span [from, to) covers: a span end
// inside a block is taken at the block's start.
func (f *frozen) blocks(from, to, lo int) (b0, b1 int) {
	if from >= lo || len(f.start) == 0 {
		return 0, 0
	}
	at := func(t int) int { // the block containing slice t < lo
		i, _ := slices.BinarySearch(f.start, t+1)
		return i - 1
	}
	b0 = max(at(max(from, 0)), 0)
	b1 = len(f.start)
	if to < lo {
		b1 = at(to) // to inside block b1 is rounded down to its start: b1 is out
	}
	return b0, max(b1, b0)
}

func grow(s []float64, add int) []float64 {
	if cap(s)-len(s) < add {
		ns := make([]float64, len(s), 2*cap(s)+add)
		copy(ns, s)
		s = ns
	}
	return s
}

func (h *history) pushPredicted(m, qs, qb, a []float64, rid int, d float64) {
	h.qb = append(grow(h.qb, len(qb)), qb...)
	h.d = append(h.d, d)
	h.a = append(grow(h.a, len(a)), a...)
	h.qs = append(grow(h.qs, len(qs)), qs...)
	h.rid = append(h.rid, rid)
	h.mp = append(grow(h.mp, len(m)), m...)
}

// predicted recomputes the predicted covariance of kept slice i (i >= 1) into p:
// F·Pf(i−1)·F + diag(qs)·R·diag(qs).
func (md *Model) predicted(i int, p []float64) {
	h := &md.hist
	k, kk := md.k, md.k*md.k
	pf := h.pf[(i-1)*kk : i*kk]
	a := h.a[i*k : (i+1)*k]
	qs := h.qs[i*k : (i+1)*k]
	qb := h.qb[i*k : (i+1)*k]
	r := md.lrn.rvers[h.rid[i]]
	for x := range k {
		ax, qx := a[x], qs[x]
		row := p[x*k : x*k+k]
		prow := pf[x*k : x*k+k]
		rrow := r[x*k : x*k+k]
		for y := range k {
			row[y] = ax*a[y]*prow[y] + qx*qs[y]*rrow[y]
		}
		row[x] += qb[x]
	}
}

func (h *history) pushFiltered(m, p []float64, s inference.Slice, n int, same [][2]int) {
	h.mf = append(grow(h.mf, len(m)), m...)
	h.pf = append(grow(h.pf, len(p)), p...)
	base := len(h.exact)
	h.exact = grow(h.exact, n)[:base+n]
	ex := h.exact[base:]
	for i := range ex {
		ex[i] = math.NaN()
	}
	for _, r := range s.Readings {
		if int(r.Event) >= 0 && int(r.Event) < n && r.Running > 0 && r.Running >= r.Enabled {
			ex[r.Event] = float64(r.Count)
		}
	}
	// An event listed twice: a reading of either copy is the other's count too.
	for _, d := range same {
		if math.IsNaN(ex[d[0]]) {
			ex[d[0]] = ex[d[1]]
		} else if math.IsNaN(ex[d[1]]) {
			ex[d[1]] = ex[d[0]]
		}
	}
	h.t++
}

// Mark says that Estimate will be asked about spans beginning or ending at slice
// boundary t (slice t's start). With Options.Marked, frozen slices are merged between
// marks, so it must be called before slice t freezes (while t > the first slice whose
// covariances are kept, or at the latest slice); a mark at a boundary frozen already
// cannot split its block and is ignored. Boundary 0 and the end of the run are always
// marks. Without Options.Marked every boundary is one and Mark does nothing.
func (md *Model) Mark(t int) {
	f := &md.hist.frozen
	if !f.marked || t <= md.hist.lo {
		return
	}
	if n := len(f.marks); n == 0 || f.marks[n-1] < t {
		f.marks = append(f.marks, t)
		return
	}
	if i, ok := slices.BinarySearch(f.marks, t); !ok {
		f.marks = slices.Insert(f.marks, i, t)
	}
}

// freeze drops the covariances of the oldest w kept slices, keeping per-event sums of
// their count means, standard deviations, counts and level errors in blocks (frozen).
func (md *Model) freeze(w int) {
	h := &md.hist
	f := &h.frozen
	c := &md.cache
	n, k, kk := md.n, md.k, md.k*md.k
	if f.last == nil {
		f.last = make([]int, n)
		for e := range f.last {
			f.last[e] = -1
		}
	}
	// Freeze smoothed values where the last smoothing pass (a live reader's Estimate)
	// reached these slices: given a little less data than now, still far better than
	// filtered ones. Elsewhere the filtered values stay: smoothing here would stall
	// Observe for a whole window (O(window·k³)).
	for s := h.lo; s < h.lo+w; s++ {
		i := s - h.lo
		newBlock := !f.marked || len(f.start) == 0
		for len(f.marks) > 0 && f.marks[0] <= s {
			newBlock = newBlock || f.marks[0] == s
			f.marks = f.marks[1:]
		}
		if newBlock {
			f.start = append(f.start, s)
			for _, arr := range []*[]float64{&f.m, &f.sd, &f.counted, &f.un, &f.level} {
				*arr = append(*arr, make([]float64, n)...)
			}
		}
		b := len(f.start) - 1
		if newBlock || s == h.lo {
			// The level error of the block's slices in this chunk, taken while the
			// slices around them are still kept (it looks up to `reach` either side).
			end := s + 1
			if f.marked {
				end = h.lo + w
				if len(f.marks) > 0 {
					end = min(end, f.marks[0])
				}
			}
			for e := range n {
				f.level[b*n+e] += md.keptLevelError(e, s, end)
			}
		}
		m, p := h.mf[i*k:(i+1)*k], h.pf[i*kk:(i+1)*kk]
		if c.base == h.lo && c.lo <= s && c.upTo > s {
			m, p = c.ms[i*k:(i+1)*k], c.ps[i*kk:(i+1)*kk]
		}
		d := h.d[i]
		for e := range n {
			v, vr := 0.0, 0.0
			for _, a := range md.rows[e] {
				v += a.c * m[a.i]
				for _, b := range md.rows[e] {
					vr += a.c * b.c * p[a.i*k+b.i]
				}
			}
			f.m[b*n+e] += d * v
			f.sd[b*n+e] += d * math.Sqrt(math.Max(vr, 0))
			if x := h.exact[i*n+e]; math.IsNaN(x) {
				f.un[b*n+e]++
			} else {
				f.counted[b*n+e] += x
				f.last[e] = s
			}
		}
	}
	h.d = h.d[:copy(h.d, h.d[w:])]
	h.exact = h.exact[:copy(h.exact, h.exact[w*n:])]
	h.a = h.a[:copy(h.a, h.a[w*k:])]
	h.qs = h.qs[:copy(h.qs, h.qs[w*k:])]
	h.qb = h.qb[:copy(h.qb, h.qb[w*k:])]
	h.rid = h.rid[:copy(h.rid, h.rid[w:])]
	h.mp = h.mp[:copy(h.mp, h.mp[w*k:])]
	h.mf = h.mf[:copy(h.mf, h.mf[w*k:])]
	h.pf = h.pf[:copy(h.pf, h.pf[w*kk:])]
	h.lo += w
	// Correlation matrices no kept slice refers to can go.
	if len(h.rid) > 0 {
		for id := range md.lrn.rvers {
			if id < h.rid[0] && id != md.lrn.rid {
				md.lrn.spare = md.lrn.rvers[id]
				delete(md.lrn.rvers, id)
			}
		}
	}
	c.valid = false
}

// smoothCache holds the RTS smoother's output for slices [lo, upTo) computed when upTo
// slices had been observed; arrays are indexed from slice base (the history's lo then).
type smoothCache struct {
	valid               bool
	lo                  int
	upTo                int
	base                int
	ms                  []float64 // per slice k
	ps                  []float64 // per slice k·k
	j                   []float64 // per slice k·k: smoother gain to the next slice
	chol, diff, tmp, pp []float64
}

// smooth runs the Rauch-Tung-Striebel smoother back from the last slice to slice lo
// (lo >= the history's lo).
func (md *Model) smooth(lo int) {
	h := &md.hist
	k := md.k
	c := &md.cache
	if c.valid && c.upTo == h.t && c.lo <= lo && c.base == h.lo {
		return
	}
	kk := k * k
	T := h.t - h.lo // kept slices, indexed from 0
	L := lo - h.lo
	if cap(c.ms) < T*k {
		c.ms = make([]float64, T*k, 2*T*k)
		c.ps = make([]float64, T*kk, 2*T*kk)
		c.j = make([]float64, T*kk, 2*T*kk)
		c.chol = make([]float64, kk)
		c.diff = make([]float64, kk)
		c.tmp = make([]float64, kk)
		c.pp = make([]float64, kk)
	}
	c.ms, c.ps, c.j = c.ms[:T*k], c.ps[:T*kk], c.j[:T*kk]
	c.valid, c.upTo, c.lo, c.base = true, h.t, lo, h.lo
	copy(c.ms[(T-1)*k:T*k], h.mf[(T-1)*k:T*k])
	copy(c.ps[(T-1)*kk:T*kk], h.pf[(T-1)*kk:T*kk])
	clear(c.j[(T-1)*kk : T*kk])
	chol, diff, tmp, pp := c.chol, c.diff, c.tmp, c.pp
	for t := T - 2; t >= L; t-- {
		pf := h.pf[t*kk : (t+1)*kk]
		md.predicted(t+1, pp)
		J := c.j[t*kk : (t+1)*kk]
		a := h.a[(t+1)*k : (t+2)*k]
		// J = Pf·F·Pp⁻¹ with F = diag(a). Pp is nearly singular whenever counted rates
		// pin directions down exactly and steps are strongly correlated; a relative
		// jitter on its diagonal keeps the solve from amplifying rounding errors.
		copy(chol, pp)
		for i := range k {
			chol[i*k+i] += 1e-7*pp[i*k+i] + 1e-300
		}
		if cholesky(chol, k) {
			cholSolveRows(chol, k, pf, a, J)
		} else {
			clear(J)
		}
		// ms = mf + J (ms' − mp')
		ms := c.ms[t*k : (t+1)*k]
		copy(ms, h.mf[t*k:(t+1)*k])
		msn := c.ms[(t+1)*k : (t+2)*k]
		mpn := h.mp[(t+1)*k : (t+2)*k]
		for i := range k {
			s := 0.0
			row := J[i*k : i*k+k]
			for j := range k {
				s += row[j] * (msn[j] - mpn[j])
			}
			ms[i] += s
		}
		// Ps = Pf + J (Ps' − Pp') Jᵀ
		psn := c.ps[(t+1)*kk : (t+2)*kk]
		for i := range diff {
			diff[i] = psn[i] - pp[i]
		}
		matMul(J, diff, tmp, k)
		ps := c.ps[t*kk : (t+1)*kk]
		copy(ps, pf)
		for i := range k {
			ti := tmp[i*k : i*k+k]
			for j := range k {
				Jj := J[j*k : j*k+k]
				s := 0.0
				for p := range k {
					s += ti[p] * Jj[p]
				}
				ps[i*k+j] += s
			}
		}
		// A smoothed variance can only be below the filtered one, and a smoothed mean
		// only a few standard deviations away from the filtered one: anything else is
		// rounding gone wild, and this step keeps the filtered values.
		bad := false
		for i := range k {
			fv := pf[i*k+i]
			if !(ps[i*k+i] <= fv*(1+1e-6)+1e-300) || math.Abs(ms[i]-h.mf[t*k+i]) > 50*math.Sqrt(fv)+1e-300 {
				bad = true
				break
			}
		}
		if bad {
			clear(J)
			copy(ms, h.mf[t*k:(t+1)*k])
			copy(ps, pf)
		}
		for i := range k {
			if ps[i*k+i] < 0 {
				ps[i*k+i] = 0
			}
		}
	}
}

// cholSolveRows sets X = B·F·Pp⁻¹ given the Cholesky factor of Pp (lower triangle of
// l), with F = diag(a): row i of X solves Pp·xᵢ = (row i of B)⊙a, Pp being symmetric.
func cholSolveRows(l []float64, k int, b []float64, a []float64, x []float64) {
	for i := range k {
		xi := x[i*k : i*k+k]
		bi := b[i*k : i*k+k]
		for r := range k {
			s := a[r] * bi[r]
			lr := l[r*k : r*k+r]
			for p, v := range lr {
				s -= v * xi[p]
			}
			xi[r] = s / l[r*k+r]
		}
		for r := k - 1; r >= 0; r-- {
			s := xi[r]
			for p := r + 1; p < k; p++ {
				s -= l[p*k+r] * xi[p]
			}
			xi[r] = s / l[r*k+r]
		}
	}
}

// matMul sets c = a·b for k×k row-major matrices.
func matMul(a, b, c []float64, k int) {
	clear(c)
	for i := range k {
		ci := c[i*k : i*k+k]
		for p := range k {
			v := a[i*k+p]
			if v == 0 {
				continue
			}
			bp := b[p*k : p*k+k]
			for j := range k {
				ci[j] += v * bp[j]
			}
		}
	}
}

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
		if v := md.scatter(e, un, to-from, val); v > 0 {
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
			s = math.Max(s, math.Sqrt(v))
		}
		est := inference.Estimate{Value: val, Lo: val - q*s, Hi: val + q*s, HasInterval: true, Status: inference.StatusInferred}
		if !md.opt.AllowNegative {
			// Counts are never negative, so what the slices counted whole already
			// saw is a floor for the interval's count.
			est.Value = math.Max(est.Value, counted)
			est.Lo = math.Max(est.Lo, counted)
			est.Hi = math.Max(est.Hi, counted)
		}
		if math.IsNaN(est.Value) || math.IsInf(est.Value, 0) || math.IsNaN(sd[e]) {
			est = inference.Estimate{Status: inference.StatusNotCounted}
		}
		out[e] = est
	}
	md.reconcile(out, countedOf)
	return out
}

// reconcile makes the reported values of slices [from, to) satisfy the exact
// identities. The posterior means do by construction, the reported values need not: a
// slice counted whole is reported as counted while the state took the count as a noisy
// reading of its rate, and values are clipped at zero (a derived total came out 3x its
// terms' sum on a callgrind trace). Among the values that satisfy the identities it
// takes the nearest to the reported ones in the metric of their variances (weighted
// least squares, as hierarchical forecasts are reconciled), where a sum that the state
// makes of other rates counts as far less certain than its terms, so that it takes up
// their counts; exact values do not move. A value pushed below zero (or below what its
// counted slices saw) is held there and the rest solved again. An interval moves with
// its value and keeps covering the value before the move. Identities over an event
// without an estimate are left alone.
func (md *Model) reconcile(out []inference.Estimate, counted []float64) {
	if len(md.identities) == 0 {
		return
	}
	rows := make([][]entry, 0, len(md.identities))
	for _, id := range md.identities {
		usable := true
		for _, t := range id {
			if o := out[md.idEvents[t.i]]; o.Status == inference.StatusNotCounted || !o.HasInterval {
				usable = false
			}
		}
		if usable {
			rows = append(rows, id)
		}
	}
	if len(rows) == 0 {
		return
	}
	n, r := len(md.idEvents), len(rows)
	x := make([]float64, n)     // the values, reconciled
	w := make([]float64, n)     // their variances; 0: fixed
	floor := make([]float64, n) // the least each may take
	for j, e := range md.idEvents {
		x[j] = out[e].Value
		if out[e].Status != inference.StatusInferred {
			continue
		}
		s := (out[e].Hi - out[e].Lo) / (2 * md.quantQ)
		w[j] = s * s
		if len(md.rows[e]) > 1 {
			// A sum the state makes of other rates: its terms' reported values hold
			// their exact counts, which the sum then takes up.
			w[j] = 1e6 * (s*s + x[j]*x[j] + 1)
		}
		floor[j] = counted[e]
	}
	m := make([]float64, r*r)
	b := make([]float64, r)
	for range n + 1 {
		// Solve (A W Aᵀ) λ = −A x; x += W Aᵀ λ.
		clear(m)
		clear(b)
		for a, ra := range rows {
			for _, t := range ra {
				b[a] -= t.c * x[t.i]
			}
			for c, rc := range rows {
				for _, ta := range ra {
					for _, tc := range rc {
						if ta.i == tc.i {
							m[a*r+c] += ta.c * tc.c * w[ta.i]
						}
					}
				}
			}
		}
		// Rows whose terms are all fixed, or that repeat others, leave m singular:
		// regularise lightly so that they take no share.
		for a := range r {
			m[a*r+a] += 1e-12 * (1 + m[a*r+a])
		}
		if !solveSmall(m, b, r) {
			return
		}
		for a, ra := range rows {
			for _, t := range ra {
				x[t.i] += w[t.i] * t.c * b[a]
			}
		}
		moved := false
		for j := range x {
			if w[j] > 0 && x[j] < floor[j] {
				x[j], w[j], moved = floor[j], 0, true
			}
		}
		if !moved {
			break
		}
	}
	for j, e := range md.idEvents {
		if out[e].Status != inference.StatusInferred || math.IsNaN(x[j]) || math.IsInf(x[j], 0) {
			continue
		}
		d := x[j] - out[e].Value
		out[e].Value = x[j]
		// The interval moves with the value and keeps covering the value before the
		// move: the shift is a correction the model's own variances did not foresee.
		out[e].Lo = math.Max(math.Min(out[e].Lo, out[e].Lo+d), floor[j])
		out[e].Hi = math.Max(math.Max(out[e].Hi, out[e].Hi+d), out[e].Value)
	}
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
	return sum + md.keptLevelError(e, max(from, h.lo), to)
}

// keptLevelError is levelError over kept slices [from, to) (from >= the history's lo).
func (md *Model) keptLevelError(e, from, to int) float64 {
	h := &md.hist
	l := &md.lrn
	const reach = 256 // farther than this, a counted slice no longer matters
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
		g := min(t-last, next[t-from]-t)
		d := h.d[t-h.lo]
		lv := 0.0
		for _, a := range md.rows[e] {
			if l.levelN[a.i] == 0 {
				continue
			}
			w := 1 - math.Pow(l.a[a.i], float64(g))
			lv += a.c * a.c * w * w * l.levelVar(a.i, d)
		}
		sum += d * math.Sqrt(lv)
	}
	return sum
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
		val, vr := 0.0, 0.0
		for _, a := range row {
			val += a.c * zm[a.i]
			for _, b := range row {
				vr += a.c * b.c * v[a.i*k+b.i]
			}
		}
		// Frozen slices: their cross-slice covariances are gone; take them as fully
		// correlated, which can only widen the interval.
		fsd := 0.0
		for b := b0; b < b1; b++ {
			val += f.m[b*md.n+e]
			fsd += f.sd[b*md.n+e]
		}
		vr = math.Max(vr, 0)
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

// scatter is the variance that event e's un uncounted slices, of the n of an interval,
// add to its count there beyond the state's: a count is not its rate, what a slice
// counts scatters around the rate the state describes by about dispersion·count
// (Poisson-like, widened by bursts), independently from slice to slice. The count is
// the larger of the estimate's (val) and the usual level's, so that an estimate near
// zero does not call a burst impossible.
func (md *Model) scatter(e, un, n int, val float64) float64 {
	if n <= 0 {
		return 0
	}
	share := float64(un) / float64(n)
	v := md.lrn.countScatter(e, val*share, float64(un))
	if !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// withCounts replaces, in event e's sum over [from, to), the smoothed rate of the
// slices where e was counted whole by their counts.
func (md *Model) withCounts(e, from, to int, val float64) float64 {
	h := &md.hist
	c := &md.cache
	k := md.k
	row := md.rows[e]
	if len(row) != 1 || !c.valid {
		return val
	}
	i := row[0].i
	for t := max(from, h.lo, c.lo); t < min(to, c.upTo); t++ {
		x := h.exact[(t-h.lo)*md.n+e]
		if math.IsNaN(x) {
			continue
		}
		ms := c.ms[(t-c.base)*k : (t-c.base+1)*k]
		val += x - h.d[t-h.lo]*row[0].c*ms[i]
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
