package model

import (
	"math"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// trace is a run with exact counts per slice (synthetic, see synth_test.go).
type trace struct {
	name   string
	events []string
	dur    []float64
	counts [][]uint64
}

// roundRobin is the kernel's schedule for singleton groups: at slice t the list of
// non-fixed events rotated by t, the first `counters` of it counted, fixed events always.
func roundRobin(n, counters int, fixed []int) func(t int) []int {
	var flex []int
	for e := range n {
		if !slices.Contains(fixed, e) {
			flex = append(flex, e)
		}
	}
	return func(t int) []int {
		out := slices.Clone(fixed)
		for i := 0; i < counters && i < len(flex); i++ {
			out = append(out, flex[(t+i)%len(flex)])
		}
		return out
	}
}

// simulate multiplexes the trace: every event enabled in every slice, running (with its
// exact count) only in the slices the schedule gives it.
func simulate(tr *trace, sched func(t int) []int) []inference.Slice {
	out := make([]inference.Slice, len(tr.counts))
	for t, row := range tr.counts {
		ns := uint64(math.Max(1, math.Round(tr.dur[t])))
		s := inference.Slice{Index: t, Duration: tr.dur[t], Readings: make([]inference.Reading, len(row))}
		on := sched(t)
		for e := range row {
			r := inference.Reading{Event: inference.EventID(e), Enabled: ns}
			if slices.Contains(on, e) {
				r.Count, r.Running = row[e], ns
			}
			s.Readings[e] = r
		}
		out[t] = s
	}
	return out
}

// score holds the brief's accuracy metrics of one estimator on one run.
type score struct {
	wape     []float64 // per event; NaN when the event never occurs
	coverage float64   // NaN without intervals
}

func (s score) meanWAPE() float64 {
	sum, n := 0.0, 0
	for _, w := range s.wape {
		if !math.IsNaN(w) {
			sum += w
			n++
		}
	}
	return sum / float64(n)
}

// run feeds the slices to the estimator and scores it over reporting intervals of
// window slices against the truth.
func run(t testing.TB, est inference.Estimator, slicesIn []inference.Slice, truth [][]float64, window int) score {
	t.Helper()
	for _, s := range slicesIn {
		if err := est.Observe(s); err != nil {
			t.Fatalf("%s: %v", est.Name(), err)
		}
	}
	est.Finish()
	n := len(truth[0])
	absErr := make([]float64, n)
	tot := make([]float64, n)
	in, cnt := 0, 0
	hasInt := false
	for from := 0; from < len(slicesIn); from += window {
		to := min(from+window, len(slicesIn))
		es := est.Estimate(from, to)
		for e := range n {
			c := 0.0
			for u := from; u < to; u++ {
				c += truth[u][e]
			}
			absErr[e] += math.Abs(es[e].Value - c)
			tot[e] += c
			if es[e].HasInterval {
				hasInt = true
				cnt++
				if c >= es[e].Lo-1e-9*math.Abs(c) && c <= es[e].Hi+1e-9*math.Abs(c) {
					in++
				}
			}
		}
	}
	sc := score{wape: make([]float64, n), coverage: math.NaN()}
	for e := range n {
		sc.wape[e] = math.NaN()
		if tot[e] > 0 {
			sc.wape[e] = absErr[e] / tot[e]
		}
	}
	if hasInt {
		sc.coverage = float64(in) / float64(cnt)
	}
	return sc
}
