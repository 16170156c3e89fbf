package vstage

import (
	"math"
	"testing"
)

// TestPastReportMerge: the reports of a client's PMUs on one target, one per
// registration (each a rebuild, whose counts start from zero), merge into one entry:
// events matched by handle (an event registered later joins, one closed in between keeps
// its part), values, linux values and truths summed, interval half widths in
// quadrature, the intervals numbered on, and the status of a total with a part not
// counted no longer exact. The PMU it starts from is left as it was (Report merges the
// live PMU at every call).
func TestPastReportMerge(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	u := func(v uint64) *uint64 { return &v }
	first := ClientReport{Client: 1, Pid: 7, Collector: "bpf", Slices: 2,
		Totals: []EventReport{
			{Event: "a", Value: 10, Lo: f(7), Hi: f(14), Linux: 9, Truth: u(11), Status: "inferred"},
			{Event: "b", Value: 5, Linux: 5, Truth: u(5), Status: "exact"},
		},
		Intervals: []IntervalReport{{Index: 0, FromSlice: 0, ToSlice: 2}},
	}
	second := ClientReport{Client: 1, Pid: 7, Collector: "bpf", Slices: 3,
		Totals: []EventReport{
			{Event: "a", Value: 20, Lo: f(16), Hi: f(23), Linux: 21, Truth: u(19), Status: "inferred"},
			{Event: "b", Status: "not-counted", Truth: u(2)},
			{Event: "c", Value: 1, Linux: 1, Truth: u(1), Status: "exact"},
		},
		Intervals: []IntervalReport{{Index: 0, FromSlice: 1, ToSlice: 3}},
	}
	p := (*pastReport)(nil).merge(first, []uint32{3, 5})
	q := p.merge(second, []uint32{3, 5, 9})
	if len(p.report.Totals) != 2 || p.report.Slices != 2 || len(p.report.Intervals) != 1 {
		t.Fatalf("the first PMU's report changed by the merge: %+v", p.report)
	}
	r := q.report
	if r.Slices != 5 || len(r.Totals) != 3 || len(r.Intervals) != 2 {
		t.Fatalf("merged: %d slices, %d events, %d intervals; want 5, 3, 2", r.Slices, len(r.Totals), len(r.Intervals))
	}
	if iv := r.Intervals[1]; iv.Index != 1 || iv.FromSlice != 3 || iv.ToSlice != 5 {
		t.Errorf("second PMU's interval %+v, want index 1, slices 3..5", iv)
	}
	a := r.Totals[0]
	if a.Event != "a" || a.Value != 30 || a.Linux != 30 || *a.Truth != 30 || a.Status != "inferred" {
		t.Errorf("a: %+v", a)
	}
	if lo, hi := *a.Lo, *a.Hi; math.Abs(lo-25) > 1e-9 || math.Abs(hi-35) > 1e-9 {
		t.Errorf("a's interval [%v, %v], want [25, 35]", lo, hi)
	}
	if b := r.Totals[1]; b.Value != 5 || *b.Truth != 7 || b.Status != "scaled" {
		t.Errorf("b (exact, then not counted): %+v, want value 5, truth 7, scaled", b)
	}
	if c := r.Totals[2]; c.Event != "c" || c.Value != 1 || c.Status != "exact" {
		t.Errorf("c (registered later): %+v", c)
	}
}
