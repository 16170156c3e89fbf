package model

import (
	"math"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// TestReconcileHoldsExactInequalities: reported values that break an exact inequality
// are moved to it in the metric of their variances (two equally uncertain values meet
// halfway; an exact value does not move, the inferred one goes to it), and values that
// keep it are left alone. Inequalities with a tolerance are not imposed.
func TestReconcileHoldsExactInequalities(t *testing.T) {
	md := mustNew(t, []string{"misses", "accesses"}, []relation.Relation{mustRelation(t, "misses <= accesses")}, Options{})
	inferred := func(v, sd float64) inference.Estimate {
		h := md.quantQ * sd
		return inference.Estimate{Value: v, Lo: v - h, Hi: v + h, HasInterval: true, Status: inference.StatusInferred}
	}
	exact := func(v float64) inference.Estimate {
		return inference.Estimate{Value: v, Lo: v, Hi: v, HasInterval: true, Status: inference.StatusExact}
	}
	for _, c := range []struct {
		name     string
		in       []inference.Estimate
		want     [2]float64
		coverOld bool
	}{
		{"equal variances meet halfway", []inference.Estimate{inferred(100, 10), inferred(10, 10)}, [2]float64{55, 55}, true},
		{"the less certain moves more", []inference.Estimate{inferred(100, 30), inferred(10, 10)}, [2]float64{19, 19}, true},
		{"an exact value stays", []inference.Estimate{inferred(100, 10), exact(10)}, [2]float64{10, 10}, true},
		{"kept: nothing moves", []inference.Estimate{inferred(5, 10), inferred(10, 10)}, [2]float64{5, 10}, false},
	} {
		out := append([]inference.Estimate(nil), c.in...)
		md.reconcile(out, make([]float64, 2))
		for e, w := range c.want {
			if math.Abs(out[e].Value-w) > 1e-6*w {
				t.Errorf("%s: event %d = %.4f, want %.4f", c.name, e, out[e].Value, w)
			}
			if out[e].Lo > math.Min(out[e].Value, c.in[e].Value) || out[e].Hi < math.Max(out[e].Value, c.in[e].Value) {
				t.Errorf("%s: event %d's interval [%.2f, %.2f] lost %.2f or its old value %.2f", c.name, e, out[e].Lo, out[e].Hi, out[e].Value, c.in[e].Value)
			}
		}
	}
	tolerant := mustRelation(t, "misses <= accesses")
	tolerant.Tol = 1e-3
	soft := mustNew(t, []string{"misses", "accesses"}, []relation.Relation{tolerant}, Options{})
	out := []inference.Estimate{inferred(100, 10), inferred(10, 10)}
	soft.reconcile(out, make([]float64, 2))
	if out[0].Value != 100 || out[1].Value != 10 {
		t.Errorf("an inequality with a tolerance was imposed: %.2f, %.2f", out[0].Value, out[1].Value)
	}
}

// TestReportedValuesKeepExactInequalities replays the corpus's tuning-half callgrind
// traces (where a start-up burst of last-level instruction misses, read once and
// carried over the slices after it, came out at 3152 in an interval whose instruction
// misses came out at 13) and checks that every interval's reported values keep every
// inequality of callgrind.rel.
func TestReportedValuesKeepExactInequalities(t *testing.T) {
	rels := callgrindRelations(t, "../replay/testdata/corpus")
	for _, name := range []string{"cg-awk.csv", "cg-sort.csv", "cg-jq.csv"} {
		tr, ivs, ans := corpusReplay(t, name)
		idx := map[string]int{}
		for i, e := range tr.Events {
			idx[e] = i
		}
		checked := 0
		for _, r := range rels {
			l, lok := r.LHS.(relation.Event)
			h, hok := r.RHS.(relation.Event)
			if r.Op != relation.Le || !lok || !hok || r.Tol != 0 {
				continue
			}
			lo, hi := idx[l.Name], idx[h.Name]
			for k, est := range ans {
				checked++
				if a, b := est[lo].Value, est[hi].Value; a > b*(1+1e-9)+1e-6 {
					t.Errorf("%s, interval %v: %s = %.1f above %s = %.1f (%s)", name, ivs[k], tr.Events[lo], a, tr.Events[hi], b, r.String())
				}
			}
		}
		if checked == 0 {
			t.Fatalf("%s: no inequality of the form a <= b checked", name)
		}
	}
}
