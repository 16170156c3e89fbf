package baseline

import (
	"fmt"

	"github.com/bayesperf/bayesperf/inference"
)

// Kind selects a baseline.
type Kind int

const (
	Linux Kind = iota
	Fixed
	Linear
)

func (k Kind) String() string {
	switch k {
	case Linux:
		return "linux"
	case Fixed:
		return "fixed"
	case Linear:
		return "linear"
	}
	return fmt.Sprintf("baseline(%d)", int(k))
}

// ParseKind maps "linux", "fixed" or "linear" to its Kind.
func ParseKind(name string) (Kind, error) {
	for _, k := range []Kind{Linux, Fixed, Linear} {
		if k.String() == name {
			return k, nil
		}
	}
	return 0, fmt.Errorf("parse baseline %q: want linux, fixed or linear", name)
}

// Estimator is one baseline over a run of a fixed number of events.
type Estimator struct {
	kind   Kind
	events int
	// Per slice (index = slice position):
	start []float64 // start time of the slice (sum of earlier durations)
	dur   []float64
	// Per event, per slice: raw deltas. ran[e][t] is running > 0.
	count, enabled, running [][]float64
}

// New returns a baseline estimator of the given kind for a run of events events
// (EventIDs 0..events-1).
func New(kind Kind, events int) *Estimator {
	events = max(events, 0)
	return &Estimator{
		kind: kind, events: events,
		count:   make([][]float64, events),
		enabled: make([][]float64, events),
		running: make([][]float64, events),
	}
}

// Name is "linux", "fixed" or "linear".
func (b *Estimator) Name() string { return b.kind.String() }

// Observe records one slice. Slices must come in order: s.Index must equal the number
// of slices observed so far.
func (b *Estimator) Observe(s inference.Slice) error {
	t := len(b.dur)
	if err := s.Check(t, b.events); err != nil {
		return err
	}
	start := 0.0
	if t > 0 {
		start = b.start[t-1] + b.dur[t-1]
	}
	b.start = append(b.start, start)
	b.dur = append(b.dur, s.Duration)
	for e := range b.events {
		b.count[e] = append(b.count[e], 0)
		b.enabled[e] = append(b.enabled[e], s.Duration)
		b.running[e] = append(b.running[e], 0)
	}
	seen := make(map[inference.EventID]bool, len(s.Readings))
	for _, r := range s.Readings {
		if seen[r.Event] {
			// Two readings of one event in a slice: add them up (two fds of one event).
			b.count[r.Event][t] += float64(r.Count)
			b.enabled[r.Event][t] += float64(r.Enabled)
			b.running[r.Event][t] += float64(r.Running)
			continue
		}
		seen[r.Event] = true
		b.count[r.Event][t] = float64(r.Count)
		b.enabled[r.Event][t] = float64(r.Enabled)
		b.running[r.Event][t] = float64(r.Running)
	}
	return nil
}

// Finish does nothing: every baseline already uses all observations at query time.
func (b *Estimator) Finish() {}

// Estimate returns the estimate of every event over slices [from, to), clamped to the
// slices observed so far.
func (b *Estimator) Estimate(from, to int) []inference.Estimate {
	out := make([]inference.Estimate, b.events)
	from, to = max(from, 0), min(to, len(b.dur))
	if from >= to {
		return out
	}
	for e := range b.events {
		switch b.kind {
		case Linux:
			out[e] = b.linux(e, from, to)
		default:
			out[e] = b.interpolate(e, from, to)
		}
	}
	return out
}

func (b *Estimator) linux(e, from, to int) inference.Estimate {
	var c, en, r float64
	for t := from; t < to; t++ {
		c += b.count[e][t]
		en += b.enabled[e][t]
		r += b.running[e][t]
	}
	if r == 0 {
		return inference.Estimate{Status: inference.StatusNotCounted}
	}
	st := inference.StatusScaled
	if r == en {
		st = inference.StatusExact
	}
	return inference.Estimate{Value: c * en / r, Status: st}
}

// interpolate implements fixed and linear: observed slices are scaled in place, the
// others get an interpolated rate times their enabled time.
func (b *Estimator) interpolate(e, from, to int) inference.Estimate {
	run := b.running[e]
	// Nearest observed slices around [from, to), searched outward; then walk inside.
	prev := -1
	for t := from - 1; t >= 0; t-- {
		if run[t] > 0 {
			prev = t
			break
		}
	}
	next := b.nextObserved(e, from)
	if prev < 0 && next < 0 {
		return inference.Estimate{Status: inference.StatusNotCounted}
	}
	var v float64
	exact := true
	for t := from; t < to; t++ {
		if run[t] > 0 {
			v += b.count[e][t] * b.enabled[e][t] / run[t]
			if run[t] != b.enabled[e][t] {
				exact = false
			}
			prev = t
			if next <= t {
				next = b.nextObserved(e, t+1)
			}
			continue
		}
		exact = false
		if next >= 0 && next < t {
			next = b.nextObserved(e, t)
		}
		v += b.rateAt(e, t, prev, next) * b.enabled[e][t]
	}
	st := inference.StatusScaled
	if exact {
		st = inference.StatusExact
	}
	return inference.Estimate{Value: v, Status: st}
}

func (b *Estimator) nextObserved(e, from int) int {
	for t := from; t < len(b.dur); t++ {
		if b.running[e][t] > 0 {
			return t
		}
	}
	return -1
}

func (b *Estimator) rate(e, t int) float64 { return b.count[e][t] / b.running[e][t] }

func (b *Estimator) mid(t int) float64 { return b.start[t] + b.dur[t]/2 }

// rateAt is the rate of an unobserved slice t given the nearest observed slices before
// (prev) and after (next), -1 when absent; at least one is present.
func (b *Estimator) rateAt(e, t, prev, next int) float64 {
	switch {
	case prev < 0:
		return b.rate(e, next)
	case next < 0:
		return b.rate(e, prev)
	case b.kind == Fixed:
		return b.rate(e, prev)
	}
	r0, r1 := b.rate(e, prev), b.rate(e, next)
	m0, m1 := b.mid(prev), b.mid(next)
	if m1 <= m0 {
		return r0
	}
	return r0 + (r1-r0)*(b.mid(t)-m0)/(m1-m0)
}

var _ inference.Estimator = (*Estimator)(nil)
