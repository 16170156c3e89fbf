package metrics

import (
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
)

// RatioCap bounds each per-event ratio in ErrorReduction.
const RatioCap = 100

// Values returns the point values of estimates.
func Values(est []inference.Estimate) []float64 {
	out := make([]float64, len(est))
	for i, e := range est {
		out[i] = e.Value
	}
	return out
}

func common(truth, est []float64) ([]float64, []float64) {
	n := min(len(truth), len(est))
	return truth[:n], est[:n]
}

func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// WAPE is Σ|est − truth| / Σtruth; ok is false when Σtruth is not positive.
func WAPE(truth, est []float64) (w float64, ok bool) {
	truth, est = common(truth, est)
	total := sum(truth)
	if !(total > 0) {
		return 0, false
	}
	var abs float64
	for i := range truth {
		abs += math.Abs(est[i] - truth[i])
	}
	return abs / total, true
}

// TotalError is |Σest − Σtruth| / Σtruth; ok is false when Σtruth is not positive.
func TotalError(truth, est []float64) (float64, bool) {
	truth, est = common(truth, est)
	total := sum(truth)
	if !(total > 0) {
		return 0, false
	}
	return math.Abs(sum(est)-total) / total, true
}

// RA is the relative accuracy of source 001: 1 − the mean relative error over the
// intervals with positive truth, floored at 0; ok is false when no interval has one.
func RA(truth, est []float64) (float64, bool) {
	truth, est = common(truth, est)
	var rel float64
	var n int
	for i, c := range truth {
		if c > 0 {
			rel += math.Abs(est[i]-c) / c
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return math.Max(0, 1-rel/float64(n)), true
}

// DTWCost is the dynamic-time-warping distance between two series with local cost
// |a − b|: the least total cost of a monotone alignment path from (0,0) to the last
// elements, steps (1,0), (0,1), (1,1). Empty input costs 0 if both are empty, +Inf
// otherwise.
func DTWCost(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 {
		if len(a) == len(b) {
			return 0
		}
		return math.Inf(1)
	}
	prev := make([]float64, len(b))
	cur := make([]float64, len(b))
	for i := range a {
		for j := range b {
			c := math.Abs(a[i] - b[j])
			switch {
			case i == 0 && j == 0:
				cur[j] = c
			case i == 0:
				cur[j] = c + cur[j-1]
			case j == 0:
				cur[j] = c + prev[j]
			default:
				cur[j] = c + math.Min(prev[j-1], math.Min(prev[j], cur[j-1]))
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)-1]
}

// DTW is DTWCost(est, truth) / Σtruth; ok is false when Σtruth is not positive.
func DTW(truth, est []float64) (float64, bool) {
	total := sum(truth)
	if !(total > 0) {
		return 0, false
	}
	return DTWCost(est, truth) / total, true
}

// Coverage counts the estimates that carry a 95% interval (total) and those whose
// interval contains the truth (inside).
func Coverage(truth []float64, est []inference.Estimate) (inside, total int) {
	n := min(len(truth), len(est))
	for i := range n {
		if !est[i].HasInterval {
			continue
		}
		total++
		if est[i].Lo <= truth[i] && truth[i] <= est[i].Hi {
			inside++
		}
	}
	return inside, total
}

// Sharpness is the width of the 95% intervals relative to the count: the sum of their
// half-widths (Hi − Lo)/2 over the estimates that carry one, divided by the truth summed
// over the same intervals. ok is false when no estimate has an interval or that truth is
// not positive. Coverage bought with huge intervals shows here: a model near 0.95
// coverage with sharpness 0.01 is honest, one with sharpness 5 is not informative.
func Sharpness(truth []float64, est []inference.Estimate) (s float64, ok bool) {
	n := min(len(truth), len(est))
	var half, total float64
	var with int
	for i := range n {
		if !est[i].HasInterval {
			continue
		}
		with++
		half += (est[i].Hi - est[i].Lo) / 2
		total += truth[i]
	}
	if with == 0 || !(total > 0) {
		return 0, false
	}
	return half / total, true
}

// Event holds one event's scores. Defined is false when the event never occurred in the
// truth, and then the ratios are meaningless and must not be reported.
type Event struct {
	Defined    bool
	WAPE       float64
	TotalError float64
	RA         float64
	DTW        float64
	// Inside and WithInterval are the coverage counts (see Coverage).
	Inside, WithInterval int
	// Sharpness is the event's Sharpness; meaningful only when HasSharpness.
	Sharpness    float64
	HasSharpness bool
}

// Coverage95 returns the share of intervals containing the truth, and false if no
// estimate had an interval.
func (e Event) Coverage95() (float64, bool) {
	if e.WithInterval == 0 {
		return 0, false
	}
	return float64(e.Inside) / float64(e.WithInterval), true
}

// ForEvent scores one event's estimates over its reporting intervals.
func ForEvent(truth []float64, est []inference.Estimate) Event {
	v := Values(est)
	var m Event
	m.Inside, m.WithInterval = Coverage(truth, est)
	m.Sharpness, m.HasSharpness = Sharpness(truth, est)
	w, ok := WAPE(truth, v)
	if !ok {
		return m
	}
	m.Defined = true
	m.WAPE = w
	m.TotalError, _ = TotalError(truth, v)
	m.RA, _ = RA(truth, v)
	m.DTW, _ = DTW(truth, v)
	return m
}

// Summary is the headline of one estimator over a run's events.
type Summary struct {
	WAPE       float64  `json:"wape"`        // mean over defined events
	MedianWAPE float64  `json:"median_wape"` // median over defined events
	TotalError float64  `json:"total_error"` // mean over defined events
	RA         float64  `json:"ra"`          // mean over defined events
	DTW        float64  `json:"dtw"`         // mean over defined events
	Coverage95 *float64 `json:"coverage95"`  // pooled over all (event, interval); nil without intervals
	Sharpness  *float64 `json:"sharpness"`   // median over events with a sharpness; nil without intervals
	Events     int      `json:"-"`           // defined events the means are over

	// The do-no-harm figures relative to a baseline estimator (see Harm). Summarize
	// cannot know the baseline and leaves them nil; replay.Summarize sets them.
	WorstRatio *float64 `json:"worst_ratio"` // nil when no event qualifies
	WorstEvent *string  `json:"worst_event"` // the event giving WorstRatio
	Harmed     *int     `json:"harmed"`
}

// Summarize aggregates per-event scores. Coverage is pooled over every (event,
// interval) pair that had an interval, defined events or not.
func Summarize(events []Event) Summary {
	var s Summary
	var wapes, sharp []float64
	var inside, with int
	for _, e := range events {
		inside += e.Inside
		with += e.WithInterval
		if e.HasSharpness {
			sharp = append(sharp, e.Sharpness)
		}
		if !e.Defined {
			continue
		}
		wapes = append(wapes, e.WAPE)
		s.WAPE += e.WAPE
		s.TotalError += e.TotalError
		s.RA += e.RA
		s.DTW += e.DTW
	}
	if with > 0 {
		c := float64(inside) / float64(with)
		s.Coverage95 = &c
	}
	if len(sharp) > 0 {
		m := Median(sharp)
		s.Sharpness = &m
	}
	s.Events = len(wapes)
	if len(wapes) == 0 {
		return s
	}
	n := float64(len(wapes))
	s.WAPE /= n
	s.TotalError /= n
	s.RA /= n
	s.DTW /= n
	s.MedianWAPE = Median(wapes)
	return s
}

// Median of xs (mean of the two middle values for an even count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// exactZero is the WAPE below which an estimate counts as exact (see Ratio).
const exactZero = 1e-9

// ErrorReduction is the geometric mean over events of linux[e] / x[e] (per-event WAPEs of
// Linux scaling and of the estimator X), each ratio clamped to [1/RatioCap, RatioCap];
// events where both are 0 count as ratio 1. Only events defined in both are used
// (pass Event.Defined through ok); ok is false if there are none.
func ErrorReduction(linux, x []Event) (float64, bool) {
	n := min(len(linux), len(x))
	var logSum float64
	var k int
	for e := range n {
		if !linux[e].Defined || !x[e].Defined {
			continue
		}
		logSum += math.Log(Ratio(linux[e].WAPE, x[e].WAPE))
		k++
	}
	if k == 0 {
		return 0, false
	}
	return math.Exp(logSum / float64(k)), true
}

// Ratio is a / b clamped to [1/RatioCap, RatioCap], with 0/0 = 1. WAPEs below
// exactZero are taken as 0: they are floating-point rounding of an exact answer (Linux's
// count·enabled/running of an always-counted event over nanosecond times came out at
// 2e-17 where the model's exact count gave 0, which counted as a 100-fold win).
func Ratio(a, b float64) float64 {
	if a < exactZero {
		a = 0
	}
	if b < exactZero {
		b = 0
	}
	switch {
	case a == 0 && b == 0:
		return 1
	case b == 0:
		return RatioCap
	}
	return math.Min(RatioCap, math.Max(1.0/RatioCap, a/b))
}

// Do no harm: an estimator may win on the typical event (ErrorReduction) and still ruin a
// few; these bound what counts as ruin.
const (
	// HarmFloor is the least baseline WAPE an event needs to enter WorstRatio: below it
	// the baseline is all but exact and the ratio of two tiny errors says nothing.
	HarmFloor = 0.01
	// HarmFactor and HarmSlack: an event is harmed when
	// WAPE_X > HarmFactor·WAPE_base + HarmSlack (the slack spares events both get right).
	HarmFactor = 1.5
	HarmSlack  = 0.01
)

// Harm is how much worse than a baseline an estimator X is on its worst events.
type Harm struct {
	// WorstRatio is the largest WAPE_X / WAPE_base over the events with
	// WAPE_base >= HarmFloor, uncapped (a 500-fold error must show as 500); WorstEvent
	// is that event's index, the first on ties, or -1 (and WorstRatio 0) when no event
	// qualifies.
	WorstRatio float64
	WorstEvent int
	// Harmed counts the events with WAPE_X > HarmFactor·WAPE_base + HarmSlack.
	Harmed int
}

// Harms compares X's per-event scores x with the baseline's base, over the events defined
// in both. X compared with itself has WorstRatio 1 (when an event qualifies) and no
// harmed event.
func Harms(base, x []Event) Harm {
	h := Harm{WorstEvent: -1}
	for e := range min(len(base), len(x)) {
		if !base[e].Defined || !x[e].Defined {
			continue
		}
		b, w := base[e].WAPE, x[e].WAPE
		if w > HarmFactor*b+HarmSlack {
			h.Harmed++
		}
		if b >= HarmFloor {
			if r := w / b; h.WorstEvent < 0 || r > h.WorstRatio {
				h.WorstRatio, h.WorstEvent = r, e
			}
		}
	}
	return h
}
