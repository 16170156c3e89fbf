package vpmu

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/inference/schedule"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/internal/workload"
)

// whyRoot is why this package's kernel tests need root.
const whyRoot = "attaches tracepoints to a child task"

// The test binary doubles as the target: BAYESPERF_VPMU_WORKLOAD=name:ms runs a built-in
// workload.
func TestMain(m *testing.M) {
	if os.Getenv("BAYESPERF_VPMU_WORKLOAD") == "fixed-work:0" {
		// A fixed amount of work: 5000 getppid, 3000 writes, 4 MiB of fresh pages.
		for range 5000 {
			unix.Getppid()
		}
		for range 3000 {
			unix.Write(1, nil)
		}
		b, _ := unix.Mmap(-1, 0, 4<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		os.Exit(0)
	}
	if w := os.Getenv("BAYESPERF_VPMU_WORKLOAD"); w != "" {
		if err := workload.RunSpec(w, 300*time.Millisecond, 3); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func target(name string, ms int) *exec.Cmd {
	return testutil.Reexec("BAYESPERF_VPMU_WORKLOAD=" + name + ":" + strconv.Itoa(ms))
}

const testEvents = "task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations," +
	"{raw_syscalls:sys_enter,raw_syscalls:sys_exit},syscalls:sys_enter_read,syscalls:sys_enter_write," +
	"syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,sched:sched_switch,sched:sched_wakeup"

func TestVirtualMultiplexingHoldsBudgetAndTruth(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	const counters = 4
	fixed := []int{0} // task-clock on a fixed counter
	evs, ks := kernelEvents(t, testEvents, counters, fixed)
	res, err := RunCommand(Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: true}, target("mixed", 400), 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitErr != nil {
		t.Fatal(res.ExitErr)
	}
	if len(res.Steps) < 20 {
		t.Fatalf("only %d slices in a 400 ms run at %v", len(res.Steps), res.Interval)
	}
	total := make([]uint64, len(evs))
	observed := make([]uint64, len(evs))
	for _, st := range res.Steps {
		counted := 0
		for i, r := range st.Views[0].Readings {
			if r.Running > 0 || r.Count > 0 {
				if !isScheduled(ks, st.Index, i) {
					t.Fatalf("slice %d: event %s counted %d but not scheduled", st.Index, evs[i].Name, r.Count)
				}
				counted++
			}
			if r.Running > r.Enabled {
				t.Fatalf("slice %d: running %d > enabled %d", st.Index, r.Running, r.Enabled)
			}
			total[i] += st.Truth[i]
			observed[i] += r.Count
		}
		if counted > counters+len(fixed) {
			t.Fatalf("slice %d: %d events counted with a budget of %d+%d", st.Index, counted, counters, len(fixed))
		}
	}
	// The fixed event always counts, and a software event's view is derived from its
	// always-on copy: over the run the view counted exactly the truth.
	if observed[0] != total[0] {
		t.Errorf("fixed task-clock: view %d vs truth %d", observed[0], total[0])
	}
	// Multiplexed events see only part of their truth (about counters/programmable).
	pf := 1 // page-faults
	if total[pf] == 0 || observed[pf] >= total[pf] {
		t.Errorf("page-faults: view %d, truth %d: expected a strict part", observed[pf], total[pf])
	}
	// Truth identities hold on the truth copies: page-faults = minor + major.
	if total[1] != total[2]+total[3] {
		t.Errorf("truth page-faults %d != minor %d + major %d", total[1], total[2], total[3])
	}
	// The group {sys_enter, sys_exit} is counted together or not at all.
	for _, st := range res.Steps {
		a, b := st.Views[0].Readings[6].Running > 0, st.Views[0].Readings[7].Running > 0
		if a != b && st.Index+1 < len(res.Steps) {
			t.Fatalf("slice %d: group split (%v, %v)", st.Index, a, b)
		}
	}
}

func isScheduled(s *schedule.Schedule, t, e int) bool {
	for _, x := range s.Counted(t) {
		if int(x) == e {
			return true
		}
	}
	return false
}

// TestTruthMatchesNativePerfStat runs the same deterministic program under plain
// `perf stat` and under the virtual PMU, and compares perf's totals with the truth copies.
// Syscall tracepoints of the program's own loop are exact; whole-process counts vary from
// run to run with the Go runtime's own work, so they get a tolerance of 5% + 20 events +
// twice the difference between two native runs.
func TestTruthMatchesNativePerfStat(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("needs the perf binary (apt-get install linux-perf)")
	}
	const list = "syscalls:sys_enter_getppid,syscalls:sys_enter_write,page-faults,minor-faults,raw_syscalls:sys_enter,context-switches"
	evs, err := perf.ParseEvents(list)
	if err != nil {
		t.Fatal(err)
	}
	fixedWork := func() *exec.Cmd {
		cmd := testutil.Reexec("BAYESPERF_VPMU_WORKLOAD=fixed-work:0")
		return cmd
	}
	// Native perf stat twice, CSV (value,unit,event,...): the two runs' difference
	// measures run-to-run variation, which bounds how far the truth copy may be off.
	perfStat := func() map[string]float64 {
		pc := fixedWork()
		pc.Args = append([]string{"perf", "stat", "-x,", "-e", list, "--"}, pc.Args...)
		pc.Path, _ = exec.LookPath("perf")
		out, err := pc.CombinedOutput()
		if err != nil {
			t.Fatalf("perf stat: %v\n%s", err, out)
		}
		native := map[string]float64{}
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Split(line, ",")
			if len(f) < 3 {
				continue
			}
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				native[f[2]] = v
			}
		}
		return native
	}
	native, native2 := perfStat(), perfStat()
	ks, err := KernelSchedule(evs, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunCommand(Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: true}, fixedWork(), 0)
	if err != nil {
		t.Fatal(err)
	}
	truth := make([]float64, len(evs))
	for _, st := range res.Steps {
		for i, c := range st.Truth {
			truth[i] += float64(c)
		}
	}
	for i, e := range evs {
		nv, ok := native[e.Name]
		if !ok {
			t.Fatalf("perf stat printed no %s", e.Name)
		}
		tol := 0.05*nv + 20 + 2*math.Abs(nv-native2[e.Name])
		if i < 2 {
			tol = 0 // the loop's own syscalls: exact
		}
		if e.Name == "context-switches" {
			// Scheduling noise: native runs of this program range from ~70 to ~280
			// on a quiet VM, and under the load of other test packages running in
			// parallel (make test) the target is preempted far more often (CI saw a
			// truth of 360 against native runs of 76 and 75 taken a moment before).
			// So only that the truth copy counts them, within an order of magnitude.
			lo, hi := 0.5*min(nv, native2[e.Name])-20, 10*max(nv, native2[e.Name])+50
			if truth[i] < lo || truth[i] > hi {
				t.Errorf("%s: truth %.0f, perf stat %.0f and %.0f (want within [%.0f, %.0f])", e.Name, truth[i], nv, native2[e.Name], lo, hi)
			}
			continue
		}
		if math.Abs(truth[i]-nv) > tol {
			t.Errorf("%s: truth %.0f, perf stat %.0f and %.0f (tolerance %.0f)", e.Name, truth[i], nv, native2[e.Name], tol)
		} else {
			t.Logf("%-28s truth %10.0f  perf stat %10.0f %10.0f", e.Name, truth[i], nv, native2[e.Name])
		}
	}
}

// TestVirtualTimes checks what a client sees through Virtual with one counter and three
// events: every event shows the same time_enabled, the running times of the three add up
// to it (exactly one event is on at any time), and each gets about a third.
func TestVirtualTimes(t *testing.T) {
	runtime.LockOSThread() // the events follow this thread
	defer runtime.UnlockOSThread()
	evs, ks := kernelEvents(t, "task-clock,page-faults,minor-faults", 1, nil)
	// Allocate before starting: zeroing 64 MiB would make the first slice long.
	buf := make([]byte, 64<<20)
	p := startOnThread(t, evs, ks, true)
	for k := range 30 {
		for i := k * 4096 * 16; i < (k+1)*4096*16 && i < len(buf); i += 4096 {
			buf[i] = 1 // fresh pages: minor faults on this thread
		}
		end := time.Now().Add(2 * time.Millisecond)
		for time.Now().Before(end) {
		}
		if _, err := p.Step(); err != nil {
			t.Fatal(err)
		}
	}
	var sumRun, enabled uint64
	for i := range evs {
		c, err := p.Virtual(0, i)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			enabled = c.Enabled
		} else if d := math.Abs(float64(c.Enabled)-float64(enabled)) / float64(enabled); d > 0.01 {
			t.Fatalf("%s enabled %d vs %d", evs[i].Name, c.Enabled, enabled)
		}
		if share := float64(c.Running) / float64(c.Enabled); share < 0.2 || share > 0.5 {
			t.Errorf("%s ran %.2f of the time with 1 counter and 3 events", evs[i].Name, share)
		}
		sumRun += c.Running
	}
	if d := math.Abs(float64(sumRun)-float64(enabled)) / float64(enabled); d > 0.02 {
		t.Fatalf("running times add up to %d, enabled %d", sumRun, enabled)
	}
}

// TestEnableOnExecRunner drives the PMU the way the sidecar does for `perf stat -- CMD`:
// events are opened on a process that has not exec'd its command yet (a shell waiting on
// its stdin), with EnableOnExec, and a Runner steps them while the command runs. Nothing
// before the exec may count, and a client sees multiplexed times.
func TestEnableOnExecRunner(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	evs, ks := kernelEvents(t, "syscalls:sys_enter_getppid,syscalls:sys_enter_write,page-faults,minor-faults", 2, nil)
	cmd := testutil.ReexecOnLine("BAYESPERF_VPMU_WORKLOAD=fixed-work:0")
	in := testutil.StartWithStdin(t, cmd)
	p, r := openRunner(t, Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: true, Pid: cmd.Process.Pid,
		CPU: perf.AnyCPU, Inherit: true, EnableOnExec: true})
	time.Sleep(20 * time.Millisecond) // idle steps before the exec must not rotate or count
	if c, err := r.Virtual(0, 0); err != nil || c.Enabled != 0 || c.Value != 0 {
		t.Fatalf("counted before exec: %+v %v", c, err)
	}
	in.Write([]byte("go\n"))
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	steps, err := r.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var truth uint64
	for _, st := range steps {
		truth += st.Truth[0]
		if st.Idle {
			t.Fatal("idle step kept")
		}
	}
	if truth != 5000 {
		t.Errorf("truth getppid = %d, want exactly 5000 (enable_on_exec)", truth)
	}
	var sumRun uint64
	for i := range evs {
		c, err := p.Virtual(0, i)
		if err != nil {
			t.Fatal(err)
		}
		// The target is gone: what a client reads is what the view's slices counted.
		var sum uint64
		left := false // a slice in which the target ran while the event waited its turn
		for _, st := range steps {
			rd := st.Views[0].Readings[i]
			sum += rd.Count
			left = left || rd.Running < rd.Enabled
		}
		if c.Value != sum {
			t.Errorf("%s: virtual count %d, the view's slices add up to %d", evs[i].Name, c.Value, sum)
		}
		if c.Enabled == 0 || c.Running > c.Enabled {
			t.Fatalf("%s: virtual %+v", evs[i].Name, c)
		}
		sumRun += c.Running
		// Which slices the target ran in is the scheduler's choice (on a loaded
		// machine it may run only while this event is counted): the virtual times
		// must show each slice in which it waited.
		if left && c.Running == c.Enabled {
			t.Errorf("%s: running == enabled (%d), but it waited its turn in a slice the target ran in", evs[i].Name, c.Running)
		}
	}
	// The target is gone, so the clock is frozen: exactly two events ran at any time.
	if c, _ := p.Virtual(0, 0); sumRun != 2*c.Enabled {
		t.Errorf("running times add up to %d for enabled %d with 2 counters", sumRun, c.Enabled)
	}
}

// TestSplitKeepsConfiguration: Split ends a slice without rotating, so the slice after a
// split counts the same events as the one before it, and the next Step rotates as usual.
func TestSplitKeepsConfiguration(t *testing.T) {
	runtime.LockOSThread() // the events follow this thread
	defer runtime.UnlockOSThread()
	evs, ks := kernelEvents(t, "task-clock,page-faults,minor-faults", 1, nil)
	p := startOnThread(t, evs, ks, false)
	counted := func(st Step) []int {
		var out []int
		for _, r := range st.Views[0].Readings {
			if r.Running > 0 {
				out = append(out, int(r.Event))
			}
		}
		return out
	}
	var got [][]int
	for _, split := range []bool{false, true, false, false} {
		end := time.Now().Add(2 * time.Millisecond)
		for time.Now().Before(end) {
		}
		step := p.Step
		if split {
			step = p.Split
		}
		st, err := step()
		if err != nil {
			t.Fatal(err)
		}
		if st.Idle {
			t.Fatalf("idle step while this thread spins")
		}
		got = append(got, counted(st))
	}
	// Slices: config 0; config 1 ended by the split; config 1 again; config 2.
	want := [][]int{{0}, {1}, {1}, {2}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events counted per slice %v, want %v", got, want)
	}
}

// TestEnableOnExecRunnerViewCopies is TestEnableOnExecRunner on the path hardware events
// take: every view has copies of its own, switched by ioctl.
func TestEnableOnExecRunnerViewCopies(t *testing.T) {
	viewCopies = true
	defer func() { viewCopies = false }()
	TestEnableOnExecRunner(t)
}

// TestOneKernelEventPerEvent: software events and tracepoints need one kernel event each
// (plus the clock), however many views, with or without truth, and an event asked for
// twice shares its copy.
func TestOneKernelEventPerEvent(t *testing.T) {
	evs, ks := kernelEvents(t, "task-clock,page-faults,minor-faults,page-faults", 1, nil)
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	for _, truth := range []bool{false, true} {
		before := fds()
		p, err := Open(Config{Events: evs, Views: []View{{"a", ks}, {"b", ks}}, Truth: truth, Pid: perf.ThisPid, CPU: perf.AnyCPU})
		if err != nil {
			t.Fatal(err)
		}
		if n := fds() - before; n != 4 {
			t.Errorf("truth %v: %d fds for 4 events (3 distinct) in 2 views, want 4 (clock + 3)", truth, n)
		}
		p.Close()
	}
}

// startOnThread opens and starts a PMU of evs on this thread with one view, ks, and the
// truth if truth is set; it is closed when the test ends.
func startOnThread(tb testing.TB, evs []perf.EventDesc, ks *schedule.Schedule, truth bool) *PMU {
	tb.Helper()
	p, err := Open(Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: truth, Pid: perf.ThisPid, CPU: perf.AnyCPU})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// kernelEvents parses names (perf syntax) and returns the events with the kernel's round
// robin of them on counters programmable counters (fixed: indices of the events on fixed
// counters).
func kernelEvents(t *testing.T, names string, counters int, fixed []int) ([]perf.EventDesc, *schedule.Schedule) {
	t.Helper()
	evs, err := perf.ParseEvents(names)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := KernelSchedule(evs, counters, fixed)
	if err != nil {
		t.Fatal(err)
	}
	return evs, ks
}
