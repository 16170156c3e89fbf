package pipeline

import (
	"math"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// Sub is a-b, or 0 when a counter went backwards: a delta is never wrapped.
func Sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// Advance returns what the cumulative total cur adds to *prev, and moves *prev to cur,
// only when cur passes it: a total read below what was already counted adds nothing
// and leaves *prev, so the difference is counted once, when the total passes it again,
// never twice.
func Advance(prev *uint64, cur uint64) uint64 {
	if cur <= *prev {
		return 0
	}
	d := cur - *prev
	*prev = cur
	return d
}

// Deltas is the slice between two cumulative reads of the same events, prev and cur
// (the kernel's triples, one per event, in EventID order): per event the deltas of
// count, enabled and running (Sub), running at most enabled. Duration is the largest
// enabled delta (at least 1 ns), and enabled says how long the longest-enabled event
// was: 0 when the target did not run at all.
func Deltas(index int, prev, cur []perf.Count) (sl inference.Slice, enabled uint64) {
	sl = inference.Slice{Index: index, Readings: make([]inference.Reading, len(cur))}
	for i, c := range cur {
		var p perf.Count
		if i < len(prev) {
			p = prev[i]
		}
		en := Sub(c.Enabled, p.Enabled)
		sl.Readings[i] = inference.Reading{Event: inference.EventID(i), Count: Sub(c.Value, p.Value),
			Enabled: en, Running: min(Sub(c.Running, p.Running), en)}
		enabled = max(enabled, en)
	}
	sl.Duration = float64(max(enabled, 1))
	return sl, enabled
}

// Scaled is the kernel-style estimate of a cumulative triple: value·enabled/running,
// the value itself when the event ran all the time or never.
func Scaled(c perf.Count) float64 {
	if c.Running == 0 || c.Running >= c.Enabled {
		return float64(c.Value)
	}
	return float64(c.Value) * float64(c.Enabled) / float64(c.Running)
}

// Round is an estimate as a count: rounded, 0 for a negative, NaN or infinite one (a
// uint64 conversion of those is undefined).
func Round(v float64) uint64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 0
	}
	return uint64(math.Round(v))
}

// Floor is the last value published per event: what a tool reads never decreases.
type Floor []uint64

// Raise returns v, or the last value published for event j when that is higher, and
// records it as published.
func (f Floor) Raise(j int, v uint64) uint64 {
	v = max(v, f[j])
	f[j] = v
	return v
}
