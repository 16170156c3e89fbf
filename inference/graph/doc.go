// Package graph is the factor graph of a run: one variable node per event, one factor
// node per relation between events (paper section 4.1), with the Markov blankets and
// shortest paths that the overlap-aware scheduler and the model ask of it.
//
// In a factor graph the Markov blanket of a set of events S is every event that shares a
// factor with a member of S, minus S itself: given those, S is independent of the rest.
// Two configurations of a schedule are statistically linked when the closures S ∪ B(S)
// of their event sets intersect (for most sets this is the paper's B(S1) ∩ B(S2) ≠ ∅; the
// closure also counts an event present in both, which the paper's examples take for
// granted).
//
// Errors: New rejects factors naming events outside the run. A Graph is immutable after
// New and safe for concurrent use.
package graph
