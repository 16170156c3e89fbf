package model

import (
	"math"

	"github.com/bayesperf/bayesperf/inference"
)

// runLog keeps the slices of a run, as Observe was given them, so that Finish can filter
// the run a second time (refilter). Readings are kept in one flat buffer that grows by
// doubling, so that a slice costs no allocation of its own once it has grown. The log
// is dropped once the history freezes its first slices (Options.History): a second pass
// would then lose the smoothing that live reads gave the frozen slices.
type runLog struct {
	off     []int // per slice: its first reading in rs
	d       []float64
	idx     []int
	rs      []inference.Reading
	dropped bool
}

func (r *runLog) add(s inference.Slice) {
	if r.dropped {
		return
	}
	r.off = append(r.off, len(r.rs))
	r.d = append(r.d, s.Duration)
	r.idx = append(r.idx, s.Index)
	r.rs = append(r.rs, s.Readings...)
}

func (r *runLog) drop() { *r = runLog{dropped: true} }

func (r *runLog) slices() int { return len(r.off) }

// meanDuration is the mean duration of the logged slices (0 for none).
func (r *runLog) meanDuration() float64 {
	sum := 0.0
	for _, d := range r.d {
		sum += d
	}
	return sum / max(float64(len(r.d)), 1)
}

// slice returns slice t of the log; its readings alias the log's buffer.
func (r *runLog) slice(t int) inference.Slice {
	end := len(r.rs)
	if t+1 < len(r.off) {
		end = r.off[t+1]
	}
	return inference.Slice{Index: r.idx[t], Duration: r.d[t], Readings: r.rs[r.off[t]:end:end]}
}

// refilter is the second pass of Finish: it filters the whole run again, from the
// prior, with the activity ratios (activity.go) learned from the readings around each
// slice instead of those before it. Online, the ratio that sets a slice's level can
// only come from earlier readings: for the first slices of a run there is none at all
// (a candidate must have been counted in 8 slices, a ratio needs 3 pairs of readings),
// and where the program's mix changes the ratio lags behind. Final values are
// conditioned on the whole run anyway (the smoother), so their levels may be too: the
// activity learner reads `lookahead` slices ahead of the filter, which centres its
// forgetting window on the slice being filtered. The walks and the constant levels are
// learned again as in the first pass, from the readings before each slice: centring
// the constant levels as well was worse (docs/model.md), since the smoother already
// carries later readings back. The intervals keep the first pass's
// calibration and count scatter (see below).
//
// Live values (Estimate before Finish) are the first pass's. A run whose history froze
// (longer than Options.History) keeps the first pass, and so does one with
// Options.NoActivity. A run without an event counted nearly always has no activity
// levels, but its second pass still sizes each rate's prior by the rate's own readings
// over the run (start) and calls a rate dormant by them (dormant); skipped there, a
// never-fired tracepoint read at zero 17 times over a stress-ng trace on 2 counters
// kept the first slice's prior until its first reading: 0 ± 4,510, now 0 ± 38
// (TestPlainRunSizesPriorsByTheRun).
func (md *Model) refilter() {
	r := &md.run
	T := r.slices()
	if md.opt.NoActivity || r.dropped || md.lrn.oracle != nil || T < 2 || md.hist.lo > 0 {
		return
	}
	ahead := md.lookahead()
	if ahead <= 0 {
		return
	}
	nm := &Model{opt: md.opt, names: md.names, n: md.n, k: md.k, free: md.free, rows: md.rows,
		byDependence: md.byDependence, inSum: md.inSum, idEvents: md.idEvents, identities: md.identities, bounds: md.bounds, soft: md.soft, ineq: md.ineq, nl: md.nl, same: md.same, clocks: md.clocks, Dropped: md.Dropped}
	nm.alloc()
	var runMean []float64
	nm.runRate, runMean = md.hindsightRates()
	d := r.meanDuration()
	nm.sparse = sparseRates(nm.runRate, d)
	nm.lrn.seedLevels(runMean, nm.sparse, d)
	// The second pass fills the history and the smoother's buffers again, in the same
	// order: reuse the first pass's, whose memory is already touched (fresh memory's
	// first touch cost as much as the filter itself).
	nm.hist.reuse(&md.hist)
	nm.cache = md.cache
	nm.cache.valid = false
	nm.run.dropped = true
	nm.lrn.act.ahead = true
	var dTyp, dN float64 // the usual slice duration of the slices read ahead, as in Observe
	next := 0
	for t := range T {
		for ; next < T && next <= t+ahead; next++ {
			s := r.slice(next)
			nm.learnAhead(s, dTyp, dN > 0)
			dN = min(dN+1, 64)
			dTyp += (s.Duration - dTyp) / dN
		}
		// A slice that failed in the first pass may fail again: the model then keeps
		// its state from before the slice, as it did the first time.
		_ = nm.Observe(r.slice(t))
	}
	// The intervals keep the first pass's calibration and count scatter: both are
	// learned from how far readings fall from their prediction, and in this pass the
	// ratio behind a prediction has already read the reading it predicts (it reads
	// ahead), so the misses come out smaller than an uncounted slice's. Learned here,
	// they narrowed the real traces' coverage95 from 0.857-0.990 to 0.843-0.971.
	l, o := &nm.lrn, &md.lrn
	l.logc80, l.logc95, l.calNAll, l.logcE, l.calN = o.logc80, o.logc95, o.calNAll, o.logcE, o.calN
	l.dispV, l.dispM, l.dispN = o.dispV, o.dispM, o.dispN
	*md = *nm
}

// learnAhead feeds the activity learner the readings of slice s counted whole, with the
// rules Observe applies to them (clocks filled in; a slice far shorter than usual, dTyp,
// does not inform an event that is not counted nearly always).
func (md *Model) learnAhead(s inference.Slice, dTyp float64, started bool) {
	if !(s.Duration > 0) || math.IsInf(s.Duration, 0) {
		return
	}
	if len(md.clocks) > 0 {
		s = md.withClocks(s)
	}
	a := &md.lrn.act
	d := s.Duration
	for e := range a.cur {
		a.cur[e] = math.NaN()
	}
	for _, rd := range s.Readings {
		e := int(rd.Event)
		if e < 0 || e >= md.n || rd.Running == 0 || rd.Running < rd.Enabled {
			continue
		}
		if started && d < shortSlice*dTyp && !a.always(e) {
			continue
		}
		a.cur[e] = float64(rd.Count) / d
	}
	a.add(md, d)
}

// lookahead is how far the second pass's activity learner reads ahead of the filter, in
// slices: the median age of its forgetting window (actWindow·ln 2 pairs of readings)
// times the mean gap between two readings of an event that is not counted nearly
// always, so that the window is centred on the slice being filtered. 0 when no event
// was read twice.
func (md *Model) lookahead() int {
	h := &md.hist
	n := md.n
	var gaps, cnt float64
	for e := range n {
		last, c := -1, 0
		var g float64
		var gc float64
		for t := range h.t {
			if math.IsNaN(h.exact[t*n+e]) {
				continue
			}
			if last >= 0 {
				g += float64(t - last)
				gc++
			}
			last = t
			c++
		}
		if float64(c) >= alwaysShare*float64(h.t) {
			continue
		}
		gaps += g
		cnt += gc
	}
	if cnt == 0 {
		return 0
	}
	return int(math.Round(actWindow * math.Ln2 * gaps / cnt))
}

// reuse empties h and takes over old's storage (old must not be used any more).
func (h *history) reuse(old *history) {
	h.d, h.exact = old.d[:0], old.exact[:0]
	h.a, h.qs, h.qb, h.rid = old.a[:0], old.qs[:0], old.qb[:0], old.rid[:0]
	h.mp, h.mf, h.pf, h.vf = old.mp[:0], old.mf[:0], old.pf[:0], old.vf[:0]
	h.frozen.marks = old.frozen.marks // refilter runs only before anything froze
}

// hindsightRates is, per state component (each the rate of one free event), the root
// mean square of the rates the first pass counted the event at whole, over the run: the
// typical size of the rate, bursts included. A rate counted only at zero gets the rule
// of three's bound instead: after zero events in a counted time T, a Poisson rate above
// 3/T is excluded at 95%, so its prior is sized by a few counts over the whole run, not
// by the other events' rates (cg-sort's Ge, read at zero in every reading, had ±23,288
// in its first interval against a truth of 37). 0 where it was never counted (the first
// pass's prior stands). mean is the rate over the run's counted time (its counts over
// that time; NaN where never counted). It reads the first pass's history, so refilter
// calls it before the second pass reuses that.
func (md *Model) hindsightRates() (rms, mean []float64) {
	h := &md.hist
	rms, mean = make([]float64, md.k), make([]float64, md.k)
	for i, e := range md.free {
		ss, sum, span, cnt := 0.0, 0.0, 0.0, 0
		for t := h.lo; t < h.t; t++ {
			x, d := h.exact[(t-h.lo)*md.n+e], h.d[t-h.lo]
			if !math.IsNaN(x) && d > 0 {
				ss += (x / d) * (x / d)
				sum += x
				span += d
				cnt++
			}
		}
		switch {
		case ss > 0:
			rms[i] = math.Sqrt(ss / float64(cnt))
		case cnt > 0:
			rms[i] = 3 / span
		}
		mean[i] = math.NaN()
		if span > 0 {
			mean[i] = sum / span
		}
	}
	return rms, mean
}
