package model

import (
	"fmt"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// benchSetup builds a model over n events with realistic relations (every fifth event
// is the sum of the next four: exact for half of the groups, approximate for the
// other half, each child also <= its parent), 2 fixed and 4 programmable counters
// in the kernel's round robin, and slices drawn from the model.
func benchSetup(b *testing.B, n int) (*Model, []inference.Slice) {
	return benchSetupWith(b, n, Options{})
}

// benchSetupWith is benchSetup with the model's options given.
func benchSetupWith(b *testing.B, n int, opt Options) (*Model, []inference.Slice) {
	parents := map[int][]int{}
	var cons []Constraint
	for p := 0; p+4 < n; p += 5 {
		ch := []int{p + 1, p + 2, p + 3, p + 4}
		parents[p] = ch
		c := Constraint{Coef: map[inference.EventID]float64{inference.EventID(p): -1}}
		for _, e := range ch {
			c.Coef[inference.EventID(e)] = 1
			cons = append(cons, Constraint{Coef: map[inference.EventID]float64{inference.EventID(e): 1, inference.EventID(p): -1}, Op: LessEq})
		}
		if (p/5)%2 == 1 {
			c.Tol = 1e-3
		}
		cons = append(cons, c)
	}
	s := drawSynth(1, n, 512, 0.05, 0.3, 0.95, parents)
	md, err := NewLinear(n, cons, opt)
	if err != nil {
		b.Fatal(err)
	}
	return md, s.slices(roundRobin(n, 4, []int{0, n - 1}))
}

// BenchmarkSlice times one online slice update (Observe): predict, condition on the
// slice's readings and relations, learn. ns/op is the time per slice. The model has
// the default options (bayesperf stat's; eval keeps a replay's whole run instead):
// past the history's limit every slice freezes into a block of its own.
func BenchmarkSlice(b *testing.B) {
	benchSlice(b, Options{})
}

// BenchmarkSliceLive is BenchmarkSlice with the options the sidecars run the model
// with: a history of a few hundred slices (kstage keeps 256, vstage up to 1024), older
// slices merged into one block between the reader's marks (none here).
func BenchmarkSliceLive(b *testing.B) {
	benchSlice(b, Options{History: 512, Marked: true})
}

func benchSlice(b *testing.B, opt Options) {
	for _, n := range []int{8, 16, 35, 64, 128} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			md, sl := benchSetupWith(b, n, opt)
			// Warm up past the history limit, so that the history's buffers are reused
			// (steady state: no fresh memory, whose first touch is most of the cost of
			// a young model on a VM).
			for i := range 3*md.hist.limit + 256 {
				if err := md.Observe(sl[i%256]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if err := md.Observe(sl[256+i%256]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(md.StateDim()), "state-dim")
			// Every this many slices one freezes half the history (bench_ir.sh needs it).
			b.ReportMetric(float64(md.hist.limit/2), "slices/freeze")
		})
	}
}

// BenchmarkSmooth times the smoother's share per slice: one Estimate of a 25-slice
// reporting interval right after its last slice (the live read of perf stat -I), which
// smooths back over the interval.
func BenchmarkSmooth(b *testing.B) {
	for _, n := range []int{8, 16, 35, 64, 128} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			md, sl := benchSetup(b, n)
			for _, s := range sl[:256] {
				if err := md.Observe(s); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				md.cache.valid = false
				md.Estimate(256-25, 256)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/25, "ns/slice")
		})
	}
}
