package learned

import (
	"math"

	"github.com/bayesperf/bayesperf/inference"
)

// Inputs names the per-slice inputs, in order; a model file records them, and Load
// rejects a file whose inputs differ.
var Inputs = []string{"rate", "counted", "fixed", "always", "duration"}

// nIn is the number of per-slice inputs.
const nIn = 5

// store keeps the raw per-slice deltas of a run, as the baselines do.
type store struct {
	events int
	dur    []float64
	// Per event, per slice.
	count, enabled, running [][]float64
}

func newStore(events int) *store {
	events = max(events, 0)
	return &store{events: events, count: make([][]float64, events),
		enabled: make([][]float64, events), running: make([][]float64, events)}
}

func (st *store) slices() int { return len(st.dur) }

func (st *store) observe(s inference.Slice) error {
	t := len(st.dur)
	if err := s.Check(t, st.events); err != nil {
		return err
	}
	st.dur = append(st.dur, s.Duration)
	for e := range st.events {
		st.count[e] = append(st.count[e], 0)
		st.enabled[e] = append(st.enabled[e], 0)
		st.running[e] = append(st.running[e], 0)
	}
	for _, r := range s.Readings {
		st.count[r.Event][t] += float64(r.Count)
		st.enabled[r.Event][t] += float64(r.Enabled)
		st.running[r.Event][t] += float64(r.Running)
	}
	return nil
}

// series is one event's inputs over a run.
type series struct {
	x     [][nIn]float64 // per slice inputs
	base  []float64      // log1p(fixed / unit): the output the networks correct
	whole []bool         // counted whole: the exact count is known
	exact []float64      // the count of a slice counted whole
	unit  float64        // count per normalised unit; 0 when the event never counted
	// none is set when the event never counted, or counted only zeros: nothing to
	// scale by; counted says it counted at least once.
	none, counted bool
}

// runSeries computes every event's inputs from the observations so far.
func runSeries(st *store) []series {
	S := st.slices()
	out := make([]series, st.events)
	if S == 0 {
		for e := range out {
			out[e].none = true
		}
		return out
	}
	meanDur := 0.0
	for _, d := range st.dur {
		meanDur += d
	}
	meanDur /= float64(S)
	if meanDur <= 0 {
		meanDur = 1
	}
	// Per event: per-slice scaled count, fixed interpolation and unit.
	scaled := make([][]float64, st.events)
	fixed := make([][]float64, st.events)
	units := make([]float64, st.events)
	var always []int
	anyCounted := make([]bool, st.events)
	for e := range st.events {
		var all bool
		scaled[e], fixed[e], units[e], anyCounted[e], all = scaleEvent(st, e, meanDur)
		if all {
			always = append(always, e)
		}
	}
	alw := activitySeries(st, always, scaled, units, meanDur)
	for e := range st.events {
		s := series{unit: units[e], x: make([][nIn]float64, S), base: make([]float64, S),
			whole: make([]bool, S), exact: make([]float64, S)}
		s.counted = anyCounted[e]
		if units[e] <= 0 {
			// Never counted, or counted and always zero: nothing to scale by.
			s.none = true
			s.unit = 0
		}
		u := units[e]
		if u <= 0 {
			u = 1
		}
		for t := range S {
			frac := 0.0
			if en := st.enabled[e][t]; en > 0 {
				frac = min(st.running[e][t]/en, 1)
			}
			s.x[t] = [nIn]float64{
				log1p(scaled[e][t] / u), frac, log1p(fixed[e][t] / u),
				log1p(alw[t]), log1p(st.dur[t] / meanDur),
			}
			s.base[t] = log1p(fixed[e][t] / u)
			if r := st.running[e][t]; r > 0 && r >= st.enabled[e][t] {
				s.whole[t] = true
				s.exact[t] = st.count[e][t]
			}
		}
		out[e] = s
	}
	return out
}

// scaleEvent is event e's per-slice count scaled by enabled/running (sc), its fixed
// interpolation (fx: the last counted rate held, the first one before it), its unit
// (count per usual slice), whether it ever counted and whether it counted whole in
// every slice.
func scaleEvent(st *store, e int, meanDur float64) (sc, fx []float64, unit float64, counted, always bool) {
	S := st.slices()
	sc, fx = make([]float64, S), make([]float64, S)
	var sum, sumDur float64
	nCounted, whole := 0, 0
	for t := range S {
		if r := st.running[e][t]; r > 0 {
			sc[t] = st.count[e][t] * st.enabled[e][t] / r
			sum += sc[t]
			sumDur += st.dur[t]
			nCounted++
			if r >= st.enabled[e][t] {
				whole++
			}
		}
	}
	// Fixed interpolation: the last counted rate held, the first one before it.
	rate := -1.0
	for t := range S {
		if r := st.running[e][t]; r > 0 {
			rate = st.count[e][t] / r
			break
		}
	}
	for t := range S {
		if r := st.running[e][t]; r > 0 {
			rate = st.count[e][t] / r
			fx[t] = sc[t]
			continue
		}
		if rate >= 0 {
			fx[t] = rate * st.enabled[e][t]
		}
	}
	if nCounted > 0 {
		switch {
		case sumDur > 0:
			unit = sum / sumDur * meanDur
		default:
			unit = sum / float64(nCounted)
		}
	}
	return sc, fx, unit, nCounted > 0, whole == S
}

// activitySeries is the program's activity per slice: the mean of the always-counted
// events' scaled counts in their units, or the slice's duration when none is.
func activitySeries(st *store, always []int, scaled [][]float64, units []float64, meanDur float64) []float64 {
	S := st.slices()
	alw := make([]float64, S)
	n := 0
	for _, g := range always {
		if units[g] <= 0 {
			continue
		}
		n++
		for t := range S {
			alw[t] += scaled[g][t] / units[g]
		}
	}
	for t := range S {
		if n > 0 {
			alw[t] /= float64(n)
		} else {
			alw[t] = st.dur[t] / meanDur
		}
	}
	return alw
}

// log1p is math.Log1p of a non-negative value, finite for any finite input.
func log1p(v float64) float64 {
	if !(v > 0) {
		return 0
	}
	return math.Log1p(v)
}

// window copies the inputs of slices t-w..t+w into dst (zeros outside the run, whose
// counted input is then 0 as for an uncounted slice) and returns it.
func window(x [][nIn]float64, t, w int, dst []float64) []float64 {
	dst = dst[:0]
	for k := t - w; k <= t+w; k++ {
		if k < 0 || k >= len(x) {
			dst = append(dst, 0, 0, 0, 0, 0)
			continue
		}
		dst = append(dst, x[k][:]...)
	}
	return dst
}

// toCount maps a network output (log1p units) back to a count.
func toCount(z, unit float64) float64 {
	if !(z > 0) || unit <= 0 {
		return 0
	}
	return math.Expm1(min(z, 50)) * unit
}
