package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

func randSeries(r *rand.Rand, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		if r.IntN(5) > 0 {
			out[i] = math.Floor(r.ExpFloat64() * 100)
		}
	}
	return out
}

func point(vs []float64) []inference.Estimate {
	out := make([]inference.Estimate, len(vs))
	for i, v := range vs {
		out[i] = inference.Estimate{Value: v}
	}
	return out
}

// A perfect estimator scores WAPE 0, total error 0, RA 1, DTW 0.
func TestPerfect(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		c := randSeries(r, 1+r.IntN(40))
		c[0] = 5 // at least one positive value
		m := ForEvent(c, point(c))
		if !m.Defined || m.WAPE != 0 || m.TotalError != 0 || m.RA != 1 || m.DTW != 0 {
			t.Fatalf("perfect estimate scored %+v", m)
		}
	}
}

// Hand-computed values.
func TestValues(t *testing.T) {
	c := []float64{10, 0, 30}
	e := []float64{12, 4, 20}
	if w, _ := WAPE(c, e); math.Abs(w-16.0/40) > 1e-15 {
		t.Errorf("WAPE %v, want 0.4", w)
	}
	if te, _ := TotalError(c, e); math.Abs(te-4.0/40) > 1e-15 {
		t.Errorf("total error %v, want 0.1", te)
	}
	// RA uses only intervals with c > 0: 1 - (0.2 + 1/3)/2.
	if ra, _ := RA(c, e); math.Abs(ra-(1-(0.2+1.0/3)/2)) > 1e-15 {
		t.Errorf("RA %v", ra)
	}
	if ra, _ := RA([]float64{1}, []float64{5}); ra != 0 {
		t.Errorf("RA %v, want floored at 0", ra)
	}
	// DTW may align 4 with 0 and 20 with 30, etc.: [12 4 20] vs [10 0 30]: diagonal is
	// 2+4+10 = 16; no warping path is cheaper here.
	if d := DTWCost(e, c); d != 16 {
		t.Errorf("DTW cost %v, want 16", d)
	}
	// A shifted copy warps for free except at the ends.
	if d := DTWCost([]float64{0, 1, 2, 3}, []float64{1, 2, 3, 3}); d != 1 {
		t.Errorf("DTW of shifted series %v, want 1", d)
	}
	if _, ok := WAPE([]float64{0, 0}, []float64{1, 2}); ok {
		t.Error("WAPE defined for an event that never occurred")
	}
}

// DTW never exceeds the sum of absolute errors (the diagonal is one of its paths) and
// is symmetric.
func TestDTWBound(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + r.IntN(30)
		a, b := randSeries(r, n), randSeries(r, n)
		var abs float64
		for i := range a {
			abs += math.Abs(a[i] - b[i])
		}
		d := DTWCost(a, b)
		if d > abs+1e-9 || d < 0 {
			t.Fatalf("DTW %v outside [0, %v]", d, abs)
		}
		if d2 := DTWCost(b, a); math.Abs(d-d2) > 1e-9 {
			t.Fatalf("DTW not symmetric: %v vs %v", d, d2)
		}
	}
}

func TestCoverage(t *testing.T) {
	truth := []float64{5, 5, 5, 5}
	est := []inference.Estimate{
		{Value: 5, Lo: 4, Hi: 6, HasInterval: true},
		{Value: 5, Lo: 6, Hi: 7, HasInterval: true},
		{Value: 5}, // no interval: not counted either way
		{Value: 5, Lo: 5, Hi: 5, HasInterval: true},
	}
	in, tot := Coverage(truth, est)
	if in != 2 || tot != 3 {
		t.Fatalf("coverage %d/%d, want 2/3", in, tot)
	}
	s := Summarize([]Event{ForEvent(truth, est)})
	if s.Coverage95 == nil || math.Abs(*s.Coverage95-2.0/3) > 1e-15 {
		t.Fatalf("summary coverage %v", s.Coverage95)
	}
	if s := Summarize([]Event{ForEvent(truth, point(truth))}); s.Coverage95 != nil {
		t.Fatal("coverage reported without intervals")
	}
}

func TestSummarizeAndReduction(t *testing.T) {
	ev := []Event{
		{Defined: true, WAPE: 0.1},
		{Defined: true, WAPE: 0.5},
		{Defined: false, WAPE: 99}, // ignored
		{Defined: true, WAPE: 0.3},
	}
	s := Summarize(ev)
	if math.Abs(s.WAPE-0.3) > 1e-15 || s.MedianWAPE != 0.3 || s.Events != 3 {
		t.Fatalf("summary %+v", s)
	}
	x := []Event{{Defined: true, WAPE: 0.05}, {Defined: true, WAPE: 0}, {Defined: true, WAPE: 99}, {Defined: true, WAPE: 0.6}}
	// Ratios: 2, capped 100 (0.5/0), skipped (linux undefined), 0.5.
	got, ok := ErrorReduction(ev, x)
	want := math.Cbrt(2 * 100 * 0.5)
	if !ok || math.Abs(got-want) > 1e-12 {
		t.Fatalf("error reduction %v, want %v", got, want)
	}
	if r, _ := ErrorReduction(ev, ev); math.Abs(r-1) > 1e-15 {
		t.Fatalf("linux against itself %v, want 1", r)
	}
	// Rounding of an exact answer is exact: not a 100-fold win over a true 0.
	if Ratio(2.17e-17, 0) != 1 || Ratio(0, 3e-16) != 1 || Ratio(1e-3, 0) != RatioCap {
		t.Errorf("near-zero WAPEs: %v %v %v", Ratio(2.17e-17, 0), Ratio(0, 3e-16), Ratio(1e-3, 0))
	}
	if Ratio(0, 0) != 1 || Ratio(0, 1) != 1.0/RatioCap || Ratio(1e9, 1) != RatioCap {
		t.Fatal("ratio clamps")
	}
}

// Sharpness by hand: half-widths (12−8)/2 = 2 and (35−25)/2 = 5 over the truth of the
// same intervals, 10 + 30; the interval without a 95% interval counts in neither sum.
func TestSharpness(t *testing.T) {
	truth := []float64{10, 7, 30}
	est := []inference.Estimate{
		{Value: 10, Lo: 8, Hi: 12, HasInterval: true},
		{Value: 99},
		{Value: 30, Lo: 25, Hi: 35, HasInterval: true},
	}
	want := (2.0 + 5.0) / (10 + 30)
	if s, ok := Sharpness(truth, est); !ok || math.Abs(s-want) > 1e-15 {
		t.Fatalf("sharpness %v %v, want %v", s, ok, want)
	}
	if m := ForEvent(truth, est); !m.HasSharpness || math.Abs(m.Sharpness-want) > 1e-15 {
		t.Fatalf("event sharpness %v %v, want %v", m.Sharpness, m.HasSharpness, want)
	}
	if _, ok := Sharpness(truth, point(truth)); ok {
		t.Error("sharpness of point estimates")
	}
	if _, ok := Sharpness([]float64{0, 0}, est[:1]); ok {
		t.Error("sharpness of an event that never occurred")
	}
	// The estimator's sharpness is the median over events that have one: of 0.1, 0.3 and
	// 0.2 (the point-estimated event has none), 0.2.
	ev := []Event{
		{Defined: true, Sharpness: 0.1, HasSharpness: true},
		{Defined: true},
		{Defined: true, Sharpness: 0.3, HasSharpness: true},
		{Defined: true, Sharpness: 0.2, HasSharpness: true},
	}
	if s := Summarize(ev).Sharpness; s == nil || *s != 0.2 {
		t.Fatalf("summary sharpness %v, want 0.2", s)
	}
	if s := Summarize(ev[1:2]).Sharpness; s != nil {
		t.Fatalf("summary sharpness %v without intervals, want nil", *s)
	}
}

// Harms by hand, event by event (linux WAPE, X WAPE):
//
//	0: 0.10, 0.12  ratio 1.2;  0.12 <= 1.5·0.10 + 0.01: not harmed
//	1: 0.02, 0.30  ratio 15;   harmed: the worst
//	2: 0.005, 0.5  below the floor: no ratio, but harmed (0.5 > 0.0175)
//	3: undefined in X's truth: skipped
//	4: 0.20, 0.32  ratio 1.6;  0.32 > 0.31: harmed
//	5: 0.40, 0.01  ratio 0.025
func TestHarms(t *testing.T) {
	d := func(w float64) Event { return Event{Defined: true, WAPE: w} }
	lin := []Event{d(0.10), d(0.02), d(0.005), {}, d(0.20), d(0.40)}
	x := []Event{d(0.12), d(0.30), d(0.5), {}, d(0.32), d(0.01)}
	h := Harms(lin, x)
	if math.Abs(h.WorstRatio-15) > 1e-12 || h.WorstEvent != 1 || h.Harmed != 3 {
		t.Fatalf("harm %+v, want worst ratio 15 at event 1, 3 harmed", h)
	}
	if h := Harms(lin, lin); h.WorstRatio != 1 || h.WorstEvent != 0 || h.Harmed != 0 {
		t.Fatalf("linux against itself %+v, want ratio exactly 1 at event 0, none harmed", h)
	}
	// Only events below the floor: no worst ratio, yet harm is counted.
	if h := Harms([]Event{d(0.001)}, []Event{d(0.5)}); h.WorstEvent != -1 || h.WorstRatio != 0 || h.Harmed != 1 {
		t.Fatalf("below the floor %+v", h)
	}
	// Uncapped: an event estimated 500 times worse shows as 500, not RatioCap.
	if h := Harms([]Event{d(0.01)}, []Event{d(5)}); math.Abs(h.WorstRatio-500) > 1e-9 {
		t.Fatalf("worst ratio %v, want 500", h.WorstRatio)
	}
}
