package replay

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/baseline"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// DefaultWindow is the reporting interval in slices: 100 ms at the kernel's 4 ms slice.
const DefaultWindow = 25

// Contender is an estimator under test and the schedule its observations come from.
// Contenders sharing a Schedule (the same pointer) see identical observations.
type Contender struct {
	Estimator inference.Estimator
	Schedule  *schedule.Schedule
}

// Options tune Score.
type Options struct {
	// Window is the number of slices per reporting interval; 0 means DefaultWindow.
	Window int
	// Online asks each estimator for an interval right after the interval's last slice
	// (the live value a tool would read), instead of after Finish (final, smoothed).
	Online bool
	// Baseline names the contender the error reductions and the harm figures
	// (worst_ratio, harmed, worst_event) are relative to; "" is "linux".
	Baseline string
	// Counters is reported in the result as the programmable counter budget.
	Counters int
	// TrimTail drops the last 2% of the slices and then 5 more before scoring, the data
	// cleaning of source 001 (a run's end differs from run to run, and its last slices are
	// partial). Off by default: our truth and observations come from the same run, so
	// the tail is as valid as the rest.
	TrimTail bool
}

// Scores are one estimator's scores on one event; nil fields are undefined (the event
// never occurred, or the estimator gave no intervals).
type Scores struct {
	WAPE       *float64 `json:"wape"`
	TotalError *float64 `json:"total_error"`
	RA         *float64 `json:"ra"`
	DTW        *float64 `json:"dtw"`
	Coverage95 *float64 `json:"coverage95"`
	Sharpness  *float64 `json:"sharpness"`
}

// EventResult is the per-event entry of a Result: the event's name and its scores under
// each estimator. It marshals as {"event": name, "<estimator>": {...}, ...}.
type EventResult struct {
	Event  string
	Scores map[string]Scores
	// Metrics are the raw per-estimator scores behind Scores.
	Metrics map[string]metrics.Event
}

// MarshalJSON flattens the estimator map next to the event name.
func (e EventResult) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(e.Scores)+1)
	for k, v := range e.Scores {
		m[k] = v
	}
	m["event"] = e.Event
	return json.Marshal(m)
}

// Report is what every accuracy report says before its events, replayed (Result) or
// live (internal/eval): the run's size and each estimator's summary over the events.
type Report struct {
	Counters       int                        `json:"counters"`
	Events         int                        `json:"events"`
	Slices         int                        `json:"slices"`
	Intervals      int                        `json:"intervals"`
	Estimators     map[string]metrics.Summary `json:"estimators"`
	ErrorReduction map[string]float64         `json:"error_reduction"`
}

// Result is the outcome of Score, shaped as `bayesperf eval --json` prints it.
type Result struct {
	Report
	PerEvent []EventResult `json:"per_event"`

	// Order lists the estimator names in the order they were given.
	Order []string `json:"-"`
	// EventNames are the trace's events; Bounds the [from, to) slices of each interval.
	EventNames []string `json:"-"`
	Bounds     [][2]int `json:"-"`
	// Truth[i][e] is event e's true count in interval i; Estimates[name][i][e] the
	// estimator's answer (for plots and tables).
	Truth     [][]float64                       `json:"-"`
	Estimates map[string][][]inference.Estimate `json:"-"`
}

// Baselines returns the contenders linux, fixed and linear on the schedule.
func Baselines(events int, s *schedule.Schedule) []Contender {
	return []Contender{
		{baseline.New(baseline.Linux, events), s},
		{baseline.New(baseline.Fixed, events), s},
		{baseline.New(baseline.Linear, events), s},
	}
}

// Score replays the trace to every contender and scores their estimates per reporting
// interval against the truth.
//
// Observations are simulated once per distinct schedule and fed with Feed to every
// contender on that schedule; each contender receives its own deep copy of every slice,
// so an estimator that modifies what it is given cannot change what the others see.
// Names must be distinct. An Observe error aborts the scoring.
func Score(tr *Trace, cs []Contender, opt Options) (*Result, error) {
	if len(cs) == 0 {
		return nil, fmt.Errorf("score trace: no estimators")
	}
	window := opt.Window
	if window <= 0 {
		window = DefaultWindow
	}
	base := opt.Baseline
	if base == "" {
		base = "linux"
	}
	n := tr.Slices()
	if opt.TrimTail {
		n -= int(math.Ceil(0.02*float64(n))) + 5
		if n < 1 {
			return nil, fmt.Errorf("score trace: %d slices are too few to trim the tail", tr.Slices())
		}
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		if c.Estimator == nil || c.Schedule == nil {
			return nil, fmt.Errorf("score trace: contender %d lacks an estimator or a schedule", i)
		}
		names[i] = c.Estimator.Name()
		if slices.Contains(names[:i], names[i]) {
			return nil, fmt.Errorf("score trace: two estimators named %q", names[i])
		}
	}
	obs := map[*schedule.Schedule][]inference.Slice{}
	for _, c := range cs {
		if _, ok := obs[c.Schedule]; !ok {
			obs[c.Schedule] = Simulate(tr, c.Schedule)[:n]
		}
	}
	bounds := Intervals(n, window)
	res := &Result{
		Report: Report{Counters: opt.Counters, Events: len(tr.Events), Slices: n, Intervals: len(bounds),
			Estimators: map[string]metrics.Summary{}, ErrorReduction: map[string]float64{}},
		Order: names, EventNames: tr.Events, Bounds: bounds,
		Estimates: map[string][][]inference.Estimate{},
	}
	for _, b := range bounds {
		res.Truth = append(res.Truth, tr.Truth(b[0], b[1]))
	}
	for _, name := range names {
		res.Estimates[name] = make([][]inference.Estimate, len(bounds))
	}
	for i, c := range cs {
		answers, err := Feed(c.Estimator, obs[c.Schedule], bounds, opt.Online, nil)
		if err != nil {
			return nil, fmt.Errorf("score trace: %s: %w", names[i], err)
		}
		for k, a := range answers {
			res.Estimates[names[i]][k] = fit(a, len(tr.Events))
		}
	}
	sum := Summarize(res.Truth, res.Estimates, names, base, tr.Events)
	per := sum.PerEvent
	res.Estimators, res.ErrorReduction = sum.Estimators, sum.ErrorReduction
	for e, ev := range tr.Events {
		er := EventResult{Event: ev, Scores: map[string]Scores{}, Metrics: map[string]metrics.Event{}}
		for _, name := range names {
			m := per[name][e]
			er.Metrics[name] = m
			var s Scores
			if m.Defined {
				s.WAPE, s.TotalError, s.RA, s.DTW = ptr(m.WAPE), ptr(m.TotalError), ptr(m.RA), ptr(m.DTW)
			}
			if c, ok := m.Coverage95(); ok {
				s.Coverage95 = ptr(c)
			}
			if m.HasSharpness {
				s.Sharpness = ptr(m.Sharpness)
			}
			er.Scores[name] = s
		}
		res.PerEvent = append(res.PerEvent, er)
	}
	return res, nil
}

func ptr(v float64) *float64 { return &v }

// Summary is the scoring of several estimators on the same events and intervals.
type Summary struct {
	// PerEvent[name][e] are estimator name's scores on event e (metrics.ForEvent).
	PerEvent map[string][]metrics.Event
	// Estimators[name] aggregates PerEvent[name] over the events (metrics.Summarize),
	// with the harm figures relative to the baseline (metrics.Harms) when there is one.
	Estimators map[string]metrics.Summary
	// ErrorReduction[name] is name's error reduction relative to the baseline
	// (metrics.ErrorReduction), for every estimator but the baseline where it is defined.
	ErrorReduction map[string]float64
}

// Summarize scores the answers of the estimators names against the truth, per event and
// per estimator: truth[k][e] is the true count of event events[e] in reporting interval
// k, and answers[name][k][e] estimator name's estimate of it; an estimate missing from a
// short answer counts as a not-counted zero. base names the estimator the error
// reductions and harm figures are relative to; when it is not among names there are none
// (and the harm fields stay nil). The baseline's own harm figures are against itself:
// worst ratio 1, nothing harmed.
//
// Score and live evaluation (internal/eval) both summarize through it, so the same
// answers always give the same figures.
func Summarize(truth [][]float64, answers map[string][][]inference.Estimate, names []string, base string, events []string) Summary {
	sum := Summary{PerEvent: map[string][]metrics.Event{}, Estimators: map[string]metrics.Summary{},
		ErrorReduction: map[string]float64{}}
	for _, name := range names {
		per := make([]metrics.Event, len(events))
		for e := range events {
			tr := make([]float64, len(truth))
			est := make([]inference.Estimate, len(truth))
			for k := range truth {
				if e < len(truth[k]) {
					tr[k] = truth[k][e]
				}
				if a := answers[name]; k < len(a) && e < len(a[k]) {
					est[k] = a[k][e]
				}
			}
			per[e] = metrics.ForEvent(tr, est)
		}
		sum.PerEvent[name] = per
		sum.Estimators[name] = metrics.Summarize(per)
	}
	if lin, ok := sum.PerEvent[base]; ok {
		for _, name := range names {
			sum.Estimators[name] = withHarm(sum.Estimators[name], metrics.Harms(lin, sum.PerEvent[name]), events)
			if name == base {
				continue
			}
			if r, ok := metrics.ErrorReduction(lin, sum.PerEvent[name]); ok {
				sum.ErrorReduction[name] = r
			}
		}
	}
	return sum
}

// withHarm returns s with the harm figures h set, naming the worst event from events;
// the worst ratio and event stay nil when no event qualified for one.
func withHarm(s metrics.Summary, h metrics.Harm, events []string) metrics.Summary {
	harmed := h.Harmed
	s.Harmed = &harmed
	if h.WorstEvent >= 0 {
		s.WorstRatio = ptr(h.WorstRatio)
		name := events[h.WorstEvent]
		s.WorstEvent = &name
	}
	return s
}

// Feed gives est the slices obs in order, each as its own deep copy (an estimator that
// modifies its input cannot change what another estimator sees), and returns est's
// answer for every interval of bounds: taken right after the interval's last slice when
// online, after Finish otherwise. An Observe error ends the feed unless keep (which may be
// nil) says it is a status of that one slice, from which the estimator recovers.
//
// Score and live evaluation (internal/eval) both score estimators through Feed, so every
// estimator is fed and asked in exactly the same way.
func Feed(est inference.Estimator, obs []inference.Slice, bounds [][2]int, online bool, keep func(error) bool) ([][]inference.Estimate, error) {
	answers := make([][]inference.Estimate, len(bounds))
	next := 0 // next interval to answer online
	for t, s := range obs {
		if err := est.Observe(cloneSlice(s)); err != nil && (keep == nil || !keep(err)) {
			return nil, fmt.Errorf("observe slice %d: %w", s.Index, err)
		}
		if online && next < len(bounds) && t == bounds[next][1]-1 {
			answers[next] = est.Estimate(bounds[next][0], bounds[next][1])
			next++
		}
	}
	est.Finish()
	if !online {
		for k, b := range bounds {
			answers[k] = est.Estimate(b[0], b[1])
		}
	}
	return answers, nil
}

func cloneSlice(s inference.Slice) inference.Slice {
	s.Readings = slices.Clone(s.Readings)
	return s
}

// fit makes an estimator's answer exactly one estimate per event: a short answer is
// padded with not-counted zeros, so a faulty estimator is scored, not crashed on.
func fit(est []inference.Estimate, events int) []inference.Estimate {
	if len(est) == events {
		return est
	}
	out := make([]inference.Estimate, events)
	copy(out, est)
	return out
}
