package relation

import (
	"bufio"
	"cmp"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

// perfStat runs `perf stat -x,` over a shell workload and returns the total per event.
// Events perf reports as <not counted> or <not supported> are left out.
func perfStat(t *testing.T, perf string, events []string, workload string) map[string]float64 {
	t.Helper()
	out := filepath.Join(t.TempDir(), "stat.csv")
	cmd := exec.Command(perf, "stat", "-x,", "-o", out, "-e", strings.Join(events, ","), "--", "sh", "-c", workload)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf stat: %v\n%s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatalf("open perf output: %v", err)
	}
	defer f.Close()
	counts := map[string]float64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		if len(fields) < 3 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		counts[fields[2]] = v
	}
	return counts
}

// TestBuiltinsHoldOnThisKernel counts every software event and tracepoint a built-in
// relation mentions over a real workload (a directory walk makes syscalls and page
// faults; sleeps make context switches) and checks each bound relation against the
// totals, within the relation's own stated tolerance. Hardware relations cannot be
// checked on a machine without a PMU; they bind to nothing here.
func TestBuiltinsHoldOnThisKernel(t *testing.T) {
	perf := testutil.RequirePerfTracepoints(t)
	events := []string{
		"page-faults", "faults", "minor-faults", "major-faults",
		"context-switches", "cs", "sched:sched_switch",
		"cpu-migrations", "migrations",
		"exceptions:page_fault_user", "exceptions:page_fault_kernel",
		"raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
		// All enter tracepoints (perf expands the glob), a few exits: closing ~700
		// tracepoint events can take perf seconds on a busy machine.
		"syscalls:sys_enter_*",
		"syscalls:sys_exit_read", "syscalls:sys_exit_openat", "syscalls:sys_exit_getdents64",
	}
	workload := "for i in 1 2 3 4; do ls -R /usr/share/doc > /dev/null & sleep 0.002; done; wait; cat /proc/self/maps > /dev/null"
	counts := perfStat(t, perf, events, workload)
	var names []string
	for e := range counts {
		names = append(names, e)
	}
	if counts["page-faults"] == 0 || counts["raw_syscalls:sys_enter"] == 0 || counts["context-switches"] == 0 {
		t.Fatalf("workload produced no faults, syscalls or switches: %v", counts)
	}
	// perf expanded the sys_enter glob to every syscall tracepoint of this kernel, so the
	// run's events are also the host's universe for that glob.
	bound := BindUniverse(Builtins(), names, names)
	checked := map[string]bool{}
	for _, r := range bound {
		ok, err := r.Holds(func(e string) float64 { return counts[e] }, 0)
		if err != nil {
			t.Errorf("%s: %v", r, err)
			continue
		}
		l, rr, _ := r.Eval(func(e string) float64 { return counts[e] })
		if !ok {
			t.Errorf("%s (tol %g) does not hold: %g vs %g", r, r.Tol, l, rr)
		}
		t.Logf("%-55s %12.0f %s %-12.0f tol %g", r.String(), l, r.Op, rr, r.Tol)
		checked[r.Text] = true
	}
	for _, want := range []string{
		"page-faults = minor-faults + major-faults",
		"page-faults >= minor-faults + major-faults",
		"faults = page-faults",
		"cs = context-switches",
		"context-switches = sched:sched_switch",
		"migrations = cpu-migrations",
		"raw_syscalls:sys_enter = sum(syscalls:sys_enter_*)",
		"raw_syscalls:sys_exit >= sum(syscalls:sys_exit_*)",
		"raw_syscalls:sys_exit = raw_syscalls:sys_enter",
		"exceptions:page_fault_user <= page-faults",
		"page-faults <= exceptions:page_fault_user + exceptions:page_fault_kernel",
		"page-faults = exceptions:page_fault_user + exceptions:page_fault_kernel",
	} {
		if !checked[want] {
			t.Errorf("built-in %q was not checked: it did not bind to the run's events", want)
		}
	}
}

// TestBuiltinsHoldPerInterval checks the software-event relations on every interval of
// `perf stat -I`, the per-slice view the model uses. perf reads the counters one after
// the other while the workload runs, so a fault or a switch between two reads of one
// boundary is in the later-read event's interval and in the earlier-read one's next:
// an interval may be off by what happened while perf read (more when perf is preempted
// between two reads on a loaded machine), which the next interval gives back. So the
// running difference of the two sides at each boundary, which is what happened between
// the reads there, keeps one sign (the side read first is never ahead), and totals over
// all intervals are exact.
func TestBuiltinsHoldPerInterval(t *testing.T) {
	perf := testutil.RequirePerfTracepoints(t)
	events := []string{"page-faults", "minor-faults", "major-faults", "context-switches", "sched:sched_switch"}
	out := filepath.Join(t.TempDir(), "stat.csv")
	workload := "for i in 1 2 3 4 5 6; do ls -R /usr/share/doc > /dev/null; sleep 0.03; done"
	cmd := exec.Command(perf, "stat", "-x,", "-I", "50", "-o", out, "-e", strings.Join(events, ","), "--", "sh", "-c", workload)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("perf stat -I: %v\n%s", err, b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	intervals := map[string]map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Split(strings.TrimSpace(line), ",")
		if len(f) < 4 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			v = 0 // <not counted>: the task did not run in this interval
		}
		if intervals[f[0]] == nil {
			intervals[f[0]] = map[string]float64{}
		}
		intervals[f[0]][f[3]] = v
	}
	if len(intervals) < 3 {
		t.Fatalf("only %d intervals", len(intervals))
	}
	stamps := slices.Collect(maps.Keys(intervals))
	slices.SortFunc(stamps, func(a, b string) int {
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		return cmp.Compare(x, y)
	})
	rels := Bind(Builtins(), events)
	totals := map[string]float64{}
	exact, n := 0, 0
	runL := make([]float64, len(rels)) // per relation, Σ left so far
	runR := make([]float64, len(rels)) // per relation, Σ right so far
	sign := make([]float64, len(rels)) // the sign the running difference has taken
	for _, stamp := range stamps {
		vals := intervals[stamp]
		for e, v := range vals {
			totals[e] += v
		}
		for i, r := range rels {
			l, rr, err := r.Eval(func(e string) float64 { return vals[e] })
			if err != nil {
				t.Fatal(err)
			}
			n++
			if l == rr || r.Op == Ge && l >= rr {
				exact++
			}
			// A relation with a tolerance may also differ by that much of its sides.
			runL[i] += l
			runR[i] += rr
			d := runL[i] - runR[i]
			if math.Abs(d) > r.Tol*math.Max(math.Abs(runL[i]), math.Abs(runR[i])) {
				if sign[i] == 0 {
					sign[i] = math.Copysign(1, d)
				} else if math.Copysign(1, d) != sign[i] {
					t.Errorf("%s: the running difference changed sign at %ss (%g): not a skew between perf's reads", r, stamp, d)
				}
			}
		}
	}
	for _, r := range rels {
		if ok, _ := r.Holds(func(e string) float64 { return totals[e] }, 0); !ok {
			t.Errorf("%s does not hold on the totals of the intervals", r)
		}
	}
	t.Logf("%d relation checks over %d intervals, %d exact", n, len(intervals), exact)
}
