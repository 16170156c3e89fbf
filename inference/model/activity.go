package model

import "math"

// activity learns, per state component, whether its rate is better predicted as a
// multiple of an always-counted event's rate in the same slice (the program's
// activity: a fixed counter, such as task-clock or instructions, is known in every
// slice) than as a constant, and by what ratio. The level a rate reverts to between
// its readings is then ratio·activity: when the program does twice as much, an
// uncounted event is predicted to do twice as much too. This is the survey
// statistician's ratio estimator, on the events the schedule always counts.
//
// A candidate is an event counted whole in nearly every slice so far (share above
// alwaysShare). Per (component, candidate) it keeps forgetting sums over the slices where
// both were counted whole; the ratio is Σx/Σg, its residual Σ(x − ratio·g)². The
// candidate with the least residual wins if it beats the constant level's (Σ(x − x̄)²)
// by a clear margin (actGain); otherwise the component keeps its constant level.
type activity struct {
	k, n   int
	off    bool
	ahead  bool // learned ahead of the filter (Model.refilter), not by learn
	gamma  float64
	share  []float64 // per event: forgetting share of slices it was counted whole
	shareN float64
	cur    []float64 // per event: rate counted whole in this slice, NaN otherwise
	cand   []int     // candidate events
	// per component·event sums over slices where both were counted whole
	w, sx, sg, sxx, sxg, sgg []float64
	// per component, the constant level's sums
	cw, cx, cxx []float64
	// numbers of readings behind the sums above (per component·event, per component)
	pn, cn []float64
	// per component, the relative variance of the ratio in use (Var(ratio)/ratio²),
	// or NaN when the constant level is in use
	relVar []float64
}

const (
	alwaysShare = 0.9  // share of slices a candidate must have been counted whole in
	actWindow   = 16.0 // pairs of readings the ratio is learned over (8 to 32 did as well)
	actGain     = 0.8  // a ratio must leave at most this share of the constant's residual
	actMinPairs = 3.0  // pairs needed before a ratio is trusted
)

func (a *activity) init(k, n int, opt Options) {
	a.k, a.n = k, n
	a.off = opt.NoActivity
	a.gamma = 1 - 1/actWindow
	zeros(n, &a.share, &a.cur)
	zeros(k*n, &a.w, &a.sx, &a.sg, &a.sxx, &a.sxg, &a.sgg, &a.pn)
	zeros(k, &a.cn, &a.cw, &a.cx, &a.cxx, &a.relVar)
	for i := range a.relVar {
		a.relVar[i] = math.NaN()
	}
}

// level returns ratio·activity for component i in the current slice, or false when the
// constant level serves better or nothing is known. Call current first, once per slice.
func (a *activity) level(md *Model, i int) (float64, bool) {
	a.relVar[i] = math.NaN()
	if a.off {
		return 0, false
	}
	if a.cn[i] < actMinPairs {
		return 0, false
	}
	base := a.cxx[i] - a.cx[i]*a.cx[i]/a.cw[i]
	best, bestRes := -1, actGain*base/a.cw[i]
	var bestRatio float64
	self := md.free[i]
	for _, c := range a.cand {
		p := i*a.n + c
		if c == self || a.pn[p] < actMinPairs || math.IsNaN(a.cur[c]) || !(a.sg[p] > 0) {
			continue
		}
		r := a.sx[p] / a.sg[p]
		res := (a.sxx[p] - 2*r*a.sxg[p] + r*r*a.sgg[p]) / a.w[p]
		if res < bestRes {
			best, bestRes, bestRatio = c, res, r
		}
	}
	if best < 0 || !(bestRatio > 0) {
		return 0, false
	}
	// The ratio of sums Σw·x/Σw·g with x = ratio·g + ε and Var(ε) = σ²/w per slice of
	// weight w has Var = σ²·Σw/(Σw·g)²; relative to the ratio², it has no unit.
	p := i*a.n + best
	a.relVar[i] = bestRes * a.w[p] / (a.sg[p] * a.sg[p]) / (bestRatio * bestRatio)
	return bestRatio * a.cur[best], true
}

// current gathers the rates counted whole in this slice (md.obs).
func (a *activity) current(md *Model) {
	for e := range a.cur {
		a.cur[e] = math.NaN()
	}
	for _, o := range md.obs {
		if o.full {
			a.cur[o.event] = o.y
		}
	}
}

// learn updates the sums with this slice's readings (md.obs, counted whole), weighted
// by the slice's duration d, so that the ratio is one of counts, not of rates. In
// Finish's second pass (ahead) the sums are fed ahead of the filter instead
// (Model.learnAhead).
func (a *activity) learn(md *Model, d float64) {
	if a.ahead {
		return
	}
	// a.cur holds this slice's readings: buildQ gathered them (current) before the
	// prediction, and the readings do not change during the slice.
	a.add(md, d)
}

// add updates the sums with the rates in a.cur, counted whole in a slice of duration d.
func (a *activity) add(md *Model, d float64) {
	if a.off {
		return
	}
	a.shareN = min(a.shareN+1, 256)
	a.cand = a.cand[:0]
	for e := range a.share {
		x := 0.0
		if !math.IsNaN(a.cur[e]) {
			x = 1
		}
		a.share[e] += (x - a.share[e]) / a.shareN
		if a.shareN >= 8 && a.share[e] >= alwaysShare {
			a.cand = append(a.cand, e)
		}
	}
	for i, e := range md.free {
		x := a.cur[e]
		if math.IsNaN(x) || len(md.rows[e]) != 1 {
			continue
		}
		g := a.gamma
		a.cn[i] = g*a.cn[i] + 1
		a.cw[i] = g*a.cw[i] + d
		a.cx[i] = g*a.cx[i] + d*x
		a.cxx[i] = g*a.cxx[i] + d*x*x
		for _, c := range a.cand {
			y := a.cur[c]
			if c == e || math.IsNaN(y) {
				continue
			}
			p := i*a.n + c
			a.pn[p] = g*a.pn[p] + 1
			a.w[p] = g*a.w[p] + d
			a.sx[p] = g*a.sx[p] + d*x
			a.sg[p] = g*a.sg[p] + d*y
			a.sxx[p] = g*a.sxx[p] + d*x*x
			a.sxg[p] = g*a.sxg[p] + d*x*y
			a.sgg[p] = g*a.sgg[p] + d*y*y
		}
	}
}

// always reports whether event e has been counted whole in nearly every slice.
func (a *activity) always(e int) bool {
	return a.shareN >= 8 && a.share[e] >= alwaysShare
}
