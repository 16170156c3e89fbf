package model

import "testing"

// TestShortSliceBurst replays a live run (workload mixed, 5 s, 24 events, task-clock
// fixed) whose last counted slice of sched:sched_wakeup lasted 18µs of the target's
// running time and held 258 wakeups: taken as a rate, that burst was carried over the
// run's last interval, and bayesperf reported 580,917 wakeups against a truth of 48,154
// (eval's table, total error 1106%). Readings over a twentieth of a usual slice or less
// no longer inform the state (filter.go, shortSlice). No event's run total may now
// exceed twice its truth plus 1000 (the blow-up), and sched_wakeup's must be within 20%
// (3.9% off with the fix; Linux's scaling 1.3%).
func TestShortSliceBurst(t *testing.T) {
	res := liveScore(t, "testdata/short/live-mixed-5s-end-burst.csv", []string{"task-clock"}, Options{})
	for e, ev := range res.EventNames {
		var truth, est float64
		for k := range res.Bounds {
			truth += res.Truth[k][e]
			est += res.Estimates["bayesperf"][k][e].Value
		}
		if est > 2*truth+1000 {
			t.Errorf("%s: total %.0f against a truth of %.0f", ev, est, truth)
		}
		if d := est/truth - 1; ev == "sched:sched_wakeup" && (d > 0.2 || d < -0.2) {
			t.Errorf("%s: total %.0f against a truth of %.0f (%+.0f%%)", ev, est, truth, 100*d)
		}
	}
}

// TestDormantRateOutOfSoftIdentity replays a live run (workload mixed, 3 s, the first
// 8 events of docs/accuracy.md's live pool on 4 counters, task-clock fixed) started
// with the page cache dropped: one major fault in 891 slices. page-faults =
// minor-faults + major-faults holds softly; where page-faults was read and
// minor-faults not, every miss of minor-faults' prediction went a share by variance
// to major-faults too, a fraction of a count a slice that the truncation at zero kept
// only when positive, and its zero readings every other slice, Poisson noise of one
// count, could not take it back: major-faults came out at 7.9 (truth 1) and the run's
// mean WAPE at 0.896 against Linux's 0.202 (the live values: 9.3 and 1.062). A rate
// that counted under half a count a slice (over the run once it is over, so far
// before), read at zero last and not counted in the slice now sits the soft identity
// out (filter.go, dormant).
//
//	bin/bayesperf eval -e task-clock,page-faults,minor-faults,major-faults,\
//	    context-switches,cpu-migrations,raw_syscalls:sys_enter,raw_syscalls:sys_exit \
//	    --counters 4 --fixed task-clock --save-trace FILE.csv \
//	    -- bin/bayesperf workload mixed --duration 3s --seed 1   # after: echo 3 > /proc/sys/vm/drop_caches
func TestDormantRateOutOfSoftIdentity(t *testing.T) {
	res := liveScore(t, "testdata/short/live-mixed-3s-coldcache.csv", []string{"task-clock"}, Options{})
	for e, ev := range res.EventNames {
		if ev != "major-faults" {
			continue
		}
		var truth, est float64
		for k := range res.Bounds {
			truth += res.Truth[k][e]
			est += res.Estimates["bayesperf"][k][e].Value
		}
		t.Logf("%s: total %.2f against a truth of %.0f", ev, est, truth)
		if est > truth+1 {
			t.Errorf("%s: total %.2f against a truth of %.0f, want within one count", ev, est, truth)
		}
	}
	bp, lx := res.Estimators["bayesperf"].WAPE, res.Estimators["linux"].WAPE
	t.Logf("mean WAPE: bayesperf %.3f, linux %.3f", bp, lx)
	if bp > lx {
		t.Errorf("mean WAPE %.3f above Linux's %.3f", bp, lx)
	}
	// The live values, as `perf stat -I` reads them through the drop-in path: before,
	// major-faults at 8.0 and the mean WAPE 0.929.
	live := dropinScore(t, timedTrace(t, "testdata/short/live-mixed-3s-coldcache.csv"), []string{"task-clock"})
	for _, est := range []string{"bayesperf", "bayesperf-dropin"} {
		w := live.Estimators[est].WAPE
		t.Logf("%s (live values): mean WAPE %.3f, linux %.3f", est, w, live.Estimators["linux"].WAPE)
		if w > live.Estimators["linux"].WAPE {
			t.Errorf("%s (live values): mean WAPE %.3f above Linux's %.3f", est, w, live.Estimators["linux"].WAPE)
		}
	}
}
