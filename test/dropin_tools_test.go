package test

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// perfTestResults parses `perf test` output into "number: result" pairs.
func perfTestResults(out string) map[string]string {
	re := regexp.MustCompile(`^\s*([0-9]+(?:\.[0-9]+)?): .*: (Ok|FAILED!|Skip.*)$`)
	m := map[string]string{}
	for line := range strings.Lines(out) {
		if s := re.FindStringSubmatch(strings.TrimRight(line, "\n")); s != nil {
			m[s[1]] = s[2]
		}
	}
	return m
}

// TestDropinPerfTest runs the read, mmap, backward-ring, overflow-signal and event-times
// tests of `perf test` natively and through bayesperf: every test must end the same way
// (on this VM, the breakpoint tests 20, 21, 23.2-23.4 and 73 fail natively too).
func TestDropinPerfTest(t *testing.T) {
	argv := []string{"perf", "test", "2", "3", "4", "8", "20", "21", "22", "23", "25", "27", "50", "51", "73"}
	n0 := run(t, nil, argv...)
	native := perfTestResults(n0.stdout + n0.stderr)
	r, st := bayesperfRun(t, argv...)
	got := perfTestResults(r.stdout + r.stderr)
	if len(native) < 15 {
		t.Fatalf("parsed only %d native results: %v", len(native), native)
	}
	// Some of these tests are timing-sensitive on a loaded 2-CPU VM (25 fails natively
	// now and then): a test that differs is rerun alone, twice each way, and counts as a
	// regression only if it passed natively at least once and never through bayesperf.
	rerun := func(n string, through bool) []string {
		top := strings.Split(n, ".")[0]
		var out []string
		for range 2 {
			r, _ := runMaybeThrough(t, through, nil, "perf", "test", top)
			out = append(out, perfTestResults(r.stdout + r.stderr)[n])
		}
		return out
	}
	for n, res := range native {
		if got[n] == res {
			continue
		}
		nat := append(rerun(n, false), res)
		thr := append(rerun(n, true), got[n])
		if slices.Contains(nat, "Ok") && !slices.Contains(thr, "Ok") {
			t.Errorf("perf test %s: %q natively, %q through bayesperf", n, nat, thr)
		} else {
			t.Logf("perf test %s is flaky here: %q natively, %q through bayesperf", n, nat, thr)
		}
	}
	// The read, mmap, event-times and backward-ring tests that pass natively here must
	// pass through bayesperf (a timing failure gets two more chances, as above).
	for _, must := range []string{"2", "3", "4.1", "8", "22", "25", "27", "50", "51"} {
		if native[must] != "Ok" {
			t.Logf("perf test %s is %q natively on this machine; not required through bayesperf", must, native[must])
			continue
		}
		if got[must] != "Ok" && !slices.Contains(rerun(must, true), "Ok") {
			t.Errorf("perf test %s: %q through bayesperf, want Ok", must, got[must])
		}
	}
	if st.Events == 0 || st.PassthroughReads != 0 {
		t.Errorf("stats %+v: want events registered and no read passed through", st)
	}
}

// recordSamples runs perf record with args on the workload (natively, or through
// bayesperf) and returns perf report's event count, its top symbol line and the stats.
func recordSamples(t *testing.T, through bool, env []string, args []string, wl ...string) (float64, string, stats) {
	t.Helper()
	data := filepath.Join(t.TempDir(), "perf.data")
	argv := append(append([]string{"perf", "record", "-q", "-o", data}, args...), "--")
	argv = append(argv, workload(t, wl...)...)
	r, st := runMaybeThrough(t, through, env, argv...)
	if r.status != 0 {
		t.Fatalf("perf record %v: status %d\n%s", args, r.status, r.stderr)
	}
	out, n := perfReport(t, data, "--sort", "comm,sym")
	top := ""
	for line := range strings.Lines(out) {
		if f := strings.Fields(line); len(f) >= 3 && strings.HasSuffix(f[0], "%") {
			top = strings.Join(f[1:], " ")
			break
		}
	}
	return n, top, st
}

// TestDropinPerfRecord: perf record -e page-faults -c 1 (one sample per fault) through
// bayesperf gives the same sample count as natively, within the page-fault tolerance,
// with the records delivered through the mirror ring; perf record -e cpu-clock finds the
// same top symbol; perf record --overwrite (backward rings) gives the same samples too.
func TestDropinPerfRecord(t *testing.T) {
	native, _, _ := recordSamples(t, false, noSidecarEnv(t), []string{"-e", "page-faults", "-c", "1"}, "1500", "0", "0")
	got, top, st := recordSamples(t, true, nil, []string{"-e", "page-faults", "-c", "1"}, "1500", "0", "0")
	if got < 1500 || !within(got, native, faultsAbs, faultsRel) {
		t.Errorf("page-fault samples: %v through bayesperf, %v natively with the shim preloaded", got, native)
	}
	if st.RecordsMirrored < uint64(got) || st.RecordsLost != 0 {
		t.Errorf("stats %+v: want the %v samples to have gone through mirror rings, none lost", st, got)
	}
	if !strings.HasPrefix(top, "workload") {
		t.Errorf("top of perf report %q, want the workload", top)
	}

	_, ntop, _ := recordSamples(t, false, nil, []string{"-e", "cpu-clock"}, "0", "0", "0", "300")
	gc, gtop, st := recordSamples(t, true, nil, []string{"-e", "cpu-clock"}, "0", "0", "0", "300")
	if gtop != ntop || !strings.Contains(gtop, "main") {
		t.Errorf("cpu-clock top symbol %q through bayesperf, %q natively; want the workload's main", gtop, ntop)
	}
	if gc < 100e6 || st.RecordsMirrored == 0 {
		t.Errorf("cpu-clock: event count %v (the workload spins 300 ms), stats %+v", gc, st)
	}

	// --overwrite: backward rings, copied into the mirror when perf pauses them to read.
	nov, _, _ := recordSamples(t, false, noSidecarEnv(t), []string{"--overwrite", "-e", "page-faults", "-c", "1"}, "1500", "0", "0")
	gov, otop, st := recordSamples(t, true, nil, []string{"--overwrite", "-e", "page-faults", "-c", "1"}, "1500", "0", "0")
	if gov < 1500 || !within(gov, nov, faultsAbs, faultsRel) || !strings.HasPrefix(otop, "workload") {
		t.Errorf("perf record --overwrite: %v page-fault samples through bayesperf (top %q), %v natively", gov, otop, nov)
	}
	if st.RecordsMirrored < uint64(gov) {
		t.Errorf("perf record --overwrite: stats %+v, want the %v samples through mirror rings", st, gov)
	}
}

// TestDropinPerfTrace: perf trace -s counts the workload's syscalls through bayesperf.
func TestDropinPerfTrace(t *testing.T) {
	r, _ := bayesperfRun(t, append([]string{"perf", "trace", "-s", "--"}, workload(t, "0", "7", "0")...)...)
	if r.status != 0 {
		t.Fatalf("perf trace: status %d\n%s", r.status, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^\s+clock_nanosleep\s+([0-9]+)\s`).FindStringSubmatch(r.stderr + r.stdout)
	if m == nil || m[1] != "7" {
		t.Errorf("perf trace summary: clock_nanosleep calls %v, want 7 (the workload sleeps 7 times)\n%s", m, r.stderr)
	}
}

// TestDropinPerfRecordSidecarKilled: SIGKILL to the sidecar while perf record samples a
// workload through mirror rings: perf record finishes with status 0 and one warning, and
// no sample is lost (the shim keeps the kernel's ring alive and pumps it itself).
func TestDropinPerfRecordSidecarKilled(t *testing.T) {
	data := filepath.Join(t.TempDir(), "perf.data")
	var stderr strings.Builder
	cmd, pid := startRun(t, nil, &stderr, append([]string{"--",
		"perf", "record", "-q", "-o", data, "-e", "page-faults", "-c", "1", "--"}, workload(t, "0", "0", "0", "1000")...)...)
	waitSidecarHolds(t, cmd, pid, 1)
	time.Sleep(200 * time.Millisecond) // well inside the workload's 1000 ms
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill sidecar %d: %v", pid, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bayesperf run after the sidecar was killed: %v\n%s", err, stderr.String())
	}
	if w := bayesperfWarnings(stderr.String()); len(w) != 1 || !strings.Contains(w[0], "lost the sidecar") {
		t.Errorf("warnings %q, want exactly one about the lost sidecar", w)
	}
	out, n := perfReport(t, data)
	// One sample per page fault: the workload touches one page per ms for 1000 ms, plus
	// its start-up faults (about 60 here).
	if n < 1000 || n > 1200 {
		t.Errorf("%v page-fault samples recorded, want 1000..1200 (none lost to the sidecar's death)", n)
	}
	if strings.Contains(out, "Total Lost Samples: 0") == false {
		t.Errorf("perf report shows lost samples:\n%s", out)
	}
}
