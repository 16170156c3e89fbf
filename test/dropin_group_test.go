package test

// A group larger than the virtual counters (issue 15) behaves as on a real PMU: it is
// never counted (perf prints <not counted>), while the events beside it stay on the
// virtual PMU. It used to turn the virtual PMU off for every event of the client. Needs
// the perf binary and perf_event_open for software events and tracepoints.

import (
	"math"
	"path/filepath"
	"strconv"
	"testing"
)

// TestDropinGroupLargerThanCounters: perf stat -e '{task-clock,page-faults,
// context-switches},minor-faults,major-faults,raw_syscalls:sys_enter' on 2 virtual
// counters, with --correct none (the virtual PMU's multiplexed view) and bayesperf (the
// default). The group's three events print <not counted> with run time 0; the three
// others are counted: with none, on the virtual PMU, so at least one of them ran less
// than 100% of the time (three singletons cannot share two counters); with bayesperf,
// corrected, minor-faults closer to native than the multiplexed view's scaled value
// (the correction works on them). The workload touches 1000 pages, then one a ms for
// 300 ms: where its start-up burst falls in the rotation moves both values from run to
// run (bayesperf 1038-1959 against a native 1353 on a loaded machine, 1.3% off on a
// quiet one; the scaled value 2061-2396), so a fixed bound on bayesperf alone failed
// one run in three under load, before and after the change it was written for.
func TestDropinGroupLargerThanCounters(t *testing.T) {
	dir := dropinBins(t)
	const events = "{task-clock,page-faults,context-switches},minor-faults,major-faults,raw_syscalls:sys_enter"
	wl := []string{filepath.Join(dir, "workload"), "1000", "5", "0", "300"}
	argv := append([]string{"perf", "stat", "-x,", "-e", events, "--"}, wl...)
	nat := byEvent(parseStatCSV(t, run(t, nil, argv...).stderr, false))["minor-faults"].num(t)
	var scaled float64
	for _, correct := range []string{"none", "bayesperf"} {
		r := run(t, nil, append([]string{filepath.Join(dir, "bayesperf"), "run", "--virtual-counters", "2", "--correct", correct, "--"}, argv...)...)
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
			scaled = minor
			if !multiplexed {
				t.Errorf("--correct none: every event beside the group ran 100%% of the time; the virtual PMU is off\n%s", r.stderr)
			}
		case "bayesperf":
			if math.Abs(minor-nat) >= math.Abs(scaled-nat) && !within(minor, nat, 0, 0.05) {
				t.Errorf("--correct bayesperf: minor-faults %v, native %v: no closer than the scaled %v", minor, nat, scaled)
			}
		}
		t.Logf("--correct %s: minor-faults %v (native %v), group <not counted>", correct, minor, nat)
	}
}
