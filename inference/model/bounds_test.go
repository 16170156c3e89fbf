package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// An interval's estimate and both bounds are at least what its slices counted whole:
// counts are never negative.
func TestBoundsAboveCountedPart(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, T, w = 6, 300, 10
	md := mustNew(t, []string{"a", "b", "c", "d", "e", "f"}, nil, Options{})
	counted := make([][]float64, T)
	for s := range T {
		counted[s] = make([]float64, n)
		sl := inference.Slice{Index: s, Duration: 1}
		for e := range n {
			counted[s][e] = math.NaN()
			if (s+e)%3 != 0 {
				continue
			}
			// Bursty counts: mostly small, now and then large.
			c := uint64(rng.IntN(5))
			if rng.IntN(10) == 0 {
				c += uint64(rng.IntN(500))
			}
			counted[s][e] = float64(c)
			sl.Readings = append(sl.Readings, inference.Reading{Event: inference.EventID(e), Count: c, Enabled: 1, Running: 1})
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	checked := 0
	for from := 0; from < T; from += w {
		es := md.Estimate(from, from+w)
		for e := range n {
			part := 0.0
			for s := from; s < from+w; s++ {
				if !math.IsNaN(counted[s][e]) {
					part += counted[s][e]
				}
			}
			if es[e].Status == inference.StatusNotCounted {
				continue
			}
			checked++
			if es[e].Lo < part || es[e].Value < part || es[e].Hi < part {
				t.Errorf("interval %d event %d: estimate %+v below the %v counted in it", from/w, e, es[e], part)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no interval checked")
	}
}

// An event listed twice is one count twice: both copies get the same estimate, and
// relations (none here) name the first.
func TestDuplicateEvent(t *testing.T) {
	md := mustNew(t, []string{"x", "y", "x"}, nil, Options{})
	for s := range 100 {
		c := uint64(100 + 10*(s%7))
		sl := inference.Slice{Index: s, Duration: 1}
		switch s % 3 {
		case 0:
			sl.Readings = []inference.Reading{{Event: 0, Count: c, Enabled: 1, Running: 1}}
		case 1:
			sl.Readings = []inference.Reading{{Event: 2, Count: c, Enabled: 1, Running: 1}}
		default:
			sl.Readings = []inference.Reading{{Event: 1, Count: 5, Enabled: 1, Running: 1}}
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	es := md.Estimate(0, 100)
	if es[0].Status == inference.StatusNotCounted || math.Abs(es[0].Value-es[2].Value) > 1e-6*es[0].Value {
		t.Errorf("copies differ: %+v and %+v", es[0], es[2])
	}
	// The copies' readings together cover two slices in three: the estimate must be
	// near the truth (about 100 slices × 130).
	if es[0].Value < 0.9*13000 || es[0].Value > 1.1*13000 {
		t.Errorf("estimate %v, want about 13000", es[0].Value)
	}
}
