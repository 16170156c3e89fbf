// Package pipeline owns the steps every correction shares, from collected counts to a
// published value: the raw (count, enabled, running) triples a collector read become
// per-slice deltas (Deltas, Advance, Sub), the slices of one step are merged as perf
// sums a process's threads (Merge), the bayesperf model is built over the events
// (NewModel, with the clock events found by IsClock) and fed (Feed: slices numbered,
// durations in multiplexing intervals, numerical failures counted), and the values
// handed to a tool never decrease (Floor) and are whole counts (Round).
//
// The virtual PMU (internal/vpmu, internal/vpmu/vstage), the kernel-rotation corrector
// (internal/kstage) and `bayesperf stat` are adapters over it: each says where its
// counts come from and how its slices are cut (the virtual PMU's schedule, the
// kernel's rotation found in the sidecar's rounds, stat's wake-ups), and uses this
// package for the rest, so the three agree on what a slice, a clock and a published
// value are.
//
// Collected totals may appear to go backwards (a split read through a snapshotting
// collector's Peek, an event re-read after an error): a delta is never negative (Sub),
// and where the totals are tracked across reads a delta is counted only once they pass
// what was already counted (Advance). Published values never go down: a tool computing
// per-interval deltas (perf stat -I) would print a wrapped 1.8e19.
//
// Functions are pure; Feed and Floor are not safe for concurrent use.
package pipeline
