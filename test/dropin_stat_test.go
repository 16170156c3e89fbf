package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Tolerances of the perf stat comparisons, and why.
//
// Page faults: natively, two runs of the same program differ by up to ~3 faults (ASLR
// moves the loader's and libc's pages), so counts must agree within 3 + 1%. The workload
// of a tool run through `bayesperf run` starts without the shim (the tool drops it from
// the workload's environment), so it pays nothing for it; the tests also compare with a
// native run that has the shim preloaded in the tool but no sidecar (the shim then only
// passes through), which must equal the plain native run within the same tolerance.
// (Before the shim left the workload, loading it cost `true` 5 page faults, 8 syscalls
// and 3 mmaps.)
//
// Context switches: the workload sleeps 1 ms ten times (ten voluntary switches); the rest
// are preemptions by whatever else runs on the machine, which on a shared 2-CPU VM swing
// from tens to hundreds between identical native runs, and between two runs started at
// the same moment (14 against 44, 78 against 13). So each run through bayesperf is
// compared with a native run beside it, under the same load, and, preemptions only
// adding, the least perturbed of three is the stable statistic: every run must count at
// least the ten sleeps, and the smallest count through bayesperf must not exceed the
// native median of three by more than 10 (a sidecar that woke up on the workload's CPU
// would).
//
// Task clock: CPU time of a workload that spins for a fixed wall time; on a shared VM it
// varies by tens of percent, so medians of three runs side by side must agree within
// 2 ms + 40%.
const (
	faultsAbs, faultsRel = 3, 0.01
	clockAbs, clockRel   = 2, 0.4
)

func workload(t testing.TB, args ...string) []string {
	return append([]string{dropinBin(t, "workload")}, args...)
}

// noSidecarEnv preloads the shim with a socket nobody listens on: everything passes
// through, and the tool pays the preload's cost as under `bayesperf run` (its workload
// does not: the shim leaves it out).
func noSidecarEnv(t testing.TB) []string {
	return []string{
		"LD_PRELOAD=" + dropinBin(t, "libbayesperf.so"),
		"BAYESPERF_SOCKET=" + filepath.Join(t.TempDir(), "nobody-listens"),
	}
}

func bayesperfWarnings(stderr string) []string {
	var w []string
	for line := range strings.Lines(stderr) {
		if strings.HasPrefix(line, "bayesperf") {
			w = append(w, strings.TrimSpace(line))
		}
	}
	return w
}

// TestDropinPerfStatSoftwareEvents: perf stat of the six software events on a
// deterministic workload prints the same lines with the same exit status as natively,
// with equal values within the tolerances above, and every counting read perf made was
// served from a mirror.
func TestDropinPerfStatSoftwareEvents(t *testing.T) {
	const events = "task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations"
	argv := append([]string{"perf", "stat", "-x,", "-e", events, "--"}, workload(t, "2000", "10", "3", "50")...)
	native := run(t, nil, argv...)
	preloaded := run(t, noSidecarEnv(t), argv...)
	got, st := bayesperfRun(t, argv...)

	if native.status != 3 || got.status != native.status {
		t.Errorf("exit status: native %d, through bayesperf %d; want both 3 (the workload's)", native.status, got.status)
	}
	if w := bayesperfWarnings(got.stderr); len(w) != 0 {
		t.Errorf("bayesperf printed warnings: %q", w)
	}
	nl, pl, gl := parseStatCSV(t, native.stderr, false), parseStatCSV(t, preloaded.stderr, false), parseStatCSV(t, got.stderr, false)
	if !slices.Equal(eventNames(nl), eventNames(gl)) || len(nl) != 6 {
		t.Fatalf("lines differ:\nnative  %q\nbayesperf %q", eventNames(nl), eventNames(gl))
	}
	n, p, g := byEvent(nl), byEvent(pl), byEvent(gl)
	for _, ev := range []string{"page-faults", "minor-faults"} {
		gv, pv, nv := g[ev].num(t), p[ev].num(t), n[ev].num(t)
		if gv < 2000 {
			t.Errorf("%s = %v through bayesperf; the workload alone touches 2000 pages", ev, gv)
		}
		if !within(gv, pv, faultsAbs, faultsRel) {
			t.Errorf("%s: %v through bayesperf, %v natively with the shim preloaded (tolerance %d + %v%%)", ev, gv, pv, faultsAbs, faultsRel*100)
		}
		if !within(pv, nv, faultsAbs, faultsRel) {
			t.Errorf("%s: preloading the shim in perf changed the workload's faults from %v to %v", ev, nv, pv)
		}
		t.Logf("%s: native %v, native+preload %v, bayesperf %v", ev, nv, pv, gv)
	}
	if g["page-faults"].num(t) != g["minor-faults"].num(t)+g["major-faults"].num(t) {
		t.Errorf("page-faults %v != minor %v + major %v", g["page-faults"].value, g["minor-faults"].value, g["major-faults"].value)
	}
	// Major faults depend on the page cache, not on the tool: CI's first native run of a
	// freshly built workload once took 1, bayesperf's run after it 0.
	if !within(g["major-faults"].num(t), n["major-faults"].num(t), faultsAbs, 0) {
		t.Errorf("major-faults: %v through bayesperf, %v natively (tolerance %d)", g["major-faults"].value, n["major-faults"].value, faultsAbs)
	}
	// Context switches and task-clock depend on the machine's load, which swings from
	// one second to the next: each comes from three pairs of runs made at the same
	// moment, a native perf stat beside the one through bayesperf (besideNative).
	var nsw, gsw, nclk, gclk []float64
	for range 3 {
		nr, gr := besideNative(t, argv)
		nv, gv := byEvent(parseStatCSV(t, nr, false)), byEvent(parseStatCSV(t, gr, false))
		nsw, gsw = append(nsw, nv["context-switches"].num(t)), append(gsw, gv["context-switches"].num(t))
		nclk, gclk = append(nclk, nv["task-clock"].num(t)), append(gclk, gv["task-clock"].num(t))
	}
	slices.Sort(nsw)
	slices.Sort(gsw)
	slices.Sort(nclk)
	slices.Sort(gclk)
	t.Logf("side by side: context-switches %v natively, %v through bayesperf; task-clock %v ms natively, %v through bayesperf", nsw, gsw, nclk, gclk)
	// Preemptions only add: the least perturbed run of each side is the one to compare.
	if gsw[0] < 10 || nsw[0] < 10 || gsw[0] > nsw[1]+10 {
		t.Errorf("context-switches: %v through bayesperf, %v natively; want all >= 10 and the smallest through bayesperf at most the native median + 10", gsw, nsw)
	}
	// The 50 ms spin is wall-clock: on a loaded machine it gets less CPU (28 ms natively
	// was seen), so task-clock is judged against the native runs, not against 50 ms.
	if gclk[1] <= 0 || !within(gclk[1], nclk[1], clockAbs, clockRel) {
		t.Errorf("task-clock: median %v ms through bayesperf (%v), %v natively (%v); the workload spins 50 ms", gclk[1], gclk, nclk[1], nclk)
	}
	if st.Events != 6 || st.MirrorReads < 6 || st.PassthroughReads != 0 {
		t.Errorf("stats %+v: want 6 events, every read (>= 6) from mirrors, none passed through", st)
	}
}

// besideNative runs perf stat argv (perf, stat, its options, --, the command) twice at
// the same moment, under one `bayesperf run`: natively (the shim left out of its
// environment) and through bayesperf, and returns what each printed. Sequential runs saw
// different loads: on the shared 2-CPU VM the least perturbed of three runs through
// bayesperf once counted more context switches than the median of three native runs
// made just before each, by more than 10, and side by side each way took the higher
// count as often.
func besideNative(t *testing.T, argv []string) (native, through string) {
	t.Helper()
	dir := t.TempDir()
	nf, gf := filepath.Join(dir, "native.csv"), filepath.Join(dir, "through.csv")
	perfTo := func(out string) string {
		q := append([]string{argv[0], argv[1], "-o", out}, argv[2:]...)
		for i, a := range q {
			q[i] = "'" + a + "'"
		}
		return strings.Join(q, " ")
	}
	// The exit statuses are the command's (checked by the caller's own runs).
	script := "env -u LD_PRELOAD " + perfTo(nf) + " & " + perfTo(gf) + "; wait"
	r, st := bayesperfRun(t, "sh", "-c", script)
	if st.Events != 6 {
		t.Errorf("%d events through bayesperf, want the 6 of one perf stat (the other one native)", st.Events)
	}
	nb, nerr := os.ReadFile(nf)
	gb, gerr := os.ReadFile(gf)
	if nerr != nil || gerr != nil || len(parseStatCSV(t, string(nb), false)) == 0 || len(parseStatCSV(t, string(gb), false)) == 0 {
		t.Fatalf("%s: status %d, outputs %v %v:\n%s\n%s\n%s", script, r.status, nerr, gerr, nb, gb, r.stderr)
	}
	return string(nb), string(gb)
}

// TestDropinPerfStatInterval: perf stat -I 100 -x, prints the same intervals, and the
// page faults per interval add up to what a native run counts.
func TestDropinPerfStatInterval(t *testing.T) {
	argv := append([]string{"perf", "stat", "-I", "100", "-x,", "-e", "task-clock,page-faults,context-switches", "--"}, workload(t, "500", "0", "0", "550")...)
	native := run(t, noSidecarEnv(t), argv...)
	got, st := bayesperfRun(t, argv...)
	if got.status != 0 || native.status != 0 {
		t.Fatalf("exit status %d (native %d)\n%s", got.status, native.status, got.stderr)
	}
	nl, gl := parseStatCSV(t, native.stderr, true), parseStatCSV(t, got.stderr, true)
	if len(gl)%3 != 0 || len(gl) < 15 || !within(float64(len(gl)), float64(len(nl)), 3, 0) {
		t.Fatalf("%d interval lines through bayesperf, %d natively; want 3 per interval, about 6 intervals", len(gl), len(nl))
	}
	for i := 0; i+3 <= len(gl); i += 3 {
		if got := eventNames(gl[i : i+3]); !slices.Equal(got, eventNames(nl[:3])) {
			t.Errorf("interval %d lines %q, want %q", i/3, got, eventNames(nl[:3]))
		}
	}
	sum := func(ls []statLine, ev string) (s float64) {
		for _, l := range ls {
			// An interval that ends before the workload's exec enables the events
			// prints "<not counted>", natively too.
			if l.event == ev && l.value != "<not counted>" {
				s += l.num(t)
			}
		}
		return s
	}
	gf, nf := sum(gl, "page-faults"), sum(nl, "page-faults")
	if gf < 1000 || !within(gf, nf, faultsAbs, faultsRel) {
		t.Errorf("page-faults summed over intervals: %v through bayesperf, %v natively (workload touches 500 + 550 pages)", gf, nf)
	}
	if st.PassthroughReads != 0 || st.MirrorReads < uint64(len(gl)) {
		t.Errorf("stats %+v: want every one of the %d interval reads from mirrors", st, len(gl))
	}
}

// procStat returns a process's minor faults (/proc/PID/stat) and CPU time in ms, read
// from the process's CPU-time clock (clock_gettime of clock_getcpuclockid(pid)), the
// clock task-clock counts. Reading it brings a running thread's time up to date. The
// ticks of utime and stime in /proc/PID/stat are not (scaled to that clock, they lagged
// it by 22 ms in a CI run), nor is /proc/PID/task/TID/schedstat, which a running thread
// updates at the scheduler's tick: perf's task-clock came out 16 ms above its span in a
// CI run on a loaded 2-vCPU VM, where one 10 ms tick was allowed.
func procStat(t testing.TB, pid int) (minflt, cpuMs float64) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	// After "pid (comm) ": state is field 0, minflt 7.
	minflt, _ = strconv.ParseFloat(f[7], 64)
	// MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED) of the kernel's posix-timers.h.
	clock := (^int32(pid))<<3 | 2
	var ts unix.Timespec
	if err := unix.ClockGettime(clock, &ts); err != nil {
		t.Fatalf("CPU-time clock of process %d: %v", pid, err)
	}
	return minflt, float64(ts.Nano()) / 1e6
}

// TestDropinPerfStatAttach: perf stat -p PID on a running process counts what the
// process did while perf was attached. The truth comes from /proc/PID/stat, read just
// before and after the perf run: the counts cannot exceed what the process did in that
// span. A lower bound would need the process's CPU share inside perf's 0.5 s window,
// which on this shared VM swings from 20% to 100% (the workload then catches up on its
// page touches in bursts), so it is only required to be substantial.
func TestDropinPerfStatAttach(t *testing.T) {
	measure := func(through bool) {
		w := exec.Command(workload(t)[0], "0", "0", "0", "4000")
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { w.Process.Kill(); w.Wait() }()
		time.Sleep(50 * time.Millisecond)
		argv := []string{"perf", "stat", "-x,", "-e", "task-clock,minor-faults", "-p", strconv.Itoa(w.Process.Pid), "--", "sleep", "0.5"}
		f0, c0 := procStat(t, w.Process.Pid)
		start := time.Now()
		r, st := runMaybeThrough(t, through, nil, argv...)
		wall := float64(time.Since(start).Milliseconds())
		f1, c1 := procStat(t, w.Process.Pid)
		if r.status != 0 {
			t.Fatalf("perf stat -p: status %d\n%s", r.status, r.stderr)
		}
		g := byEvent(parseStatCSV(t, r.stderr, false))
		t.Logf("through bayesperf %v: task-clock %s ms, minor-faults %s; the process used %.1f ms of CPU and made %.0f faults in %.0f ms",
			through, g["task-clock"].value, g["minor-faults"].value, c1-c0, f1-f0, wall)
		// task-clock: perf prints it to a hundredth of a ms.
		if tc := g["task-clock"].num(t); tc > c1-c0+0.01 || tc < 5 {
			t.Errorf("through bayesperf %v: task-clock %v ms; the process used %v ms of CPU in %v ms around the 500 ms window", through, tc, c1-c0, wall)
		}
		// minor faults: the workload touches one page per ms of wall time.
		if mf := g["minor-faults"].num(t); mf > f1-f0 || mf < 50 {
			t.Errorf("through bayesperf %v: minor-faults %v; the process made %v in %v ms around the 500 ms window", through, mf, f1-f0, wall)
		}
		if through && (st.Events != 2 || st.PassthroughReads != 0 || st.MirrorReads < 2) {
			t.Errorf("stats %+v: want 2 events read from mirrors", st)
		}
	}
	measure(false)
	measure(true)
}

// TestDropinPerfStatGroup: a {a,b,c} group is read with one group read, served from the
// group's mirror, and its members keep the kernel's relation page-faults = minor + major.
func TestDropinPerfStatGroup(t *testing.T) {
	argv := append([]string{"perf", "stat", "-x,", "-e", "{task-clock,page-faults,minor-faults}", "--"}, workload(t, "3000", "0", "0", "10")...)
	native := run(t, noSidecarEnv(t), argv...)
	got, st := bayesperfRun(t, argv...)
	if got.status != 0 {
		t.Fatalf("status %d\n%s", got.status, got.stderr)
	}
	nl, gl := parseStatCSV(t, native.stderr, false), parseStatCSV(t, got.stderr, false)
	if !slices.Equal(eventNames(nl), eventNames(gl)) {
		t.Fatalf("lines differ: %q vs %q", eventNames(nl), eventNames(gl))
	}
	g, n := byEvent(gl), byEvent(nl)
	if g["page-faults"].value != g["minor-faults"].value {
		t.Errorf("in one group read page-faults %s != minor-faults %s (no major faults here)", g["page-faults"].value, g["minor-faults"].value)
	}
	if gv, nv := g["page-faults"].num(t), n["page-faults"].num(t); gv < 3000 || !within(gv, nv, faultsAbs, faultsRel) {
		t.Errorf("page-faults %v through bayesperf, %v natively", gv, nv)
	}
	if g["task-clock"].runtime != g["page-faults"].runtime {
		t.Errorf("group members report different enabled times %d and %d", g["task-clock"].runtime, g["page-faults"].runtime)
	}
	if st.Events != 3 || st.PassthroughReads != 0 || st.MirrorReads < 1 {
		t.Errorf("stats %+v: want 3 events, reads from mirrors only", st)
	}
}

// TestDropinPerfStatSystemWide: perf stat -a (one event per CPU, needs root or
// perf_event_paranoid <= 0) counts like a native run.
func TestDropinPerfStatSystemWide(t *testing.T) {
	needRoot(t, "perf stat -a is refused to other users here")
	argv := []string{"perf", "stat", "-a", "-x,", "-e", "cpu-clock,context-switches", "--", "sleep", "0.3"}
	native := run(t, nil, argv...)
	start := time.Now()
	got, st := bayesperfRun(t, argv...)
	wall := float64(time.Since(start).Milliseconds())
	if got.status != 0 || native.status != 0 {
		t.Fatalf("status %d (native %d)\n%s", got.status, native.status, got.stderr)
	}
	g, n := byEvent(parseStatCSV(t, got.stderr, false)), byEvent(parseStatCSV(t, native.stderr, false))
	// cpu-clock over all CPUs counts wall time per CPU, busy or idle, while the events
	// are enabled: at least the 0.3 s of the sleep, at most the whole run.
	ncpu := float64(runtime.NumCPU())
	if gv := g["cpu-clock"].num(t); gv < 300*ncpu || gv > wall*ncpu {
		t.Errorf("cpu-clock %v ms through bayesperf, want %v..%v (0.3 s..%v ms x %v CPUs); native %v", gv, 300*ncpu, wall*ncpu, wall, ncpu, n["cpu-clock"].value)
	}
	if gv := g["context-switches"].num(t); gv <= 0 {
		t.Errorf("context-switches %v system-wide", gv)
	}
	// Per-CPU events count perf itself too: the shim reads them from the kernel (a
	// mirror could be older than what the reader just did).
	if st.Events != uint64(2*runtime.NumCPU()) || st.PassthroughReads != 0 || st.SelfReads < st.Events {
		t.Errorf("stats %+v: want %d events (2 per CPU), all read as self-counting events", st, 2*runtime.NumCPU())
	}
}

// runCProgram runs the test/c program name natively, where it must pass (else the
// program itself is wrong), then through bayesperf, where it must pass too; it returns
// the second run and its stats.
func runCProgram(t *testing.T, name string) (result, stats) {
	t.Helper()
	prog := dropinBin(t, name)
	if r := run(t, nil, prog); r.status != 0 {
		t.Fatalf("%s fails natively (the program itself is wrong):\n%s", name, r.stdout)
	}
	r, st := bayesperfRun(t, prog)
	if r.status != 0 {
		t.Fatalf("%s through bayesperf: status %d\n%s%s", name, r.status, r.stdout, r.stderr)
	}
	return r, st
}

// TestDropinReadFormats runs test/c/readformat.c: every read_format combination, groups,
// short reads, readv, dup, and the self-monitoring user page; read() through the shim
// must equal the kernel's read byte for byte, and (nearly) every read must come from a
// mirror.
func TestDropinReadFormats(t *testing.T) {
	r, st := runCProgram(t, "readformat")
	var reads uint64
	for line := range strings.Lines(r.stdout) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "reads "); ok {
			reads, _ = strconv.ParseUint(n, 10, 64)
		}
	}
	// Every read is served, and all but a rare one from a mirror: the shim reads the
	// kernel when the sidecar publishes that it cannot serve an event (BP_MIRROR_KERNEL,
	// after a failed read of its own) or the page cannot be read consistently, which
	// gives the same bytes here. A clean-clone make test saw 1 such read in 354 (cause
	// not found; not reproduced in 50 runs under CPU hogs); a broken mirror path passes
	// most reads through.
	if reads == 0 || st.MirrorReads+st.PassthroughReads != reads || st.PassthroughReads > reads/100 {
		t.Errorf("program made %d reads; stats %+v: want all of them served, at most 1%% from the kernel", reads, st)
	}
	if st.PassthroughReads != 0 {
		t.Logf("%d of %d reads went to the kernel", st.PassthroughReads, reads)
	}
}

// TestDropinFdLifecycle runs test/c/fdlife.c through bayesperf: dup/dup2/dup3/F_DUPFD
// aliases, close and close_range followed by fd-number reuse, fork (inherited fds and a
// child opening its own events), concurrent readers, and syscall() numbers other than
// perf_event_open. Every read() must equal the kernel's read of the same fd.
func TestDropinFdLifecycle(t *testing.T) {
	_, st := runCProgram(t, "fdlife")
	// 4 threads x 2001 reads plus the single reads of the sleeping child's events, all
	// from mirrors; the forked child's own event counts itself (2 kernel reads).
	if st.MirrorReads < 8000 || st.PassthroughReads != 0 || st.Clients != 2 {
		t.Errorf("stats %+v: want >= 8000 mirror reads, none passed through, from 2 clients (parent and child)", st)
	}
}

// TestDropinOverflowSignals runs test/c/overflow.c, PAPI_overflow's path without PAPI
// (PAPI's perf_event component needs a hardware PMU this VM lacks): O_ASYNC, F_SETSIG,
// F_SETOWN_EX, ioctl(REFRESH) and read() in the signal handler, on a self-counting event.
// Through bayesperf it must get its signals with the right si_fd, counts that only grow,
// and about as many signals and reads as natively (the shim reads self-counting events
// from the kernel: no round trip to the sidecar).
func TestDropinOverflowSignals(t *testing.T) {
	prog := dropinBin(t, "overflow")
	parse := func(out string) (signals, reads float64) {
		for line := range strings.Lines(out) {
			f := strings.Fields(line)
			if len(f) == 4 && f[0] == "signals" {
				signals, _ = strconv.ParseFloat(f[1], 64)
				reads, _ = strconv.ParseFloat(f[3], 64)
			}
		}
		return signals, reads
	}
	n := run(t, nil, prog)
	r, st := bayesperfRun(t, prog)
	if n.status != 0 || r.status != 0 {
		t.Fatalf("overflow: status %d natively, %d through bayesperf\n%s%s", n.status, r.status, r.stdout, r.stderr)
	}
	ns, nr := parse(n.stdout)
	gs, gr := parse(r.stdout)
	// Both run for 300 ms of CPU time, and signals come per 2 ms of it: a loaded machine
	// changes neither. Reads per CPU time vary with cache and scheduling: within a
	// factor of two.
	if gs < ns/2 || gr < nr/2 {
		t.Errorf("through bayesperf %v signals and %v reads in 300 ms of CPU, natively %v and %v", gs, gr, ns, nr)
	}
	t.Logf("through bayesperf %v signals and %v reads in 300 ms of CPU, natively %v and %v", gs, gr, ns, nr)
	if st.SelfReads < uint64(gr) || st.PassthroughReads != 0 {
		t.Errorf("stats %+v: want the %v reads answered as self-counting reads", st, gr)
	}
}

// TestDropinNoSidecar: with the shim preloaded and no sidecar listening, perf stat works
// as natively and says so in exactly one line. The workload spins 20 ms: perf stat
// exits 0, not with the workload's status, when its SIGCHLD handler runs before it
// reaches wait4 (1 in 15 runs of a 1 ms workload).
func TestDropinNoSidecar(t *testing.T) {
	argv := append([]string{"perf", "stat", "-x,", "-e", "page-faults,minor-faults,major-faults", "--"}, workload(t, "1000", "0", "5", "20")...)
	r := run(t, noSidecarEnv(t), argv...)
	if r.status != 5 {
		t.Errorf("status %d, want the workload's 5", r.status)
	}
	if w := bayesperfWarnings(r.stderr); len(w) != 1 || !strings.Contains(w[0], "straight to the kernel") {
		t.Errorf("warnings %q, want exactly one saying events go to the kernel", w)
	}
	g := byEvent(parseStatCSV(t, r.stderr, false))
	// A major fault or two come from the page cache's state (a freshly built binary in
	// CI): the identity holds whatever it is.
	if v := g["page-faults"].num(t); v < 1000 || v != g["minor-faults"].num(t)+g["major-faults"].num(t) {
		t.Errorf("page-faults %v, minor-faults %v, major-faults %v: want at least 1000 and page = minor + major",
			v, g["minor-faults"].value, g["major-faults"].value)
	}
}

// TestDropinSidecarKilled: SIGKILL to the sidecar in the middle of perf stat -I 100: perf
// finishes with status 0 and one warning, and its interval values still add up.
func TestDropinSidecarKilled(t *testing.T) {
	sf := filepath.Join(t.TempDir(), "stats.json")
	var stderr strings.Builder
	cmd, pid := startRun(t, nil, &stderr, append([]string{"--stats", sf, "--",
		"perf", "stat", "-I", "100", "-x,", "-e", "page-faults,task-clock", "--"}, workload(t, "0", "0", "0", "800")...)...)
	time.Sleep(350 * time.Millisecond)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill sidecar %d: %v", pid, err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bayesperf run after the sidecar was killed: %v\n%s", err, stderr.String())
	}
	w := bayesperfWarnings(stderr.String())
	if len(w) != 1 || !strings.Contains(w[0], "lost the sidecar") {
		t.Errorf("warnings %q, want exactly one about the lost sidecar", w)
	}
	ls := parseStatCSV(t, stderr.String(), true)
	var faults, intervals float64
	for _, l := range ls {
		if l.event == "page-faults" && l.value != "<not counted>" {
			faults += l.num(t)
			intervals++
		}
	}
	// The workload touches 800 pages over 800 ms, plus about 60 start-up faults; every
	// interval before and after the kill is counted, none twice. (perf stat may print
	// fewer than 8 intervals when this busy VM starves it.)
	if intervals < 4 || faults < 800 || faults > 1000 {
		t.Errorf("%v intervals adding up to %v page faults; want >= 4 intervals and 800..1000 faults\n%s", intervals, faults, stderr.String())
	}
	if st := readStats(t, sf); !st.SidecarLost || st.SidecarPid != pid {
		t.Errorf("stats %+v: want sidecar_lost and sidecar_pid %d", st, pid)
	}
}

// TestDropinChildUndisturbed: a program that inherits the preload but never opens a perf
// event never talks to the sidecar.
func TestDropinChildUndisturbed(t *testing.T) {
	r, st := bayesperfRun(t, workload(t, "100", "1", "4")...)
	if r.status != 4 || r.stderr != "" {
		t.Errorf("status %d stderr %q; want 4 and nothing", r.status, r.stderr)
	}
	if st.Clients != 0 || st.Events != 0 {
		t.Errorf("stats %+v: want no client", st)
	}
}

// TestDropinExitStatusAndSignals: bayesperf run exits with CMD's status and dies of
// CMD's fatal signal.
func TestDropinExitStatusAndSignals(t *testing.T) {
	dir := dropinBins(t)
	for _, c := range []struct {
		script string
		want   int
	}{{"exit 0", 0}, {"exit 7", 7}, {"kill -KILL $$", 128 + 9}, {"kill -TERM $$", 128 + 15}} {
		r := run(t, nil, filepath.Join(dir, "bayesperf"), "run", "--", "sh", "-c", c.script)
		if r.status != c.want {
			t.Errorf("sh -c %q: status %d, want %d", c.script, r.status, c.want)
		}
	}
	if r := run(t, nil, filepath.Join(dir, "bayesperf"), "run"); r.status != 2 {
		t.Errorf("run without a command: status %d, want 2", r.status)
	}
	// A signal sent to bayesperf run reaches CMD.
	cmd := exec.Command(filepath.Join(dir, "bayesperf"), "run", "--", "sh", "-c", `trap "exit 42" TERM; echo up; while :; do sleep 0.05; done`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := out.Read(make([]byte, 3)); err != nil { // "up": the trap is set
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != 42 {
		t.Errorf("SIGTERM to bayesperf run: %v, want CMD's trap status 42", err)
	}
}
