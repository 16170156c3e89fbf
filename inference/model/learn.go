package model

import (
	"math"

	"github.com/bayesperf/bayesperf/inference"
)

// learner estimates online the innovation covariance of the walk, in units relative to
// each rate's level: per state component a volatility (mean squared relative change
// between consecutive slices) and between components a correlation, both from slices
// where rates were counted whole in two consecutive slices. Correlations come from
// pairs counted together, shrunk towards zero by n/(n+pairPrior), and the matrix is
// repaired to be positive definite when it is rebuilt.
type learner struct {
	k, n         int
	gamma        float64 // forgetting factor per observation
	vol          []float64
	volN         []float64
	level        []float64 // level of each component: recent average of its counted rates
	levelN       []float64
	levelC       []float64 // forgetting sums of counts and durations behind level
	levelD       []float64
	stat         []float64 // mean squared deviation from the level, relative to the mean of reading and level
	statN        []float64
	a            []float64 // persistence of each component in the current slice
	lam          []float64 // Student-t precision scale of each component's step
	rnoise       []float64 // per component the noise variance of this slice's reading (0: none)
	burst        []float64 // per component the burst variance of the previous slice's step
	first        []float64 // per component the step variance out of a first sighting (predict)
	fixedA       float64   // persistence forced by Options.Reversion, or -1 to learn it
	logc80       float64   // log interval scales learned by calibrate
	qs           []float64 // per component step standard deviation used this slice
	qb           []float64 // per component extra (burst) step variance this slice
	rid          int       // id of the correlation matrix in use
	rvers        map[int][]float64
	spare        []float64 // a correlation matrix no slice refers to any more
	rank         int       // number of common factors of the step correlations
	load         []float64 // k·rank factor loadings
	fa, fb       []float64
	oracle       *oracleWalk // set by tests to replace learning with given parameters
	oracleA      float64
	logc95       float64
	calNAll      float64
	logcE, calN  []float64 // per event
	s, sq        []float64 // pair sums: s[i*k+j] Σ u_i u_j; sq[i*k+j] Σ u_i² over pairs with j
	cnt          []float64 // pair weights
	corr         []float64 // correlation matrix in use (positive definite)
	identity     bool      // corr is the identity: no correlations learned (the default)
	scale        []float64 // per component innovation standard deviation of the current slice
	prevY        []float64
	prevT        []int
	rateSS       []float64 // per event: Σ of the squared rates counted whole so far (dormant)
	rateN        []float64 // per event: how many rates rateSS holds
	tick         int
	dirty        bool
	indep        bool
	prior        float64
	rebuildEvery int
	started      bool
	us           []int
	uv           []float64

	// Activity levels (see activity.go).
	act     activity
	mu      []float64 // level each component reverts to in the current slice
	muP     []float64 // the level of the previous slice
	muE     []float64 // per event: the level of its component when last counted whole
	actUsed []bool    // the component's level was an activity level last slice
	// Per event, the scatter of its counts beyond what the walk predicts (the excess
	// of squared innovations over their predicted variance, in counts²) and the level
	// it scatters around (counts): see dispersion.
	dispV, dispM, dispN []float64
}

const (
	// factors is the rank of the step correlations: one common factor (the program's
	// activity) did best on the traces in testdata; more factors fit the few pairs a
	// schedule counts together more closely and extend worse to the others.
	factors   = 1
	pairPrior = 8.0
	maxGap    = 64 // readings farther apart say little about one slice's step
	// levelWindow is the number of readings a level averages over. Programs move in
	// phases of tens of slices (the live workloads: 10 to 60), and a level that
	// averages over several phases pulls every gap towards a rate none of them had
	// (docs/model.md has the figures).
	levelWindow = 8.0
)

// zeros points each of ps at a new slice of n zero values.
func zeros[T any](n int, ps ...*[]T) {
	for _, p := range ps {
		*p = make([]T, n)
	}
}

func (l *learner) init(k, n int, opt Options) {
	l.k, l.n = k, n
	l.gamma = 1 - 1/opt.Window
	l.prior = opt.Volatility * opt.Volatility
	zeros(k, &l.vol, &l.volN, &l.level, &l.levelN, &l.levelC, &l.levelD, &l.stat, &l.statN,
		&l.a, &l.lam, &l.rnoise, &l.burst, &l.first, &l.scale, &l.qs, &l.qb, &l.mu, &l.muP)
	for i := range l.vol {
		l.vol[i] = l.prior
	}
	l.fixedA = -1
	if opt.Reversion > 0 {
		l.fixedA = 1 - opt.Reversion
	}
	for i := range k {
		l.stat[i] = 2 * l.prior
	}
	zeros(k*k, &l.s, &l.sq, &l.cnt, &l.corr)
	for i := range k {
		l.corr[i*k+i] = 1
	}
	l.identity = true
	l.rvers = map[int][]float64{0: l.corr}
	l.rank = min(factors, max(k-1, 0))
	l.load = make([]float64, k*l.rank)
	for i := range k {
		for f := range l.rank {
			// A deterministic, asymmetric start, so that the factors can differ.
			l.load[i*l.rank+f] = 0.1 * math.Cos(float64((i+1)*(f+1)))
		}
	}
	l.fa = make([]float64, l.rank*l.rank)
	l.fb = make([]float64, l.rank)
	zeros(n, &l.prevY, &l.logcE, &l.calN, &l.muE, &l.dispV, &l.dispM, &l.dispN, &l.rateSS, &l.rateN)
	l.prevT = make([]int, n)
	for i := range l.prevT {
		l.prevT[i] = -2
	}
	l.indep = !opt.Correlated
	l.rebuildEvery = max(8, k/4)
	l.us = make([]int, 0, n)
	l.uv = make([]float64, 0, n)
	l.actUsed = make([]bool, k)
	l.act.init(k, n, opt)
}

// calibrate adapts the interval scales by stochastic approximation from nu2, the squared
// innovation of event e counted after a gap (the situation every reported interval is
// about), against what an inferred interval allows for it: c²·v, the state's and the
// level's variance scaled by c, plus sc, the scatter of an uncounted slice's count
// (Model.scatter), which the intervals add unscaled. A scale c is moved so that nu2
// exceeds q·(c²·v + sc) a fraction p of the time; every miss widens, every hit narrows a
// little. Per event there are too few gaps to learn a 95% quantile, so the per-event
// scale targets the 80% quantile and the tail (how much wider 95% is than 80% compared
// with a Gaussian) is learned pooled over all events: real counters burst, their tails
// are heavier than Gaussian.
//
// The scatter stays out of the scale because it is learned from the same innovations
// (the mean excess of their squares): scaling it too counted the bursts twice, and with
// exact live readings (coverage95 0.97-0.998 on the live traces) the intervals were too
// wide. Scaling both by one c narrowed them too far instead (0.87 and 0.90 on two live
// traces, 0.83 on go-vet): one slice's bursty scatter is mostly small, so its 80%
// quantile pulls c down, while an interval sums many slices and sees the scatter's mean.
// On most traces the 80% scale now sits at its floor of 1/4: per slice, the scatter
// alone covers 80% of the gaps; an interval still needs some of the state's variance
// (floor 1/10: git 0.86, go-vet 0.89; 1/2: live 0.94-0.99, sqlite 0.84).
func (l *learner) calibrate(e int, nu2, v, sc float64) {
	step := func(logc, n *float64, q, p float64) {
		*n++
		rate := max(0.05, 0.5/math.Sqrt(*n))
		miss := 0.0
		if nu2 > q*(math.Exp(2**logc)*v+sc) {
			miss = 1
		}
		*logc += rate * (miss - p)
		*logc = max(math.Log(0.25), min(math.Log(20), *logc))
	}
	if l.calN[e] == 0 {
		l.logcE[e] = l.logc80
	}
	n80, n95 := l.calNAll, l.calNAll
	step(&l.logc80, &n80, chi80, 0.2)
	step(&l.logc95, &n95, chi95, 0.05)
	l.calNAll++
	step(&l.logcE[e], &l.calN[e], chi80, 0.2)
}

const (
	chi80 = 1.6424 // 80% quantile of χ²₁
	chi95 = 3.8415 // 95% quantile of χ²₁
)

// intervalScale is the factor applied to event e's posterior standard deviation and
// level error (not to its scatter: see calibrate).
func (l *learner) intervalScale(e int) float64 {
	w := l.calN[e] / (l.calN[e] + 10)
	return math.Exp(w*l.logcE[e] + (1-w)*l.logc80 + (l.logc95 - l.logc80))
}

// persistence is the AR(1) coefficient a of component i: from one-slice changes
// (variance 2σ²(1−a)) against the spread around the level (σ²), clamped to [0, 0.99].
func (l *learner) persistence(i int) float64 {
	if l.fixedA >= 0 {
		return l.fixedA
	}

	if !(l.stat[i] > 0) {
		return 0.9
	}
	return max(0, min(0.99, 1-l.vol[i]/(2*l.stat[i])))
}

// disperse records a counted slice's innovation nu (rate units) against its predicted
// variance s, for event e whose level is mu, in a slice of duration d.
func (l *learner) disperse(e int, nu, s, mu, d float64) {
	ex := max(0, nu*nu-s) * d * d
	if math.IsNaN(ex) || math.IsInf(ex, 0) || math.IsNaN(mu) || math.IsInf(mu, 0) {
		return
	}
	l.dispN[e] = l.gamma*l.dispN[e] + 1
	l.dispV[e] += (ex - l.dispV[e]) / l.dispN[e]
	l.dispM[e] += (max(mu, 0)*d - l.dispM[e]) / l.dispN[e]
}

// dispersion is event e's index of dispersion: the variance of a slice's count that
// the walk does not explain, per count of its level (about 1 for a Poisson count that
// the walk does not model at all), at least 1.
func (l *learner) dispersion(e int) float64 {
	if l.dispN[e] < 4 || !(l.dispM[e] > 0) {
		return 1
	}
	return max(1, l.dispV[e]/l.dispM[e])
}

// countScatter is the variance, beyond the walk's, of event e's count over slices
// uncounted slices expected to hold count: the learned dispersion times the count, at
// least the mean count of a slice per slice. Model.scatter adds it to inferred intervals;
// calibrate leaves it out of the scale it learns.
func (l *learner) countScatter(e int, count, slices float64) float64 {
	return l.dispersion(e) * max(count, l.dispM[e]*slices)
}

// levelVar is the variance of component i's level estimate, in rate units.
func (l *learner) levelVar(i int, d float64) float64 {
	if rv := l.act.relVar[i]; l.actUsed[i] && rv >= 0 && !math.IsInf(rv, 0) {
		// An activity level: the ratio's error, at the current activity.
		return rv * l.mu[i] * l.mu[i]
	}
	sc := relScale(l.level[i], l.level[i], d)
	return l.stat[i] * sc * sc / max(l.levelN[i], 1)
}

// oracleWalk holds walk parameters computed from the truth (tests only).
type oracleWalk struct {
	level, sd, corr []float64
}

// relScale is the size against which a rate's changes are measured: its level, but at
// least a quarter of its long-run level and one count per slice, so that a rate that
// sits at zero may still jump.
func relScale(x, level, d float64) float64 {
	flo := max(1/d, 0.25*level)
	return math.Sqrt(x*x + flo*flo)
}

// buildQ sets the persistence and step standard deviation of every component for the
// coming slice; the step covariance is diag(scale)·corr·diag(scale).
func (l *learner) buildQ(md *Model, d float64) {
	k := l.k
	l.act.current(md) // this slice's readings, for activity levels here and learning after
	if l.dirty && l.tick%l.rebuildEvery == 0 {
		l.rebuild()
	}
	if l.oracle != nil {
		// Diagnostics only: a walk with given levels, spreads and correlations.
		for i := range k {
			l.a[i] = l.oracleA
			l.level[i] = l.oracle.level[i]
			l.scale[i] = l.oracle.sd[i] * math.Sqrt(1-l.oracleA*l.oracleA)
			l.muP[i], l.mu[i] = l.mu[i], l.level[i]
		}
		l.corr, l.identity = l.oracle.corr, false
		l.rvers[l.rid] = l.corr
		return
	}
	for i := range k {
		// The level, not the current mean: a mean pushed up by a truncation must not
		// widen the next step, or the walk feeds on itself. For an AR(1) walk with
		// persistence a, the one-slice change has variance 2σ²(1−a) and the step
		// σ²(1−a²) = vol·(1+a)/2.
		l.a[i] = l.persistence(i)
		if !md.seen[i] {
			// Never counted: no level to revert to; the smoother carries the first
			// counted value back unchanged.
			l.a[i] = 1
		}
		// The walk is on the deviation from the level: x_t − μ_t = a(x_{t−1} − μ_{t−1})
		// + w. An activity level moves with the program; a constant level only gets
		// re-estimated, so the previous deviation is taken against the new estimate.
		if g, ok := l.act.level(md, i); ok {
			l.muP[i] = l.mu[i]
			if !l.started || !l.actUsed[i] {
				l.muP[i] = l.level[i]
			}
			l.mu[i] = g
			l.actUsed[i] = true
		} else {
			l.mu[i], l.muP[i] = l.level[i], l.level[i]
			l.actUsed[i] = false
		}
		step := l.vol[i] * (1 + l.a[i]) / 2 // σ²(1 − a²), with vol = 2σ²(1 − a)
		l.scale[i] = math.Sqrt(step) * relScale(l.mu[i], l.level[i], d)
	}
	l.started = true
}

// learn updates the statistics with the rates counted whole in this slice.
func (l *learner) learn(md *Model, s inference.Slice, d float64) {
	t := l.tick
	l.tick++
	l.us, l.uv = l.us[:0], l.uv[:0]
	for _, o := range md.obs {
		if !o.full {
			continue
		}
		e := o.event
		prev, pt, pmu := l.prevY[e], l.prevT[e], l.muE[e]
		h := md.rows[e]
		l.prevY[e], l.prevT[e] = o.y, t
		l.rateSS[e] += o.y * o.y
		l.rateN[e]++
		if len(h) == 1 {
			l.muE[e] = l.mu[h[0].i]
		}
		L := t - pt
		if pt < 0 || L > maxGap || len(h) != 1 {
			continue
		}
		i := h[0].i
		// Changes of the deviation from the level: what the level explains (the
		// program's activity moving) is not a step of the walk.
		mu := l.mu[i]
		x := 0.5 * (o.y + prev)
		if l.actUsed[i] {
			// An activity level can be far from readings at zero (a rate asleep while
			// its ratio to the activity, learned from readings around it, says
			// otherwise): the change is measured against the level's size then, as
			// buildQ scales the step by it. Against the readings' size (zero) it
			// taught a walk a thousand times too wide.
			x = max(x, 0.5*(math.Abs(mu)+math.Abs(pmu)))
		}
		if md.inSum[i] && !l.actUsed[i] {
			// A constant level is only re-estimated between readings (buildQ takes
			// the previous deviation against the new estimate too): its moving is
			// no step of the walk. Counted as one, the level's slow decay after a
			// start-up burst gave a term of a sum that read zero ever after a walk
			// of hundreds a slice, and a reading of the sum during a burst of its
			// siblings went to it (cg-perl ILmr). Only for terms of sums, where the
			// walk's variance decides how a sum's reading is shared: applied to
			// every rate it cost the sparse syscalls of the kernel traces, whose
			// walks this inflated variance let follow their bursts.
			pmu = mu
		}
		u := ((o.y - mu) - (prev - pmu)) / relScale(x, l.level[i], d)
		if L > 1 {
			// Across a gap of L slices an AR(1) deviation changes by 2σ²(1 − a^L) in
			// variance, against 2σ²(1 − a) for one slice: scale the change to one
			// slice's, so that a schedule that never counts an event in two
			// consecutive slices still teaches its volatility.
			a := l.persistence(i)
			if a < 1 {
				u *= math.Sqrt((1 - a) / (1 - math.Pow(a, float64(L))))
			}
			l.volN[i] = l.gamma*l.volN[i] + 1
			l.vol[i] += (u*u - l.vol[i]) / l.volN[i]
			l.vol[i] = max(l.vol[i], 1e-8)
			continue
		}
		// Spread around the level (before this reading moves it), for the persistence
		// and the level's error, measured as the changes are: against the mean of the
		// two, not the level alone. Against the level, a burst out of a level near
		// zero is a deviation of millions of levels (the floor is one count a slice: a
		// time in ns read at 8e7 is 8e7 of them), whose square levelVar rescales to the
		// level of the slices after it: bayesperf-rr's sysTime came out ±5.5e12 on a
		// callgrind run's 1.1e8 (TestBurstSpreadInScale).
		dv := (o.y - mu) / relScale(0.5*(math.Abs(o.y)+math.Abs(mu)), l.level[i], d)
		l.statN[i] = l.gamma*l.statN[i] + 1
		l.stat[i] += (dv*dv - l.stat[i]) / l.statN[i]
		l.us = append(l.us, i)
		l.uv = append(l.uv, u)
		// Volatility: a forgetting average; the prior (Options.Volatility) holds only
		// until the first reading (kept as pseudo-readings, it cost the kernel and
		// live traces: docs/model.md).
		l.volN[i] = l.gamma*l.volN[i] + 1
		w := 1 / l.volN[i]
		l.vol[i] += w * (u*u - l.vol[i])
		l.vol[i] = max(l.vol[i], 1e-8)
	}
	l.learnCorrelations()
	l.learnLevels(md, d, t)
	l.act.learn(md, d)
}

// learnCorrelations adds the pairs of this slice's one-slice changes (l.us, l.uv) to
// the pair sums that the correlations are fitted from.
func (l *learner) learnCorrelations() {
	k := l.k
	if !l.indep {
		for x, i := range l.us {
			ui := l.uv[x]
			for y, j := range l.us {
				if i == j {
					continue
				}
				uj := l.uv[y]
				p := i*k + j
				l.cnt[p] = l.gamma*l.cnt[p] + 1
				l.s[p] = l.gamma*l.s[p] + ui*uj
				l.sq[p] = l.gamma*l.sq[p] + ui*ui
			}
		}
		if len(l.us) > 1 {
			l.dirty = true
		}
	}
}

// learnLevels moves the levels with this slice's direct readings.
func (l *learner) learnLevels(md *Model, d float64, t int) {
	k := l.k
	// Levels follow the rates where they are counted: a short average of direct
	// observations, weighted by the slices' durations (counts over time, not an average
	// of rates: a few counts in a very short slice are a huge, noisy rate).
	// Components never counted directly follow their posterior mean.
	// The run's first slice (t 0), its start-up, is no part of a level the slices after
	// it revert to (see startupWiden).
	g := 1 - 1/levelWindow
	for _, o := range md.obs {
		if t > 0 && len(o.h) == 1 && o.full {
			i := o.h[0].i
			l.levelN[i] = min(l.levelN[i]+1, levelWindow)
			l.levelC[i] = g*l.levelC[i] + o.y*d
			l.levelD[i] = g*l.levelD[i] + d
			l.level[i] = l.levelC[i] / l.levelD[i]
		}
	}
	for i := range k {
		if l.levelN[i] == 0 {
			l.level[i] = max(md.m[i], 0)
		}
	}
}

// seedLevels starts the level of each sparse rate (sparseRates, for the run's mean slice
// duration d) from its mean rate over the run, worth levelSeed readings, where the
// level otherwise starts at the rate's first reading: in Finish's second pass the run
// is known. A few counts in one reading are mostly Poisson noise, and as the whole
// level they were carried to the slices around the reading: rt_sigprocmask, 3 calls in
// one slice of a tar run and read there, came out at 19 over its first reporting
// interval (docs/model.md). Dense rates keep their first readings: a run's mean is no
// level for its start-up phase (seeded too, the tuning half's callgrind median fell
// from 2.15x to 2.10x, the kernel one from 1.75x to 1.71x).
func (l *learner) seedLevels(mean []float64, sparse []bool, d float64) {
	for i := range l.k {
		if mean[i] >= 0 && sparse[i] {
			l.levelC[i] = mean[i] * levelSeed * d
			l.levelD[i] = levelSeed * d
		}
	}
}

// sparseRates reports per state component whether its rate over the run, rms (a root
// mean square, hindsightRates), is under sparseCounts counts in a slice of duration d.
func sparseRates(rms []float64, d float64) []bool {
	sparse := make([]bool, len(rms))
	for i, r := range rms {
		sparse[i] = r*d < sparseCounts
	}
	return sparse
}

const (
	sparseCounts = 5.0 // a rate under this many counts a slice is sparse (sparseRates)
	levelSeed    = 2.0 // readings' worth of the run's mean in a sparse rate's first level
)

// rebuild recomputes the correlation matrix from the pair sums and shrinks it until it
// is positive definite.
func (l *learner) rebuild() {
	l.dirty = false
	k := l.k
	// The smoother needs the matrix each slice was predicted with: keep the old one,
	// build a new one.
	c := l.spare
	l.spare = nil
	if len(c) != k*k {
		c = make([]float64, k*k)
	}
	l.rid++
	l.corr, l.identity = c, false
	l.rvers[l.rid] = c
	l.fitFactors()
	// corr = L·Lᵀ off the diagonal, 1 on it: positive semi-definite by construction
	// (L·Lᵀ plus a non-negative diagonal, since every row of L has norm < 1).
	r := l.rank
	for i := range k {
		li := l.load[i*r : i*r+r]
		for j := range k {
			if i == j {
				c[i*k+j] = 1
				continue
			}
			lj := l.load[j*r : j*r+r]
			v := 0.0
			for f := range r {
				v += li[f] * lj[f]
			}
			c[i*k+j] = v
		}
	}
}

// fitFactors fits the step correlations with common factors (see factors): corr(i, j) ≈ l_i·l_j
// for the pairs that were counted together, weighted by how often, by alternating
// ridge regressions (warm-started from the last fit). A low-rank model is what lets a
// pair never counted together get a correlation at all: events that both move with the
// program's phases share a factor, whatever the schedule. It is also positive
// semi-definite by construction, where a matrix of pairwise estimates is not.
func (l *learner) fitFactors() {
	k, r := l.k, l.rank
	if r == 0 {
		return
	}
	a := l.fa[:r*r]
	b := l.fb[:r]
	for range 4 {
		for i := range k {
			clear(a)
			clear(b)
			wsum := 0.0
			for j := range k {
				p, q := i*k+j, j*k+i
				n := l.cnt[p]
				if j == i || n == 0 {
					continue
				}
				den := math.Sqrt(l.sq[p] * l.sq[q])
				if !(den > 0) {
					continue
				}
				rho := max(-1, min(1, l.s[p]/den))
				lj := l.load[j*r : j*r+r]
				for f := range r {
					b[f] += n * rho * lj[f]
					for g := range r {
						a[f*r+g] += n * lj[f] * lj[g]
					}
				}
				wsum += n
			}
			li := l.load[i*r : i*r+r]
			if wsum == 0 {
				clear(li)
				continue
			}
			// Ridge: a pair seen a few times should not pin a factor down.
			for f := range r {
				a[f*r+f] += pairPrior * 0.1
			}
			if !solveSmall(a, b, r) {
				continue
			}
			norm := 0.0
			for f := range r {
				norm += b[f] * b[f]
			}
			sc := 1.0
			if norm > 0.95 {
				sc = math.Sqrt(0.95 / norm)
			}
			for f := range r {
				li[f] = b[f] * sc
			}
		}
	}
}

// solveSmall solves a·x = b in place (x in b) for a small dense r×r system by Gaussian
// elimination with partial pivoting; it reports false for a singular system.
func solveSmall(a, b []float64, r int) bool {
	for c := range r {
		p := c
		for i := c + 1; i < r; i++ {
			if math.Abs(a[i*r+c]) > math.Abs(a[p*r+c]) {
				p = i
			}
		}
		if math.Abs(a[p*r+c]) < 1e-12 {
			return false
		}
		if p != c {
			for j := range r {
				a[c*r+j], a[p*r+j] = a[p*r+j], a[c*r+j]
			}
			b[c], b[p] = b[p], b[c]
		}
		for i := c + 1; i < r; i++ {
			f := a[i*r+c] / a[c*r+c]
			for j := c; j < r; j++ {
				a[i*r+j] -= f * a[c*r+j]
			}
			b[i] -= f * b[c]
		}
	}
	for c := r - 1; c >= 0; c-- {
		s := b[c]
		for j := c + 1; j < r; j++ {
			s -= a[c*r+j] * b[j]
		}
		b[c] = s / a[c*r+c]
	}
	return true
}

// cholesky factors the symmetric matrix a (k×k, row-major) in place into its lower
// triangle L (a = L Lᵀ), and reports whether a was positive definite.
func cholesky(a []float64, k int) bool {
	for j := range k {
		s := a[j*k+j]
		rowj := a[j*k : j*k+j]
		for _, v := range rowj {
			s -= v * v
		}
		if !(s > 0) {
			return false
		}
		ljj := math.Sqrt(s)
		a[j*k+j] = ljj
		for i := j + 1; i < k; i++ {
			s := a[i*k+j]
			rowi := a[i*k : i*k+j]
			for p, v := range rowj {
				s -= rowi[p] * v
			}
			a[i*k+j] = s / ljj
		}
	}
	return true
}
