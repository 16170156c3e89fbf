package model

import (
	"math/rand/v2"
	"testing"
)

// A stretch read at zero all along, in a run whose readings between two zero readings
// never saw a count, is not given a burst's room: the run's count scatter, learned at
// its bursts, had made the 95% interval of a quiet 40-slice stretch reach past a whole
// burst. Where the run's readings between zeros do see counts (a rare Poisson event),
// the same stretch keeps room for what they saw.
func TestQuietStretchInterval(t *testing.T) {
	const slices, d = 400, 1e6
	// run replays count as the sparse event's per-slice truth and returns the top of the
	// 95% interval over slices [200, 240) and the truth there.
	run := func(count func(t int) uint64) (hi, truth float64) {
		tr := &trace{name: "quiet", events: []string{"steady", "sparse"}}
		for i := range slices {
			tr.dur = append(tr.dur, d)
			tr.counts = append(tr.counts, []uint64{1000, count(i)})
		}
		md := mustNew(t, tr.events, nil, Options{})
		// one counter: the two events take turns, the sparse one counted at odd slices
		for _, s := range simulate(tr, roundRobin(2, 1, nil)) {
			if err := md.Observe(s); err != nil {
				t.Fatal(err)
			}
		}
		md.Finish()
		est := md.Estimate(200, 240)[1]
		for i := 200; i < 240; i++ {
			truth += float64(count(i))
		}
		return est.Hi, truth
	}
	// Bursts of 500 a slice in four six-slice stretches, nothing else: every burst is
	// read more than once, none between two zero readings.
	bursty := func(t int) uint64 {
		if t%100 >= 50 && t%100 < 56 {
			return 500
		}
		return 0
	}
	if hi, _ := run(bursty); !(hi < 500) {
		t.Errorf("quiet stretch between bursts: 95%% interval up to %.1f, a burst's worth (500) or more", hi)
	}
	// About one count every three slices, at random; from slice 199 to 241 the sparse
	// event is read (at odd slices) at zero, and every third slice the schedule leaves
	// uncounted holds a count, the run's rate: [200, 240) is quiet as quietScatter
	// judges it (every reading in it and either side is zero), but the run's readings
	// between zeros say zeros are no sign of quiet. Without the count scatter there,
	// the interval tops out at 5.7 against a truth of 6.
	rng := rand.New(rand.NewPCG(1, 2))
	draws := make([]uint64, slices)
	for i := range draws {
		on := rng.Float64() < 1.0/3
		if i >= 199 && i <= 241 {
			on = i%2 == 0 && i%3 == 0
		}
		if on {
			draws[i] = 1
		}
	}
	hi, truth := run(func(t int) uint64 { return draws[t] })
	if !(hi >= truth) {
		t.Errorf("rare Poisson event read at zero by chance: 95%% interval up to %.1f, truth %.0f", hi, truth)
	}
}
