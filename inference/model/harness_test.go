package model

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// trace is a recorded run: exact counts per slice.
type trace struct {
	name   string
	events []string
	dur    []float64
	counts [][]uint64
}

// readTrace reads testdata/<name>.csv: header "interval_ns,<events...>".
func readTrace(t testing.TB, name string) *trace {
	t.Helper()
	f, err := os.Open("testdata/" + name + ".csv")
	if err != nil {
		t.Fatalf("open trace: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	tr := &trace{name: name}
	for sc.Scan() {
		cells := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if tr.events == nil {
			tr.events = cells[1:]
			continue
		}
		d, err := strconv.ParseFloat(cells[0], 64)
		if err != nil || d <= 0 {
			t.Fatalf("trace %s: bad duration %q", name, cells[0])
		}
		row := make([]uint64, len(tr.events))
		for i, c := range cells[1:] {
			v, err := strconv.ParseUint(c, 10, 64)
			if err != nil {
				t.Fatalf("trace %s: bad count %q", name, c)
			}
			row[i] = v
		}
		tr.dur = append(tr.dur, d)
		tr.counts = append(tr.counts, row)
	}
	return tr
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

// linuxEst is count·enabled/running over each interval.
type linuxEst struct {
	n     int
	cnt   [][]float64
	en    [][]float64
	run   [][]float64
	slice int
}

func (l *linuxEst) Name() string { return "linux" }
func (l *linuxEst) Observe(s inference.Slice) error {
	c, e, r := make([]float64, l.n), make([]float64, l.n), make([]float64, l.n)
	for _, rd := range s.Readings {
		c[rd.Event] += float64(rd.Count)
		e[rd.Event] += float64(rd.Enabled)
		r[rd.Event] += float64(rd.Running)
	}
	l.cnt, l.en, l.run = append(l.cnt, c), append(l.en, e), append(l.run, r)
	return nil
}
func (l *linuxEst) Finish() {}
func (l *linuxEst) Estimate(from, to int) []inference.Estimate {
	out := make([]inference.Estimate, l.n)
	for e := range l.n {
		c, en, run := 0.0, 0.0, 0.0
		for t := from; t < to; t++ {
			c += l.cnt[t][e]
			en += l.en[t][e]
			run += l.run[t][e]
		}
		if run > 0 {
			out[e] = inference.Estimate{Value: c * en / run, Status: inference.StatusScaled}
		}
	}
	return out
}

// linearEst interpolates each event's rate linearly between the slices it was counted
// in (constant beyond the first and last).
type linearEst struct {
	n      int
	dur    []float64
	rate   [][]float64 // NaN when not counted
	interp [][]float64
}

func (l *linearEst) Name() string { return "linear" }
func (l *linearEst) Observe(s inference.Slice) error {
	r := make([]float64, l.n)
	for i := range r {
		r[i] = math.NaN()
	}
	for _, rd := range s.Readings {
		if rd.Running > 0 {
			r[rd.Event] = float64(rd.Count) / float64(rd.Running)
		}
	}
	l.dur = append(l.dur, s.Duration)
	l.rate = append(l.rate, r)
	l.interp = nil
	return nil
}
func (l *linearEst) Finish() {}
func (l *linearEst) Estimate(from, to int) []inference.Estimate {
	if l.interp == nil {
		T := len(l.rate)
		l.interp = make([][]float64, T)
		for t := range T {
			l.interp[t] = make([]float64, l.n)
		}
		for e := range l.n {
			prev := -1
			for t := 0; t <= T; t++ {
				if t < T && math.IsNaN(l.rate[t][e]) {
					continue
				}
				for u := prev + 1; u < t; u++ {
					switch {
					case prev < 0 && t == T:
						l.interp[u][e] = 0
					case prev < 0:
						l.interp[u][e] = l.rate[t][e]
					case t == T:
						l.interp[u][e] = l.rate[prev][e]
					default:
						w := float64(u-prev) / float64(t-prev)
						l.interp[u][e] = (1-w)*l.rate[prev][e] + w*l.rate[t][e]
					}
				}
				if t < T {
					l.interp[t][e] = l.rate[t][e]
				}
				prev = t
			}
		}
	}
	out := make([]inference.Estimate, l.n)
	for e := range l.n {
		v := 0.0
		for t := from; t < to; t++ {
			v += l.interp[t][e] * l.dur[t]
		}
		out[e] = inference.Estimate{Value: v, Status: inference.StatusScaled}
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

func (s score) medianWAPE() float64 {
	var v []float64
	for _, w := range s.wape {
		if !math.IsNaN(w) {
			v = append(v, w)
		}
	}
	slices.Sort(v)
	if len(v) == 0 {
		return math.NaN()
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// reduction is the brief's error reduction of x over base: geometric mean over events
// of WAPE_base/WAPE_x, each ratio capped at 100.
func reduction(base, x score) float64 {
	lg, n := 0.0, 0
	for e := range base.wape {
		b, w := base.wape[e], x.wape[e]
		if math.IsNaN(b) || math.IsNaN(w) {
			continue
		}
		r := 100.0
		if w > 0 {
			r = math.Min(b/w, 100)
		} else if b == 0 {
			r = 1
		}
		lg += math.Log(math.Max(r, 1e-2))
		n++
	}
	return math.Exp(lg / float64(n))
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

func truthOf(tr *trace) [][]float64 {
	out := make([][]float64, len(tr.counts))
	for t, row := range tr.counts {
		out[t] = make([]float64, len(row))
		for e, c := range row {
			out[t][e] = float64(c)
		}
	}
	return out
}

func fmtScore(name string, base, s score) string {
	return fmt.Sprintf("%-14s reduction %5.2fx  meanWAPE %6.3f  medianWAPE %6.3f  coverage95 %5.3f",
		name, reduction(base, s), s.meanWAPE(), s.medianWAPE(), s.coverage)
}
