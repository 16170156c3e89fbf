package test

// A workload shorter than the tool's reaction: the tool reads its counters as soon as
// SIGCHLD says the workload ended, before (or without) reaping it. Needs the perf binary
// and perf_event_open for software events.

import (
	"slices"
	"testing"
)

// TestDropinShortWorkloadCounted: 20 runs of `perf stat -e page-faults -- true` through
// bayesperf run all print a count, whose median equals the median of 20 native
// runs within their spread. perf learns that
// `true` ended from SIGCHLD and, when that comes before perf reaches wait4, reads at once
// without reaping it: the shim used to serve the page published at registration, before
// the exec (running 0: <not counted>, 3 of 20 runs).
func TestDropinShortWorkloadCounted(t *testing.T) {
	argv := []string{"perf", "stat", "-x,", "-e", "page-faults", "--", "true"}
	var nat, bp []float64
	for range 20 {
		nr := run(t, nil, argv...)
		nat = append(nat, byEvent(parseStatCSV(t, nr.stderr, false))["page-faults"].num(t))
		gr, _ := bayesperfRun(t, argv...)
		l := byEvent(parseStatCSV(t, gr.stderr, false))["page-faults"]
		if gr.status != 0 || l.value == "<not counted>" || l.value == "" {
			t.Errorf("through bayesperf: status %d, page-faults %q (run time %d ns)\n%s", gr.status, l.value, l.runtime, gr.stderr)
			continue
		}
		bp = append(bp, l.num(t))
	}
	spread := slices.Max(nat) - slices.Min(nat)
	if d := median(bp) - median(nat); len(bp) > 0 && (d > spread || -d > spread) {
		t.Errorf("page faults of true: %v through bayesperf, %v natively; want the medians equal within the native spread %v", bp, nat, spread)
	}
	t.Logf("page faults of true: native %v, through bayesperf %v", nat, bp)
}
