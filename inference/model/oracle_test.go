package model

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// TestOracleCovariance is a diagnostic, not an acceptance test: it replaces what the
// model learns online (levels, spreads, correlations) by the same quantities computed
// from the whole true trace, with a static walk (persistence 0) and with the default
// persistence, on the kernel's round robin. It shows how much of the gap to the
// acceptance figure is learning and how much is the model itself.
//
//	go test -run TestOracleCovariance -v ./inference/model/
func TestOracleCovariance(t *testing.T) {
	files, _ := filepath.Glob("../replay/testdata/*.csv")
	mine, _ := filepath.Glob("testdata/*.csv")
	files = append(files, mine...)
	for _, a := range []float64{0, 1 - defaultReversion} {
		lg, line := 0.0, ""
		for _, f := range files {
			tr, rels := traceOf(t, f)
			var fixed []string
			for _, x := range realFixed {
				if tr.EventIndex(x) >= 0 {
					fixed = append(fixed, x)
				}
			}
			kern, err := replay.KernelSchedule(tr, realCounters, fixed)
			if err != nil {
				t.Fatal(err)
			}
			md, err := New(tr.Events, rels, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if md.k != len(tr.Events) {
				t.Fatalf("%s: exact identities: the oracle needs one state per event", f)
			}
			md.lrn.oracle = trueWalk(tr)
			md.lrn.oracleA = a
			cs := append(replay.Baselines(len(tr.Events), kern), replay.Contender{Estimator: md, Schedule: kern})
			res, err := replay.Score(tr, cs, replay.Options{Counters: realCounters})
			if err != nil {
				t.Fatal(err)
			}
			r := res.ErrorReduction["bayesperf"]
			lg += math.Log(r)
			line += fmt.Sprintf(" %s %.2fx", strings.TrimSuffix(filepath.Base(f), ".csv"), r)
		}
		t.Logf("true covariance, persistence %.2f, kernel round robin: geometric mean %.2fx |%s", a, math.Exp(lg/float64(len(files))), line)
	}
}

// trueWalk computes each event's mean rate, standard deviation and the correlations
// over the whole trace (correlations shrunk by 3% so that the matrix is well inside the
// positive definite cone).
func trueWalk(tr *replay.Trace) *oracleWalk {
	n, T := len(tr.Events), len(tr.Counts)
	mean := make([]float64, n)
	for t, row := range tr.Counts {
		for e, c := range row {
			mean[e] += float64(c) / tr.Durations[t] / float64(T)
		}
	}
	cov := make([]float64, n*n)
	for t, row := range tr.Counts {
		for i := range n {
			di := float64(row[i])/tr.Durations[t] - mean[i]
			for j := range n {
				cov[i*n+j] += di * (float64(row[j])/tr.Durations[t] - mean[j]) / float64(T)
			}
		}
	}
	o := &oracleWalk{level: mean, sd: make([]float64, n), corr: make([]float64, n*n)}
	for i := range n {
		o.sd[i] = math.Sqrt(cov[i*n+i]) + 1e-12
	}
	for i := range n {
		for j := range n {
			o.corr[i*n+j] = 0.97 * cov[i*n+j] / (o.sd[i] * o.sd[j])
		}
		o.corr[i*n+i] = 1
	}
	return o
}
