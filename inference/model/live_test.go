package model

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// liveBias logs, per event, the run's truth and the signed error of the estimators'
// totals (sum over intervals): a model biased low shows as a negative column.
func liveBias(res *replay.Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-32s %12s %8s %8s %8s %8s | WAPE %6s %6s %6s %6s\n", "event", "truth", "linux", "linear", "bp-rr", "bp", "linux", "linear", "bp-rr", "bp")
	for e, ev := range res.EventNames {
		tot := 0.0
		for _, row := range res.Truth {
			tot += row[e]
		}
		fmt.Fprintf(&b, "%-32s %12.0f", ev, tot)
		for _, est := range []string{"linux", "linear", "bayesperf-rr", "bayesperf"} {
			s := 0.0
			for _, row := range res.Estimates[est] {
				s += row[e].Value
			}
			fmt.Fprintf(&b, " %+7.1f%%", 100*(s-tot)/math.Max(tot, 1))
		}
		b.WriteString(" |     ")
		for _, est := range []string{"linux", "linear", "bayesperf-rr", "bayesperf"} {
			fmt.Fprintf(&b, " %6.3f", res.PerEvent[e].Metrics[est].WAPE)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestLiveTraces replays the live traces recorded under the virtual PMU (24 software
// events and tracepoints on 4 counters), with task-clock on a fixed counter (as eval
// and make run do) and without fixed counters (the drop-in path's situation), and
// logs per trace the error reduction of bayesperf and bayesperf-rr, linear's, the
// coverage of the 95% intervals and the median WAPE; without fixed counters also the
// figure of bayesperf served as the drop-in path serves it (dropin; skipped with
// -short, as it smooths from the start at every read). BAYESPERF_LIVE_BIAS=1 also logs
// every event's signed error of the run's total and its WAPE.
//
//	go test -count=1 -run TestLiveTraces -v ./inference/model/
func TestLiveTraces(t *testing.T) {
	files := liveTraces(t)
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-22s %-6s %-13s %9s %9s %11s %10s\n", "trace", "fixed", "estimator", "reduction", "meanWAPE", "medianWAPE", "coverage95")
	gm := map[string]float64{}
	var covs []float64
	for _, fx := range []string{"task-clock", ""} {
		var fixed []string
		label := "none"
		if fx != "" {
			fixed, label = []string{fx}, fx
		}
		lg := map[string]float64{}
		for _, f := range files {
			res := liveScore(t, f, fixed, Options{})
			name := traceName(f)
			for _, est := range []string{"linux", "linear", "bayesperf-rr", "bayesperf"} {
				s := res.Estimators[est]
				cov := "-"
				if s.Coverage95 != nil {
					cov = fmt.Sprintf("%.3f", *s.Coverage95)
					covs = append(covs, *s.Coverage95)
				}
				red := res.ErrorReduction[est]
				if est == "linux" {
					red = 1 // the baseline of the reductions
				}
				lg[est] += math.Log(red)
				fmt.Fprintf(&report, "%-22s %-6.6s %-13s %8.2fx %9.3f %11.3f %10s\n", name, label, est,
					red, s.WAPE, s.MedianWAPE, cov)
			}
			if fx == "" && !testing.Short() {
				// The drop-in path's situation (slow: every read smooths from the start).
				cum, onl := liveDropin(t, f, fixed)
				lg["dropin"] += math.Log(cum)
				lg["online"] += math.Log(onl)
				fmt.Fprintf(&report, "%-22s %-6.6s %-13s %8.2fx (online values %.2fx)\n", name, label, "drop-in", cum, onl)
			}
			if os.Getenv("BAYESPERF_LIVE_BIAS") != "" {
				report.WriteString(liveBias(res))
			}
		}
		for _, est := range []string{"linear", "bayesperf-rr", "bayesperf", "online", "dropin"} {
			if _, ok := lg[est]; !ok {
				continue
			}
			g := math.Exp(lg[est] / float64(len(files)))
			gm[est+"/"+label] = g
			fmt.Fprintf(&report, "geometric mean over %d traces, fixed %s, %s: %.2fx\n", len(files), label, est, g)
		}
	}
	t.Log(report.String())
	// A regression guard, not the acceptance figure (2x, issue 5): replay and model are
	// deterministic, so these figures move only when the code does. Measured
	// 2026-11-22 over the 8 traces: task-clock fixed, bayesperf 1.72x, bayesperf-rr
	// 1.16x; no fixed counter, bayesperf 1.62x, bayesperf-rr 1.16x, served as the
	// drop-in path serves it 1.52x (online values 1.56x); the drop-in (and its online
	// values) then told, as vstage tells the model, that task-clock is the enabled time
	// (Options.Clocks): 1.75x (1.79x). With inference/schedule's overlap schedule
	// carrying no group without fixed counters either (d66acf6): no fixed counter,
	// bayesperf 1.68x, drop-in 1.80x (online values 1.84x). With Finish's second pass
	// (refilter; final values only, and only where an event is always counted):
	// task-clock fixed, bayesperf 1.72x (1.717x -> 1.718x), bayesperf-rr 1.17x; the rest
	// unchanged. The second pass also where no event is (2026-11-29): no fixed
	// counter, bayesperf 1.66x -> 1.67x, bayesperf-rr 1.16x -> 1.18x.
	for key, floor := range map[string]float64{
		"bayesperf/task-clock": 1.67, "bayesperf-rr/task-clock": 1.11,
		"bayesperf/none": 1.63, "bayesperf-rr/none": 1.11,
		"dropin/none": 1.75,
	} {
		if _, ok := gm[key]; !ok && testing.Short() {
			continue
		}
		if gm[key] < floor {
			t.Errorf("error reduction fell: %s %.2fx, guard %.2fx", key, gm[key], floor)
		}
	}
	// The intervals: near 95% on average (each trace is short, so one may stray).
	// Measured 2026-11-22 with the scatter kept out of the calibrated scale: bayesperf
	// 0.910-0.978 per trace, the mean over bayesperf and bayesperf-rr 0.956 (before:
	// 0.972-0.998, mean 0.981); the second pass (refilter) left them so.
	mc := 0.0
	for _, c := range covs {
		mc += c / float64(len(covs))
	}
	if mc < 0.90 || mc > 0.98 {
		t.Errorf("mean coverage95 %.3f: the intervals are no longer calibrated", mc)
	}
}
