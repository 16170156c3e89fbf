package inference

import (
	"fmt"
	"math"
)

// EventID indexes an event within one run: its position in the run's event list.
type EventID int

// Reading is what the kernel reported for one event over one slice: deltas of the raw
// (count, time_enabled, time_running) triple. Keeping the raw triple (not a scaled value)
// lets every estimator, Linux scaling included, be a view over the same observations.
type Reading struct {
	Event   EventID
	Count   uint64 // counter delta over the slice
	Enabled uint64 // ns the event was enabled during the slice
	Running uint64 // ns the event was actually counting during the slice
}

// Slice is one multiplexing slice: how long it lasted and the readings of the events
// that were scheduled on a counter during it. Events absent from Readings were not
// counted in this slice.
type Slice struct {
	Index    int       // 0-based position in the run
	Duration float64   // length of the slice, ns (1 for unit-time traces)
	Readings []Reading // one per counted event, in any order
}

// Check returns an error, naming the slice, unless s can be the next slice of a run of
// events events that has observed next slices so far: s.Index equals next, the duration
// is finite and not negative, and every reading is of one of the run's events, with
// running <= enabled.
func (s Slice) Check(next, events int) error {
	if s.Index != next {
		return fmt.Errorf("observe slice %d: expected slice %d", s.Index, next)
	}
	if math.IsNaN(s.Duration) || math.IsInf(s.Duration, 0) || s.Duration < 0 {
		return fmt.Errorf("observe slice %d: bad duration %v", s.Index, s.Duration)
	}
	for _, r := range s.Readings {
		if int(r.Event) < 0 || int(r.Event) >= events {
			return fmt.Errorf("observe slice %d: event %d outside the run's %d events", s.Index, r.Event, events)
		}
		if r.Running > r.Enabled {
			return fmt.Errorf("observe slice %d: event %d running %d > enabled %d", s.Index, r.Event, r.Running, r.Enabled)
		}
	}
	return nil
}

// Status says how an estimate was obtained.
type Status uint8

const (
	StatusNotCounted Status = iota // no information: the event never ran and nothing relates it
	StatusExact                    // counted for the whole interval: the kernel's value
	StatusScaled                   // count * enabled / running (Linux) or another interpolation
	StatusInferred                 // posterior of the Bayesian model
)

func (s Status) String() string {
	switch s {
	case StatusExact:
		return "exact"
	case StatusScaled:
		return "scaled"
	case StatusInferred:
		return "inferred"
	}
	return "not-counted"
}

// Estimate is an estimator's answer for one event over one reporting interval.
type Estimate struct {
	Value float64 // estimated count over the interval
	// Lo and Hi bound the 95% interval when HasInterval is set.
	Lo, Hi      float64
	HasInterval bool
	Status      Status
}

// Estimator turns a stream of slices into per-event estimates. Every estimator (linux,
// fixed, linear, bayesperf) implements it, so all can be scored on the same observations.
//
// Slices are fed in order with Observe. Estimate returns, for every event of the run in
// EventID order, the estimated count over slices [from, to) given everything observed so
// far; after Finish an estimator may revise earlier intervals (smoothing). Estimators are
// not safe for concurrent use.
type Estimator interface {
	Name() string
	Observe(s Slice) error
	Estimate(from, to int) []Estimate
	Finish()
}
