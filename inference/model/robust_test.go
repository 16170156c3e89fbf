package model

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// Bad input is an error, never a panic, and leaves the model usable.
func TestObserveRejectsBadInput(t *testing.T) {
	md, err := NewLinear(3, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []inference.Slice{
		{Index: 0, Duration: 0},
		{Index: 0, Duration: math.NaN()},
		{Index: 0, Duration: math.Inf(1)},
		{Index: 0, Duration: 1, Readings: []inference.Reading{{Event: 7, Count: 1, Enabled: 1, Running: 1}}},
		{Index: 0, Duration: 1, Readings: []inference.Reading{{Event: -1, Count: 1, Enabled: 1, Running: 1}}},
	} {
		if err := md.Observe(s); err == nil {
			t.Errorf("slice %+v: no error", s)
		}
	}
	ok := inference.Slice{Index: 0, Duration: 1, Readings: []inference.Reading{{Event: 0, Count: 5, Enabled: 1, Running: 1}}}
	if err := md.Observe(ok); err != nil {
		t.Fatal(err)
	}
	if es := md.Estimate(0, 1); es[0].Value != 5 || es[0].Status != inference.StatusExact {
		t.Errorf("after bad slices: got %+v, want exact 5", es[0])
	}
	if _, err := NewLinear(0, nil, Options{}); err == nil {
		t.Error("no events: no error")
	}
	if _, err := NewLinear(2, []Constraint{{Coef: map[inference.EventID]float64{5: 1}}}, Options{}); err == nil {
		t.Error("constraint on an unknown event: no error")
	}
}

// Random readings, including absurd counts and partial running times, never make the
// model panic, and every answer is finite or reported as not counted.
func TestObserveRandomNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	md, err := NewLinear(6, []Constraint{
		{Coef: map[inference.EventID]float64{0: -1, 1: 1, 2: 1}},
		{Coef: map[inference.EventID]float64{3: 1, 4: -1}, Op: LessEq},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		s := inference.Slice{Index: i, Duration: 1 + 1e7*rng.Float64()}
		for e := range 6 {
			if rng.IntN(3) == 0 {
				continue
			}
			en := uint64(s.Duration)
			r := inference.Reading{Event: inference.EventID(e), Enabled: en, Running: en}
			if rng.IntN(4) == 0 {
				r.Running = rng.Uint64N(en + 1)
			}
			switch rng.IntN(5) {
			case 0:
				r.Count = rng.Uint64()
			case 1:
				r.Count = 0
			default:
				r.Count = rng.Uint64N(1 << 20)
			}
			s.Readings = append(s.Readings, r)
		}
		if err := md.Observe(s); err != nil && !errors.Is(err, ErrNumerical) {
			t.Fatalf("slice %d: %v", i, err)
		}
		for _, e := range md.Estimate(max(0, i-3), i+1) {
			if e.Status != inference.StatusNotCounted && (math.IsNaN(e.Value) || math.IsInf(e.Value, 0) || math.IsNaN(e.Lo) || math.IsNaN(e.Hi)) {
				t.Fatalf("slice %d: non-finite estimate %+v", i, e)
			}
		}
	}
}

// With a short history, old slices are frozen with what the live reader's smoothing
// had made of them: their estimates differ from the full model's (less future seen),
// but stay honest: the truth is inside their intervals at least as often.
func TestHistoryFreezes(t *testing.T) {
	s := drawSynth(9, 8, 300, 0.05, 0.3, 0.95, map[int][]int{0: {1, 2}})
	full, _ := NewLinear(s.n, s.constraints(), Options{})
	short, _ := NewLinear(s.n, s.constraints(), Options{History: 40})
	sl := s.slices(roundRobin(s.n, 3, nil))
	for _, x := range sl {
		if err := full.Observe(x); err != nil {
			t.Fatal(err)
		}
		if err := short.Observe(x); err != nil {
			t.Fatal(err)
		}
		if x.Index%5 == 4 {
			// A live reader: the interval that just ended, as perf stat -I would.
			short.Estimate(x.Index-4, x.Index+1)
		}
	}
	if short.hist.lo == 0 {
		t.Fatal("history never froze")
	}
	inFull, inShort, n := 0, 0, 0
	for from := 0; from < short.hist.lo-5; from += 5 {
		a, b := full.Estimate(from, from+5), short.Estimate(from, from+5)
		for e := range s.n {
			c := 0.0
			for u := from; u < from+5; u++ {
				c += s.truth[u][e]
			}
			n++
			if a[e].Lo <= c && c <= a[e].Hi {
				inFull++
			}
			if b[e].Lo <= c && c <= b[e].Hi {
				inShort++
			}
		}
	}
	t.Logf("frozen intervals: truth inside %d/%d (full history: %d/%d)", inShort, n, inFull, n)
	if inShort < inFull {
		t.Errorf("frozen intervals cover the truth %d/%d times, full history %d/%d", inShort, n, inFull, n)
	}
}

// An event never counted and tied to nothing is reported as not counted, without an
// interval; one tied by an identity to counted events is inferred.
func TestNotCountedWithoutInformation(t *testing.T) {
	md, err := NewLinear(4, []Constraint{{Coef: map[inference.EventID]float64{0: -1, 1: 1, 2: 1}, Tol: 1e-3}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		s := inference.Slice{Index: i, Duration: 1, Readings: []inference.Reading{
			{Event: 0, Count: 100, Enabled: 1, Running: 1},
			{Event: 1, Count: 60, Enabled: 1, Running: 1},
			{Event: 2, Enabled: 1}, {Event: 3, Enabled: 1},
		}}
		if err := md.Observe(s); err != nil {
			t.Fatal(err)
		}
	}
	es := md.Estimate(0, 10)
	if es[3].Status != inference.StatusNotCounted || es[3].HasInterval {
		t.Errorf("event 3 (never counted, unrelated): got %+v", es[3])
	}
	if es[2].Status != inference.StatusInferred || math.Abs(es[2].Value-400) > 5 {
		t.Errorf("event 2 (= event 0 − event 1): got %+v, want about 400", es[2])
	}
}

// Inequalities are imposed on the posterior (assumed-density filtering): misses never
// exceed accesses in the estimates, even when the walk alone would say they do.
func TestInequalityBindsPosterior(t *testing.T) {
	rels := []relation.Relation{}
	r, err := relation.ParseLine("misses <= accesses")
	if err != nil {
		t.Fatal(err)
	}
	rels = append(rels, *r)
	md := mustNew(t, []string{"accesses", "misses"}, rels, Options{})
	for i := range 40 {
		acc, miss := uint64(1000), uint64(900)
		if i >= 20 {
			acc = 100 // accesses collapse while misses are no longer counted
		}
		s := inference.Slice{Index: i, Duration: 1, Readings: []inference.Reading{{Event: 0, Count: acc, Enabled: 1, Running: 1}}}
		if i < 20 {
			s.Readings = append(s.Readings, inference.Reading{Event: 1, Count: miss, Enabled: 1, Running: 1})
		}
		if err := md.Observe(s); err != nil {
			t.Fatal(err)
		}
	}
	for i := 25; i < 40; i++ {
		es := md.Estimate(i, i+1)
		if i == 39 {
			t.Logf("slice 39: accesses %+v, misses %+v", es[0], es[1])
		}
		if es[1].Value > es[0].Value*1.001 {
			t.Errorf("slice %d: misses %.1f > accesses %.1f", i, es[1].Value, es[0].Value)
		}
	}
}

// A non-linear relation (here a ratio) is linearised at the mean every slice: an
// uncounted event follows the counted ones through it.
func TestNonlinearRelation(t *testing.T) {
	r, err := relation.ParseLine("half = a * b / (a + b)")
	if err != nil {
		t.Fatal(err)
	}
	md := mustNew(t, []string{"a", "b", "half"}, []relation.Relation{*r}, Options{})
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 40 {
		base := 400.0
		if i >= 20 {
			base = 1000 // half is no longer counted: it must follow a and b
		}
		a := math.Round(base * (1 + 0.1*rng.NormFloat64()))
		b := math.Round(base * (1 + 0.1*rng.NormFloat64()))
		s := inference.Slice{Index: i, Duration: 1, Readings: []inference.Reading{
			{Event: 0, Count: uint64(a), Enabled: 1, Running: 1},
			{Event: 1, Count: uint64(b), Enabled: 1, Running: 1},
		}}
		if i < 20 {
			s.Readings = append(s.Readings, inference.Reading{Event: 2, Count: uint64(math.Round(a * b / (a + b))), Enabled: 1, Running: 1})
		}
		if err := md.Observe(s); err != nil {
			t.Fatal(err)
		}
		if i >= 30 {
			want := a * b / (a + b)
			if got := md.Estimate(i, i+1)[2]; math.Abs(got.Value-want) > 0.02*want {
				t.Errorf("slice %d: half = %+v, want about %.1f", i, got, want)
			}
		}
	}
}

// finite finds a NaN or an infinity wherever it sits (the unrolled body or the tail)
// and passes the largest finite values (whose x−x is still 0).
func TestFinite(t *testing.T) {
	for n := range 11 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(i) * 1e300
			if i%2 == 1 {
				v[i] = -math.MaxFloat64
			}
		}
		if !finite(v) {
			t.Errorf("%d finite values: not finite", n)
		}
		for i := range n {
			for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
				w := append([]float64(nil), v...)
				w[i] = bad
				if finite(w) {
					t.Errorf("%g at %d of %d: finite", bad, i, n)
				}
			}
		}
	}
}
