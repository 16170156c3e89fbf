package model

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// Options tune the model. The zero value is a good default for every field.
type Options struct {
	// Level is the probability of the reported intervals; 0 means 0.95.
	Level float64
	// Window is the effective number of observations (exponential forgetting) over which
	// the volatility of each event and the correlations between events are learned; 0
	// means 64.
	Window float64
	// Dof is the degrees of freedom of the Student-t scale mixture on the predicted
	// state; 0 means 4, a negative value makes the model purely Gaussian.
	Dof float64
	// Volatility is the prior relative change of a rate from one slice to the next,
	// used until observations say otherwise; 0 means 0.5.
	Volatility float64
	// Reversion pulls every rate towards its level (a recent average of its counts)
	// between slices: the walk is x_t − μ = (1 − Reversion)(x_{t−1} − μ) + w_t. 0 means
	// 0.02 (0.05 did as well on the real-program traces and worse on the live ones,
	// whose phases outlast the gaps between an event's readings); a negative value
	// learns it per event from one-slice changes against the spread around the level
	// (on the traces in testdata, the fixed default does better: the learned value is
	// noisy and its bias costs more than it gains).
	Reversion float64
	// Correlated learns correlations between the steps of events' walks, from pairs
	// counted together in two consecutive slices (see learner.fitFactors). Off by
	// default: activity levels (see activity) now carry what events share through the
	// always-counted events, and on the kernel's round robin the learned correlations
	// let one event's jump drag the others (docs/model.md); our own schedule, which
	// never counts an event in two consecutive slices, learns none. Without it each walk is
	// independent of the others' and relations alone couple events.
	Correlated bool
	// NoActivity disables activity levels (see activity): every rate then reverts to
	// a constant level.
	NoActivity bool
	// AllowNegative drops the non-negativity of counts.
	AllowNegative bool
	// Clocks names events whose count over any span is the time their target ran, which
	// every reading's Enabled carries: task-clock of a task target (a task's context
	// time, hence its events' time_enabled, advances only while it runs, and task-clock
	// counts exactly that). Observe takes such an event as counted whole in every slice
	// with the slice's enabled time as its count, whether or not a counter held it: the
	// value is known, and an event known in every slice is what activity levels need.
	// Only for readings that carry Enabled (slices of the virtual PMU, or any task
	// target's); a slice whose readings have none is left as it is.
	Clocks []string
	// History is the number of recent slices whose covariances are kept for smoothing;
	// older slices keep only per-event means and variances (intervals over them are
	// then conservative), smoothed as far as a reader's Estimate had smoothed them,
	// filtered otherwise: an offline evaluation of a run longer than History should
	// raise it. 0 means as many as fit in 64 MiB (k² floats per slice for k
	// free rates), at least 64.
	History int
	// Marked bounds the memory of a run of any length: Estimate will only be asked
	// about spans whose ends are boundaries given to Mark, the start, the end, or
	// slices whose covariances are still kept, so frozen slices are merged into
	// per-event sums from one mark to the next instead of being kept one by one (a
	// span end inside such a block is taken at the block's start). Without it the
	// frozen slices cost 5 floats per event each, for ever.
	Marked bool
}

func (o Options) withDefaults() Options {
	if !(o.Level > 0 && o.Level < 1) {
		o.Level = 0.95
	}
	if !(o.Window >= 1) {
		o.Window = 64
	}
	if o.Dof == 0 {
		o.Dof = 4
	}
	if !(o.Volatility > 0) {
		o.Volatility = 0.5
	}
	switch {
	case o.Reversion == 0 || math.IsNaN(o.Reversion):
		o.Reversion = defaultReversion
	case o.Reversion >= 1:
		o.Reversion = 1
	case o.Reversion < 0:
		o.Reversion = -1
	}
	return o
}

// defaultReversion is Options.Reversion's default.
const defaultReversion = 0.02

const nonnegAt = -1.0

// ErrNumerical reports a slice whose update produced a non-finite state; the model keeps
// its state from before the slice.
var ErrNumerical = errors.New("numerical failure")

// entry is one term of a sparse linear form over the state (or over the events).
type entry struct {
	i int
	c float64
}

// soft is an approximate identity Σ c·x + k/d = 0 with relative tolerance tol.
type soft struct {
	g    []entry // over the state
	pos  []entry // the positive-coefficient side, over the state, for the tolerance scale
	k    float64
	tol  float64
	text string
}

// ineq is Σ g·z + k/d >= 0.
type ineq struct {
	g      []entry
	k      float64
	nonneg bool // a count's own non-negativity
}

// nonlin is a non-linear relation, linearised at the current mean every slice.
type nonlin struct {
	rel    relation.Relation
	events []int // event indices it mentions
	tol    float64
}

// Model is the BayesPerf estimator. Build it with New; feed slices in order with
// Observe; ask Estimate at any time (filtered-and-smoothed given what was observed so
// far) and call Finish once the run is over.
type Model struct {
	opt   Options
	names []string
	n, k  int
	free  []int     // state index -> event
	rows  [][]entry // per event: x_e as a sparse combination of the state
	// byDependence lists the events single rates first, then the sums exact identities
	// make of them: Estimate widens a sum's interval from its terms'.
	byDependence []int
	// inSum marks the state components that are terms of a sum exact identities make:
	// a reading of the sum is split over them by their walks' variances.
	inSum []bool
	// idEvents are the events in exact identities, and identities those identities
	// Σ c·x = 0 as given (before reduce), each term's index into idEvents: the reported
	// values are reconciled to them (reconcile).
	idEvents   []int
	identities [][]entry
	// bounds are the exact homogeneous inequalities Σ c·x >= 0 as given (misses <=
	// accesses), over idEvents like identities: the reported values are reconciled to
	// them too. Relations with a tolerance may be broken a little and are left out.
	bounds [][]entry
	soft   []soft
	ineq   []ineq
	nl     []nonlin

	same [][2]int // events listed twice: (copy, first)

	clocks []int               // Options.Clocks, by index
	cbuf   []inference.Reading // scratch: a slice's readings with the clocks filled in

	// Dropped lists the relations the model could not use, with the reason.
	Dropped []string

	// Filter state: mean and covariance of the state after the last slice.
	m, P []float64
	init bool
	big  []float64 // prior standard deviation of a never-observed state component
	// runRate is, in Finish's second pass, per state component the typical rate of its
	// event over the run (hindsightRates; 0: none), which start sizes its prior by.
	runRate []float64
	// sparse is, in Finish's second pass, per state component whether its rate is
	// under sparseCounts counts a slice over the run (sparseRates).
	sparse []bool
	seen   []bool  // state component was observed directly at least once
	now    []bool  // state component is counted whole in the current slice
	none   []bool  // ... and its count there is zero
	softG  []entry // scratch for applySoft

	lrn learner

	// scratch, sized once, so that Observe does not allocate per slice.
	ph  []float64
	xs  []float64
	obs []meas
	pw  []float64 // levelPowers

	hist  history
	cache smoothCache
	quiet quietStats // quietScatter's, recomputed as the history grows
	fail  int
	// truncAt: an inequality is applied when its mean is below truncAt sd of the
	// bound, i.e. only on clear violations. Truncating a Gaussian over and over
	// ratchets whatever sits at its bound (every dip below is pushed back up, nothing
	// pulls down): sparse counts at zero, and relations that hold with equality in
	// practice (page-faults <= page_fault_user + page_fault_kernel drove a kernel
	// fault count that was 6 in truth to 340 on the xz trace when applied at 0 sd).
	// Reported values are clipped at zero regardless.
	truncAt float64
	// nonnegAt is truncAt for the non-negativity of single counts.
	nonnegAt float64
	quantQ   float64
	finished bool
	// dTyp is the usual duration of a slice (a running mean over about dN slices).
	dTyp, dN float64
	// run keeps the slices for Finish's second pass (refilter).
	run runLog
}

// meas is one measurement of a slice: y = h·z + noise(r).
type meas struct {
	h     []entry
	y, r  float64
	event int
	full  bool
	first bool
	pois  bool
	span  float64
}

// New builds the model for the events of a run (their names, in EventID order) and the
// relations between them, already bound to these events (relation.Bind). An event
// listed twice is the same count twice (an exact identity between the two). Relations that
// mention events outside the run are an error; relations the model cannot use are
// listed in Dropped.
func New(events []string, rels []relation.Relation, opt Options) (*Model, error) {
	idx := make(map[string]int, len(events))
	var cons []Constraint
	var same [][2]int
	for i, e := range events {
		if first, dup := idx[e]; dup {
			same = append(same, [2]int{i, first})
			// The same event opened twice (perf allows it): both count the same thing
			// in every slice. Relations name the first.
			cons = append(cons, Constraint{
				Coef: map[inference.EventID]float64{inference.EventID(i): 1, inference.EventID(first): -1},
				Op:   Equal, Text: fmt.Sprintf("%s = %s (listed twice)", e, e),
			})
			continue
		}
		idx[e] = i
	}
	var nls []nonlin
	var dropped []string
	for _, r := range rels {
		evs := r.Events()
		ids := make([]int, 0, len(evs))
		for _, e := range evs {
			i, ok := idx[e]
			if !ok {
				return nil, fmt.Errorf("build model: relation %q: event %q is not in the run (bind relations first)", r.String(), e)
			}
			ids = append(ids, i)
		}
		lin, ok := r.Linearize()
		if !ok {
			nls = append(nls, nonlin{rel: r, events: ids, tol: r.Tol})
			continue
		}
		c := Constraint{Coef: map[inference.EventID]float64{}, Const: lin.Const, Tol: r.Tol, Text: r.String()}
		for e, v := range lin.Coef {
			c.Coef[inference.EventID(idx[e])] = v
		}
		switch lin.Op {
		case relation.Eq:
			c.Op = Equal
		case relation.Le:
			c.Op = LessEq
		case relation.Ge:
			c.Op = GreaterEq
		default:
			dropped = append(dropped, r.String()+": unknown comparison")
			continue
		}
		cons = append(cons, c)
	}
	m, err := NewLinear(len(events), cons, opt)
	if err != nil {
		return nil, err
	}
	m.names = slices.Clone(events)
	for _, c := range opt.Clocks {
		i, ok := idx[c]
		if !ok {
			return nil, fmt.Errorf("build model: clock event %q is not in the run", c)
		}
		m.clocks = append(m.clocks, i)
	}
	m.nl = nls
	m.same = same
	m.Dropped = append(dropped, m.Dropped...)
	return m, nil
}

// ConstraintOp is the comparison of a Constraint.
type ConstraintOp int

const (
	Equal     ConstraintOp = iota // Σ c·x + k = 0
	LessEq                        // Σ c·x + k <= 0
	GreaterEq                     // Σ c·x + k >= 0
)

// Constraint is a linear relation between the counts of the events of one slice:
// Σ Coef[e]·count_e + Const (Op) 0. Tol is the relative tolerance of an approximate
// identity (0: exact).
type Constraint struct {
	Coef  map[inference.EventID]float64
	Const float64
	Op    ConstraintOp
	Tol   float64
	Text  string
}

// NewLinear builds the model from linear constraints over event indices; New is the
// same with relations by name.
func NewLinear(events int, cons []Constraint, opt Options) (*Model, error) {
	if events <= 0 {
		return nil, errors.New("build model: no events")
	}
	opt = opt.withDefaults()
	md := &Model{opt: opt, n: events}
	for i := range events {
		md.names = append(md.names, fmt.Sprintf("e%d", i))
	}
	// Exact identities become the state space: reduce them to echelon form, make the
	// pivot event of each row dependent on the others.
	var exact [][]float64
	for _, c := range cons {
		for e, v := range c.Coef {
			if int(e) < 0 || int(e) >= events || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("build model: constraint %q: bad term %d·%g", c.Text, e, v)
			}
		}
		if math.IsNaN(c.Const) || math.IsInf(c.Const, 0) || c.Tol < 0 || math.IsNaN(c.Tol) {
			return nil, fmt.Errorf("build model: constraint %q: bad constant or tolerance", c.Text)
		}
		if c.Op == Equal && c.Tol == 0 && c.Const == 0 {
			row := make([]float64, events)
			for e, v := range c.Coef {
				row[e] += v
			}
			exact = append(exact, row)
			md.addIdentity(row)
		}
	}
	md.stateSpace(exact)
	md.addConstraints(cons)
	if !opt.AllowNegative {
		for e := range events {
			md.ineq = append(md.ineq, ineq{g: md.rows[e], nonneg: true})
		}
	}
	md.alloc()
	return md, nil
}

// stateSpace makes the exact identities (rows Σ row[e]·x_e = 0) the state space: it
// reduces them to echelon form and makes the pivot event of each row a fixed linear
// combination of the free ones.
func (md *Model) stateSpace(exact [][]float64) {
	events := md.n
	pivotOf := reduce(exact, events) // event -> row of the reduced system, or -1
	free := make([]int, 0, events)
	zOf := make([]int, events)
	for e := range events {
		zOf[e] = -1
		if pivotOf[e] < 0 {
			zOf[e] = len(free)
			free = append(free, e)
		}
	}
	md.free, md.k = free, len(free)
	md.rows = make([][]entry, events)
	for e := range events {
		if zOf[e] >= 0 {
			md.rows[e] = []entry{{zOf[e], 1}}
			continue
		}
		row := exact[pivotOf[e]] // pivot coefficient is 1 after reduce
		for j, v := range row {
			if j != e && v != 0 {
				md.rows[e] = append(md.rows[e], entry{zOf[j], -v})
			}
		}
	}
	md.inSum = make([]bool, md.k)
	for e := range events {
		if len(md.rows[e]) > 1 {
			for _, a := range md.rows[e] {
				md.inSum[a.i] = true
			}
		}
	}
	for pass := range 2 {
		for e := range events {
			if (len(md.rows[e]) == 1) == (pass == 0) {
				md.byDependence = append(md.byDependence, e)
			}
		}
	}
}

// addConstraints adds everything but the exact identities: soft identities and
// inequalities over the state.
func (md *Model) addConstraints(cons []Constraint) {
	for _, c := range cons {
		if c.Op == Equal && c.Tol == 0 && c.Const == 0 {
			continue
		}
		g, pos := md.project(c.Coef)
		switch c.Op {
		case Equal:
			tol := c.Tol
			if tol == 0 {
				tol = 1e-9
			}
			if len(g) > 0 {
				md.soft = append(md.soft, soft{g: g, pos: pos, k: c.Const, tol: tol, text: c.Text})
			}
		case LessEq:
			md.ineq = append(md.ineq, ineq{g: negate(g), k: -c.Const})
			if c.Const == 0 && c.Tol == 0 {
				md.addBound(c.Coef, -1)
			}
		case GreaterEq:
			md.ineq = append(md.ineq, ineq{g: g, k: c.Const})
			if c.Const == 0 && c.Tol == 0 {
				md.addBound(c.Coef, 1)
			}
		default:
			md.Dropped = append(md.Dropped, c.Text+": unknown comparison")
		}
	}
}

// addIdentity records the exact identity Σ row[e]·x_e = 0 for reconcile, before reduce
// rewrites row.
func (md *Model) addIdentity(row []float64) {
	var id []entry
	for e, v := range row {
		if v != 0 {
			id = append(id, entry{md.idIndex(e), v})
		}
	}
	md.identities = append(md.identities, id)
}

// addBound records the inequality sign·Σ coef[e]·x_e >= 0 for reconcile.
func (md *Model) addBound(coef map[inference.EventID]float64, sign float64) {
	var b []entry
	for _, e := range slices.Sorted(maps.Keys(coef)) { // in event order: deterministic
		if v := coef[e]; v != 0 {
			b = append(b, entry{md.idIndex(int(e)), sign * v})
		}
	}
	if len(b) > 1 {
		md.bounds = append(md.bounds, b)
	}
}

// idIndex is event e's index into idEvents, added if new.
func (md *Model) idIndex(e int) int {
	j := slices.Index(md.idEvents, e)
	if j < 0 {
		j = len(md.idEvents)
		md.idEvents = append(md.idEvents, e)
	}
	return j
}

// alloc sets up the state that Observe changes (filter, learner, history) for a run that
// has not started, from the model's structure (events, state space, options).
func (md *Model) alloc() {
	k, events, opt := md.k, md.n, md.opt
	zeros(k, &md.m, &md.ph, &md.big)
	zeros(k, &md.seen, &md.now, &md.none)
	md.P = make([]float64, k*k)
	md.xs = make([]float64, events)
	md.lrn.init(k, events, opt)
	md.hist.k, md.hist.n = k, events
	md.hist.limit = opt.History
	if md.hist.limit <= 0 {
		md.hist.limit = max(64, (64<<20)/(8*max(k*k, 1)))
	}
	md.hist.limit = max(md.hist.limit, 2)
	md.hist.frozen.marked = opt.Marked
	md.quantQ = tQuantile(0.5+opt.Level/2, 0)
	md.truncAt = nonnegAt
	md.nonnegAt = nonnegAt
}

// project maps a linear form over events to one over the state, and also returns the
// part with positive event coefficients (the scale of a tolerance).
func (md *Model) project(coef map[inference.EventID]float64) (g, pos []entry) {
	acc := make([]float64, md.k)
	accPos := make([]float64, md.k)
	keys := make([]int, 0, len(coef))
	for e := range coef {
		keys = append(keys, int(e))
	}
	slices.Sort(keys)
	for _, e := range keys {
		v := coef[inference.EventID(e)]
		for _, t := range md.rows[e] {
			acc[t.i] += v * t.c
			if v > 0 {
				accPos[t.i] += v * t.c
			}
		}
	}
	for i, v := range acc {
		if math.Abs(v) > 1e-12 {
			g = append(g, entry{i, v})
		}
		if math.Abs(accPos[i]) > 1e-12 {
			pos = append(pos, entry{i, accPos[i]})
		}
	}
	return g, pos
}

func negate(g []entry) []entry {
	out := make([]entry, len(g))
	for i, t := range g {
		out[i] = entry{t.i, -t.c}
	}
	return out
}

// reduce brings the rows to reduced row echelon form in place (pivot coefficient 1) and
// returns, per column, the row it is the pivot of, or -1.
//
// The pivot of a row is the event made dependent on the others, so it must be the sum
// side of an identity: a parent, never one of its children. A child written as the
// parent minus its siblings carries every error of those large events, and a small
// event (1,377 instruction-cache misses beside 21 million data misses) comes out a
// thousand times too high. So a row's pivot is, where there is one, the event whose
// coefficient has the sign no other term of the row has (the lone side of
// parent = child + child + ...); otherwise the largest coefficient. Ties go to the
// lowest column, so the result is deterministic.
func reduce(rows [][]float64, n int) []int {
	pivotOf := make([]int, n)
	for i := range pivotOf {
		pivotOf[i] = -1
	}
	r := 0
	for r < len(rows) {
		best, bv := sumSide(rows[r])
		if best < 0 {
			for j, v := range rows[r] {
				if math.Abs(v) > bv*(1+1e-12) {
					best, bv = j, math.Abs(v)
				}
			}
		}
		if best < 0 || bv < 1e-12 {
			// A row implied by the others: drop it.
			rows = append(rows[:r], rows[r+1:]...)
			continue
		}
		p := rows[r][best]
		for j := range rows[r] {
			rows[r][j] /= p
		}
		rows[r][best] = 1
		for i := range rows {
			if i == r || rows[i][best] == 0 {
				continue
			}
			f := rows[i][best]
			for j := range rows[i] {
				rows[i][j] -= f * rows[r][j]
			}
			rows[i][best] = 0
		}
		pivotOf[best] = r
		r++
	}
	// Later rows may have been reduced after their pivot was chosen; the pivot column
	// of every row is zero in all other rows by construction.
	for j := range pivotOf {
		if pivotOf[j] >= len(rows) {
			pivotOf[j] = -1
		}
	}
	return pivotOf
}

// sumSide returns the column of row whose coefficient is the only one of its sign (the
// sum side of an identity a = b + c + ...), and its magnitude; -1 when there is no such
// column or the row has fewer than two terms. Coefficients below 1e-12 count as zero.
func sumSide(row []float64) (int, float64) {
	pos, neg := -1, -1
	npos, nneg := 0, 0
	for j, v := range row {
		switch {
		case v > 1e-12:
			npos++
			if pos < 0 {
				pos = j
			}
		case v < -1e-12:
			nneg++
			if neg < 0 {
				neg = j
			}
		}
	}
	switch {
	case npos+nneg < 2:
		return -1, 0
	case npos == 1 && nneg > 1:
		return pos, row[pos]
	case nneg == 1 && npos > 1:
		return neg, -row[neg]
	}
	return -1, 0
}

// Name is the estimator's name in reports.
func (md *Model) Name() string { return "bayesperf" }

// Events is the number of events of the run.
func (md *Model) Events() int { return md.n }

// StateDim is the number of free rates in the state (events minus exact identities).
func (md *Model) StateDim() int { return md.k }

// Failures is the number of slices whose update failed numerically and was skipped: by
// the filter whose values Estimate gives, so after a Finish that filtered the run again
// (refilter), by that second pass.
func (md *Model) Failures() int { return md.fail }

// EqualEvents returns, per event, the lowest-numbered event that the exact identities
// make equal to it in every slice (the same linear combination of the state: a repeat,
// both sides of a = b, or sums of the same terms), or -1 when no other event is. A
// consumer that serves what the model estimates plus something of its own (a count
// since the last slice) can serve such events one value, so that the identities hold
// in what it serves too.
func (md *Model) EqualEvents() []int {
	out := make([]int, md.n)
	for e := range out {
		out[e] = -1
		for f := range e {
			if slices.Equal(md.rows[e], md.rows[f]) {
				out[e], out[f] = f, f
				break
			}
		}
	}
	return out
}
