package graph

import (
	"fmt"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// EventID is the run-local index of an event.
type EventID = inference.EventID

// Factor is a relation between some of the run's events.
type Factor struct {
	Name   string    // for messages: the relation's text or source
	Events []EventID // the events it involves, each once, sorted
}

// Graph is a bipartite factor graph over events 0..Events()-1.
type Graph struct {
	names    []string
	factors  []Factor
	byEvent  [][]int     // event -> indices of its factors
	neighbor [][]EventID // event -> events sharing a factor with it, sorted, without itself
}

// New builds the graph of a run with the given event names and factors. Duplicate
// events inside a factor are merged; a factor with fewer than one event is dropped.
func New(names []string, factors []Factor) (*Graph, error) {
	g := &Graph{names: slices.Clone(names), byEvent: make([][]int, len(names)), neighbor: make([][]EventID, len(names))}
	for _, f := range factors {
		evs := slices.Clone(f.Events)
		slices.Sort(evs)
		evs = slices.Compact(evs)
		for _, e := range evs {
			if int(e) < 0 || int(e) >= len(names) {
				return nil, fmt.Errorf("build factor graph: factor %q names event %d outside the run's %d events", f.Name, e, len(names))
			}
		}
		if len(evs) == 0 {
			continue
		}
		fi := len(g.factors)
		g.factors = append(g.factors, Factor{Name: f.Name, Events: evs})
		for _, e := range evs {
			g.byEvent[e] = append(g.byEvent[e], fi)
		}
	}
	for e := range names {
		var nb []EventID
		for _, fi := range g.byEvent[e] {
			for _, o := range g.factors[fi].Events {
				if int(o) != e {
					nb = append(nb, o)
				}
			}
		}
		slices.Sort(nb)
		g.neighbor[e] = slices.Compact(nb)
	}
	return g, nil
}

// FromRelations builds the graph of a run from relations already bound to its events
// (relation.Bind): one factor per relation over the events it names. Relations naming
// an event the run lacks are skipped (Bind never returns such).
func FromRelations(names []string, rels []relation.Relation) *Graph {
	idx := make(map[string]EventID, len(names))
	for i, n := range names {
		idx[n] = EventID(i)
	}
	var fs []Factor
outer:
	for _, r := range rels {
		var evs []EventID
		for _, n := range r.Events() {
			e, ok := idx[n]
			if !ok {
				continue outer
			}
			evs = append(evs, e)
		}
		name := r.Text
		if name == "" {
			name = r.String()
		}
		fs = append(fs, Factor{Name: name, Events: evs})
	}
	g, _ := New(names, fs) // every index comes from names: cannot fail
	return g
}

// Events is the number of events in the run.
func (g *Graph) Events() int { return len(g.names) }

// Name of event e.
func (g *Graph) Name(e EventID) string { return g.names[e] }

// Factors returns the factors (shared; do not modify).
func (g *Graph) Factors() []Factor { return g.factors }

// FactorsOf returns the indices of the factors that involve e.
func (g *Graph) FactorsOf(e EventID) []int {
	if !g.valid(e) {
		return nil
	}
	return g.byEvent[e]
}

// Neighbors returns the events that share a factor with e (its Markov blanket).
func (g *Graph) Neighbors(e EventID) []EventID {
	if !g.valid(e) {
		return nil
	}
	return g.neighbor[e]
}

// Degree is the number of neighbors of e.
func (g *Graph) Degree(e EventID) int { return len(g.Neighbors(e)) }

func (g *Graph) valid(e EventID) bool { return int(e) >= 0 && int(e) < len(g.names) }

// Blanket returns the Markov blanket of the set: every event sharing a factor with a
// member, minus the set itself, sorted. Events outside the run are ignored.
func (g *Graph) Blanket(set []EventID) []EventID {
	in := make([]bool, len(g.names))
	for _, e := range set {
		if g.valid(e) {
			in[e] = true
		}
	}
	var out []EventID
	seen := make([]bool, len(g.names))
	for _, e := range set {
		if !g.valid(e) {
			continue
		}
		for _, o := range g.neighbor[e] {
			if !in[o] && !seen[o] {
				seen[o] = true
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Closure returns set ∪ Blanket(set), sorted.
func (g *Graph) Closure(set []EventID) []EventID {
	var out []EventID
	for _, e := range set {
		if g.valid(e) {
			out = append(out, e)
		}
	}
	out = append(out, g.Blanket(set)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Linked reports whether two configurations are statistically linked: their closures
// intersect (see the package comment).
func (g *Graph) Linked(a, b []EventID) bool {
	ca := g.Closure(a)
	for _, e := range g.Closure(b) {
		if _, ok := slices.BinarySearch(ca, e); ok {
			return true
		}
	}
	return false
}

// Path returns a shortest chain of events from a to b in which consecutive events share
// a factor (unit cost per factor traversed, breadth-first), a and b included; nil when
// b is unreachable from a.
func (g *Graph) Path(a, b EventID) []EventID {
	if !g.valid(a) || !g.valid(b) {
		return nil
	}
	prev := make([]EventID, len(g.names))
	for i := range prev {
		prev[i] = -1
	}
	prev[a] = a
	queue := []EventID{a}
	for len(queue) > 0 {
		e := queue[0]
		queue = queue[1:]
		if e == b {
			break
		}
		for _, o := range g.neighbor[e] {
			if prev[o] < 0 {
				prev[o] = e
				queue = append(queue, o)
			}
		}
	}
	if prev[b] < 0 {
		return nil
	}
	var path []EventID
	for e := b; ; e = prev[e] {
		path = append(path, e)
		if e == a {
			break
		}
	}
	slices.Reverse(path)
	return path
}

// Components returns the connected components of the graph (events linked by chains of
// factors), each sorted, in order of their smallest event.
func (g *Graph) Components() [][]EventID {
	comp := make([]int, len(g.names))
	for i := range comp {
		comp[i] = -1
	}
	var out [][]EventID
	for s := range g.names {
		if comp[s] >= 0 {
			continue
		}
		c := len(out)
		comp[s] = c
		members := []EventID{EventID(s)}
		for i := 0; i < len(members); i++ {
			for _, o := range g.neighbor[members[i]] {
				if comp[o] < 0 {
					comp[o] = c
					members = append(members, o)
				}
			}
		}
		slices.Sort(members)
		out = append(out, members)
	}
	return out
}
