package schedule

import (
	"fmt"
	"testing"

	"github.com/bayesperf/bayesperf/inference/graph"
)

// BenchmarkOverlap builds the overlap schedule for growing event counts on 4 counters,
// with a relation linking every 4 consecutive events.
func BenchmarkOverlap(b *testing.B) {
	for _, n := range []int{8, 35, 64, 128} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			var fs []graph.Factor
			for i := 0; i+3 < n; i += 3 {
				fs = append(fs, graph.Factor{Name: "r", Events: []EventID{EventID(i), EventID(i + 1), EventID(i + 2), EventID(i + 3)}})
			}
			g, err := graph.New(make([]string, n), fs)
			if err != nil {
				b.Fatal(err)
			}
			sp := Spec{Events: n, Counters: 4}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Overlap(sp, g, OverlapOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkKernel(b *testing.B) {
	sp := Spec{Events: 35, Counters: 4}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Kernel(sp); err != nil {
			b.Fatal(err)
		}
	}
}
