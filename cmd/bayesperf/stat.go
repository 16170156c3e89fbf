package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/statfmt"
)

const statHelp = `NAME
    bayesperf stat - count events of a command, perf stat style, with uncertainty

SYNOPSIS
    bayesperf stat [-e EVENTS] [-I MS] [-x SEP | --json] [--summary]
                   [--virtual-counters N] [--fixed-counters EVENTS]
                   [--schedule kernel|bayesperf] [--relations FILE]
                   [--pmu-events DIR] [--mux-interval D] [-o FILE]
                   [--listen ADDR [--state FILE]] [-a | -C LIST] [-A] -- CMD [ARGS...]
    bayesperf stat -a | -C LIST [-A] [flags]

DESCRIPTION
    Runs CMD, counts EVENTS for it and its children from its first instruction
    to its exit, and prints what perf stat (Linux 6.1) prints, in the same
    layout, with bayesperf's corrected value in place of the kernel's scaled one:

                 1234      page-faults   #  1.23 K/sec   ( ±  2.10% )  (33.33%)

    ( ± x% ) is the half-width of bayesperf's 95% interval relative to the
    value (0.00% for a value that was counted all the time); the last
    parenthesis, printed only when the event was not counting all the time it
    was enabled, is the share of time it was counting, as perf prints it.

    Every multiplexing interval (perf_event_mux_interval_ms, 4 ms typically)
    the raw (count, time_enabled, time_running) deltas of every event are fed
    to the bayesperf estimator (relations between events, a temporal model,
    the 95% interval of each value) and to Linux's scaling (count * enabled /
    running), which -x and --json also report.

    Without --virtual-counters the events are opened as perf stat opens them
    and the kernel schedules them: where it multiplexes them (more hardware
    events than counters) bayesperf sees its real time_running and corrects;
    where it does not (software events and tracepoints never are) the values
    are exact and the ± is 0. With
    --virtual-counters N, at most N events count at once (plus the
    --fixed-counters events), rotated as the kernel rotates flexible groups
    (--schedule kernel) or by BayesPerf's overlap-aware schedule (--schedule
    bayesperf): multiplexing on any machine, corrected by bayesperf.

    With -a or -C the events count every task on every online CPU, or on the
    CPUs of a list, while CMD runs (or, without CMD, until SIGINT), as perf
    stat -a does: each CPU has its own events, its own virtual PMU and its
    own model (its events share no slice with another CPU's), and its events
    are read by a thread bound to it. The lines are the CPUs' sums, or one
    per CPU with -A.

    Output goes to stderr, as perf stat's does (CMD keeps stdout), or to -o FILE.

OPTIONS
    -e EVENTS
        Events in perf's syntax, comma separated, repeatable: task-clock,
        page-faults, {minor-faults,major-faults} (a group: counted together),
        sched:sched_switch, 'syscalls:sys_enter_*' (a tracepoint glob), with
        modifiers (:u, :k). Default: task-clock,context-switches,cpu-migrations,
        page-faults (perf's software defaults).
    -I MS
        Print the counts of every MS milliseconds (at least 10), each line
        prefixed with the time since the start, as perf stat -I. The values of
        an interval are the estimator's live (filtered) ones. Totals are then
        printed only with --summary.
    -x SEP
        CSV with separator SEP, perf's fields in perf's order:
        [time,]value,unit,event,run time ns,run %,metric value,metric unit,
        then bayesperf's: lo,hi,status,linux (95% interval bounds, how the
        value was obtained: exact, scaled, inferred or not-counted, and the
        kernel-style scaled value).
    --json
        One JSON object per line and event, as perf stat -j, plus "lo", "hi"
        (95% interval), "status", "linux" (the kernel-style scaled value) and
        the raw "count", "enabled" and "running" (a count and ns, the kernel's
        units). With -I it is a stream for controllers: the lines of an
        interval are written in one write as soon as it ends, each with its
        "interval" (seconds since the start) and "end-unix-ns" (the wall-clock
        end, ns since the Unix epoch). See docs/consumers.md.
    --summary
        With -I, also print the totals of the whole run at the end (smoothed:
        every slice informs every other).
    --virtual-counters N
        Emulate a PMU with N programmable counters (see DESCRIPTION).
    --fixed-counters EVENTS
        With --virtual-counters: events that count all the time, as on fixed
        counters (added to -e if absent).
    --schedule kernel|bayesperf
        With --virtual-counters: the kernel's round robin, or BayesPerf's
        overlap-aware schedule (default; falls back to the kernel's, with a
        note, when no relation links the events).
    --relations FILE
        A relation file (see 'bayesperf list --relations') added to the
        built-in relations (page-faults = minor-faults + major-faults, ...).
    --pmu-events DIR
        Linux's tools/perf/pmu-events/arch directory: the relations of the
        vendor event lists and metrics of this CPU are added.
    --mux-interval D
        Multiplexing interval (Go duration, e.g. 4ms). Default: the kernel's.
    -o FILE
        Write the output to FILE instead of stderr.
    -a, --all-cpus
        Count every task on every online CPU (needs root, or
        perf_event_paranoid <= 0). The header says 'system wide'.
    -C, --cpu LIST
        As -a, on the CPUs of LIST (0-3,6), which must be online.
    -A, --no-aggr
        With -a or -C, one line per CPU and event instead of the CPUs' sums
        (each side of the summed 95% interval is the root sum of squares of
        the CPUs'), as perf stat -A prints them: a CPU column first ("CPU3"),
        "CPU3," in CSV, "cpu" : "3" in JSON.
    --listen ADDR
        Serve the corrected counters at http://ADDR/metrics in the OpenMetrics
        text format, for Prometheus: per event the corrected running total
        (bayesperf_event_count_total), the last interval's value, 95% bounds,
        kernel-scaled value and status, the raw count and times, and the
        measurement's health (docs/consumers.md lists them). Values are
        published at the end of every -I interval, or every second without
        -I. With -a the series are the CPUs' sums (pid="-1"); with -A one per
        event and CPU, labelled cpu. ADDR is HOST:PORT; with port 0 the kernel picks one and it is
        printed on stderr. The endpoint stops when the measurement ends.
        Every counter has its OpenMetrics _created sample, the time its
        total started from 0: a restarted bayesperf has a later one, which
        announces the reset.
    --state FILE
        With --listen: keep the counters in FILE, written at each
        publication before a scrape can see it, and resume them from FILE at
        start when it was written for the same target (the same process,
        events and CPUs). A bayesperf killed and restarted with the same FILE
        then continues every counter, under the same _created, from at least
        the last value scraped: Prometheus sees no reset. What the target did
        while nothing counted it is in no total.

EXAMPLES
    bayesperf stat -e task-clock,page-faults,minor-faults,major-faults -- make
    bayesperf stat --virtual-counters 4 -I 100 -x, \
        -e 'page-faults,minor-faults,major-faults,raw_syscalls:sys_enter,syscalls:sys_enter_*' \
        -- bayesperf workload syscalls

    bayesperf stat -a -A -I 1000 --json --virtual-counters 4 -e 'syscalls:sys_enter_*'

EXIT STATUS
    CMD's exit status (0 without CMD); 2 for a usage error (unknown event, bad flag, no
    command, an unreadable or malformed --relations file); 127 when CMD
    cannot be started; 1 for another failure (no permission, an event this
    machine lacks). Each failure is one line on stderr.
`

// statFlags are the flags stat and attach share.
type statFlags struct {
	events, fixed listFlag
	intervalMs    int
	sep           string
	asJSON        bool
	summary       bool
	vcounters     int
	sched         string
	relFile       string
	pmuDir        string
	mux           time.Duration
	output        string
	listen        string
	state         string // --state
	allCPUs       bool   // -a
	cpuList       string // -C
	perCPU        bool   // -A
}

func (f *statFlags) register(fs *flag.FlagSet) {
	fs.Var(&f.events, "e", "")
	fs.Var(&f.events, "event", "")
	fs.IntVar(&f.intervalMs, "I", 0, "")
	fs.IntVar(&f.intervalMs, "interval-print", 0, "")
	fs.StringVar(&f.sep, "x", "", "")
	fs.StringVar(&f.sep, "field-separator", "", "")
	fs.BoolVar(&f.asJSON, "json", false, "")
	fs.BoolVar(&f.asJSON, "j", false, "")
	fs.BoolVar(&f.summary, "summary", false, "")
	fs.IntVar(&f.vcounters, "virtual-counters", 0, "")
	fs.Var(&f.fixed, "fixed-counters", "")
	fs.StringVar(&f.sched, "schedule", "bayesperf", "")
	fs.StringVar(&f.relFile, "relations", "", "")
	fs.StringVar(&f.pmuDir, "pmu-events", "", "")
	fs.DurationVar(&f.mux, "mux-interval", 0, "")
	fs.StringVar(&f.output, "o", "", "")
	fs.StringVar(&f.listen, "listen", "", "")
	fs.StringVar(&f.state, "state", "", "")
	fs.BoolVar(&f.allCPUs, "a", false, "")
	fs.BoolVar(&f.allCPUs, "all-cpus", false, "")
	fs.StringVar(&f.cpuList, "C", "", "")
	fs.StringVar(&f.cpuList, "cpu", "", "")
	fs.BoolVar(&f.perCPU, "A", false, "")
	fs.BoolVar(&f.perCPU, "no-aggr", false, "")
}

// splitShortValues lets perf's spellings through the flag package: a one-letter flag
// with its value attached (-x, -I100 -etask-clock -p1234) becomes two arguments. It stops
// at "--" or at the first argument that is neither a flag nor a flag's value (the
// command).
func splitShortValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args)+2)
	takesValue := func(name string) bool {
		fl := fs.Lookup(name)
		if fl == nil {
			return false
		}
		b, ok := fl.Value.(interface{ IsBoolFlag() bool })
		return !ok || !b.IsBoolFlag()
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") || a == "-" {
			return append(out, args[i:]...)
		}
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			out = append(out, a)
			continue
		}
		if len(a) > 2 && a[1] != '-' && fs.Lookup(name) == nil && takesValue(a[1:2]) {
			out = append(out, a[:2], a[2:])
			continue
		}
		out = append(out, a)
		if takesValue(name) && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

func runStat(args []string) int {
	fs := flag.NewFlagSet("stat", flag.ContinueOnError)
	var f statFlags
	f.register(fs)
	if code, stop := parseCmdLine("stat", statHelp, fs, args); stop {
		return code
	}
	fail := func(err error) int { return exitWith("stat", err) }
	argv := fs.Args()
	systemWide := f.allCPUs || f.cpuList != ""
	if len(argv) == 0 && !systemWide {
		return fail(usageErr("no command given; usage: bayesperf stat -e EVENTS [flags] -- CMD [ARGS...]"))
	}
	s, err := newStatSession(&f, func(msg string) { fmt.Fprintln(os.Stderr, "bayesperf stat:", msg) })
	if err != nil {
		return fail(err)
	}
	defer s.close()
	// SIGINT ends the command, not us: like perf stat we then print what was counted.
	// A terminal already delivered it to the command's process group. Without a
	// command (-a alone) it ends the count.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)

	cmd, done, err := s.startCounting(argv, systemWide)
	if err != nil {
		return fail(err)
	}
	s.start = time.Now()
	s.pr.Start = s.start
	werr, err := s.count(cmd, done, sigs)
	if err != nil {
		return fail(err)
	}
	if err := s.step(true); err != nil {
		return fail(fmt.Errorf("final step: %w", err))
	}
	foot := statfmt.Footer{Elapsed: time.Since(s.start)}
	if ps := cmdState(cmd); ps != nil && !systemWide {
		foot.Rusage, foot.User, foot.Sys = true, ps.UserTime(), ps.SystemTime()
	}
	task := ""
	if cmd != nil {
		task = statfmt.ForCommand(argv)
	}
	if err := s.finish(s.target(task), foot); err != nil {
		return fail(err)
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
		return 0
	case errors.As(werr, &ee):
		if st, ok := ee.Sys().(syscall.WaitStatus); ok && st.Signaled() {
			return 128 + int(st.Signal())
		}
		return ee.ExitCode()
	default:
		return fail(fmt.Errorf("wait for %s: %w", argv[0], werr))
	}
}

// startCounting opens the events and starts the count: on every CPU without a command
// (argv empty), else on the command, started here, or on every CPU while it runs
// (systemWide). done receives the command's Wait error.
func (s *statSession) startCounting(argv []string, systemWide bool) (cmd *exec.Cmd, done chan error, err error) {
	done = make(chan error, 1)
	switch {
	case len(argv) == 0:
		if err := s.openCPUs(); err != nil {
			return nil, nil, err
		}
		s.serve(-1)
	default:
		if cmd, err = lookCommand(argv); err != nil {
			return nil, nil, err
		}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		err = perf.StartAttached(cmd, func(pid int) error {
			if systemWide {
				return s.openCPUs() // counting starts before the command does
			}
			p, err := s.open(pid, perf.AnyCPU)
			if err != nil {
				return err
			}
			_, err = s.newTrack(perf.AnyCPU, []stepper{p})
			if err != nil {
				p.Close()
			}
			return err
		})
		if err != nil {
			return nil, nil, err
		}
		if systemWide {
			s.serve(-1)
		} else {
			s.serve(cmd.Process.Pid)
		}
		go func() { done <- cmd.Wait() }()
	}
	return cmd, done, nil
}

// count steps and prints the session until the command ends (its Wait error) or, without
// a command, a signal ends the count; a signal for the command is passed on to it.
func (s *statSession) count(cmd *exec.Cmd, done chan error, sigs chan os.Signal) (werr, err error) {
	fromTTY := foregroundTTY()
	wake := time.NewTimer(s.mux)
	defer wake.Stop()
loop:
	for {
		select {
		case werr = <-done:
			break loop
		case sig := <-sigs:
			if cmd == nil {
				break loop
			}
			if !fromTTY || (sig != syscall.SIGINT && sig != syscall.SIGQUIT) {
				_ = cmd.Process.Signal(sig)
			}
		case now := <-wake.C:
			err := s.step(false)
			if err == nil {
				err = s.tick(now)
			}
			if err != nil {
				if cmd != nil {
					_ = cmd.Process.Kill()
					<-done
				}
				return nil, err
			}
			wake.Reset(time.Until(s.nextWake(now)))
		}
	}
	return werr, nil
}

// cmdState is cmd's state after it exited, nil without a command.
func cmdState(cmd *exec.Cmd) *os.ProcessState {
	if cmd == nil {
		return nil
	}
	return cmd.ProcessState
}

// parseSeconds reads a duration given in seconds ("2.5") or as a Go duration ("2500ms").
func parseSeconds(s string) (time.Duration, error) {
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		if v < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		return time.Duration(v * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("bad duration %q: want seconds (2.5) or a Go duration (2500ms)", s)
	}
	return d, nil
}
