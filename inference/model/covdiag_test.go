package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
)

// covModel replays a trace to bayesperf on its own schedule (as liveScore or
// realScore do) and returns the result with the finished model.
func covModel(t *testing.T, tr *replay.Trace, rels []relation.Relation, fixed []string) (*replay.Result, *Model) {
	t.Helper()
	_, own := traceSchedules(t, tr, rels, fixed)
	bp := mustNew(t, tr.Events, rels, Options{})
	res, err := replay.Score(tr, []replay.Contender{{Estimator: bp, Schedule: own}}, replay.Options{Counters: realCounters})
	if err != nil {
		t.Fatal(err)
	}
	return res, bp
}

// TestCoverageDiag is a diagnostic, skipped unless BAYESPERF_COVDIAG is set: per trace,
// bayesperf's coverage95 split into exact, zero-truth and inferred pairs, the quantiles
// of |truth − value| / half-width over the inferred pairs (1 is the interval's edge),
// and the mean shares of the interval's variance (smoothed and level error, both scaled,
// and scatter), the mean interval scale, and the pooled scales (80% and the tail).
//
//	BAYESPERF_COVDIAG=1 go test -count=1 -run TestCoverageDiag -v ./inference/model/
func TestCoverageDiag(t *testing.T) {
	if os.Getenv("BAYESPERF_COVDIAG") == "" {
		t.Skip("diagnostic: make model-diag-coverage (BAYESPERF_COVDIAG=1)")
	}
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
					_, un := md.countedIn(e, bd[0], bd[1])
					f := md.lrn.intervalScale(e)
					a := f * f * sd[e] * sd[e]
					lv := f * md.levelError(e, bd[0], bd[1])
					lv *= lv
					s := md.scatter(e, un, bd[1]-bd[0], md.withCounts(e, bd[0], bd[1], mean[e]))
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
	files, _ := filepath.Glob("../../internal/eval/testdata/live-*.csv")
	mine, _ := filepath.Glob("testdata/live/*.csv")
	for _, f := range append(files, mine...) {
		tr, err := replay.ReadFile(f, replay.ReadOptions{TimeColumn: "time_ns"})
		if err != nil {
			t.Fatal(err)
		}
		rels := relation.Bind(relation.Builtins(), tr.Events)
		do(strings.TrimSuffix(filepath.Base(f), ".csv"), tr, rels, []string{"task-clock"})
	}
	files, _ = filepath.Glob("../replay/testdata/*.csv")
	mine, _ = filepath.Glob("testdata/*.csv")
	for _, f := range append(files, mine...) {
		tr, rels := traceOf(t, f)
		var fixed []string
		for _, x := range realFixed {
			if tr.EventIndex(x) >= 0 {
				fixed = append(fixed, x)
			}
		}
		do(strings.TrimSuffix(filepath.Base(f), ".csv"), tr, rels, fixed)
	}
	t.Log(b.String())
}
