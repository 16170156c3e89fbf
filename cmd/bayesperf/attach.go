package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/statfmt"
)

const attachHelp = `NAME
    bayesperf attach - count events of a running process, perf stat -p style

SYNOPSIS
    bayesperf attach -p PID | -a | -C LIST [-A] [-e EVENTS] [-I MS] [--duration S]
                     [-x SEP | --json]
                     [--summary] [--virtual-counters N] [--fixed-counters EVENTS]
                     [--schedule kernel|bayesperf] [--relations FILE]
                     [--pmu-events DIR] [--mux-interval D] [-o FILE]
                     [--listen ADDR [--state FILE]]

DESCRIPTION
    Counts EVENTS for process PID (every thread it has when attach starts, and
    the threads and processes they create afterwards) until SIGINT (Ctrl-C),
    SIGTERM, the end of --duration, or the exit of PID, then prints the totals
    as perf stat -p does: the header "Performance counter stats for process id
    'PID':", one line per event with bayesperf's corrected value, ( ± x% ) (the
    half-width of its 95% interval relative to the value) and, when the event
    was not counting all the time, the share of time it was (perf's
    percentage), then the elapsed time. With -I, interval lines are printed
    while it runs. See 'bayesperf stat --help' for the estimator and the
    output formats.

    Output goes to stderr, as perf stat's does, or to -o FILE.

OPTIONS
    -p PID
        The process to attach to. Needs the right to trace it (same user with
        perf_event_paranoid <= 2, or root).
    -a, -C LIST, -A
        Instead of a process, every task on every online CPU (-a) or on the
        CPUs of LIST (0-3,6), until SIGINT, SIGTERM or --duration; -A prints
        one line per CPU. As for bayesperf stat.
    --duration S
        Stop after S seconds (2.5) or a Go duration (2500ms); 0 (default)
        runs until SIGINT, SIGTERM or the exit of PID.
    -e, -I, -x, --json, --summary, --virtual-counters, --fixed-counters,
    --schedule, --relations, --pmu-events, --mux-interval, -o, --listen,
    --state
        As for bayesperf stat. --json -I MS streams one JSON line per event
        and interval to a controller; --listen serves /metrics for Prometheus
        (docs/consumers.md), and --state FILE keeps its counters across a
        restart of attach.

EXAMPLES
    bayesperf attach -p 1234 -e task-clock,page-faults,context-switches
    bayesperf attach -p 1234 -I 1000 --duration 10 --virtual-counters 2 \
        -e 'page-faults,minor-faults,major-faults,sched:sched_switch'
    bayesperf attach -p 1234 --json -I 100 --listen 127.0.0.1:9464 -o /dev/stdout
    bayesperf attach -a --listen 127.0.0.1:9464 --state /var/lib/bayesperf/state.json
    bayesperf attach -a -A --json -I 250 --virtual-counters 4 -e 'syscalls:sys_enter_*'

EXIT STATUS
    0 after a clean stop (SIGINT included); 2 for a usage error; 1 when the
    process cannot be counted.
`

func runAttach(args []string) int {
	fs := flag.NewFlagSet("attach", flag.ContinueOnError)
	var f statFlags
	f.register(fs)
	pid := fs.Int("p", 0, "")
	fs.IntVar(pid, "pid", 0, "")
	durStr := fs.String("duration", "0", "")
	if code, stop := parseCmdLine("attach", attachHelp, fs, args); stop {
		return code
	}
	fail := func(err error) int { return exitWith("attach", err) }
	if fs.NArg() > 0 {
		return fail(usageErr("unexpected arguments %q: attach counts a running process (-p PID); to start a command use bayesperf stat", fs.Args()))
	}
	systemWide := f.allCPUs || f.cpuList != ""
	switch {
	case systemWide && *pid > 0:
		return fail(usageErr("-p and -a/-C exclude each other: count a process, or every task of some CPUs"))
	case *pid <= 0 && !systemWide:
		return fail(usageErr("no process given; usage: bayesperf attach -p PID [-e EVENTS] [flags], or -a / -C LIST"))
	}
	dur, err := parseSeconds(*durStr)
	if err != nil {
		return fail(usageErr("--duration: %w", err))
	}
	if err := unix.Kill(*pid, 0); !systemWide && errors.Is(err, unix.ESRCH) {
		return fail(usageErr("-p %d: no such process", *pid))
	}
	// Signals first: a SIGINT that arrives while the events are being opened must stop
	// us cleanly too, not kill us.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	s, err := newStatSession(&f, func(msg string) { fmt.Fprintln(os.Stderr, "bayesperf attach:", msg) })
	if err != nil {
		return fail(err)
	}
	defer s.close()
	if systemWide {
		err = s.openCPUs()
		s.serve(-1)
	} else if err = s.openThreads(*pid); err == nil {
		s.serve(*pid)
	}
	if err != nil {
		return fail(err)
	}
	s.start = time.Now()
	s.pr.Start = s.start
	var deadline <-chan time.Time
	if dur > 0 {
		tm := time.NewTimer(dur)
		defer tm.Stop()
		deadline = tm.C
	}
	wake := time.NewTimer(s.mux)
	defer wake.Stop()
loop:
	for {
		select {
		case <-sigs:
			break loop
		case <-deadline:
			break loop
		case now := <-wake.C:
			if err := s.step(false); err != nil {
				return fail(err)
			}
			if err := s.tick(now); err != nil {
				return fail(err)
			}
			if !systemWide && !alive(*pid) {
				break loop
			}
			wake.Reset(time.Until(s.nextWake(now)))
		}
	}
	if err := s.step(true); err != nil {
		return fail(fmt.Errorf("final step: %w", err))
	}
	if err := s.finish(s.target(statfmt.ForPid(*pid)), statfmt.Footer{Elapsed: time.Since(s.start)}); err != nil {
		return fail(err)
	}
	return 0
}

// openThreads opens and starts the events (a virtual PMU or the kernel's) on every thread of pid (with inherit, so the
// threads and processes they create later count too), as perf stat -p opens its events
// per thread. Threads that exit meanwhile are skipped.
func (s *statSession) openThreads(pid int) error {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return fmt.Errorf("list threads of %d: %w", pid, err)
	}
	var pmus []stepper
	var first error
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		p, err := s.open(tid, perf.AnyCPU)
		if err != nil {
			if errors.Is(err, unix.ESRCH) {
				continue // the thread ended since the listing
			}
			if first == nil {
				first = err
			}
			continue
		}
		pmus = append(pmus, p)
	}
	if len(pmus) == 0 {
		if first == nil {
			first = fmt.Errorf("process %d has no thread left", pid)
		}
		return fmt.Errorf("attach to %d: %w", pid, first)
	}
	if _, err := s.newTrack(perf.AnyCPU, pmus); err != nil {
		for _, p := range pmus {
			p.Close()
		}
		return err
	}
	return nil
}

// alive says whether pid still exists and is not a zombie.
func alive(pid int) bool {
	if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the ")" that closes the command name.
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == ')' {
			return i+2 >= len(b) || (b[i+2] != 'Z' && b[i+2] != 'X')
		}
	}
	return true
}
