package eval

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/baseline"
	"github.com/bayesperf/bayesperf/inference/learned"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/internal/pipeline"
)

// Estimator names, in report order.
const (
	Linux       = "linux"
	Fixed       = "fixed"
	Linear      = "linear"
	BayesPerfRR = "bayesperf-rr"
	LinuxOwn    = "linux-own"
	BayesPerf   = "bayesperf"
	MLP         = learned.NameMLP
	BiGRU       = learned.NameBiGRU
)

// Order is the order estimators are reported in.
var Order = []string{Linux, Fixed, Linear, BayesPerfRR, LinuxOwn, BayesPerf, MLP, BiGRU}

// Observations are one run: the truth and what each schedule let the estimators see.
type Observations struct {
	Events []string   // event names, EventID order
	Truth  [][]uint64 // [slice][event] exact counts
	Kernel []inference.Slice
	// Own is the run under bayesperf's own schedule; nil when none was available, and
	// then the bayesperf estimator is left out.
	Own []inference.Slice
	// Phases is the length of bayesperf's schedule cycle: the starts FromTraceAt can
	// replay (0 without Own).
	Phases int
}

// Options tune Score.
type Options struct {
	Counters  int
	Window    int                 // slices per reporting interval; 0 means 25
	Relations []relation.Relation // bound to Events (relation.Bind)
	Model     model.Options
	// Online scores each interval's estimate as asked right after the interval's last
	// slice (what a tool reading live would get), instead of after Finish (final,
	// smoothed values). Totals are always final.
	Online bool
	// Learned, when set, adds its mlp and bigru estimators, on the kernel's
	// multiplexing as linux and fixed see it.
	Learned *learned.Model
	// LinuxOwn adds the estimator linux-own: the kernel's count·enabled/running of the
	// readings bayesperf's own schedule took. Beside linux and bayesperf-rr (the other
	// pair that shares its readings) it tells what the schedule read from what the
	// model made of it: an event bayesperf gets far worse than linux, and linux-own
	// too, was sampled differently, not estimated worse.
	LinuxOwn bool
}

// Metric is one estimator's scores for one event, as in the JSON report.
type Metric struct {
	WAPE       float64  `json:"wape"`
	TotalError float64  `json:"total_error"`
	RA         float64  `json:"ra"`
	DTW        float64  `json:"dtw"`
	Coverage95 *float64 `json:"coverage95"`
	Sharpness  *float64 `json:"sharpness"` // nil without intervals or truth
}

// PerEvent is one event's row: its truth, and per estimator its scores, total and
// interval.
type PerEvent struct {
	Event   string
	Truth   float64 // total over the run
	Metrics map[string]Metric
	Defined bool // the event occurred in the truth
	// Totals holds, per estimator, the estimate of the whole run's total.
	Totals map[string]inference.Estimate
	// Series holds, per estimator, the per-interval estimates (for plots); Truths the
	// per-interval truth.
	Series map[string][]float64
	Truths []float64
}

// MarshalJSON writes {"event": name, "<estimator>": {metrics}...}.
func (p PerEvent) MarshalJSON() ([]byte, error) {
	m := map[string]any{"event": p.Event}
	for k, v := range p.Metrics {
		m[k] = v
	}
	return json.Marshal(m)
}

// Result is the report, shaped as issue 5's --json.
type Result struct {
	// Collector is the live run's collector ("read" or "bpf"); empty for a replay.
	Collector string `json:"collector,omitempty"`
	replay.Report
	PerEvent []PerEvent `json:"per_event"`
	// Names lists the estimators present, in report order.
	Names []string `json:"-"`
	// Dropped lists relations the model could not use.
	Dropped []string `json:"-"`
}

type entrant struct {
	name   string
	est    inference.Estimator
	slices []inference.Slice
}

// Estimators builds the entrants for obs: every estimator paired with the observations
// it is scored on. newModel may be nil for the default model.
func estimators(obs Observations, opt Options) ([]entrant, []string, error) {
	n := len(obs.Events)
	var out []entrant
	for _, k := range []baseline.Kind{baseline.Linux, baseline.Fixed, baseline.Linear} {
		out = append(out, entrant{k.String(), baseline.New(k, n), obs.Kernel})
	}
	mopt := opt.Model
	if mopt.History == 0 {
		mopt.History = wholeRunHistory(len(obs.Truth), n)
	}
	mc := pipeline.ModelConfig{Names: obs.Events, Relations: opt.Relations, Options: mopt}
	rr, err := pipeline.NewModel(mc)
	if err != nil {
		return nil, nil, err
	}
	out = append(out, entrant{BayesPerfRR, rr, obs.Kernel})
	dropped := rr.Dropped
	if obs.Own != nil {
		own, err := pipeline.NewModel(mc)
		if err != nil {
			return nil, nil, err
		}
		if opt.LinuxOwn {
			out = append(out, entrant{LinuxOwn, baseline.New(baseline.Linux, n), obs.Own})
		}
		out = append(out, entrant{BayesPerf, own, obs.Own})
	}
	if opt.Learned != nil {
		for _, name := range []string{MLP, BiGRU} {
			est, err := learned.NewEstimator(opt.Learned, name, n)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, entrant{name, est, obs.Kernel})
		}
	}
	return out, dropped, nil
}

// runHistoryBudget bounds the covariances one model keeps while a run is scored: 8·k²
// bytes a slice for k free rates (k <= the events); Finish's smoothing holds twice as
// much again (smoothed covariances and gains). Two models are scored, one after the
// other (bayesperf-rr and bayesperf).
const runHistoryBudget = 256 << 20

// wholeRunHistory is the model's Options.History for scoring a run of the given slices
// over n events: the whole run when its covariances fit runHistoryBudget, else as many
// slices as fit. The model's default keeps 64 MiB; past it the oldest slices keep
// their filtered values, unsmoothed, and Finish's second pass, which needs the whole
// run, is skipped: live-gcc (corpus, 2106 slices, 60 events) played twice over had
// bayesperf's error reduction fall from 1.24x to 1.11x and its mean WAPE rise from
// 0.893 to 1.043 (Linux's 1.11); with the whole run kept, 1.26x and 0.892.
func wholeRunHistory(slices, n int) int {
	return max(min(slices+1, runHistoryBudget/(8*max(n*n, 1))), 64)
}

// Score feeds every estimator its observations and scores it against the truth.
func Score(obs Observations, opt Options) (*Result, error) {
	ents, dropped, err := estimators(obs, opt)
	if err != nil {
		return nil, err
	}
	return score(obs, opt, ents, dropped)
}

func score(obs Observations, opt Options, ents []entrant, dropped []string) (*Result, error) {
	n, S := len(obs.Events), len(obs.Truth)
	if len(obs.Kernel) != S || (obs.Own != nil && len(obs.Own) != S) {
		return nil, fmt.Errorf("score run: %d truth slices but %d/%d observed", S, len(obs.Kernel), len(obs.Own))
	}
	if S == 0 {
		return nil, fmt.Errorf("score run: no slices (the command ended before the first multiplexing interval?)")
	}
	window := opt.Window
	if window <= 0 {
		window = 25
	}
	ivs := replay.Intervals(S, window)
	// truth per interval per event (as replay.Summarize takes it), and per event per
	// interval (each event's series)
	byIv := make([][]float64, len(ivs))
	truth := make([][]float64, n)
	for e := range truth {
		truth[e] = make([]float64, len(ivs))
	}
	for k, iv := range ivs {
		byIv[k] = make([]float64, n)
		for t := iv[0]; t < iv[1]; t++ {
			for e := 0; e < n && e < len(obs.Truth[t]); e++ {
				byIv[k][e] += float64(obs.Truth[t][e])
			}
		}
		for e := range n {
			truth[e][k] = byIv[k][e]
		}
	}
	res := &Result{Report: replay.Report{Counters: opt.Counters, Events: n, Slices: S, Intervals: len(ivs)}, Dropped: dropped}
	res.PerEvent = make([]PerEvent, n)
	for e := range res.PerEvent {
		tot := 0.0
		for _, v := range truth[e] {
			tot += v
		}
		res.PerEvent[e] = PerEvent{Event: obs.Events[e], Truth: tot, Defined: tot > 0, Metrics: map[string]Metric{},
			Totals: map[string]inference.Estimate{}, Series: map[string][]float64{}, Truths: truth[e]}
	}
	answers := map[string][][]inference.Estimate{}
	for _, en := range ents {
		got, err := replay.Feed(en.est, en.slices, ivs, opt.Online, isNumerical)
		if err != nil {
			return nil, fmt.Errorf("feed %s: %w", en.name, err)
		}
		answers[en.name] = got
		ests := make([][]inference.Estimate, n)
		for _, a := range got {
			if len(a) != n {
				return nil, fmt.Errorf("estimate with %s: %d events, want %d", en.name, len(a), n)
			}
			for e := range n {
				ests[e] = append(ests[e], a[e])
			}
		}
		totals := en.est.Estimate(0, S)
		for e := range n {
			pe := &res.PerEvent[e]
			if e < len(totals) {
				pe.Totals[en.name] = totals[e]
			}
			pe.Series[en.name] = metrics.Values(ests[e])
		}
		res.Names = append(res.Names, en.name)
	}
	sum := replay.Summarize(byIv, answers, res.Names, Linux, obs.Events)
	res.Estimators, res.ErrorReduction = sum.Estimators, sum.ErrorReduction
	for _, name := range res.Names {
		for e, m := range sum.PerEvent[name] {
			pm := Metric{WAPE: m.WAPE, TotalError: m.TotalError, RA: m.RA, DTW: m.DTW}
			if !m.Defined {
				// The event never occurred: its ratios do not exist (null in JSON).
				nan := math.NaN()
				pm = Metric{WAPE: nan, TotalError: nan, RA: nan, DTW: nan}
			}
			if c, ok := m.Coverage95(); ok {
				pm.Coverage95 = &c
			}
			if m.HasSharpness {
				sh := m.Sharpness
				pm.Sharpness = &sh
			}
			res.PerEvent[e].Metrics[name] = pm
		}
	}
	return res, nil
}

func isNumerical(err error) bool {
	// A numerical failure is a status of one slice (the model keeps its state), not a
	// reason to abandon the run.
	return err != nil && errors.Is(err, model.ErrNumerical)
}
