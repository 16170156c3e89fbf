package learned

import (
	"fmt"

	"github.com/bayesperf/bayesperf/inference"
)

// Estimator names.
const (
	NameMLP   = "mlp"
	NameBiGRU = "bigru"
)

// Estimator is one of the model's networks correcting one run. It keeps the raw
// observations and predicts every slice of the run observed so far when asked; the
// prediction is cached until the next Observe (so scoring after Finish costs one pass,
// and asking online costs one pass per interval).
type Estimator struct {
	m    *Model
	name string
	st   *store
	// pred[e][t] is the predicted count of slice t; valid for predFor slices.
	pred    [][]float64
	ser     []series
	predFor int
}

// NewEstimator returns the named network ("mlp" or "bigru") of m over a run of events
// events.
func NewEstimator(m *Model, name string, events int) (*Estimator, error) {
	if m == nil {
		return nil, fmt.Errorf("new %s estimator: no model", name)
	}
	if name != NameMLP && name != NameBiGRU {
		return nil, fmt.Errorf("new estimator %q: want %s or %s", name, NameMLP, NameBiGRU)
	}
	return &Estimator{m: m, name: name, st: newStore(events), predFor: -1}, nil
}

// Name is "mlp" or "bigru".
func (x *Estimator) Name() string { return x.name }

// Observe records one slice; slices come in order.
func (x *Estimator) Observe(s inference.Slice) error { return x.st.observe(s) }

// Finish does nothing: predictions use every slice observed when asked.
func (x *Estimator) Finish() {}

// Estimate sums the per-slice predictions of every event over [from, to), clamped to
// the slices observed so far.
func (x *Estimator) Estimate(from, to int) []inference.Estimate {
	out := make([]inference.Estimate, x.st.events)
	S := x.st.slices()
	from, to = max(from, 0), min(to, S)
	if from >= to {
		return out
	}
	if x.predFor != S {
		x.ser, x.pred = x.m.predict(x.name, x.st)
		x.predFor = S
	}
	for e := range out {
		s := x.ser[e]
		if !s.counted {
			out[e] = inference.Estimate{Status: inference.StatusNotCounted}
			continue
		}
		v, exact := 0.0, true
		for t := from; t < to; t++ {
			v += x.pred[e][t]
			exact = exact && s.whole[t]
		}
		st := inference.StatusScaled
		if exact {
			st = inference.StatusExact
		}
		out[e] = inference.Estimate{Value: v, Status: st}
	}
	return out
}

// predict returns every event's series and per-slice predicted counts.
func (m *Model) predict(name string, st *store) ([]series, [][]float64) {
	ser := runSeries(st)
	pred := make([][]float64, len(ser))
	var (
		mc  *mlpCache
		buf []float64
		gc  gruRun
		out []float64
	)
	for e, s := range ser {
		S := len(s.x)
		p := make([]float64, S)
		pred[e] = p
		if s.none {
			// Never counted, or counted and always zero: the exact counts it has.
			for t := range S {
				p[t] = s.exact[t]
			}
			continue
		}
		if name == NameBiGRU {
			if cap(out) < S {
				out = make([]float64, S)
			}
			out = out[:S]
			m.GRU.forward(m.GRU.Params, s.x, &gc, out)
		}
		for t := range S {
			if s.whole[t] {
				p[t] = s.exact[t]
				continue
			}
			var z float64
			if name == NameBiGRU {
				z = s.base[t] + out[t]
			} else {
				if mc == nil {
					mc = newMLPCache(m.MLP.Sizes)
				}
				buf = window(s.x, t, m.Window, buf)
				z = s.base[t] + m.MLP.forward(m.MLP.Params, buf, mc, 0, nil)
			}
			p[t] = toCount(z, s.unit)
		}
	}
	return ser, pred
}

var _ inference.Estimator = (*Estimator)(nil)
