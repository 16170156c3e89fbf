package test

// A group larger than the virtual counters (issue 15) behaves as on a real PMU: it is
// never counted (perf prints <not counted>), while the events beside it stay on the
// virtual PMU. It used to turn the virtual PMU off for every event of the client. Needs
// the perf binary and perf_event_open for software events and tracepoints.

import (
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestDropinGroupLargerThanCounters: perf stat -e '{task-clock,page-faults,
// context-switches},minor-faults,major-faults,raw_syscalls:sys_enter' on 2 virtual
// counters, with --correct none (the virtual PMU's multiplexed view) and bayesperf (the
// default). The group's three events print <not counted> with run time 0; the three
// others are counted: with none, on the virtual PMU, so at least one of them ran less
// than 100% of the time (three singletons cannot share two counters); with bayesperf,
// corrected: perf prints the report's minor-faults, and over bayesperfRuns runs it is
// closer to the truth (each run's always-on copy, which must match native) than the
// kernel's scaling of the same runs' multiplexed view (the correction works on them).
//
// The workload touches 1000 pages, then one a ms for 300 ms: where its start-up burst
// falls in the rotation moves both estimates from run to run (bayesperf 223-2408, the
// scaled value 119-7196, against a truth of 1352-1356, in 37 runs at load 4-5), and
// either can be the closer in one run (bayesperf 1136 against a scaled 1330, 2408
// against 405), so the errors are summed over runs, each judged against its own truth
// and scaled value. Comparing one bayesperf run with an earlier --correct none run
// failed 2 of 3 at load 3-4 (2076 and 4371 against 1530 and 2065 from the other run).
const bayesperfRuns = 3

func TestDropinGroupLargerThanCounters(t *testing.T) {
	dir := dropinBins(t)
	const events = "{task-clock,page-faults,context-switches},minor-faults,major-faults,raw_syscalls:sys_enter"
	wl := []string{filepath.Join(dir, "workload"), "1000", "5", "0", "300"}
	argv := append([]string{"perf", "stat", "-x,", "-e", events, "--"}, wl...)
	nat := byEvent(parseStatCSV(t, run(t, nil, argv...).stderr, false))["minor-faults"].num(t)
	var errB, errL, truths float64
	for _, correct := range append([]string{"none"}, slices.Repeat([]string{"bayesperf"}, bayesperfRuns)...) {
		bp := []string{filepath.Join(dir, "bayesperf"), "run", "--virtual-counters", "2", "--correct", correct}
		rf := filepath.Join(t.TempDir(), "report.json")
		if correct == "bayesperf" {
			bp = append(bp, "--report", rf) // reads are round trips with bayesperf anyway
		}
		r := run(t, nil, append(append(bp, "--"), argv...)...)
		if r.status != 0 {
			t.Fatalf("--correct %s: status %d\n%s", correct, r.status, r.stderr)
		}
		lines := byEvent(parseStatCSV(t, r.stderr, false))
		for _, ev := range []string{"task-clock", "page-faults", "context-switches"} {
			if l := lines[ev]; l.value != "<not counted>" || l.runtime != 0 {
				t.Errorf("--correct %s: %s = %q (run time %d); want <not counted>, as a real PMU shows a group that cannot fit", correct, ev, l.value, l.runtime)
			}
		}
		multiplexed := false
		for _, ev := range []string{"minor-faults", "major-faults", "raw_syscalls:sys_enter"} {
			l, ok := lines[ev]
			if !ok || l.value == "<not counted>" {
				t.Errorf("--correct %s: %s = %q; want it counted", correct, ev, l.value)
				continue
			}
			if pct, err := strconv.ParseFloat(runPercent(r.stderr, ev), 64); err == nil && pct < 100 {
				multiplexed = true
			}
		}
		minor := lines["minor-faults"].num(t)
		switch correct {
		case "none":
			if !multiplexed {
				t.Errorf("--correct none: every event beside the group ran 100%% of the time; the virtual PMU is off\n%s", r.stderr)
			}
			t.Logf("--correct none: minor-faults %v (native %v), group <not counted>", minor, nat)
		case "bayesperf":
			var e *reportEvent
			rep := readReport(t, rf)
			for i, x := range rep.Clients[len(rep.Clients)-1].Totals {
				if x.Event == "minor-faults" {
					e = &rep.Clients[len(rep.Clients)-1].Totals[i]
				}
			}
			if e == nil || e.Truth == nil {
				t.Fatalf("--correct bayesperf: the report has no minor-faults with a truth: %+v", rep.Clients)
			}
			truth := float64(*e.Truth)
			if !within(truth, nat, faultsAbs, faultsRel) {
				t.Errorf("--correct bayesperf: the report's truth of minor-faults %v, native %v", truth, nat)
			}
			if math.Abs(minor-math.Round(e.Value)) > 1 {
				t.Errorf("--correct bayesperf: perf printed minor-faults %v, the report's value is %.1f", minor, e.Value)
			}
			errB, errL, truths = errB+math.Abs(e.Value-truth), errL+math.Abs(e.Linux-truth), truths+truth
			t.Logf("--correct bayesperf: minor-faults %.0f, scaled %.0f, truth %v (native %v), group <not counted>", e.Value, e.Linux, truth, nat)
		}
	}
	// Within 5% of the truth passes too: on a quiet machine both can be near it.
	if errB >= errL && errB > 0.05*truths {
		t.Errorf("--correct bayesperf: minor-faults off by %.0f over %d runs (truths %.0f), the same runs' scaled values by %.0f: no closer", errB, bayesperfRuns, truths, errL)
	}
	t.Logf("minor-faults over %d runs: bayesperf off by %.0f, scaled by %.0f (truths %.0f)", bayesperfRuns, errB, errL, truths)
}
