package model

import (
	"fmt"
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
)

// shortSlice is the share of the usual slice duration below which a reading does not
// inform the state (see Observe).
const shortSlice = 0.05

// startupWiden is the variance of the step out of the run's first slice, per squared
// rate read there: diffuse, so that a start-up burst is not carried into the run.
const startupWiden = 100.0

// Observe runs one step of the filter: predict the rates of the slice from the previous
// ones, then condition on the slice's readings and on the relations.
func (md *Model) Observe(s inference.Slice) error {
	if md.finished {
		return fmt.Errorf("observe slice %d: the run is finished", s.Index)
	}
	d := s.Duration
	if !(d > 0) || math.IsInf(d, 0) {
		return fmt.Errorf("observe slice %d: bad duration %g", s.Index, d)
	}
	orig := s
	if len(md.clocks) > 0 {
		s = md.withClocks(s)
	}
	// Gather measurements first, so that a bad reading rejects the slice untouched.
	if err := md.gather(s, d); err != nil {
		return err
	}

	md.run.add(orig) // for Finish's second pass (refilter)
	if !md.init {
		md.start(d)
	}
	// The usual slice duration: a running mean over recent slices.
	md.dN = min(md.dN+1, 64)
	md.dTyp += (d - md.dTyp) / md.dN
	md.predict(d)
	md.hist.pushPredicted(md.m, md.lrn.qs, md.lrn.qb, md.lrn.a, md.lrn.rid, d)

	clear(md.now)
	clear(md.none)
	for _, o := range md.obs {
		if o.full && len(o.h) == 1 {
			md.now[o.h[0].i] = true
			md.none[o.h[0].i] = o.y == 0
		}
	}
	// Readings of single rates first, then those of events that exact identities make
	// sums of other rates: such a reading informs its terms only once they are
	// determined (see determined), as a soft identity would. Before that, a parent
	// read while children were never read yet would split its count evenly over those
	// children, whatever their own rates (a syscall made once was estimated at 26 in
	// the first interval, from raw_syscalls:sys_enter's count). In Finish's second
	// pass a term read anywhere in the run is no stranger (readInRun).
	for pass := range 2 {
		for i := range md.obs {
			o := &md.obs[i]
			if (len(o.h) == 1) != (pass == 0) {
				continue
			}
			if pass == 1 && !md.determined(o.h) && !md.readInRun(o.h) {
				continue
			}
			if o.r < 0 {
				// Partly counted: the rate in the uncounted part of the slice differs
				// from the counted part by about one slice's innovation.
				o.r = -o.r*md.innovVar(o.h) + (1.0/12)/(d*d)
			}
			md.update(o.h, o.y, o.r, o.event)
		}
	}
	md.applySoft(d)
	md.applyNonlinear(d)
	md.applyInequalities(d)

	if !finite(md.m) || !finite(md.P) {
		return md.rollback(s)
	}
	md.lrn.learn(md, s, d)
	md.hist.pushFiltered(md.m, md.P, s, md.n, md.same, md.rows)
	md.cache.valid = false
	if h := &md.hist; h.t-h.lo > h.limit {
		md.freeze(h.limit / 2)
		md.run.drop()
	}
	return nil
}

// rollback undoes a slice whose update lost its numbers: back to the state before it
// (the last filtered one kept, or the prior), the slice recorded as a failure.
func (md *Model) rollback(s inference.Slice) error {
	k := md.k
	if h := &md.hist; h.t > h.lo {
		i := h.t - 1 - h.lo
		copy(md.m, h.mf[i*k:(i+1)*k])
		copy(md.P, h.pf[i*k*k:(i+1)*k*k])
	} else {
		clear(md.m)
		clear(md.P)
		for i := range k {
			md.P[i*k+i] = md.big[i] * md.big[i]
		}
	}
	md.fail++
	md.hist.pushFiltered(md.m, md.P, s, md.n, md.same, md.rows)
	md.cache.valid = false
	return fmt.Errorf("observe slice %d: %w", s.Index, ErrNumerical)
}

// gather turns the slice's readings into measurements of the state (md.obs), or fails
// on a bad reading, leaving the model untouched.
func (md *Model) gather(s inference.Slice, d float64) error {
	md.obs = md.obs[:0]
	for _, r := range s.Readings {
		e := int(r.Event)
		if e < 0 || e >= md.n {
			return fmt.Errorf("observe slice %d: reading for unknown event %d", s.Index, e)
		}
		if r.Running == 0 {
			continue
		}
		run := float64(r.Running)
		en := float64(r.Enabled)
		full := r.Running >= r.Enabled
		// Rate per unit of slice duration. Running is in the same unit as Duration
		// (ns, or 1 for unit-time traces) unless the slice lasted less than a unit.
		frac := 1.0
		if !full && en > 0 {
			frac = run / en
		}
		span := d * frac
		if md.init && span < shortSlice*md.dTyp && !md.lrn.act.always(e) {
			// A count over a twentieth of a usual slice or less says little about the
			// rate the walk carries to other slices and can say something wildly
			// wrong: what happens in a few microseconds of the target's running time
			// need not scale with it (258 sched_wakeup in 18µs as a run ended, 11
			// times the run's total once carried over its last interval). The slice's
			// own count is still reported exactly (withCounts). Longer short slices are
			// weighed down in predict (a step of the walk per missing share); down here
			// that variance still left a burst innovations of hundreds of deviations,
			// which the Student-t step took for a jump of the rate.
			continue
		}
		y := float64(r.Count) / span
		pois := false
		// A count over the whole slice is the truth: only a rounding-level noise, so
		// that inconsistent data cannot make the update singular.
		rv := 1e-12/(span*span) + 1e-18*y*y
		if full && len(md.rows[e]) == 1 && !md.lrn.act.always(e) {
			// As evidence about the rate the walk carries to other slices, a count
			// is a Poisson draw: a few counts in a short slice are a noisy rate, and
			// taking them as exact carried a burst of one 30µs slice into its 4ms
			// neighbours (docs/model.md).
			// The slice's own count is still reported exactly (withCounts). Events
			// counted in nearly every slice stay exact: relations tie others to them.
			// The variance is that of the count the level expects (set in predict,
			// once the level is known), not of the count seen: a variance that grows
			// with the reading believes every low reading and shrinks every high one,
			// so the walk's deviations, zero on average in the readings, came out
			// negative in the state (bursty syscalls: totals 20-50% low on the
			// mixed live run, sys_enter_read −22%, getuid −53%).
			pois = true
		}
		md.obs = append(md.obs, meas{h: md.rows[e], y: y, r: rv, event: e, full: full, pois: pois, span: span})
		if !full {
			md.obs[len(md.obs)-1].r = -(1 - frac) / frac // resolved after the prediction
		}
	}

	return nil
}

// priorWidth is how many typical rates wide the prior of a rate never observed is.
const priorWidth = 10

// sparsePriorFloor is the least width, in counts a slice, of a sparse rate's prior in
// Finish's second pass (start).
const sparsePriorFloor = 0.3

// start sets the prior from the first slice: a rate never observed is 0 with a standard
// deviation ten times the typical observed rate, wide enough to be diffuse and narrow
// enough that updates do not lose every digit to cancellation. In Finish's second pass
// the typical rate is the rate's own over the run (runRate), where it has one: the first
// slice's median rate, of events in other units, sized the slices before a rate's first
// reading (cg-bzip2's Ge: ±6,353 in its first reporting interval against 392, now ±327).
// A sparse rate's prior there (see seedLevels) is one typical rate wide, not ten, and
// at least sparsePriorFloor counts a slice rather than one: with ten, or a floor of
// one count, the few counts of its first reading set the slices before it, to which
// the smoother carries that reading back (docs/model.md).
// A clock event (Options.Clocks) counts nanoseconds, so it is not among the observed
// rates: with 2 counters its rate was the first slice's median, and a rate counted only
// in parts of slices kept that prior to the end (TestPriorNotInClockUnits).
func (md *Model) start(d float64) {
	md.init = true
	var rates []float64
	for _, o := range md.obs {
		if o.y > 0 && !slices.Contains(md.clocks, o.event) {
			rates = append(rates, o.y)
		}
	}
	typ := 1 / d
	if len(rates) > 0 {
		typ = median(rates)
	}
	for i := range md.k {
		md.big[i] = priorWidth * typ
		if i < len(md.runRate) && md.runRate[i] > 0 {
			md.big[i] = max(priorWidth*md.runRate[i], 1/d)
			if md.sparse[i] {
				md.big[i] = max(md.runRate[i], sparsePriorFloor/d)
			}
		}
		md.P[i*md.k+i] = md.big[i] * md.big[i]
	}
}

// innovVar is the one-slice innovation variance of the linear form h.
func (md *Model) innovVar(h []entry) float64 {
	k := md.k
	v := 0.0
	for _, a := range h {
		for _, b := range h {
			v += a.c * b.c * md.lrn.scale[a.i] * md.lrn.scale[b.i] * md.lrn.corr[a.i*k+b.i]
		}
	}
	return v
}

// predict moves the state one slice ahead. Each free rate follows an AR(1) walk around
// its level, x − μ ← a·(x − μ) + w, with a and the covariance of w learned (see
// learner). A Student-t scale mixture per counted rate widens w when this slice's
// reading says the Gaussian step was too confident: a burst is a large step, and it
// is that rate's, not every rate's.
func (md *Model) predict(d float64) {
	k := md.k
	l := &md.lrn
	l.buildQ(md, d)
	for i := range k {
		if l.a[i] == 1 {
			continue // a random walk: no level to revert to
		}
		md.m[i] = l.mu[i] + l.a[i]*(md.m[i]-l.muP[i])
	}
	md.readingNoise()
	lam := md.studentT(d)
	for i := range k {
		// A burst is the rate's own: the extra step variance goes on the diagonal,
		// not through the correlations, so that one event's burst does not drag the
		// events it usually moves with by as many standard deviations.
		l.qs[i] = l.scale[i]
		// The burst is sized by the step, but never below the noise of the reading
		// that revealed it: a rate that sat at zero for long learns a walk with
		// almost no step, and widening that step (at most 100-fold) left the first
		// reading of a new phase unheard. The burst widens the step out of its slice
		// too (l.burst, added in the next slice): whether the rate stays up is for
		// the next reading to say, so that a one-slice burst is not carried into the
		// slices after it while a new phase still is (docs/model.md).
		b := max(l.scale[i]*l.scale[i], l.rnoise[i]) * (1/lam[i] - 1)
		l.qb[i] = b + l.burst[i]
		l.burst[i] = max(b, l.first[i])
	}
	// P ← F·P·F + diag(qs)·corr·diag(qs) + diag(qb), in one pass.
	// (The slices are cut to one length so that the inner loop runs without bounds
	// checks: this and downdate are most of Observe's arithmetic.)
	if l.identity {
		// Without learned correlations (the default) the step is diagonal: the same
		// values, without multiplying by the correlations' zeros.
		for i := range k {
			row := md.P[i*k : i*k+k]
			a := l.a[:len(row)]
			ai := a[i]
			for j, v := range row {
				row[j] = ai * a[j] * v
			}
			row[i] += l.qs[i] * l.qs[i]
			row[i] += l.qb[i]
		}
		return
	}
	for i := range k {
		row := md.P[i*k : i*k+k]
		crow := l.corr[i*k : i*k+k][:len(row)]
		a, qs := l.a[:len(row)], l.qs[:len(row)]
		ai, si := a[i], qs[i]
		for j, v := range row {
			row[j] = ai*a[j]*v + si*qs[j]*crow[j]
		}
		row[i] += l.qb[i]
	}
}

// readingNoise adds to each full count's variance its Poisson noise, from the count its
// level expects (see Observe), once the level of the slice is known.
func (md *Model) readingNoise() {
	l := &md.lrn
	for x := range md.obs {
		if o := &md.obs[x]; o.pois {
			c := l.mu[o.h[0].i] * o.span
			o.r += max(c, 1) / (o.span * o.span)
			if md.dTyp > o.span {
				// A count over a slice shorter than usual (the task ran for part of
				// it) samples the rate over a fraction of a usual slice: like a count
				// running for part of its slice, it misses the rest of it by about
				// one step of the walk per missing share. Without this a burst of a
				// 30µs slice, one of the level's expected count, set the rate of its
				// 4ms neighbours (docs/model.md).
				o.r += (md.dTyp/o.span - 1) * md.innovVar(o.h)
			}
		}
	}
}

// studentT weighs each rate's step by the variational Student-t mixture given the
// slice's direct readings, and returns the weights (λ: 1 for a Gaussian step, less for
// a burst). On the way it feeds the readings that come after a gap to the interval
// calibration and notes first sightings (l.first).
func (md *Model) studentT(d float64) []float64 {
	k := md.k
	l := &md.lrn
	lam := l.lam
	for i := range lam {
		lam[i] = 1
		l.rnoise[i] = 0
	}
	// Variational Student-t: E[λ | innovation] with λ ~ Gamma(ν/2, ν/2) scaling the
	// precision of the step. Only direct readings of rates seen before take part: a
	// first sighting says nothing about the walk. The same innovations, when they come
	// after a gap, calibrate the reported intervals (see learner.calibrate).
	clear(l.first)
	for _, o := range md.obs {
		if len(o.h) == 1 && !md.seen[o.h[0].i] && o.full && !md.inSum[o.h[0].i] {
			// A first sighting says nothing about persistence either: the step out
			// of it has a deviation of half the rate it read, so that the next
			// reading, more than the walk, says whether the rate stays up (a
			// program's start-up burst, its execs and forks all in its first
			// slice, was otherwise carried into every slice until the next
			// reading). Not for a term of an exact sum: the sum's readings are
			// split over its terms by their step variances, and the widened term
			// would take all of them.
			r := o.y / o.h[0].c
			l.first[o.h[0].i] = r * r / 4
			if l.tick == 0 {
				// The run's first slice is its start-up (exec, the loader's mmaps,
				// a program's one fork): what a rate does there says nothing of
				// the slices after it, which the next reading decides.
				l.first[o.h[0].i] = r * r * startupWiden
			}
		}
		if len(o.h) != 1 || !md.seen[o.h[0].i] {
			continue
		}
		i := o.h[0].i
		c := o.h[0].c
		rv := o.r
		if rv < 0 {
			rv = -rv * md.innovVar(o.h)
		}
		s := c*c*(l.a[i]*l.a[i]*md.P[i*k+i]+l.scale[i]*l.scale[i]) + rv
		if !(s > 0) {
			continue
		}
		nu := o.y - c*md.m[i]
		r2 := nu * nu / s
		l.rnoise[i] = rv / (c * c)
		if o.full {
			l.disperse(o.event, nu, s, l.mu[i], d)
		}
		if gap := l.tick - l.prevT[o.event]; o.full && gap > 1 {
			// The walk reverts to a level that is itself only an average of a few
			// counts: its uncertainty is part of what the prediction may miss by.
			w := 1 - math.Pow(l.a[i], float64(gap))
			sl := s - rv + c*c*w*w*l.levelVar(i, d)
			// An inferred interval adds the scatter of an uncounted slice's count
			// (Model.scatter), unscaled, where a reading has its noise: the scale
			// is calibrated for the rest, or it learns the scatter a second time.
			sc := max(rv, l.countScatter(o.event, c*l.mu[i]*d, 1)/(d*d))
			l.calibrate(o.event, nu*nu, sl, sc)
		}
		if dof := md.opt.Dof; dof > 0 {
			lam[i] = max(min((dof+1)/(dof+r2), 1), 1e-2)
		}
	}
	return lam
}

// update conditions the state on y = h·z + noise of variance r (a scalar Kalman update).
func (md *Model) update(h []entry, y, r float64, event int) {
	if len(h) == 1 {
		md.seen[h[0].i] = true
	}
	md.updateDense(h, y, r)
}

// covWith returns P·hᵀ, the state's covariance with the combination h, in md.ph.
func (md *Model) covWith(h []entry) []float64 {
	k, ph := md.k, md.ph[:md.k]
	clear(ph)
	for _, a := range h {
		row := md.P[a.i*k : a.i*k+k][:len(ph)]
		for j, v := range row {
			ph[j] += a.c * v
		}
	}
	return ph
}

func (md *Model) updateDense(h []entry, y, r float64) {
	k := md.k
	ph := md.covWith(h)
	s, mu := r, 0.0
	for _, a := range h {
		s += a.c * ph[a.i]
		mu += a.c * md.m[a.i]
	}
	if !(s > 0) {
		return
	}
	nu := y - mu
	f := nu / s
	for j := range k {
		md.m[j] += ph[j] * f
	}
	md.downdate(ph, 1/s)
	if len(h) == 1 {
		// The measured component's variance, computed without cancellation: a diffuse
		// prior met by an exact count would otherwise lose every digit.
		i := h[0].i
		pii := ph[i] / h[0].c
		md.P[i*k+i] = pii * r / (h[0].c*h[0].c*pii + r)
	}
	md.clampVariances()
}

// determined reports whether an identity over the form g may inform this slice: when
// every component has been counted at some time, or when one has never been and all
// the others are counted in this slice (the identity then gives it exactly). Otherwise
// a never-counted component, whose prior is diffuse, would absorb the whole residual
// of the others' predictions (on the find trace major-faults took half of page-faults,
// 58 a slice against a true 0, until first counted) and the smoother, whose walk for a
// never-counted rate is sized by that very value, cannot take it back.
func (md *Model) determined(g []entry) bool {
	unseen := 0
	for _, a := range g {
		if !md.seen[a.i] {
			unseen++
		}
	}
	if unseen == 0 {
		return true
	}
	if unseen > 1 {
		return false
	}
	for _, a := range g {
		if md.seen[a.i] && !md.now[a.i] {
			return false
		}
	}
	return true
}

// readInRun reports, in Finish's second pass, whether every component of the form g was
// counted whole somewhere in the run (runRate), so that a reading of an exact sum over
// g may inform a term this pass has not read yet. Its prior is sized by its own
// readings (start), not diffuse: the reason determined holds the reading back is gone,
// and held back, the term's slices before its first reading were left to that reading,
// carried back by the smoother (a term at 100 a slice, read from the middle of the
// run at 400, came out at about 400 before it: TestSumInformsTermsReadLaterInTheRun).
// Exact sums only: with soft identities too, sys-untar's worst event went from 1.14x
// to 2.23x Linux's WAPE (page_fault_kernel, tuning half; docs/model.md).
func (md *Model) readInRun(g []entry) bool {
	if md.runRate == nil {
		return false
	}
	for _, a := range g {
		if !md.seen[a.i] && !(md.runRate[a.i] > 0) {
			return false
		}
	}
	return true
}

// pristine reports whether state component i is still uncorrelated with every other.
func (md *Model) pristine(i int) bool {
	k := md.k
	for j := range k {
		if j != i && md.P[i*k+j] != 0 {
			return false
		}
	}
	return true
}

// applySoft conditions on the approximate identities: 0 = g·z + k/d with a noise of
// tol times the size of the sides.
//
// A term counted whole at zero in the slice is zero in the identity there: it is left
// out, and takes no share of the identity's residual. As a reading, a zero count is
// one count of noise about the rate (the Poisson floor), so the identity would lift it:
// when a burst of the other terms made raw_syscalls:sys_enter's estimate jump, each
// syscall read at zero in that slice took most of a count, and a walk that reverts 2%
// a slice carried it on for tens of slices (sys-make, tuning half, one start of the
// cycle: chmod, made once, came out at 19, 23.5x Linux's WAPE; docs/model.md).
func (md *Model) applySoft(d float64) {
	for _, s := range md.soft {
		if !md.determined(s.g) {
			continue
		}
		scale := 0.0
		for _, t := range s.pos {
			scale += t.c * md.m[t.i]
		}
		sd := s.tol*math.Abs(scale) + 0.5/d
		g := md.softG[:0]
		for _, a := range s.g {
			if !md.none[a.i] && !md.dormant(a.i, d) {
				g = append(g, a)
			}
		}
		md.softG = g
		md.updateDense(g, -s.k/d, sd*sd)
	}
}

// dormant reports whether rate i sits a soft identity out in a slice of duration d: it
// is not counted in the slice and it counted under half a count a slice in root mean
// square over its readings. A share by variance of every miss of its busy terms went to
// such a rate, a fraction of a count a slice that the truncation at zero kept only when
// positive, and its zero readings, each Poisson noise of one count, did not take it
// back: with page-faults read between the zero readings of major-faults and before
// minor-faults' burst was, one major fault in a run came out at 7.9 in the final values
// and 20 in the live ones (TestDormantRateOutOfSoftIdentity). A rate that bursts now and
// then keeps its share.
//
// In Finish's second pass the root mean square is the whole run's (runRate), every
// burst included, and is the whole test. Online the readings so far may not yet show a
// rate's bursts, so the rate must also be asleep (its level expects under half a count)
// with its last reading zero. In the second pass those two conditions kept in a rate
// read once at 1, whose walk carried that count into a level of a few counts: page-faults
// was read at 102 as a burst of minor faults ended and minor-faults at zero in the next
// slice, where the identity page-faults = minor + major, minor-faults left out as
// counted at zero, asked major-faults for page-faults' predicted 62 (live-git, tuning
// half, one start of the cycle: 33 major faults in a slice, 38x Linux's WAPE;
// TestRareRateIsNoSlack).
func (md *Model) dormant(i int, d float64) bool {
	if md.now[i] || !md.seen[i] {
		return false
	}
	if i < len(md.runRate) {
		return md.runRate[i]*d < 0.5
	}
	l := &md.lrn
	e := md.free[i]
	if !md.asleepRate(i, d) || l.prevT[e] < 0 || l.prevY[e] != 0 {
		return false
	}
	return math.Sqrt(l.rateSS[e]/l.rateN[e])*d < 0.5
}

// applyInequalities imposes g·z + k/d >= 0 by assumed-density filtering: replace the
// posterior by the Gaussian with the moments of its truncation to the allowed side,
// when the allowed side does not already hold nearly all of its mass.
//
// The non-negativity of a count asleep (its level expects less than half a count in
// the slice) takes the truncation's variance but its mode, zero, as the mean. The
// truncation's mean is above zero whatever pushed the count below, and the pushes come
// one constraint at a time: a relation's bound pushes its terms down, each term at zero
// that went below comes back above it, and a syscall made once kept gaining at every
// burst of its siblings (docs/model.md). A count awake keeps the truncation's mean.
//
// A bound with a rate asleep among the terms of its lower side moves the mean and
// leaves the covariance as it was. The truncation's smaller variance of the bound's
// slack would tie the bound to each of those terms for as long as the walks remember,
// so that whatever raised the bound later (a reading of it, its soft identity with
// raw_syscalls:sys_exit) raised them with it, a share by variance, and a rate asleep
// has the variance of its count floor, far above its rate: on sys-make (tuning half,
// start 6 of 9) chmod, made once, rose to 0.45 a slice in a burst of the other syscalls
// and was carried on, 9.27x Linux's WAPE (1.00x untied). Where every term is awake
// (misses <= accesses) the tie is what the bound says when it binds, and it stays:
// untied as well, cg-tar's ILmr came out at 7.5x Linux's WAPE (docs/model.md).
func (md *Model) applyInequalities(d float64) {
	for _, c := range md.ineq {
		at := md.truncAt
		if c.nonneg {
			at = md.nonnegAt
		}
		mu, ok := md.mayBind(c.g, c.k/d, at)
		if !ok {
			continue // most bounds, most slices: spares truncate and the flags below
		}
		md.truncateFrom(c.g, mu, at, c.nonneg && md.asleep(c.g, d), c.nonneg || !md.sleeper(c.g, d))
	}
}

// mayBind reports whether truncating g·z + k0 >= 0 at at might move the posterior, and
// the bound's mean mu: not when a term was never counted (a rate never counted still has
// its diffuse prior: truncating that would invent a level out of nothing), nor when mu
// is already above zero and at is at most zero (alpha > 0 >= at in truncate, whatever
// the variance: most bounds, most slices). One pass over g; applyInequalities asks it
// before computing truncate's flags, and passes mu on to truncateFrom.
func (md *Model) mayBind(g []entry, k0, at float64) (mu float64, ok bool) {
	mu = k0
	for _, a := range g {
		if !md.seen[a.i] {
			return 0, false
		}
		mu += a.c * md.m[a.i]
	}
	return mu, !(mu > 0 && at <= 0)
}

// sleeper reports whether a term on the lower side of g (a negative coefficient) is a
// rate asleep: its level expects less than half a count in a slice of duration d.
func (md *Model) sleeper(g []entry, d float64) bool {
	for _, a := range g {
		if a.c < 0 && md.asleepRate(a.i, d) {
			return true
		}
	}
	return false
}

// asleep reports whether g is a single rate whose level expects less than half a count
// in a slice of duration d.
func (md *Model) asleep(g []entry, d float64) bool {
	return len(g) == 1 && md.asleepRate(g[0].i, d)
}

// asleepRate reports whether rate i's level expects less than half a count in a slice of
// duration d.
func (md *Model) asleepRate(i int, d float64) bool { return md.lrn.level[i]*d < 0.5 }

// truncate imposes g·z + k0 >= 0 on the posterior by moment matching (see
// applyInequalities); atMode puts the mean at the bound instead of the truncation's mean,
// and without shrink only the mean moves.
func (md *Model) truncate(g []entry, k0, at float64, atMode, shrink bool) {
	if mu, ok := md.mayBind(g, k0, at); ok {
		md.truncateFrom(g, mu, at, atMode, shrink)
	}
}

// truncateFrom is truncate for a bound that mayBind let through, with its mean mu.
func (md *Model) truncateFrom(g []entry, mu, at float64, atMode, shrink bool) {
	k := md.k
	s2 := rowVar(g, md.P, k)
	if !(s2 > 0) {
		return
	}
	sd := math.Sqrt(s2)
	alpha := mu / sd
	if alpha > at {
		return
	}
	// Moments of N(mu, s2) truncated to [0, inf).
	lam := invMills(alpha)
	newMu := mu + sd*lam
	if atMode {
		newMu = 0
	}
	newVar := s2 * max(1-lam*(lam+alpha), 1e-9)
	// Shift the mean along P g and shrink the variance in that direction.
	ph := md.covWith(g)
	shift := (newMu - mu) / s2
	for j := range k {
		md.m[j] += ph[j] * shift
	}
	if shrink {
		md.downdate(ph, (1-newVar/s2)/s2)
	}
	md.clampVariances()
}

// invMills is φ(a)/Φ(a), computed stably for very negative a.
func invMills(a float64) float64 {
	if a < -30 {
		return -a
	}
	phi := math.Exp(-a*a/2) / math.Sqrt(2*math.Pi)
	cdf := 0.5 * math.Erfc(-a/math.Sqrt2)
	if cdf < 1e-300 {
		return -a
	}
	return phi / cdf
}

func finite(v []float64) bool {
	// x−x is 0 for a finite x and NaN for an infinite or NaN one, so the sum is 0 exactly
	// when every element is finite; it cannot overflow, and four sums in turn let the
	// additions overlap (Observe checks the whole k×k covariance every slice).
	var s0, s1, s2, s3 float64
	for ; len(v) >= 4; v = v[4:] {
		s0 += v[0] - v[0]
		s1 += v[1] - v[1]
		s2 += v[2] - v[2]
		s3 += v[3] - v[3]
	}
	for _, x := range v {
		s0 += x - x
	}
	return s0+s1+s2+s3 == 0
}

func median(v []float64) float64 {
	c := append([]float64(nil), v...)
	// insertion sort: v is small (one slice's readings)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return c[len(c)/2]
}

// withClocks returns s with every clock event (Options.Clocks) counted whole, its count
// the slice's enabled time (the longest Enabled of its readings); s itself is not
// changed. A slice without enabled times is returned as it is.
func (md *Model) withClocks(s inference.Slice) inference.Slice {
	var en uint64
	for _, r := range s.Readings {
		en = max(en, r.Enabled)
	}
	if en == 0 {
		return s
	}
	md.cbuf = append(md.cbuf[:0], s.Readings...)
	for _, c := range md.clocks {
		r := inference.Reading{Event: inference.EventID(c), Count: en, Enabled: en, Running: en}
		found := false
		for j := range md.cbuf {
			if int(md.cbuf[j].Event) == c {
				md.cbuf[j], found = r, true
			}
		}
		if !found {
			md.cbuf = append(md.cbuf, r)
		}
	}
	s.Readings = md.cbuf
	return s
}

// clampVariances sets the covariance's negative diagonal entries (rounding after an
// update) to zero.
func (md *Model) clampVariances() {
	for i := 0; i < len(md.P); i += md.k + 1 {
		if md.P[i] < 0 {
			md.P[i] = 0
		}
	}
}

// downdate subtracts c·ph·phᵀ from the covariance: the rank-one change of a scalar
// update, ph being P·h.
func (md *Model) downdate(ph []float64, c float64) {
	k := md.k
	ph = ph[:k]
	for i, v := range ph {
		pi := v * c
		if pi == 0 {
			continue
		}
		row := md.P[i*k : i*k+k][:len(ph)]
		for j, w := range ph {
			row[j] -= pi * w
		}
	}
}
