package model

import (
	"math"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// TestExactIdentityParentIsDependent: an exact identity parent = child + child + ...
// makes the parent, not a child, the event that depends on the others, whatever the
// order of the events and of the terms. A child written as the parent minus its
// siblings carries their errors: a small child beside large siblings came out a
// thousand times too high.
func TestExactIdentityParentIsDependent(t *testing.T) {
	for _, tc := range []struct {
		events []string
		rels   []string
		parent []string // events that must not be free
	}{
		{[]string{"small", "big", "total"}, []string{"total = small + big"}, []string{"total"}},
		{[]string{"total", "small", "big"}, []string{"small + big = total"}, []string{"total"}},
		{[]string{"a", "b", "c", "ab", "abc"}, []string{"abc = a + b + c", "ab = a + b"}, []string{"ab", "abc"}},
		// A parent that is itself a child of another identity.
		{[]string{"abc", "ab", "a", "b", "c"}, []string{"abc = ab + c", "ab = a + b"}, []string{"ab", "abc"}},
	} {
		var rels []relation.Relation
		for _, s := range tc.rels {
			rels = append(rels, mustRelation(t, s))
		}
		md := mustNew(t, tc.events, relation.Bind(rels, tc.events), Options{})
		var free []string
		for _, e := range md.free {
			free = append(free, tc.events[e])
		}
		for _, p := range tc.parent {
			if slices.Contains(free, p) {
				t.Errorf("%v with %v: free rates %v include the sum %s", tc.events, tc.rels, free, p)
			}
		}
		if want := len(tc.events) - len(tc.rels); md.StateDim() != want {
			t.Errorf("%v with %v: %d free rates, want %d", tc.events, tc.rels, md.StateDim(), want)
		}
	}
}

// TestSmallChildOfExactIdentity replays a parent that is the exact sum of a large and a
// small child, on one counter, each event read in turn: the small child's estimate stays
// near its own readings, however far the large one moves, and the identity holds in
// every posterior mean.
func TestSmallChildOfExactIdentity(t *testing.T) {
	events := []string{"small", "big", "total"}
	md := mustNew(t, events, []relation.Relation{mustRelation(t, "total = small + big")}, Options{})
	const T = 300
	var truthSmall float64
	for s := range T {
		small := uint64(2 + s%3)
		big := uint64(1_000_000 + 300_000*math.Sin(float64(s)/7))
		counts := []uint64{small, big, small + big}
		truthSmall += float64(small)
		on := s % 3
		sl := inference.Slice{Index: s, Duration: 1}
		for e := range events {
			rd := inference.Reading{Event: inference.EventID(e), Enabled: 1}
			if e == on {
				rd.Count, rd.Running = counts[e], 1
			}
			sl.Readings = append(sl.Readings, rd)
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	mean, _ := md.Posterior(0, T)
	if d := mean[2] - mean[0] - mean[1]; math.Abs(d) > 1e-6*mean[2] {
		t.Errorf("total %.1f != small %.1f + big %.1f", mean[2], mean[0], mean[1])
	}
	got := md.Estimate(0, T)[0].Value
	if math.Abs(got-truthSmall) > 0.5*truthSmall {
		t.Errorf("small child over the run: %.0f, truth %.0f", got, truthSmall)
	}
}

// TestActivityLevelVarianceHasNoUnit: the error of an activity ratio, relative to the
// ratio, is the same whatever the unit of the activity (task-clock in ns or in ms): it
// was in the activity's unit squared, which made the intervals of ratio-predicted
// events 1e12 times too wide on ns clocks.
func TestActivityLevelVarianceHasNoUnit(t *testing.T) {
	rel := func(scale float64) float64 {
		md, err := NewLinear(2, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		a := &md.lrn.act
		for s := range 64 {
			clock := scale * (1 + 0.5*math.Sin(float64(s)/5))
			x := 3*clock/scale + float64(s%4)
			for e := range a.cur {
				a.cur[e] = math.NaN()
			}
			a.cur[0], a.cur[1] = x, clock
			a.add(md, 1)
		}
		a.cur[0], a.cur[1] = math.NaN(), scale
		if _, ok := a.level(md, 0); !ok {
			t.Fatal("no activity level learned")
		}
		return a.relVar[0]
	}
	ms, ns := rel(1), rel(1e6)
	if !(ms > 0) || math.Abs(ns/ms-1) > 1e-6 {
		t.Errorf("relative variance of the ratio: %g with the clock in ms, %g in ns: want equal", ms, ns)
	}
	if ms > 0.1 {
		t.Errorf("relative variance of a ratio learned from 64 slices: %g, want well below 0.1", ms)
	}
}

// TestParentReadBeforeChildrenDoesNotSplit: an exact parent read while its children
// were never read does not spread its count evenly over them; once they are read, it
// informs them.
func TestParentReadBeforeChildrenDoesNotSplit(t *testing.T) {
	events := []string{"total", "a", "b", "c"}
	md := mustNew(t, events, []relation.Relation{mustRelation(t, "total = a + b + c")}, Options{})
	// Slice 0: only the parent is read (1000, all of it a's).
	sl := inference.Slice{Index: 0, Duration: 1}
	for e := range events {
		rd := inference.Reading{Event: inference.EventID(e), Enabled: 1}
		if e == 0 {
			rd.Count, rd.Running = 1000, 1
		}
		sl.Readings = append(sl.Readings, rd)
	}
	if err := md.Observe(sl); err != nil {
		t.Fatal(err)
	}
	mean, _ := md.Posterior(0, 1)
	for e := 1; e < 4; e++ {
		if math.Abs(mean[e]) > 1 {
			t.Errorf("%s after a reading of its parent alone: %.1f; a child never read has no evidence of its own", events[e], mean[e])
		}
	}
}

// TestReportedValuesKeepExactIdentities: the values Estimate reports, not only the
// posterior means, satisfy exact identities in every interval, also where slices
// counted whole are reported as counted and values are clipped at zero; and every
// reported interval still contains its value.
func TestReportedValuesKeepExactIdentities(t *testing.T) {
	events := []string{"a", "b", "c", "ab", "abc"}
	rels := []relation.Relation{mustRelation(t, "ab = a + b"), mustRelation(t, "abc = ab + c")}
	md := mustNew(t, events, rels, Options{})
	const T = 400
	rng := uint64(7)
	next := func(n uint64) uint64 { // xorshift: a bursty, deterministic count below n
		rng ^= rng << 13
		rng ^= rng >> 7
		rng ^= rng << 17
		return rng % n
	}
	for s := range T {
		a, b, c := 1000+next(500), next(3), 50+next(100)*(uint64(s/40)%2)
		counts := []uint64{a, b, c, a + b, a + b + c}
		on := []int{s % 5, (s + 2) % 5}
		sl := inference.Slice{Index: s, Duration: 1}
		for e := range events {
			rd := inference.Reading{Event: inference.EventID(e), Enabled: 1}
			if slices.Contains(on, e) {
				rd.Count, rd.Running = counts[e], 1
			}
			sl.Readings = append(sl.Readings, rd)
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	for from := 0; from < T; from += 25 {
		est := md.Estimate(from, from+25)
		v := func(e int) float64 { return est[e].Value }
		if d := v(3) - v(0) - v(1); math.Abs(d) > 1e-6*v(3) {
			t.Errorf("slices [%d,%d): ab %.2f != a %.2f + b %.2f", from, from+25, v(3), v(0), v(1))
		}
		if d := v(4) - v(3) - v(2); math.Abs(d) > 1e-6*v(4) {
			t.Errorf("slices [%d,%d): abc %.2f != ab %.2f + c %.2f", from, from+25, v(4), v(3), v(2))
		}
		for e, x := range est {
			if x.Value < 0 || x.Lo > x.Value || x.Hi < x.Value {
				t.Errorf("slices [%d,%d): %s = %.2f outside its interval [%.2f, %.2f] or negative", from, from+25, events[e], x.Value, x.Lo, x.Hi)
			}
		}
	}
}
