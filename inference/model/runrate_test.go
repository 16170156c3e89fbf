package model

import (
	"math"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// TestPriorSizedByOwnRate: the slices before a rate's first reading are sized, once the
// run is over, by the rate's own readings, not by the other events' rates in the first
// slice. Here "ins" counts 100,000 a slice in every slice and "rare" about 5, read every
// fourth slice from slice 3: before, the three slices before its first reading had a
// prior ten times the first slice's typical rate (ins's) and came out 12 ± 2,794 for a
// truth of 15, now 12 ± 10; cg-bzip2's Ge ±6,353 in its first interval against 392,
// now ±327.
func TestPriorSizedByOwnRate(t *testing.T) {
	md, err := New([]string{"ins", "rare"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const d, slices = 1e6, 64
	rare := func(i int) uint64 { return uint64(3 + (i*7)%5) } // 3..7
	var truth float64
	for i := range slices {
		sl := inference.Slice{Index: i, Duration: d, Readings: []inference.Reading{{Event: 0, Count: 100000 + uint64(i%3)*1000, Enabled: d, Running: d}}}
		if i%4 == 3 {
			sl.Readings = append(sl.Readings, inference.Reading{Event: 1, Count: rare(i), Enabled: d, Running: d})
		}
		if i < 3 {
			truth += float64(rare(i))
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	est := md.Estimate(0, 3)[1]
	half := math.Max(est.Hi-est.Value, est.Value-est.Lo)
	t.Logf("rare over the slices before its first reading: %.1f ± %.1f (truth %.0f)", est.Value, half, truth)
	// The prior alone, ten times its own rate a slice (priorWidth, about 5) over three
	// slices at 95%, reaches about 300; the readings after it only narrow that.
	if half > 300 {
		t.Errorf("rare before its first reading: ± %.0f, want at most the reach of a prior of its own size (300)", half)
	}
}

// TestPriorOfRateReadAtZero: a rate that every reading saw at zero is sized, once the
// run is over, by the few counts a zero over the whole counted time still allows (the
// rule of three), not by the other events' rates. Here "rare" has a start-up burst of
// 30 in the three slices before its first reading and is read at zero every fourth
// slice after; "ins" counts 100,000 a slice. Before, those three slices came out
// 0 ± 2,794 (a prior ten times the first slice's typical rate), now 0 ± 4; cg-sort's
// Ge ±23,288 in its first interval for a truth of 37, now ±7.
func TestPriorOfRateReadAtZero(t *testing.T) {
	md, err := New([]string{"ins", "rare"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const d, slices = 1e6, 64
	for i := range slices {
		sl := inference.Slice{Index: i, Duration: d, Readings: []inference.Reading{{Event: 0, Count: 100000 + uint64(i%3)*1000, Enabled: d, Running: d}}}
		if i%4 == 3 {
			sl.Readings = append(sl.Readings, inference.Reading{Event: 1, Count: 0, Enabled: d, Running: d})
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	est := md.Estimate(0, 3)[1]
	half := math.Max(est.Hi-est.Value, est.Value-est.Lo)
	t.Logf("rare over the slices before its first reading: %.1f ± %.1f (truth 30)", est.Value, half)
	// Its prior is one count a slice (start's floor of 1/d: three counts over the 16
	// readings' time is far less), and three slices of it at 95% reach a few counts; the
	// burst itself is outside, as nothing in the run shows it.
	if half > 30 {
		t.Errorf("rare before its first reading: ± %.0f, want at most a few counts a slice (30)", half)
	}
	if est.Value < 0 || est.Value > half {
		t.Errorf("rare before its first reading: %.1f, want 0 or inside its own half-width %.1f", est.Value, half)
	}
}
