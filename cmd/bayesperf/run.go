package main

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

const runHelp = `NAME
    bayesperf run - run an unmodified perf-based tool through bayesperf

SYNOPSIS
    bayesperf run [--stats FILE] [--pidfile FILE] [-v] [--shim PATH]
                  [--correct auto|none|bayesperf] [--infer-from slices|values]
                  [--virtual-counters N [--fixed-counters EVENTS]
                   [--schedule kernel|bayesperf] [--collector auto|read|bpf]
                   [--report FILE.json]]
                  [--truth FILE.csv] [--listen ADDR]
                  -- CMD [ARGS...]

DESCRIPTION
    Starts the bayesperf sidecar, then runs CMD with libbayesperf.so preloaded
    (LD_PRELOAD) and the sidecar's socket in BAYESPERF_SOCKET. Every perf event
    CMD opens (perf stat, perf record, PAPI, any program calling perf_event_open)
    is opened by CMD itself as usual, then handed to the sidecar, and CMD's
    read()s of it are served from a shared-memory mirror that the sidecar keeps
    fresh (at most two kernel ticks plus a millisecond old, 9 ms at HZ=250:
    republished every millisecond while CMD reads at least every 10 ms,
    otherwise refreshed at the read; exact after the measured program exits).
    The shim judges a page's age on the kernel's coarse clock, which lags by
    less than two ticks, with that margin, and reads the precise clock only
    when that cannot tell. While CMD does not read and its targets sleep, the
    sidecar sleeps too. Processes CMD starts inherit the preload
    but are left alone until they open a perf event themselves, and the program
    a perf client runs as its workload (perf stat -- ./app) starts without it:
    no library, environment variable or fd of bayesperf, so it runs and counts
    exactly as natively.

    A static binary never loads the shim (LD_PRELOAD works through the dynamic
    loader): when CMD is one, bayesperf run says so in one line and runs it
    uncorrected; measure such a program with bayesperf attach -p PID.

    The sidecar runs as a separate child process (its pid is in --pidfile): if
    it dies, CMD keeps running, its perf events fall back to the kernel with one
    warning line on stderr, and its values stay exact.

    Signals sent to bayesperf run (HUP, INT, QUIT, TERM, USR1, USR2, ALRM,
    WINCH, CONT) are forwarded to CMD; INT and QUIT are not forwarded when they
    come from the controlling terminal, which already delivers them to CMD.
    bayesperf run exits with CMD's exit status, or dies of CMD's fatal signal.

OPTIONS
    --stats FILE    At exit, write JSON counters to FILE:
                    {"events": n, "mirror_reads": n, "passthrough_reads": n,
                     "records_mirrored": n, "records_lost": n, "sidecar_pid": n, ...}
                    events: perf events registered; mirror_reads: read()s served
                    from mirrors; passthrough_reads: read()s of registered events
                    that went to the kernel; sync_refreshes: mirror reads that
                    first asked the sidecar for fresh values. With
                    --virtual-counters (or hardware events scheduled by
                    --correct auto) also "truth": {"EVENT": n, ...}, the
                    count of a hidden copy of each event that always counts
                    (summed over the tool's processes that opened it; pinned,
                    for hardware events, so it takes counters), and
                    "collector": "bpf" or "read" (see --collector).
    --pidfile FILE  Write the sidecar's pid to FILE once it is ready.
    --listen ADDR   The sidecar serves its own health at http://ADDR/metrics
                    in the OpenMetrics text format, for Prometheus: tool
                    processes and events registered, reads from mirrors and
                    from the kernel, ring records mirrored and lost, and
                    whether the correction stage was switched off
                    (docs/consumers.md). With port 0 the kernel picks one
                    and the sidecar prints it on stderr.
    -v              Log the sidecar's and the shim's decisions on stderr.
    --shim PATH     libbayesperf.so to preload (default: next to this binary,
                    or $BAYESPERF_SHIM).
    --virtual-counters N
                    Present CMD's counting events through a virtual PMU of N
                    counters: the sidecar multiplexes them as the kernel rotates
                    flexible groups, so tools show multiplexed values even on
                    events the kernel never multiplexes (software events,
                    tracepoints). A {group} of more than N events can never be
                    counted: it shows <not counted>, as on a real PMU, and the
                    other events stay on the virtual PMU. Without it, see
                    --correct auto.
    --fixed-counters EVENTS
                    With --virtual-counters: events (perf syntax, comma
                    separated) that sit on fixed counters and always count.
    --correct auto|none|bayesperf
                    Without --virtual-counters: auto (the default) leaves the
                    kernel's values unchanged unless CMD asks for more hardware
                    events than the PMU can count at once; then the sidecar
                    schedules those events itself, BayesPerf's overlap schedule
                    on the counters it measured free (pinned copies switched
                    every multiplexing interval, so the kernel never
                    multiplexes them), and serves bayesperf's corrected values
                    with time_running equal to time_enabled (-v says so, with
                    the counters). Software events and tracepoints always
                    count. On a machine without a hardware PMU auto is none.
                    none serves the kernel's values unchanged; bayesperf
                    corrects the kernel's
                    own multiplexing (more hardware events asked for than the
                    CPU has counters): every round the sidecar reads each
                    event's count, time_enabled and time_running, and their
                    deltas feed bayesperf's model; CMD reads the posterior
                    mean of each multiplexed event's running total with
                    time_running equal to time_enabled, as of the read (each
                    read of such an event asks the sidecar: a round trip);
                    after the measured program exits, the smoother's final
                    totals. Events the kernel never multiplexed (on a machine
                    without a PMU, all of them) keep the kernel's values bit
                    for bit, and so do reads of events that count the reader
                    itself (perf stat -a, self-monitoring). Not the default
                    yet: measured against the kernel's own scaling it was
                    better on some workloads and worse on others (0.21-3.0x
                    on a real kernel multiplexing an emulated arm64 PMU,
                    docs/pmu.md; 0.8-1.0x on the round robin emulated with
                    --virtual-counters N --infer-from values).
                    With --virtual-counters: what CMD reads. bayesperf (the
                    default): the posterior mean of each event's running total
                    as inferred by bayesperf's model from the multiplexed
                    slices, with time_running equal to time_enabled, so that
                    the tool's own scaling leaves it unchanged; after the
                    measured program exits, the smoother's final totals. Each
                    read asks the sidecar for values as of that instant (a
                    round trip instead of a shared-memory read): the first
                    read of a round of reads (perf stat -I) splits the current
                    multiplexing slice there (without rotating the
                    schedule). Events never scheduled keep the virtual PMU's
                    view (<not counted>). none: the virtual PMU's multiplexed
                    view, as on a real CPU.
    --infer-from slices|values
                    What --correct bayesperf infers from. values: the values the
                    sidecar reads of the tool's events every round (count,
                    time_enabled, time_running), as on a CPU whose PMU the kernel
                    multiplexes; the default, and the only choice, without
                    --virtual-counters. With --virtual-counters: slices (the
                    default), the exact slices the virtual PMU makes; or values,
                    the virtual PMU then shows the tool its multiplexed view
                    (--correct none's) and the correction of values alone
                    follows it, which tests on any machine what real
                    hardware gets.
    --schedule kernel|bayesperf
                    With --virtual-counters: which events count together. kernel:
                    the kernel's round robin of flexible groups; bayesperf (the
                    default): BayesPerf's overlap schedule over the relations
                    between the events (the kernel's when none links them).
    --collector auto|read|bpf
                    With --virtual-counters: how the sidecar reads its copies
                    of CMD's events at every multiplexing slice. bpf: an eBPF
                    program snapshots them all in the kernel at the slice
                    boundary and follows CMD's threads and child processes
                    (each new process is held stopped from its fork until its
                    copies are open); needs root (CAP_BPF and CAP_PERFMON).
                    read: read(2) of every copy, with inherited events. auto
                    (the default): bpf when the sidecar can load it, else
                    read. A client bpf cannot serve (hardware events; inherited
                    events on a kernel older than 6.13, which cannot hold new
                    processes) uses read. -v logs each client's collector
                    ("collector bpf" or "collector read (why)"); --stats and
                    --report say it as "collector".
    --report FILE.json
                    With --virtual-counters, or --correct auto scheduling
                    hardware events: at exit, write per event the corrected
                    value with its 95% interval ("lo", "hi"), the kernel's
                    scaled value ("linux": with --schedule bayesperf, of a
                    second copy of the events multiplexed by the kernel's
                    round robin in the same run; with auto, of the virtual
                    PMU's own view), the truth of a hidden
                    always-on copy and the status (exact, scaled, inferred,
                    not-counted), for the whole run ("totals") and for each
                    interval between two rounds of reads by the tool
                    ("intervals": with perf stat -I, the intervals it prints;
                    "tool" is the value it printed). Every read is then a
                    round trip to the sidecar, as with --correct bayesperf.

    --truth FILE.csv
                    Without --virtual-counters, on a CPU whose PMU the kernel
                    multiplexes: score what CMD reads against the exact counts.
                    For each hardware event CMD opens, the sidecar opens hidden
                    copies on the same target, pinned (the kernel never
                    multiplexes them; each takes a counter from CMD's events),
                    one per privilege level counted and shared between events,
                    and every read of the event becomes a round trip that
                    writes one row: time_ns, client, handle, event, the
                    kernel's raw_value, raw_enabled, raw_running, the value,
                    enabled, running CMD was given, and the truth. Counts from
                    CMD's exec on, like perf stat's. The linux estimate of a
                    row is raw_value * raw_enabled / raw_running. Scores the
                    kernel's values or --correct bayesperf's: it turns
                    --correct auto into none ('bayesperf eval --reads FILE'
                    prints the scores).

ENVIRONMENT
    BAYESPERF_SHIM        default for --shim.
    BAYESPERF_TIMEOUT_MS  how long the shim waits for a sidecar reply before
                          falling back to the kernel (default 2000).
    BAYESPERF_PMU_EVENTS  Linux's tools/perf/pmu-events/arch directory (default:
                          pmu-events/arch beside the bin/ holding bayesperf,
                          where make pmu-events puts it). When its mapfile.csv
                          maps this CPU to a table, the sidecar names the core
                          PMU's events as the table does (inst_retired) and
                          binds the table's relations (instructions =
                          inst_retired on Arm cores); -v says which table.

EXAMPLES
    bayesperf run -- perf stat -e task-clock,page-faults -- ./app
    bayesperf run --stats /tmp/s.json -- perf stat -I 100 -x, -p 1234
    bayesperf run --virtual-counters 2 --report /tmp/r.json -- perf stat -I 100 \
        -e page-faults,minor-faults,raw_syscalls:sys_enter,syscalls:sys_enter_getpid \
        -- bayesperf workload syscalls

EXIT STATUS
    CMD's status; 2 for a usage error; 127 if CMD cannot be started.
`

func runMain(args []string) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	f := addSidecarFlags(fs)
	pidFile := fs.String("pidfile", "", "")
	shimPath := fs.String("shim", os.Getenv("BAYESPERF_SHIM"), "")
	if code, stop := parseCmdLine("run", runHelp, fs, args); stop {
		return code
	}
	cmdArgs := fs.Args()
	if len(cmdArgs) == 0 {
		fmt.Fprint(os.Stderr, "bayesperf run: no command given; usage: bayesperf run [flags] -- CMD [ARGS...]\n")
		return 2
	}
	correct, from, err := f.checkRun()
	if err != nil {
		return exitWith("run", err)
	}
	// Find the command before starting anything: a typo gets one line and 127.
	found, err := lookCommand(cmdArgs)
	if err != nil {
		return exitWith("run", err)
	}
	if staticELF(found.Path) {
		// Still run it (drop-in first), but say once that nothing will be corrected.
		fmt.Fprintf(os.Stderr, "bayesperf run: %s is a static binary, out of LD_PRELOAD's reach: its perf events are not seen or corrected; run it alone and measure it with 'bayesperf attach -p PID'\n", cmdArgs[0])
	}
	lib, err := findShim(*shimPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bayesperf run: %v\n", err)
		return 2
	}
	dir, err := os.MkdirTemp("", "bayesperf-") // mode 0700: the socket's private directory
	if err != nil {
		fmt.Fprintf(os.Stderr, "bayesperf run: create socket directory: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "sock")

	extra, err := f.sidecarArgs(correct, from)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bayesperf run: %v\n", err)
		return 2
	}
	sc, err := startSidecar(sock, *f.stats, *f.verbose, extra)
	if err != nil {
		// Drop-in first: the tool still runs, and the shim passes through with a warning.
		fmt.Fprintf(os.Stderr, "bayesperf run: %v; running %s without the sidecar\n", err, cmdArgs[0])
	} else if *pidFile != "" {
		if err := os.WriteFile(*pidFile, []byte(strconv.Itoa(sc.cmd.Process.Pid)+"\n"), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "bayesperf run: write pidfile: %v\n", err)
		}
	}

	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = shimEnv(os.Environ(), lib, sock, *f.verbose)
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "bayesperf run: start %s: %v\n", cmdArgs[0], err)
		sc.stop(*f.stats)
		return 127
	}
	stopForwarding := forwardSignals(cmd, sigs)
	werr := cmd.Wait()
	stopForwarding()
	sc.stop(*f.stats)
	return exitStatus(werr, cmdArgs[0], dir)
}

// checkRun checks run's shared flags and resolves --correct and --infer-from.
func (f sidecarFlags) checkRun() (correct, from string, err error) {
	correct, err = resolveCorrect(*f.correct, *f.vcounters)
	if err != nil {
		return "", "", err
	}
	if *f.schedule != "kernel" && *f.schedule != "bayesperf" {
		return "", "", usageErr("--schedule %s: want kernel or bayesperf", *f.schedule)
	}
	from, err = resolveInferFrom(*f.inferFrom, *f.vcounters)
	if err != nil {
		return "", "", err
	}
	switch *f.collector {
	case "auto", "read", "bpf":
	default:
		return "", "", usageErr("--collector %s: want auto, read or bpf", *f.collector)
	}
	if *f.truth != "" && *f.vcounters != 0 {
		return "", "", usageErr("--truth with --virtual-counters: the virtual PMU keeps its own truth (--report, --stats)")
	}
	if *f.report != "" && *f.vcounters == 0 && (correct != "auto" || !countsHardware()) {
		return "", "", usageErr("--report needs the virtual PMU: --virtual-counters N, or --correct auto (the default) on a CPU whose PMU counts")
	}
	return correct, from, nil
}

// forwardedSignals are the signals run passes on to its command.
var forwardedSignals = []os.Signal{syscall.SIGHUP, syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGALRM, syscall.SIGWINCH, syscall.SIGCONT}

// forwardSignals passes what arrives on sigs on to the started cmd, until stop, which
// also stops the delivery to sigs.
func forwardSignals(cmd *exec.Cmd, sigs chan os.Signal) (stop func()) {
	fromTTY := foregroundTTY()
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case s := <-sigs:
				if fromTTY && (s == syscall.SIGINT || s == syscall.SIGQUIT) {
					continue // the terminal delivered it to CMD's process group already
				}
				cmd.Process.Signal(s)
			}
		}
	}()
	return func() {
		close(done)
		signal.Stop(sigs)
	}
}

// exitStatus is run's exit status for its command name's Wait error werr: the command's,
// or, when a signal killed it, death by the same signal (after removing dir, which the
// deferred removal would not reach).
func exitStatus(werr error, name, dir string) int {
	if werr == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(werr, &ee) {
		fmt.Fprintf(os.Stderr, "bayesperf run: wait for %s: %v\n", name, werr)
		return 1
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if ok && ws.Signaled() {
		// Die of the same signal, so our parent sees what it would have seen.
		sig := ws.Signal()
		os.RemoveAll(dir)
		signal.Reset(sig)
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(100 * time.Millisecond)
		return 128 + int(sig)
	}
	return ee.ExitCode()
}

// staticELF reports whether path is an ELF executable without a program interpreter
// (static, or static-pie): the dynamic loader never runs in it, so LD_PRELOAD is
// ignored. Scripts and anything unreadable are not (their interpreter may be reached).
func staticELF(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
}

// findShim locates libbayesperf.so.
func findShim(explicit string) (string, error) {
	cands := []string{}
	if explicit != "" {
		cands = append(cands, explicit)
	} else if exe, err := os.Executable(); err == nil {
		d := filepath.Dir(exe)
		cands = append(cands, filepath.Join(d, "libbayesperf.so"), filepath.Join(d, "..", "lib", "bayesperf", "libbayesperf.so"))
	}
	for _, c := range cands {
		if abs, err := filepath.Abs(c); err == nil {
			if st, err := os.Stat(abs); err == nil && st.Mode().IsRegular() {
				return abs, nil
			}
		}
	}
	return "", fmt.Errorf("find libbayesperf.so: tried %s; build it with 'make build' or pass --shim PATH", strings.Join(cands, ", "))
}

// shimEnv returns env with the shim preloaded first and the socket named.
func shimEnv(env []string, lib, sock string, verbose bool) []string {
	out := make([]string, 0, len(env)+3)
	preload := lib
	for _, kv := range env {
		switch {
		case strings.HasPrefix(kv, "LD_PRELOAD="):
			if old := strings.TrimPrefix(kv, "LD_PRELOAD="); old != "" {
				preload = lib + ":" + old
			}
		case strings.HasPrefix(kv, "BAYESPERF_SOCKET="), strings.HasPrefix(kv, "BAYESPERF_VERBOSE="):
		default:
			out = append(out, kv)
		}
	}
	out = append(out, "LD_PRELOAD="+preload, "BAYESPERF_SOCKET="+sock)
	if verbose {
		out = append(out, "BAYESPERF_VERBOSE=1")
	}
	return out
}

// foregroundTTY reports whether our stdin is a terminal whose foreground process group
// is ours (so the terminal's INT and QUIT reach CMD directly).
func foregroundTTY() bool {
	pgrp, err := unix.IoctlGetInt(0, unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// sidecarProc is the sidecar child; a nil *sidecarProc is a sidecar that failed to start.
type sidecarProc struct {
	cmd      *exec.Cmd
	lifeline *os.File // closing it tells the sidecar that run is gone
	exited   chan struct{}
}

func startSidecar(sock, statsFile string, verbose bool, extra []string) (*sidecarProc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	args := []string{"sidecar", "--socket", sock}
	if statsFile != "" {
		args = append(args, "--stats", statsFile)
	}
	if verbose {
		args = append(args, "-v")
	}
	args = append(args, extra...)
	cmd := exec.Command(self, args...)
	lifeR, lifeW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("create sidecar pipe: %w", err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		lifeR.Close()
		lifeW.Close()
		return nil, fmt.Errorf("create sidecar pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = lifeR, readyW, os.Stderr
	// Own process group: the terminal's ^C goes to the tool, which still reads its
	// counters afterwards, through the sidecar.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	lifeR.Close()
	readyW.Close()
	if err != nil {
		lifeW.Close()
		readyR.Close()
		return nil, fmt.Errorf("start sidecar: %w", err)
	}
	sc := &sidecarProc{cmd: cmd, lifeline: lifeW, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(sc.exited)
	}()
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(readyR).ReadString('\n')
		readyR.Close()
		line <- s
	}()
	select {
	case s := <-line:
		if strings.TrimSpace(s) == "ready" {
			return sc, nil
		}
		sc.kill()
		return nil, errors.New("sidecar failed to start")
	case <-time.After(10 * time.Second):
		sc.kill()
		return nil, errors.New("sidecar did not become ready within 10s")
	}
}

func (sc *sidecarProc) kill() {
	sc.cmd.Process.Kill()
	sc.lifeline.Close()
	<-sc.exited
}

// stop asks the sidecar to write its stats and exit; if it is already gone (killed), the
// stats file says so instead.
func (sc *sidecarProc) stop(statsFile string) {
	if sc == nil {
		writeLostStats(statsFile, 0)
		return
	}
	select {
	case <-sc.exited:
		writeLostStats(statsFile, sc.cmd.Process.Pid)
		sc.lifeline.Close()
		return
	default:
	}
	sc.cmd.Process.Signal(syscall.SIGTERM)
	// A stopped sidecar (SIGSTOP, a debugger) would hold SIGTERM pending until the grace
	// below ran out; its clients went to the kernel long ago, so wake it to exit cleanly
	// and write its stats. SIGCONT is a no-op for a running sidecar.
	sc.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-sc.exited:
	case <-time.After(5 * time.Second):
		fmt.Fprintln(os.Stderr, "bayesperf run: sidecar did not stop within 5s; killing it")
		sc.cmd.Process.Kill()
		<-sc.exited
	}
	sc.lifeline.Close()
	if ws, ok := sc.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && (ws.Signaled() || ws.ExitStatus() != 0) {
		writeLostStats(statsFile, sc.cmd.Process.Pid)
	}
}

// writeLostStats writes a stats file for a sidecar that died before it could: its
// counters died with it.
func writeLostStats(path string, pid int) {
	if path == "" {
		return
	}
	b, _ := json.Marshal(map[string]any{
		"events": 0, "mirror_reads": 0, "passthrough_reads": 0, "records_mirrored": 0,
		"records_lost": 0, "sidecar_pid": pid, "sidecar_lost": true,
	})
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "bayesperf run: write stats: %v\n", err)
	}
}
