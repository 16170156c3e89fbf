package kstage

import (
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// equalClasses groups a target's events that count the same thing: repeats (the same
// attr opened twice) and the two sides of an exact identity between two events
// (instructions = inst_retired). Per event it returns its class, or -1 when it has no
// equal. The kernel counts each member on its own counter and a tool reads them one
// after the other, so what the kernel adds between two reads differs between members
// by the counts in between; publish serves a class one such increment per round so
// that the identity holds in what the tool reads, not only in the model's totals.
func equalClasses(attrs []perf.Attr, names []string, rels []relation.Relation) []int {
	parent := make([]int, len(attrs))
	for j := range parent {
		parent[j] = j
	}
	var find func(int) int
	find = func(j int) int {
		for parent[j] != j {
			parent[j] = parent[parent[j]]
			j = parent[j]
		}
		return j
	}
	union := func(a, b int) {
		if ra, rb := find(a), find(b); ra != rb {
			parent[max(ra, rb)] = min(ra, rb)
		}
	}
	for a := range attrs {
		for b := a + 1; b < len(attrs); b++ {
			if attrs[a] == attrs[b] {
				union(a, b)
			}
		}
	}
	index := make(map[string]int, len(names))
	for j, n := range names {
		if _, ok := index[n]; !ok {
			index[n] = j
		}
	}
	for _, r := range rels {
		l, ok := r.Linearize()
		if !ok || r.Tol != 0 || l.Op != relation.Eq || l.Const != 0 || len(l.Coef) != 2 {
			continue
		}
		var ends []int
		sum := 0.0
		for n, c := range l.Coef {
			if j, ok := index[n]; ok && (c == 1 || c == -1) {
				ends = append(ends, j)
				sum += c
			}
		}
		if len(ends) == 2 && sum == 0 {
			union(ends[0], ends[1])
		}
	}
	size := make([]int, len(attrs))
	for j := range attrs {
		size[find(j)]++
	}
	class := make([]int, len(attrs))
	for j := range attrs {
		class[j] = -1
		if size[find(j)] > 1 {
			class[j] = find(j)
		}
	}
	return class
}
