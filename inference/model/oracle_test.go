package model

import (
	"math"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

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
			// Σ_OO⁻¹ from its Cholesky factor: the rows of Σ_OO⁻¹·I.
			eye, ones := make([]float64, no*no), make([]float64, no)
			for a := range no {
				eye[a*no+a], ones[a] = 1, 1
			}
			inv := make([]float64, no*no)
			cholSolveRows(l, no, eye, ones, inv)
			solve := func(b []float64) []float64 { // Σ_OO⁻¹·b
				out := make([]float64, no)
				for a := range no {
					for c, v := range b {
						out[a] += inv[a*no+c] * v
					}
				}
				return out
			}
			d := make([]float64, no)
			for a, i := range on {
				d[a] = x[i] - mu[i]
			}
			w := solve(d)
			gain := make([][]float64, len(off)) // Σ_OO⁻¹ Σ_O,m per uncounted m
			for p, m := range off {
				v := mu[m]
				col := make([]float64, no)
				for a, i := range on {
					v += S[m*n+i] * w[a]
					col[a] = S[m*n+i]
				}
				x[m] = v
				gain[p] = solve(col)
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

// oracleModel is a model of tr's events whose learned walk is replaced by the oracle
// o with persistence a (the trace at path: for the message).
func oracleModel(t *testing.T, path string, tr *replay.Trace, rels []relation.Relation, o *oracleWalk, a float64) *Model {
	t.Helper()
	md := mustNew(t, tr.Events, rels, Options{})
	if md.k != len(tr.Events) {
		t.Fatalf("%s: exact identities: the oracle needs one state per event", path)
	}
	md.lrn.oracle, md.lrn.oracleA = o, a
	return md
}
