package replay

import (
	"fmt"
	"testing"
)

// BenchmarkScoreBaselines replays a real trace through the three baselines on the
// kernel's round robin: the cost of one `eval --trace` without the model.
func BenchmarkScoreBaselines(b *testing.B) {
	tr, err := ReadFile("testdata/git.csv", ReadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := KernelSchedule(tr, 4, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Score(tr, Baselines(len(tr.Events), s), Options{Counters: 4}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tr.Slices())/1e3, "µs/slice")
}

func BenchmarkReadCSV(b *testing.B) {
	for _, name := range []string{"find", "git"} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ReadFile(fmt.Sprintf("testdata/%s.csv", name), ReadOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
