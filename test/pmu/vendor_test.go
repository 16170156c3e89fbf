package pmu

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// vendorEvents are 12 hardware events, two families that count the same thing on an
// Armv8 core (the kernel opens instructions as inst_retired): each split by privilege,
// twice. Two families take 4 of the 7 counters for their truth copies.
var vendorEvents = []string{
	"inst_retired:u", "inst_retired:k", "inst_retired", "instructions:u", "instructions:k", "instructions",
	"inst_retired:u", "inst_retired:k", "inst_retired", "instructions:u", "instructions:k", "instructions",
}

// pmuEventsTree is where bayesperf finds Linux's pmu-events JSON in the guest's copy of
// the tree without being told (make pmu-tree copies its arm64 part there from
// ../shared/pmu-events or $BAYESPERF_PMU_EVENTS); the test skips without it.
func pmuEventsTree(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "pmu-events", "arch"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "arm64", "mapfile.csv")); err != nil {
		t.Skipf("needs Linux's pmu-events JSON in %s: make pmu-tree copies it from ../shared/pmu-events/arch or $BAYESPERF_PMU_EVENTS (make pmu-events extracts it)", dir)
	}
	return dir
}

// TestPMUVendor: on a core that Linux's pmu-events maps to a table (make pmu-test boots
// the guest a second time as a Neoverse N1, -cpu neoverse-n1, for this test), bayesperf
// run finds the table by the CPU's MIDR without a flag, names the core PMU's events as
// the vendor does (inst_retired:u, not 8:0x8:u) and binds the table's relations, among
// them instructions = inst_retired. Bound, that identity makes the model serve the two
// families the same value in every interval; both are scored against the truth, and
// against a run that finds no table (the same events then share no relation).
func TestPMUVendor(t *testing.T) {
	needPMU(t)
	tree := pmuEventsTree(t)
	out, rc := run(t, bin(t, "bayesperf"), "list", "--relations", "--pmu-events", tree)
	if rc != 0 {
		if strings.Contains(out, "no pmu-events table for this CPU") {
			t.Skipf("this CPU matches no table of %s (make pmu-test runs this test in a guest booted with PMU_CPU=neoverse-n1): %s", tree, strings.TrimSpace(out))
		}
		t.Fatalf("bayesperf list --relations --pmu-events %s exited %d:\n%s", tree, rc, out)
	}
	var table string
	for _, l := range strings.Split(out, "\n") {
		// instructions = inst_retired   # [generic@arm64/arm/neoverse-n1] ...
		if strings.HasPrefix(l, "instructions = inst_retired") {
			if _, src, ok := strings.Cut(l, "[generic@"); ok {
				table, _, _ = strings.Cut(src, "]")
			}
		}
	}
	if table == "" {
		t.Fatalf("the host's table relates no instructions = inst_retired:\n%s", out)
	}

	with := vendorRun(t, nil)
	without := vendorRun(t, []string{"BAYESPERF_PMU_EVENTS=" + t.TempDir()})
	if !strings.Contains(with.log, "pmu-events: this CPU's table is "+table) {
		t.Errorf("the sidecar did not say it found %s:\n%s", table, with.log)
	}
	for e, name := range with.names {
		if !strings.HasPrefix(name, vendorEvents[e]) {
			t.Errorf("event %d is named %q in the report, want %s (the vendor's name)", e, name, vendorEvents[e])
		}
	}
	// inst_retired:u (event 0) and instructions:u (event 3) count the same thing: with
	// the relation bound, the served values are the same in every interval.
	for i := range with.tool {
		for e := range 3 {
			a, b := with.tool[i][e], with.tool[i][e+3]
			if math.Abs(a-b) > 0.5+1e-9*a {
				t.Errorf("interval %d: %s served %.0f, %s %.0f: the identity between them is not bound", i, vendorEvents[e], a, vendorEvents[e+3], b)
				break
			}
		}
	}
	f := map[string]any{"table": table, "intervals": len(with.tool), "wape_bayesperf": with.wape,
		"wape_without_vendor_relations": without.wape, "worst_event_wape": with.worst,
		"worst_event_wape_without": without.worst}
	record("vendor_relations", f)
	t.Logf("vendor relations of %s: mean WAPE per interval %.4f (worst event %.4f), without them %.4f (%.4f)",
		table, with.wape, with.worst, without.wape, without.worst)
	if with.wape > without.wape {
		t.Errorf("with the vendor's relations the mean WAPE is %.4f, without %.4f", with.wape, without.wape)
	}
}

// vendorResult is one run of vendorEvents through bayesperf run: the sidecar's log,
// the events' names in its report, the values the tool was served per interval, and
// their mean and worst per-event WAPE against the truth of the same intervals.
type vendorResult struct {
	log         string
	names       []string
	tool        [][]float64
	wape, worst float64
}

func vendorRun(t *testing.T, env []string) vendorResult {
	t.Helper()
	report := filepath.Join(t.TempDir(), "report.json")
	args := append([]string{"run", "--shim", bin(t, "libbayesperf.so"), "-v", "--report", report, "--",
		"perf", "stat", "-I", "100", "-x,", "-e", strings.Join(vendorEvents, ","), "--"}, phased(t, "1500ms")...)
	out, rc := runEnv(t, env, bin(t, "bayesperf"), args...)
	if rc != 0 {
		t.Fatalf("bayesperf run exited %d:\n%s", rc, out)
	}
	rep := readIntervals(t, report, out)
	n := len(vendorEvents)
	r := vendorResult{log: out}
	absErr, truth := make([]float64, n), make([]float64, n)
	for _, iv := range rep.Clients[0].Intervals {
		if len(iv.Events) != n {
			continue // a round in which the tool did not read every event
		}
		if r.names == nil {
			for _, ev := range iv.Events {
				r.names = append(r.names, ev.Event)
			}
		}
		row := make([]float64, n)
		for e, ev := range iv.Events {
			if ev.Tool == nil || ev.Truth == nil {
				t.Fatalf("interval event %s without tool or truth", ev.Event)
			}
			row[e] = *ev.Tool
			absErr[e] += math.Abs(*ev.Tool - float64(*ev.Truth))
			truth[e] += float64(*ev.Truth)
		}
		r.tool = append(r.tool, row)
	}
	if len(r.tool) < 10 {
		t.Fatalf("%d full intervals in the report, want at least 10", len(r.tool))
	}
	for e := range n {
		w := absErr[e] / truth[e]
		r.wape += w / float64(n)
		r.worst = max(r.worst, w)
	}
	return r
}

// runEnv is run with env added to the environment.
func runEnv(t *testing.T, env []string, name string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	return "", 0
}
