package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// PMUEvents returns the root of Linux's pmu-events JSON tree (tools/perf/pmu-events/arch)
// for tests that read vendor tables, and whether it is the shared copy beside the
// repository, whose counts tests may pin. It is $BAYESPERF_PMU_EVENTS (a relative path is
// taken from the module root, where `make pmu-events` extracts pmu-events/arch), else
// ../shared/pmu-events/arch beside the module, which CI provides and a user's clone
// lacks: then tb skips, saying how to get a tree.
func PMUEvents(tb testing.TB) (root string, shared bool) {
	tb.Helper()
	mod, err := moduleRoot()
	if err != nil {
		tb.Fatalf("pmu-events: %v", err)
	}
	if d := os.Getenv("BAYESPERF_PMU_EVENTS"); d != "" {
		if !filepath.IsAbs(d) {
			d = filepath.Join(mod, d)
		}
		if _, err := os.Stat(d); err != nil {
			tb.Fatalf("pmu-events: $BAYESPERF_PMU_EVENTS: %v", err)
		}
		return d, false
	}
	d := filepath.Join(filepath.Dir(mod), "shared", "pmu-events", "arch")
	if _, err := os.Stat(d); err != nil {
		tb.Skipf("needs Linux's pmu-events JSON: no ../shared/pmu-events/arch beside the module (CI has it, a user's clone does not); `make pmu-events` extracts it, then set BAYESPERF_PMU_EVENTS=pmu-events/arch")
	}
	return d, true
}

// moduleRoot is the directory of the go.mod above the working directory (a test runs
// in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", &os.PathError{Op: "find go.mod above", Path: dir, Err: os.ErrNotExist}
		}
	}
}
