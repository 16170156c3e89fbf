package model

import (
	"errors"
	"math"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// With Options.Marked, frozen slices are merged between marks: spans between marks get
// the same estimates as a model that keeps every frozen slice apart (sums of the same
// per-slice values, added in another order), and the start and the whole run too.
func TestMarkedSpansMatchPerSlice(t *testing.T) {
	s := drawSynth(3, 8, 1200, 0.05, 0.3, 0.95, map[int][]int{0: {1, 2}})
	apart, _ := NewLinear(s.n, s.constraints(), Options{History: 64})
	merged, _ := NewLinear(s.n, s.constraints(), Options{History: 64, Marked: true})
	marks := []int{0}
	for _, x := range s.slices(roundRobin(s.n, 3, nil)) {
		if x.Index%25 == 0 && x.Index > 0 {
			// A live reader's round: a boundary, then the running total to it.
			merged.Mark(x.Index)
			marks = append(marks, x.Index)
			apart.Estimate(0, x.Index)
			merged.Estimate(0, x.Index)
		}
		if err := apart.Observe(x); err != nil {
			t.Fatal(err)
		}
		if err := merged.Observe(x); err != nil {
			t.Fatal(err)
		}
	}
	apart.Finish()
	merged.Finish()
	if merged.hist.lo < 1000 {
		t.Fatalf("only %d slices froze; the test needs most of the run frozen", merged.hist.lo)
	}
	if got, want := len(merged.hist.frozen.start), len(apart.hist.frozen.start); got >= want/10 {
		t.Errorf("merged model keeps %d frozen blocks, per-slice %d: want far fewer", got, want)
	}
	marks = append(marks, s.T)
	spans := [][2]int{{0, s.T}}
	for i := 1; i < len(marks); i++ {
		spans = append(spans, [2]int{marks[i-1], marks[i]}, [2]int{0, marks[i]})
	}
	for _, sp := range spans {
		a, b := apart.Estimate(sp[0], sp[1]), merged.Estimate(sp[0], sp[1])
		for e := range a {
			if a[e].Status != b[e].Status || !near(a[e].Value, b[e].Value) || !near(a[e].Lo, b[e].Lo) || !near(a[e].Hi, b[e].Hi) {
				t.Fatalf("span %v event %d: merged %+v, per slice %+v", sp, e, b[e], a[e])
			}
		}
	}
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// A marked model's memory does not grow with the run: after the history has frozen a
// few times, ten times more slices with a round every 25 slices and marks only at the
// start leave every buffer as it was.
func TestMarkedMemoryBounded(t *testing.T) {
	s := drawSynth(5, 6, 4000, 0.05, 0.3, 0.95, map[int][]int{0: {1, 2}})
	md, _ := NewLinear(s.n, s.constraints(), Options{History: 128, Marked: true})
	sl := s.slices(roundRobin(s.n, 2, nil))
	size := func() int {
		h := &md.hist
		f := &h.frozen
		n := cap(h.d) + cap(h.exact) + cap(h.a) + cap(h.qs) + cap(h.qb) + cap(h.mp) + cap(h.mf) + cap(h.pf) + cap(h.rid)
		n += cap(f.start) + cap(f.m) + cap(f.sd) + cap(f.counted) + cap(f.un) + cap(f.level) + cap(f.marks)
		n += cap(md.cache.ms) + cap(md.cache.ps) + cap(md.cache.j)
		n += cap(md.run.rs) + cap(md.run.off)
		return n
	}
	var at400 int
	for _, x := range sl {
		if err := md.Observe(x); err != nil && !errors.Is(err, ErrNumerical) {
			t.Fatal(err)
		}
		if x.Index%25 == 24 {
			md.Estimate(0, x.Index+1)
		}
		if x.Index == 399 {
			at400 = size()
		}
	}
	if got := size(); got != at400 {
		t.Errorf("buffers hold %d values after %d slices, %d after 400", got, len(sl), at400)
	}
	if n := len(md.hist.frozen.start); n != 1 {
		t.Errorf("%d frozen blocks without marks, want 1", n)
	}
	// The running total still adds up the whole run.
	est := md.Estimate(0, len(sl))
	for e := range s.n {
		truth := 0.0
		for _, row := range s.truth {
			truth += row[e]
		}
		if est[e].Status == inference.StatusNotCounted || math.Abs(est[e].Value-truth) > 0.1*truth {
			t.Errorf("event %d: running total %+v, truth %.0f", e, est[e], truth)
		}
	}
}
