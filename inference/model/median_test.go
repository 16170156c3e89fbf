package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

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
	want := os.Getenv("BAYESPERF_MEDIAN")
	if want == "" {
		t.Skip("diagnostic: make model-diag-median (BAYESPERF_MEDIAN=traces)")
	}
	files, _ := filepath.Glob("../replay/testdata/*.csv")
	mine, _ := filepath.Glob("testdata/*.csv")
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
	for _, f := range append(files, mine...) {
		name := strings.TrimSuffix(filepath.Base(f), ".csv")
		if want != "all" && !strings.Contains(","+want+",", ","+name+",") {
			continue
		}
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

// fixedOf are the events of realFixed in the trace.
func fixedOf(tr *replay.Trace) []string {
	var fixed []string
	for _, f := range realFixed {
		if tr.EventIndex(f) >= 0 {
			fixed = append(fixed, f)
		}
	}
	return fixed
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

// readWalk is trueWalk with each event's level and spread taken only from the slices
// the schedule reads it in: the correlations still come from the whole true trace (the
// program's structure, which a learner could at best discover), but an event's scale
// only from what its own readings show. An event the schedule never reads while it
// counts has level 0 and no spread here, where trueWalk hands its true mean over the
// run to the smoother: on a short trace (sqlite: 31 slices in 2 intervals) that mean is
// nearly the answer.
func readWalk(tr *replay.Trace, s *schedule.Schedule) *oracleWalk {
	o := trueWalk(tr)
	n := len(tr.Events)
	sum, sq, cnt := make([]float64, n), make([]float64, n), make([]float64, n)
	for t, row := range tr.Counts {
		for _, e := range s.Counted(t) {
			if int(e) < 0 || int(e) >= n {
				continue
			}
			y := float64(row[e]) / tr.Durations[t]
			sum[e] += y
			sq[e] += y * y
			cnt[e]++
		}
	}
	for e := range n {
		o.level[e], o.sd[e] = 0, 1e-12
		if cnt[e] > 0 {
			m := sum[e] / cnt[e]
			o.level[e] = m
			o.sd[e] = math.Sqrt(math.Max(sq[e]/cnt[e]-m*m, 0)) + 1e-12
		}
	}
	return o
}

// medianScore scores a trace as realScore does, plus the true-covariance oracle of
// TestOracleCovariance (persistence 0) on both schedules, readWalk's and fittedWalk's
// (EM on our schedule's observations) on ours, and returns the result and
// bayesperf's own schedule.
func medianScore(t *testing.T, path string) (*replay.Result, *schedule.Schedule) {
	t.Helper()
	tr, rels := traceOf(t, path)
	kern, own := traceSchedules(t, tr, rels, fixedOf(tr))
	mk := func(name string, oracle *oracleWalk) named {
		md := mustNew(t, tr.Events, rels, Options{})
		if oracle != nil {
			if md.k != len(tr.Events) {
				t.Fatalf("%s: exact identities: the oracle needs one state per event", path)
			}
			md.lrn.oracle, md.lrn.oracleA = oracle, 0
		}
		return named{md, name}
	}
	cs := replay.Baselines(len(tr.Events), kern)
	cs = append(cs,
		replay.Contender{Estimator: mk("bayesperf-rr", nil), Schedule: kern},
		replay.Contender{Estimator: mk("bayesperf", nil), Schedule: own},
		replay.Contender{Estimator: mk("oracle-rr", trueWalk(tr)), Schedule: kern},
		replay.Contender{Estimator: mk("oracle", trueWalk(tr)), Schedule: own},
		replay.Contender{Estimator: mk("oracle-read", readWalk(tr, own)), Schedule: own},
		replay.Contender{Estimator: mk("em", fittedWalk(tr, replay.Simulate(tr, own), 20)), Schedule: own})
	res, err := replay.Score(tr, cs, replay.Options{Counters: realCounters})
	if err != nil {
		t.Fatal(err)
	}
	return res, own
}
