package graph

import (
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference/relation"
)

func ids(xs ...int) []EventID {
	out := make([]EventID, len(xs))
	for i, x := range xs {
		out[i] = EventID(x)
	}
	return out
}

// The paper's example (section 4.1): f(e1, e2) and g(e2, e3, e4), plus an isolated e5.
func example(t *testing.T) *Graph {
	t.Helper()
	g, err := New([]string{"e1", "e2", "e3", "e4", "e5"}, []Factor{
		{Name: "f", Events: ids(0, 1)},
		{Name: "g", Events: ids(3, 2, 1, 2)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestBlanket(t *testing.T) {
	g := example(t)
	cases := []struct {
		set, want []EventID
	}{
		{ids(0), ids(1)},
		{ids(1), ids(0, 2, 3)},
		{ids(2), ids(1, 3)},
		{ids(0, 2), ids(1, 3)},
		{ids(1, 2), ids(0, 3)},
		{ids(4), nil},
		{nil, nil},
	}
	for _, c := range cases {
		if got := g.Blanket(c.set); !slices.Equal(got, c.want) {
			t.Errorf("blanket of %v = %v, want %v", c.set, got, c.want)
		}
	}
	if !slices.Equal(g.FactorsOf(1), []int{0, 1}) || g.Degree(4) != 0 || g.Degree(1) != 3 {
		t.Error("factor incidence")
	}
}

// Blankets are symmetric (b in B(a) iff a in B(b)) and never contain their set.
func TestBlanketProperties(t *testing.T) {
	g := example(t)
	for a := range g.Events() {
		for _, b := range g.Blanket(ids(a)) {
			if !slices.Contains(g.Blanket([]EventID{b}), EventID(a)) {
				t.Errorf("%d in B(%d) but not the converse", b, a)
			}
			if b == EventID(a) {
				t.Errorf("B(%d) contains %d", a, a)
			}
		}
	}
}

func TestLinkedPathComponents(t *testing.T) {
	g := example(t)
	if !g.Linked(ids(0), ids(2)) { // closures {0,1} and {1,2,3} share e2
		t.Error("e1 and e3 should be linked through e2")
	}
	if g.Linked(ids(0), ids(4)) {
		t.Error("isolated e5 linked")
	}
	if !g.Linked(ids(4), ids(4)) {
		t.Error("a configuration is linked to itself")
	}
	if p := g.Path(0, 3); !slices.Equal(p, ids(0, 1, 3)) {
		t.Errorf("path e1->e4 = %v, want [0 1 3]", p)
	}
	if p := g.Path(0, 4); p != nil {
		t.Errorf("path to an isolated event %v", p)
	}
	if p := g.Path(2, 2); !slices.Equal(p, ids(2)) {
		t.Errorf("path to itself %v", p)
	}
	comps := g.Components()
	if len(comps) != 2 || !slices.Equal(comps[0], ids(0, 1, 2, 3)) || !slices.Equal(comps[1], ids(4)) {
		t.Errorf("components %v", comps)
	}
}

func TestNewRejectsOutOfRange(t *testing.T) {
	if _, err := New([]string{"a"}, []Factor{{Name: "x", Events: ids(0, 1)}}); err == nil {
		t.Error("factor with an unknown event accepted")
	}
}

func TestFromRelations(t *testing.T) {
	names := []string{"page-faults", "minor-faults", "major-faults", "task-clock"}
	var rels []relation.Relation
	for _, line := range []string{"page-faults = minor-faults + major-faults", "major-faults <= page-faults", "task-clock >= 0"} {
		r, err := relation.ParseLine(line)
		if err != nil || r == nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		rels = append(rels, *r)
	}
	g := FromRelations(names, relation.Bind(rels, names))
	if got := g.Blanket(ids(2)); !slices.Equal(got, ids(0, 1)) {
		t.Errorf("blanket of major-faults %v, want page-faults and minor-faults", got)
	}
	if g.Degree(3) != 0 {
		t.Errorf("task-clock has neighbors %v", g.Neighbors(3))
	}
	if len(g.Factors()) != 3 {
		t.Errorf("%d factors, want 3 (one per relation, the bound on task-clock alone included)", len(g.Factors()))
	}
}
