package eval

import (
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
)

func parseRels(t *testing.T, events []string, lines ...string) []relation.Relation {
	t.Helper()
	rels, err := relation.ParseFile("test.rel", strings.NewReader(strings.Join(lines, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	return relation.Bind(rels, events)
}

func TestBrokenRelations(t *testing.T) {
	events := []string{"parent", "a", "b", "misses", "accesses", "drift"}
	// Row by row: parent = a + b exactly; misses <= accesses but for row 2, which has
	// 500 misses of 100 accesses; drift = a off by one count in every row (the jitter
	// of two reads), which adds up over the run to more than the slack.
	var counts [][]uint64
	for row := range 40 {
		a, b := uint64(1000+row), uint64(50*row)
		misses, acc := uint64(10), uint64(100)
		if row == 2 {
			misses = 500
		}
		counts = append(counts, []uint64{a + b, a, b, misses, acc, a + 1})
	}
	tr := &replay.Trace{Events: events, Counts: counts}
	rels := parseRels(t, events, "parent = a + b", "misses <= accesses", "drift = a", "parent >= a")
	got := BrokenRelations(tr, rels, true)
	if len(got) != 2 {
		t.Fatalf("want 2 broken relations (misses <= accesses, drift = a), got %v", got)
	}
	ineq, drift := got[0], got[1]
	if ineq.Relation.String() != "misses <= accesses" || ineq.Rows != 1 || ineq.Of != 40 || ineq.Worst != 2 || ineq.Residual != 400 || ineq.Scale != 600 {
		t.Errorf("misses <= accesses: got %+v, want 1 row of 40 broken, row 2, 500 - 100 = 400 of 600", ineq)
	}
	if drift.Relation.String() != "drift = a" || drift.Rows != 0 || drift.Worst != -1 || drift.Residual != 40 {
		t.Errorf("drift = a: got %+v, want no row broken and the run's totals off by 40", drift)
	}
	if s := drift.String(); !strings.Contains(s, "over the run") {
		t.Errorf("a totals-only break reads %q", s)
	}
	// Totals only (a live run): the inequality broken in one row holds over the run.
	if got := BrokenRelations(tr, rels, false); len(got) != 1 || got[0].Relation.String() != "drift = a" {
		t.Errorf("totals only: want drift = a alone, got %v", got)
	}

	// Counts read into the next row (two at row 5, one at row 8), the totals agreeing:
	// not broken.
	for row := range counts {
		counts[row][5] = counts[row][1]
	}
	counts[5][5] -= 2
	counts[6][5] += 2
	counts[9][5]++
	counts[8][5]--
	if got := BrokenRelations(tr, parseRels(t, events, "drift = a"), true); len(got) != 0 {
		t.Errorf("jitter that cancels over the run reported as broken: %v", got)
	}
}
