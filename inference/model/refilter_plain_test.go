package model

import (
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// Without an event counted nearly always there are no activity levels, but Finish's
// second pass still sizes each rate's prior by the rate's own readings over the run
// (start). Here z, first read at slice 30 and at zero in every reading after, sits
// beside a, counting 500 a slice. When the second pass was skipped for such runs, z's
// first slices kept the first slice's prior (ten times a's rate): 0 [0, 219] over the
// first 25 slices here, and on a stress-ng trace replayed on 2 counters with no event
// fixed, thermal_zone_trip (never fired) 0 ± 4,510 over the run (now 0 ± 38).
func TestPlainRunSizesPriorsByTheRun(t *testing.T) {
	md := mustNew(t, []string{"a", "z", "c"}, nil, Options{})
	const T = 200
	for s := range T {
		sl := inference.Slice{Index: s, Duration: 1}
		switch s % 3 {
		case 0:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 0, Count: 500, Enabled: 1, Running: 1})
		case 1:
			if s >= 30 {
				sl.Readings = append(sl.Readings, inference.Reading{Event: 1, Count: 0, Enabled: 1, Running: 1})
			}
		case 2:
			sl.Readings = append(sl.Readings, inference.Reading{Event: 2, Count: 40, Enabled: 1, Running: 1})
		}
		if err := md.Observe(sl); err != nil {
			t.Fatal(err)
		}
	}
	md.Finish()
	e := md.Estimate(0, 25)[1]
	t.Logf("z over slices [0, 25): %.1f [%.1f, %.1f]", e.Value, e.Lo, e.Hi)
	// z read zero 57 times: a rate of one count a slice would have shown in them, so
	// two counts a slice over the 25 is a generous top.
	if e.Hi > 2*25 {
		t.Errorf("z over its first 25 slices: %.1f [%.1f, %.1f], above two counts a slice: the first slice's prior, not the run's", e.Value, e.Lo, e.Hi)
	}
}
