package pipeline

import (
	"errors"
	"fmt"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// IsClock says an event of a task target counts the time its target ran, which every
// reading's enabled time is: task-clock, unless it excludes user or kernel time (perf
// stat sets exclude_guest, which a task's own clock does not care about). A task
// event's time_enabled advances only while the task runs, so the enabled time of every
// slice is task-clock's count whether a counter held it or not (a tool's own scaling of
// a multiplexed task-clock relies on the same fact). An event of a CPU target is never
// a clock in this sense.
func IsClock(a perf.Attr) bool {
	return a.Type == perf.TypeSoftware && a.Config == perf.SWTaskClock &&
		a.Flags&(perfabi.FlagExcludeUser|perfabi.FlagExcludeKern) == 0
}

// Clocks names the clock events (IsClock) among events of a task target, given their
// attrs and names in the same order.
func Clocks(attrs []perf.Attr, names []string) []string {
	var out []string
	for j, a := range attrs {
		if j < len(names) && IsClock(a) {
			out = append(out, names[j])
		}
	}
	return out
}

// ModelConfig says what model NewModel builds.
type ModelConfig struct {
	// Names are the events' names, in EventID order; relations bind by them.
	Names []string
	// Relations are already bound to Names (relation.Bind, relation.BindUniverse).
	Relations []relation.Relation
	// Attrs, when set, are the events' attrs (in Names' order) of a task target: the
	// clock events among them (IsClock) are the model's Options.Clocks, known in every
	// slice, which gives the other events an activity to scale with.
	Attrs []perf.Attr
	// Options are the model's options; Clocks is filled from Attrs.
	Options model.Options
}

// NewModel builds the bayesperf model over the events.
func NewModel(c ModelConfig) (*model.Model, error) {
	opt := c.Options
	opt.Clocks = append(opt.Clocks, Clocks(c.Attrs, c.Names)...)
	md, err := model.New(c.Names, c.Relations, opt)
	if err != nil {
		return nil, fmt.Errorf("build bayesperf model: %w", err)
	}
	return md, nil
}

// Feed gives estimators their slices, in order: it numbers them from 0, puts their
// durations in multiplexing intervals (the scale the model works at; enabled and
// running stay ns, only their ratio matters), and counts those a model had to skip for a
// numerical failure (model.ErrNumerical): the estimate goes on from the next one.
type Feed struct {
	Estimators []inference.Estimator
	// Unit is the multiplexing interval in ns; 0 takes durations as already in
	// intervals.
	Unit    float64
	Slices  int // slices fed
	Skipped int // numerical failures, over every estimator
}

// Add feeds sl (its Index and Duration set here) to every estimator, in order, and
// returns it as fed. Another error stops there and the slice is not counted.
func (f *Feed) Add(sl inference.Slice) (inference.Slice, error) {
	sl.Index = f.Slices
	if f.Unit > 0 {
		sl.Duration /= f.Unit
	}
	for _, est := range f.Estimators {
		// A copy of the readings: estimators may keep them.
		c := sl
		c.Readings = slices.Clone(sl.Readings)
		if err := est.Observe(c); err != nil {
			if !errors.Is(err, model.ErrNumerical) {
				return sl, fmt.Errorf("feed %s slice %d: %w", est.Name(), sl.Index, err)
			}
			f.Skipped++
		}
	}
	f.Slices++
	return sl, nil
}
