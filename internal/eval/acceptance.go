package eval

import (
	"fmt"
	"math"

	"github.com/bayesperf/bayesperf/inference/metrics"
)

// CorpusBar is what bayesperf must do on every trace of a corpus family's validation
// half, against Linux's scaling on the same observations.
type CorpusBar struct {
	Worst float64 // no event's WAPE above Worst·linux's + 0.01
	// MinLinuxWAPE leaves out of Worst the events Linux got within it (0: none).
	MinLinuxWAPE float64
	WAPESlack    float64    // mean WAPE at most linux's + WAPESlack
	TotalSlack   float64    // mean total error at most linux's + TotalSlack
	MedianReduce float64    // median error reduction over the family's traces
	Coverage     [2]float64 // coverage95 range; zero: not judged
	Sharpness    float64    // median sharpness at most this; 0: not judged
}

// CorpusAcceptance is issue 13's acceptance, per family prefix.
var CorpusAcceptance = map[string]CorpusBar{
	"cg-":   {Worst: 2, MedianReduce: 2.5, Coverage: [2]float64{0.88, 0.98}, Sharpness: 0.5},
	"sys-":  {Worst: 5, MedianReduce: 1.2},
	"live-": {Worst: 5, MedianReduce: 1.2},
}

// Shortfall is one figure of a scored trace that misses a bar.
type Shortfall struct {
	What  string // the figure and its value
	Event string // the event whose WAPE it is; "" for the trace's own figures
	// For an event: the WAPEs of linux-own (the kernel's scaling of the readings
	// bayesperf's schedule took; NaN when not scored) and bayesperf-rr (the model on
	// the kernel's readings, which linux scaled).
	LinuxOwn, RR float64
	// Sampled says that linux-own misses the same bar: bayesperf's readings of the
	// event, not what the model made of them, are what Linux's were not.
	Sampled bool
}

func (s Shortfall) String() string {
	if s.Event == "" {
		return s.What
	}
	cause := "the model's"
	if s.Sampled {
		cause = "in the readings"
	}
	own := "linux-own not scored"
	if !math.IsNaN(s.LinuxOwn) {
		own = fmt.Sprintf("linux-own %.3f", s.LinuxOwn)
	}
	return fmt.Sprintf("%s (%s, bayesperf-rr %.3f: %s)", s.What, own, s.RR, cause)
}

// Shortfalls lists the figures of res, one trace, that miss b: mean WAPE, total error,
// each event's WAPE, coverage and sharpness (the median reduction is the family's).
func (b CorpusBar) Shortfalls(res *Result) []Shortfall {
	var out []Shortfall
	bp, lx := res.Estimators[BayesPerf], res.Estimators[Linux]
	if bp.WAPE > lx.WAPE+b.WAPESlack {
		out = append(out, Shortfall{What: fmt.Sprintf("mean WAPE %.3f above linux's %.3f", bp.WAPE, lx.WAPE)})
	}
	if bp.TotalError > lx.TotalError+b.TotalSlack {
		out = append(out, Shortfall{What: fmt.Sprintf("total error %.3f above linux's %.3f", bp.TotalError, lx.TotalError)})
	}
	worse := func(w, l float64) bool { return l >= b.MinLinuxWAPE && w > b.Worst*l+0.01 }
	for _, pe := range res.PerEvent {
		if !pe.Defined {
			continue
		}
		w, l := pe.Metrics[BayesPerf].WAPE, pe.Metrics[Linux].WAPE
		if !worse(w, l) {
			continue
		}
		s := Shortfall{What: fmt.Sprintf("%s WAPE %.3f, linux's %.3f", pe.Event, w, l), Event: pe.Event,
			LinuxOwn: math.NaN(), RR: pe.Metrics[BayesPerfRR].WAPE}
		if m, ok := pe.Metrics[LinuxOwn]; ok {
			s.LinuxOwn, s.Sampled = m.WAPE, worse(m.WAPE, l)
		}
		out = append(out, s)
	}
	if b.Coverage[1] > 0 {
		if c := deref(bp.Coverage95); c < b.Coverage[0] || c > b.Coverage[1] {
			out = append(out, Shortfall{What: fmt.Sprintf("coverage95 %.4f", c)})
		}
	}
	if b.Sharpness > 0 {
		if s := deref(bp.Sharpness); s > b.Sharpness {
			out = append(out, Shortfall{What: fmt.Sprintf("median sharpness %.3f", s)})
		}
	}
	return out
}

// FamilyShortfalls judges a family's scored traces against b (rs[i] named labels[i]):
// each trace's Shortfalls, their What led by the trace's label, then the family's median
// error reduction, led by prefix+"*".
func (b CorpusBar) FamilyShortfalls(prefix string, labels []string, rs []*Result) []Shortfall {
	var out []Shortfall
	var reds []float64
	for i, res := range rs {
		reds = append(reds, res.ErrorReduction[BayesPerf])
		for _, s := range b.Shortfalls(res) {
			s.What = labels[i] + ": " + s.What
			out = append(out, s)
		}
	}
	if med := metrics.Median(reds); len(reds) > 0 && med < b.MedianReduce {
		out = append(out, Shortfall{What: fmt.Sprintf("%s*: median error reduction %.2fx", prefix, med)})
	}
	return out
}

// InReadings counts the shortfalls put down to the readings (Sampled).
func InReadings(ss []Shortfall) int {
	n := 0
	for _, s := range ss {
		if s.Sampled {
			n++
		}
	}
	return n
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
