package model

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/replay"
)

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
	files, _ := filepath.Glob("../replay/testdata/*.csv")
	mine, _ := filepath.Glob("testdata/*.csv")
	files = append(files, mine...)
	type run struct {
		a      float64
		fitted bool
	}
	for _, r := range []run{{0, false}, {1 - defaultReversion, false}, {0, true}} {
		a := r.a
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
			md := mustNew(t, tr.Events, rels, Options{})
			if md.k != len(tr.Events) {
				t.Fatalf("%s: exact identities: the oracle needs one state per event", f)
			}
			md.lrn.oracle = trueWalk(tr)
			if r.fitted {
				md.lrn.oracle = fittedWalk(tr, replay.Simulate(tr, kern), 20)
			}
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
		src := "true"
		if r.fitted {
			src = "EM-fitted"
		}
		t.Logf("%s covariance, persistence %.2f, kernel round robin: geometric mean %.2fx |%s", src, a, math.Exp(lg/float64(len(files))), line)
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

// fittedWalk is trueWalk's quantities estimated from the multiplexed slices only: the
// mean and covariance of the per-slice rates by EM for a Gaussian with missing values
// (E: each slice's uncounted rates given its counted ones; M: moments of the completed
// data), started from the per-event moments of the counted slices, correlations shrunk
// by 3% as in trueWalk.
func fittedWalk(tr *replay.Trace, obs []inference.Slice, iters int) *oracleWalk {
	n := len(tr.Events)
	mu := make([]float64, n)
	S := make([]float64, n*n)
	cnt := make([]float64, n)
	rate := func(s inference.Slice, r inference.Reading) float64 { return float64(r.Count) / s.Duration }
	whole := func(r inference.Reading) bool { return r.Running > 0 && r.Running >= r.Enabled }
	for _, s := range obs {
		for _, r := range s.Readings {
			if whole(r) {
				y := rate(s, r)
				mu[r.Event] += y
				S[int(r.Event)*(n+1)] += y * y
				cnt[r.Event]++
			}
		}
	}
	for e := range n {
		if cnt[e] > 0 {
			mu[e] /= cnt[e]
			S[e*(n+1)] = S[e*(n+1)]/cnt[e] - mu[e]*mu[e]
		}
		S[e*(n+1)] = math.Max(S[e*(n+1)], 1e-6)
	}
	x := make([]float64, n)
	for range iters {
		sx := make([]float64, n)
		sxx := make([]float64, n*n)
		for _, s := range obs {
			var on, off []int
			counted := make([]bool, n)
			for _, r := range s.Readings {
				if whole(r) {
					counted[r.Event] = true
					x[r.Event] = rate(s, r)
				}
			}
			for e := range n {
				if counted[e] {
					on = append(on, e)
				} else {
					off = append(off, e)
				}
			}
			no := len(on)
			l := make([]float64, no*no)
			for a, i := range on {
				for b, j := range on {
					l[a*no+b] = S[i*n+j]
				}
				l[a*no+a] += 1e-9*S[i*n+i] + 1e-12
			}
			if !cholesky(l, no) {
				continue
			}
			w := make([]float64, no)
			for a, i := range on {
				w[a] = x[i] - mu[i]
			}
			cholSolveVec(l, no, w)
			gain := make([][]float64, len(off)) // Σ_OO⁻¹ Σ_O,m per uncounted m
			for p, m := range off {
				v := mu[m]
				col := make([]float64, no)
				for a, i := range on {
					v += S[m*n+i] * w[a]
					col[a] = S[m*n+i]
				}
				x[m] = v
				cholSolveVec(l, no, col)
				gain[p] = col
			}
			for i := range n {
				sx[i] += x[i]
				for j := range n {
					sxx[i*n+j] += x[i] * x[j]
				}
			}
			for p, m := range off {
				for _, m2 := range off {
					c := S[m*n+m2]
					for a, i := range on {
						c -= S[m2*n+i] * gain[p][a]
					}
					sxx[m*n+m2] += c
				}
			}
		}
		T := float64(len(obs))
		for i := range n {
			mu[i] = sx[i] / T
		}
		for i := range n {
			for j := range n {
				S[i*n+j] = sxx[i*n+j]/T - mu[i]*mu[j]
			}
		}
	}
	o := &oracleWalk{level: slices.Clone(mu), sd: make([]float64, n), corr: make([]float64, n*n)}
	for i := range n {
		o.sd[i] = math.Sqrt(math.Max(S[i*n+i], 0)) + 1e-12
	}
	for i := range n {
		for j := range n {
			o.corr[i*n+j] = 0.97 * S[i*n+j] / (o.sd[i] * o.sd[j])
		}
		o.corr[i*n+i] = 1
	}
	return o
}

// cholSolveVec solves L·Lᵀ·x = b in place for the lower-triangular factor in l.
func cholSolveVec(l []float64, k int, b []float64) {
	for i := range k {
		s := b[i]
		for j := range i {
			s -= l[i*k+j] * b[j]
		}
		b[i] = s / l[i*k+i]
	}
	for i := k - 1; i >= 0; i-- {
		s := b[i]
		for j := i + 1; j < k; j++ {
			s -= l[j*k+i] * b[j]
		}
		b[i] = s / l[i*k+i]
	}
}
