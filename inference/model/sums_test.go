package model

import (
	"math"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// TestSumIntervalsCoverTheirTruth: the derived totals of a callgrind trace (exact sums
// of other events) have intervals that cover their truth about as often as their terms'
// do. A sum is never read as one rate, so its calibration, level error and scatter are
// never learned: its intervals covered the truth in 47-65% of the intervals of cg-jq.
func TestSumIntervalsCoverTheirTruth(t *testing.T) {
	tr, ivs, ans := corpusReplay(t, "cg-jq.csv")
	for _, name := range []string{"L1_misses", "LL_misses", "D1_misses", "D_accesses", "Br_total", "Br_misses"} {
		e := tr.EventIndex(name)
		if e < 0 {
			t.Fatalf("cg-jq has no %s", name)
		}
		cov, ok := eventScores(tr, ivs, ans, e).Coverage95()
		t.Logf("%s: coverage95 %.2f", name, cov)
		if !ok || cov < 0.8 {
			t.Errorf("%s: 95%% intervals cover the truth in %.0f%% of intervals, want at least 80%%", name, 100*cov)
		}
	}
}

// TestSumBurstStaysWithItsTerms: a term of an exact sum that read a start-up burst and
// zero ever after does not take a sibling's burst that only a reading of the sum saw.
// While the decay of its level after the burst counted as steps of its walk, its walk
// stayed hundreds of counts a slice wide, as wide as the bursting sibling's, and the
// sum's excess went to it (cg-perl's ILmr under LL_misses).
func TestSumBurstStaysWithItsTerms(t *testing.T) {
	const a, b, c, s = 0, 1, 2, 3
	md, err := NewLinear(4, []Constraint{{Coef: map[inference.EventID]float64{s: 1, a: -1, b: -1, c: -1}, Op: Equal, Text: "s = a + b + c"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const T, burst = 120, 63 // s is read in slices 3, 7, ..., 63, ...
	var truth func(e, t int) uint64
	truth = func(e, t int) uint64 {
		switch e {
		case a:
			if t == 0 {
				return 5000
			}
			return 0
		case b:
			if t == burst {
				return 8000
			}
			return uint64(400 + 100*(t%3)) // 400-600: a walk of its own size

		case c:
			return 50
		}
		return truth(a, t) + truth(b, t) + truth(c, t)
	}
	for i := range T {
		e := i % 4
		err := md.Observe(inference.Slice{Index: i, Duration: 1, Readings: []inference.Reading{
			{Event: inference.EventID(e), Count: truth(e, i), Enabled: 1, Running: 1}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	got := md.Estimate(burst-7, burst+9)
	t.Logf("a %.0f, b %.0f, c %.0f, s %.0f over slices [%d, %d)", got[a].Value, got[b].Value, got[c].Value, got[s].Value, burst-7, burst+9)
	// The burst's excess over the sum's usual count is 7,500; before the fix a took
	// 8,852 of the interval's count, now 2,004 (the rest goes to b, whose walk is the
	// one that moves).
	if got[a].Value > 3000 {
		t.Errorf("a (0 in truth) estimated at %.0f over the sum's burst, want at most 3000", got[a].Value)
	}
}

// TestSumInformsTermsReadLaterInTheRun: in Finish's second pass, a reading of an exact
// sum informs a term that the first pass had not read yet, since the term is read later
// in the run and its prior is sized by its own readings. The first pass must hold such a
// reading back (determined: the term's diffuse prior would absorb the others' errors),
// and the term's early slices were left to its later readings, carried back: a term at
// 100 a slice while its sum was read every third slice came out at about 400, its rate
// after its first reading.
func TestSumInformsTermsReadLaterInTheRun(t *testing.T) {
	const a, b, s = 0, 1, 2
	md, err := NewLinear(3, []Constraint{{Coef: map[inference.EventID]float64{s: 1, a: -1, b: -1}, Op: Equal, Text: "s = a + b"}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const T, late = 120, 60 // a is read from slice late on
	truth := func(e, t int) uint64 {
		av := uint64(100 + 10*(t%2))
		if t >= late {
			av = uint64(400 + 10*(t%2))
		}
		bv := uint64(500 + 20*(t%3))
		switch e {
		case a:
			return av
		case b:
			return bv
		}
		return av + bv
	}
	for i := range T {
		var e int
		switch {
		case i%3 == 0:
			e = s
		case i%3 == 1:
			e = b
		case i >= late:
			e = a
		default:
			e = -1
		}
		sl := inference.Slice{Index: i, Duration: 1}
		if e >= 0 {
			sl.Readings = []inference.Reading{{Event: inference.EventID(e), Count: truth(e, i), Enabled: 1, Running: 1}}
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	got := md.Estimate(0, late)
	want := 0.0
	for i := range late {
		want += float64(truth(a, i))
	}
	t.Logf("a over slices [0, %d): %.0f [%.0f, %.0f], truth %.0f", late, got[a].Value, got[a].Lo, got[a].Hi, want)
	if math.Abs(got[a].Value-want) > 0.2*want {
		t.Errorf("a over slices [0, %d) estimated at %.0f, truth %.0f: want within 20%%", late, got[a].Value, want)
	}
}
