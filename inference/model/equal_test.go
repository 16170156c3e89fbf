package model

import (
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// TestEqualEvents: events the exact identities make equal in every slice share a class
// (its lowest event), whatever way the identities say it: directly, or through sums of
// the same terms; a soft identity makes nothing equal.
func TestEqualEvents(t *testing.T) {
	eq := func(c map[inference.EventID]float64, tol float64) Constraint {
		return Constraint{Coef: c, Op: Equal, Tol: tol}
	}
	md, err := NewLinear(7, []Constraint{
		eq(map[inference.EventID]float64{0: 1, 1: -1}, 0),        // e0 = e1
		eq(map[inference.EventID]float64{3: 1, 1: -1, 2: -1}, 0), // e3 = e1 + e2
		eq(map[inference.EventID]float64{4: 1, 0: -1, 2: -1}, 0), // e4 = e0 + e2
		eq(map[inference.EventID]float64{5: 1, 6: -1}, 0.01),     // e5 ≈ e6
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := md.EqualEvents(), []int{0, 0, -1, 3, 3, -1, -1}; !slices.Equal(got, want) {
		t.Errorf("EqualEvents %v, want %v", got, want)
	}
}
