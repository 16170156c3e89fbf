package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// The model's diagnostics: each logs per-trace and per-event figures that no test
// judges, and its comment says what they showed. All but TestOracleCovariance are
// skipped unless their environment variable is set; the model-diag-* targets of
// mk/model.mk set it.

// diagnostic skips t unless the environment variable env is set, naming the make target
// that sets it and the value it takes, and returns the variable's value.
func diagnostic(t *testing.T, target, env, value string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("diagnostic: make %s (%s=%s)", target, env, value)
	}
	return v
}

// diagTraces are the real-program traces that want names (comma separated), or all of
// them for "all".
func diagTraces(t *testing.T, want string) []string {
	t.Helper()
	var files []string
	for _, f := range realTraces(t) {
		if want == "all" || slices.Contains(strings.Split(want, ","), traceName(f)) {
			files = append(files, f)
		}
	}
	return files
}

// TestOracleCovariance is a diagnostic, not an acceptance test: it replaces what the
// model learns online (levels, spreads, correlations) by the same quantities computed
// from the whole true trace, with a static walk (persistence 0) and with the default
// persistence, on the kernel's round robin. It shows how much of the gap to the
// acceptance figure is learning and how much is the model itself. A last line does the
// same with the mean and covariance fitted, by EM for a Gaussian with missing values,
// to the multiplexed observations alone (what an offline pass at Finish could learn):
// how much of the oracle's gain a full-rank covariance learned from the schedule's
// co-counted slices recovers.
//
//	go test -run TestOracleCovariance -v ./inference/model/
func TestOracleCovariance(t *testing.T) {
	files := realTraces(t)
	type run struct {
		a      float64
		fitted bool
	}
	for _, r := range []run{{0, false}, {1 - defaultReversion, false}, {0, true}} {
		a := r.a
		lg, line := 0.0, ""
		for _, f := range files {
			tr, rels := traceOf(t, f)
			kern, err := replay.KernelSchedule(tr, realCounters, fixedOf(tr))
			if err != nil {
				t.Fatal(err)
			}
			o := trueWalk(tr)
			if r.fitted {
				o = fittedWalk(tr, replay.Simulate(tr, kern), 20)
			}
			md := oracleModel(t, f, tr, rels, o, a)
			cs := append(replay.Baselines(len(tr.Events), kern), replay.Contender{Estimator: md, Schedule: kern})
			red := replayScore(t, tr, replay.Options{Counters: realCounters}, cs...).ErrorReduction["bayesperf"]
			lg += math.Log(red)
			line += fmt.Sprintf(" %s %.2fx", traceName(f), red)
		}
		src := "true"
		if r.fitted {
			src = "EM-fitted"
		}
		t.Logf("%s covariance, persistence %.2f, kernel round robin: geometric mean %.2fx |%s", src, a, math.Exp(lg/float64(len(files))), line)
	}
}

// TestPerEventDiag is a diagnostic, skipped unless BAYESPERF_PEREVENT names traces (comma
// separated, or "all"): per real-program trace and event, the run's truth, the WAPE of
// linux, linear, bayesperf-rr and bayesperf (as TestRealTraces scores them), bayesperf's
// error reduction on the event and the event's coefficient of variation over the
// reporting intervals; then per trace the share of the summed |error| (each event's
// normalised by its total) in the first, the last and the other intervals: on cg-gzip,
// cg-sqlite, xz, sqlite and tar-gzip the first interval (a program's start-up, when most
// sparse events happen at once) carries 0.6 to 0.8 of bayesperf's (measured 2026-11-22).
//
//	BAYESPERF_PEREVENT=xz,go-vet go test -count=1 -run TestPerEventDiag -v ./inference/model/
func TestPerEventDiag(t *testing.T) {
	files := diagTraces(t, diagnostic(t, "model-diag-per-event", "BAYESPERF_PEREVENT", "traces"))
	var b strings.Builder
	ests := []string{"linux", "linear", "bayesperf-rr", "bayesperf"}
	for _, f := range files {
		name := traceName(f)
		res := realScore(t, f)
		fmt.Fprintf(&b, "\n== %s (%d slices, %d intervals): bayesperf %.2fx, bayesperf-rr %.2fx\n", name,
			res.Slices, res.Intervals, res.ErrorReduction["bayesperf"], res.ErrorReduction["bayesperf-rr"])
		fmt.Fprintf(&b, "%-34s %12s %7s %7s %7s %7s %7s %6s\n", "event", "truth", "linux", "linear", "bp-rr", "bp", "ratio", "cv")
		share := map[string][3]float64{}
		for e, ev := range res.EventNames {
			tot, sq := 0.0, 0.0
			for _, row := range res.Truth {
				tot += row[e]
				sq += row[e] * row[e]
			}
			n := float64(len(res.Truth))
			m := tot / n
			cv := math.Sqrt(math.Max(sq/n-m*m, 0)) / math.Max(m, 1e-9)
			fmt.Fprintf(&b, "%-34.34s %12.0f", ev, tot)
			for _, est := range ests {
				fmt.Fprintf(&b, " %7.3f", res.PerEvent[e].Metrics[est].WAPE)
			}
			fmt.Fprintf(&b, " %7.2f %6.2f\n", res.PerEvent[e].Metrics["linux"].WAPE/res.PerEvent[e].Metrics["bayesperf"].WAPE, cv)
			if tot == 0 {
				continue
			}
			for _, est := range []string{"linux", "bayesperf"} {
				s := share[est]
				for i := range res.Bounds {
					d := math.Abs(res.Estimates[est][i][e].Value-res.Truth[i][e]) / tot
					switch i {
					case 0:
						s[0] += d
					case len(res.Bounds) - 1:
						s[1] += d
					default:
						s[2] += d
					}
				}
				share[est] = s
			}
		}
		for _, est := range []string{"linux", "bayesperf"} {
			s := share[est]
			all := s[0] + s[1] + s[2]
			fmt.Fprintf(&b, "%s: share of the summed |error| in the first interval %.2f, the last %.2f, the others %.2f\n",
				est, s[0]/all, s[1]/all, s[2]/all)
		}
	}
	t.Log(b.String())
}

// medianMinCount is the least number of counts over a run for an event to enter the
// "median over events of at least N counts" line of TestMedianDiag. With 4 programmable
// counters and about 30 flexible events, each event is read in about one slice in eight:
// below 100 counts a run reads fewer than about 12 of them even when they are spread
// evenly (a relative standard error of a scaled total above 0.3), and these events
// come in bursts, so most of them are never read at all.
const medianMinCount = 100

// TestMedianDiag is a diagnostic for the acceptance criterion "a median WAPE at most half
// of linux's" (issue 4), skipped unless BAYESPERF_MEDIAN is set (to "all" or to trace
// names, comma separated). Per real-program trace it prints the median WAPE over the
// trace's events (those with counts) of linux, linear, bayesperf-rr, bayesperf and of
// three smoothers that are the model with its learned walk replaced (persistence 0):
//
//   - oracle-rr, oracle: TestOracleCovariance's true walk (levels, spreads and
//     correlations from the whole true trace), on the kernel's round robin and on ours.
//     It knows the true mean of an event that no reading ever sees: not a bound on what
//     can be inferred.
//   - oracle-read: the true correlations, but each event's level and spread only from
//     the slices our schedule reads it in (readWalk): what a learner that found the
//     program's structure exactly could reach.
//   - em: fittedWalk, mean and covariance fitted by EM to our schedule's observations
//     alone (an offline learner that exists).
//
// and "unread", the number of events whose count falls (95% or more) where our
// schedule does not read them. Then per trace the same medians over the events of at
// least medianMinCount counts, and the events around bayesperf's median: total count,
// the slices and reporting intervals with counts, the share of the count in slices our
// schedule reads ("read") and the round robin reads ("rd-rr"), each estimator's WAPE.
// The line "pooled" is the median over all (trace, event) pairs. These are for the
// record: the criterion is scored per trace, over all events, as TestRealTraces does.
//
// Measured 2026-11-22 (linux -> bayesperf, then the best of oracle-read and em): met on
// cg-sqlite, find, git, python; not met on cg-gzip 0.758 -> 0.746 (0.730), make 0.602 ->
// 0.411 (0.189), xz 1.0 -> 0.935 (0.896), find-grep 1.0 -> 1.0 (0.893), go-vet 0.957 ->
// 0.648 (0.527), sqlite 1.0 -> 1.0 (1.0), tar-gzip 1.0 -> 0.755 (0.630). Of these only
// make is within reach of a learner: its events lose their deviations within a gap.
// Persistence 0 (Options.Reversion 1) took make to 0.196 and the real traces from 2.07x
// to 1.73x. A persistence learned per event from the autocorrelation of its deviations
// from the level across the gaps between its readings (shrunk to the run's pooled
// value, that to 0.98) took make to 0.273 with the real traces at 2.07x, but the live
// traces fell from 1.72x to 1.64x (task-clock fixed) and sqlite's coverage95 to 0.79:
// not kept.
// On xz, find-grep, sqlite and tar-gzip 10 to 16 events count only where our schedule
// does not read them (start-up bursts of a few syscalls in one or two slices), so the
// median event is one no reading sees. Pooled 0.690 -> 0.331; over events of at least
// 100 counts bayesperf has half of linux's median on 8 of 11 traces (not cg-gzip, make,
// go-vet).
//
//	BAYESPERF_MEDIAN=all go test -count=1 -run TestMedianDiag -v ./inference/model/
//	BAYESPERF_MEDIAN=make BAYESPERF_MEDIAN_ALL=1 ...   (every event, not only the median's)
func TestMedianDiag(t *testing.T) {
	files := diagTraces(t, diagnostic(t, "model-diag-median", "BAYESPERF_MEDIAN", "traces"))
	ests := []string{"linux", "linear", "bayesperf-rr", "bayesperf", "oracle-rr", "oracle", "oracle-read", "em"}
	short := map[string]string{"linux": "linux", "linear": "linear", "bayesperf-rr": "bp-rr", "bayesperf": "bp",
		"oracle-rr": "or-rr", "oracle": "or", "oracle-read": "or-read", "em": "em"}
	var b strings.Builder
	pooled := map[string][]float64{}
	var large strings.Builder
	fmt.Fprintf(&large, "\nmedian WAPE over events of at least %d counts:\n%-10s %6s", medianMinCount, "trace", "events")
	fmt.Fprintf(&b, "\n%-10s %6s", "trace", "events")
	for _, est := range ests {
		fmt.Fprintf(&b, " %12s", est)
		fmt.Fprintf(&large, " %12s", est)
	}
	fmt.Fprintf(&b, " %6s %s\n", "unread", "half met by bayesperf / by oracle / by oracle-read")
	fmt.Fprintf(&large, " %s\n", "half met by bayesperf")
	var detail strings.Builder
	for _, f := range files {
		name := traceName(f)
		res, own := medianScore(t, f)
		tr, _ := traceOf(t, f)
		var defined []int
		for e := range res.EventNames {
			if res.PerEvent[e].Metrics["linux"].Defined {
				defined = append(defined, e)
			}
		}
		med := func(est string, keep func(e int) bool) (float64, int) {
			var w []float64
			for _, e := range defined {
				if keep(e) {
					w = append(w, res.PerEvent[e].Metrics[est].WAPE)
				}
			}
			return metrics.Median(w), len(w)
		}
		all := func(int) bool { return true }
		tot := make([]float64, len(res.EventNames))
		for _, row := range res.Truth {
			for e, c := range row {
				tot[e] += c
			}
		}
		big := func(e int) bool { return tot[e] >= medianMinCount }
		fmt.Fprintf(&b, "%-10s %6d", name, len(defined))
		_, nb := med("linux", big)
		fmt.Fprintf(&large, "%-10s %6d", name, nb)
		m, mbig := map[string]float64{}, map[string]float64{}
		for _, est := range ests {
			m[est], _ = med(est, all)
			mb, _ := med(est, big)
			fmt.Fprintf(&b, " %12.3f", m[est])
			fmt.Fprintf(&large, " %12.3f", mb)
			for _, e := range defined {
				pooled[est] = append(pooled[est], res.PerEvent[e].Metrics[est].WAPE)
			}
			mbig[est] = mb
		}
		unread := 0
		for _, e := range defined {
			if readShare(tr, own, e) < 0.05 {
				unread++
			}
		}
		half := func(est string) bool { return m[est] <= m["linux"]/2 }
		fmt.Fprintf(&b, " %6d %v / %v / %v\n", unread, half("bayesperf"), half("oracle") || half("oracle-rr"), half("oracle-read"))
		fmt.Fprintf(&large, " %v\n", mbig["bayesperf"] <= mbig["linux"]/2)

		// The events around bayesperf's median, with what the trace and the schedule
		// let any estimator see of them.
		order := slices.Clone(defined)
		sort.SliceStable(order, func(i, j int) bool {
			return res.PerEvent[order[i]].Metrics["bayesperf"].WAPE < res.PerEvent[order[j]].Metrics["bayesperf"].WAPE
		})
		n := len(order)
		fmt.Fprintf(&detail, "\n== %s: %d slices, %d intervals, %d events with counts (median: rank %d", name,
			res.Slices, res.Intervals, n, (n+1)/2)
		if n%2 == 0 {
			fmt.Fprintf(&detail, " and %d", n/2+1)
		}
		fmt.Fprintf(&detail, " of bayesperf's WAPEs)\n%-4s %-30s %10s %6s %5s %6s %6s", "rank", "event", "total", "slices", "ivals", "read", "rd-rr")
		for _, est := range ests {
			fmt.Fprintf(&detail, " %7s", short[est])
		}
		fmt.Fprintln(&detail)
		kern, _ := replay.KernelSchedule(tr, realCounters, fixedOf(tr))
		for r, e := range order {
			if (r < n/2-3 || r > n/2+3) && os.Getenv("BAYESPERF_MEDIAN_ALL") == "" {
				continue
			}
			nz := 0
			for _, row := range tr.Counts {
				if row[e] > 0 {
					nz++
				}
			}
			iv := 0
			for _, row := range res.Truth {
				if row[e] > 0 {
					iv++
				}
			}
			fmt.Fprintf(&detail, "%-4d %-30.30s %10.0f %6d %5d %6.2f %6.2f", r+1, res.EventNames[e], tot[e], nz, iv,
				readShare(tr, own, e), readShare(tr, kern, e))
			for _, est := range ests {
				fmt.Fprintf(&detail, " %7.3f", res.PerEvent[e].Metrics[est].WAPE)
			}
			fmt.Fprintln(&detail)
		}
	}
	fmt.Fprintf(&b, "%-10s %6d", "pooled", len(pooled["linux"]))
	for _, est := range ests {
		fmt.Fprintf(&b, " %12.3f", metrics.Median(pooled[est]))
	}
	fmt.Fprintln(&b)
	t.Log(b.String() + large.String() + detail.String())
}

// readShare is the share of event e's count over the run that falls in slices the
// schedule reads it in: what its own readings can say of it (1 for an always-read
// event; 0 for one whose every count falls where it is not read).
func readShare(tr *replay.Trace, s *schedule.Schedule, e int) float64 {
	var in, all float64
	for t, row := range tr.Counts {
		all += float64(row[e])
		for _, x := range s.Counted(t) {
			if int(x) == e {
				in += float64(row[e])
				break
			}
		}
	}
	if all == 0 {
		return math.NaN()
	}
	return in / all
}

// medianScore scores a trace as realScore does, plus the true-covariance oracle of
// TestOracleCovariance (persistence 0) on both schedules, readWalk's and fittedWalk's
// (EM on our schedule's observations) on ours, and returns the result and
// bayesperf's own schedule.
func medianScore(t *testing.T, path string) (*replay.Result, *schedule.Schedule) {
	t.Helper()
	tr, rels := traceOf(t, path)
	kern, own := traceSchedules(t, tr, rels, fixedOf(tr))
	model := func(name string) named { return named{mustNew(t, tr.Events, rels, Options{}), name} }
	oracle := func(name string, o *oracleWalk) named { return named{oracleModel(t, path, tr, rels, o, 0), name} }
	cs := append(replay.Baselines(len(tr.Events), kern),
		replay.Contender{Estimator: model("bayesperf-rr"), Schedule: kern},
		replay.Contender{Estimator: model("bayesperf"), Schedule: own},
		replay.Contender{Estimator: oracle("oracle-rr", trueWalk(tr)), Schedule: kern},
		replay.Contender{Estimator: oracle("oracle", trueWalk(tr)), Schedule: own},
		replay.Contender{Estimator: oracle("oracle-read", readWalk(tr, own)), Schedule: own},
		replay.Contender{Estimator: oracle("em", fittedWalk(tr, replay.Simulate(tr, own), 20)), Schedule: own})
	return replayScore(t, tr, replay.Options{Counters: realCounters}, cs...), own
}

// covModel replays a trace to bayesperf on its own schedule (as liveScore or
// realScore do) and returns the result with the finished model.
func covModel(t *testing.T, tr *replay.Trace, rels []relation.Relation, fixed []string) (*replay.Result, *Model) {
	t.Helper()
	_, own := traceSchedules(t, tr, rels, fixed)
	bp := mustNew(t, tr.Events, rels, Options{})
	return replayScore(t, tr, replay.Options{Counters: realCounters}, replay.Contender{Estimator: bp, Schedule: own}), bp
}

// TestCoverageDiag is a diagnostic, skipped unless BAYESPERF_COVDIAG is set: per trace,
// bayesperf's coverage95 split into exact, zero-truth and inferred pairs, the quantiles
// of |truth − value| / half-width over the inferred pairs (1 is the interval's edge),
// and the mean shares of the interval's variance (smoothed and level error, both scaled,
// and scatter), the mean interval scale, and the pooled scales (80% and the tail).
//
//	BAYESPERF_COVDIAG=1 go test -count=1 -run TestCoverageDiag -v ./inference/model/
func TestCoverageDiag(t *testing.T) {
	diagnostic(t, "model-diag-coverage", "BAYESPERF_COVDIAG", "1")
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-28s %6s %6s %6s %6s | %5s %5s %5s %5s | %5s %5s %5s | %5s\n", "trace", "cov", "exact", "zero", "infer", "q50", "q80", "q90", "q95", "sd", "lvl", "scat", "scale")
	do := func(name string, tr *replay.Trace, rels []relation.Relation, fixed []string) {
		res, md := covModel(t, tr, rels, fixed)
		est := res.Estimates["bayesperf"]
		var in, tot, ex, zero, inf, infIn int
		var rs []float64
		var vsd, vlv, vsc, sc float64
		for i, bd := range res.Bounds {
			mean, sd := md.Posterior(bd[0], bd[1])
			for e := range res.EventNames {
				x := est[i][e]
				if !x.HasInterval {
					continue
				}
				c := res.Truth[i][e]
				tot++
				ok := x.Lo <= c && c <= x.Hi
				if ok {
					in++
				}
				switch {
				case x.Status == inference.StatusExact:
					ex++
				case c == 0:
					zero++
				default:
					inf++
					if ok {
						infIn++
					}
					hw := (x.Hi - x.Lo) / 2
					if c < x.Value {
						hw = x.Value - x.Lo
					} else {
						hw = x.Hi - x.Value
					}
					rs = append(rs, math.Abs(c-x.Value)/math.Max(hw, 1e-9))
					counted, un := md.countedIn(e, bd[0], bd[1])
					f := md.lrn.intervalScale(e)
					a := f * f * sd[e] * sd[e]
					lv := f * md.levelError(e, bd[0], bd[1])
					lv *= lv
					s := md.scatter(e, bd[0], bd[1], counted, un, md.withCounts(e, bd[0], bd[1], mean[e]))
					v := a + lv + s
					if v > 0 {
						vsd += a / v
						vlv += lv / v
						vsc += s / v
					}
					sc += md.lrn.intervalScale(e)
				}
			}
		}
		sort.Float64s(rs)
		q := func(p float64) float64 {
			if len(rs) == 0 {
				return math.NaN()
			}
			return rs[min(len(rs)-1, int(p*float64(len(rs))))]
		}
		n := float64(max(inf, 1))
		fmt.Fprintf(&b, "%-28.28s %6.3f %6d %6d %6d | %5.2f %5.2f %5.2f %5.2f | %5.2f %5.2f %5.2f | %5.2f  infcov %.3f c80 %.2f tail %.2f\n", name,
			float64(in)/float64(tot), ex, zero, inf, q(0.5), q(0.8), q(0.9), q(0.95), vsd/n, vlv/n, vsc/n, sc/n, float64(infIn)/n, math.Exp(md.lrn.logc80), math.Exp(md.lrn.logc95-md.lrn.logc80))
	}
	for _, f := range liveTraces(t) {
		tr := timedTrace(t, f)
		do(traceName(f), tr, relation.Bind(relation.Builtins(), tr.Events), []string{"task-clock"})
	}
	for _, f := range realTraces(t) {
		tr, rels := traceOf(t, f)
		do(traceName(f), tr, rels, fixedOf(tr))
	}
	t.Log(b.String())
}

// TestLiveCut is a diagnostic, skipped unless BAYESPERF_LIVE_CUT=N is set: it replays
// the live traces as TestLiveTraces' drop-in emulation does (no fixed counter, task-clock
// a clock as vstage makes it), each cut to its first N slices after skipping
// BAYESPERF_LIVE_SKIP=S, with a fresh model, and logs the drop-in, online and smoothed
// figures against linux. BAYESPERF_LIVE_EVENT=name also logs that event's intervals on
// the drop-in trace (live-dropin18-*); BAYESPERF_LIVE_BIAS=1 every event's WAPEs.
//
// What it showed (2026-11-22, with Clocks): cut to 500 slices, drop-in 1.60x; the
// dropin18 trace 1.67x on its first 500 slices but 2.44x and 2.42x on slices 250-750
// and 500-1000 with a model as fresh: the start of the mixed workload is harder for
// bayesperf than the rest (bursts that Linux's scaling happens to catch), not a model
// that has not learned yet. Priors did not matter: volatility prior 0.2/0.5/1.0, its
// weight 0/2/8 pseudo-observations and Window 16/32/64 all gave 1.58x-1.60x. With the
// schedule's no-carry default (inference/schedule d66acf6): 1.70x cut to 500 slices,
// 1.80x whole; dropin18 2.15x, 2.56x, 2.28x on slices 0-500, 250-750, 500-1000; and
// levelWindow 6/8/12, actMinPairs 2/3/6, actGain 0.6/0.8/0.9, actWindow 8/16 all within
// 0.02x of that, cut or whole.
//
//	BAYESPERF_LIVE_CUT=500 go test -count=1 -run TestLiveCut -v ./inference/model/
func TestLiveCut(t *testing.T) {
	cut := diagnostic(t, "model-diag-cut", "BAYESPERF_LIVE_CUT", "N")
	n, err := strconv.Atoi(cut)
	if err != nil || n <= 0 {
		t.Fatalf("BAYESPERF_LIVE_CUT=%s: want a number of slices", cut)
	}
	skip, _ := strconv.Atoi(os.Getenv("BAYESPERF_LIVE_SKIP"))
	files := liveTraces(t)
	var lg, lo, ls float64
	var b strings.Builder
	for _, f := range files {
		tr := timedTrace(t, f)
		from, to := min(skip, tr.Slices()), min(skip+n, tr.Slices())
		tr.Counts, tr.Durations = tr.Counts[from:to], tr.Durations[from:to]
		for k, v := range tr.Meta {
			tr.Meta[k] = v[from:to]
		}
		if tr.Slices() == 0 {
			continue
		}
		res := dropinScore(t, tr, nil)
		rels, kern, own := liveSchedules(t, tr, nil)
		cs := append(replay.Baselines(len(tr.Events), kern)[:1], replay.Contender{Estimator: mustNew(t, tr.Events, rels, dropinOptions(tr)), Schedule: own})
		smoothed := replayScore(t, tr, replay.Options{Counters: realCounters}, cs...)
		d, o, s := res.ErrorReduction["bayesperf-dropin"], res.ErrorReduction["bayesperf"], smoothed.ErrorReduction["bayesperf"]
		lg += math.Log(d)
		lo += math.Log(o)
		ls += math.Log(s)
		fmt.Fprintf(&b, "%-36s dropin %.2fx online %.2fx smoothed %.2fx\n", filepath.Base(f), d, o, s)
		if ev := os.Getenv("BAYESPERF_LIVE_EVENT"); ev != "" && strings.Contains(f, "dropin18") && tr.EventIndex(ev) >= 0 {
			e := tr.EventIndex(ev)
			for i := range res.Truth {
				fmt.Fprintf(&b, "  %3d truth %10.0f linux %10.0f dropin %10.0f online %10.0f\n", i, res.Truth[i][e],
					res.Estimates["linux"][i][e].Value, res.Estimates["bayesperf-dropin"][i][e].Value, res.Estimates["bayesperf"][i][e].Value)
			}
		}
		if os.Getenv("BAYESPERF_LIVE_BIAS") != "" {
			for e, ev := range res.EventNames {
				fmt.Fprintf(&b, "   %-32s WAPE linux %.3f drop-in %.3f\n", ev, res.PerEvent[e].Metrics["linux"].WAPE, res.PerEvent[e].Metrics["bayesperf-dropin"].WAPE)
			}
		}
	}
	k := float64(len(files))
	fmt.Fprintf(&b, "geometric means over %d traces: drop-in %.2fx, online %.2fx, smoothed %.2fx\n", len(files), math.Exp(lg/k), math.Exp(lo/k), math.Exp(ls/k))
	t.Log(b.String())
}
