package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/baseline"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/schedule"
	"github.com/bayesperf/bayesperf/internal/eval"
	"github.com/bayesperf/bayesperf/internal/openmetrics"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
	"github.com/bayesperf/bayesperf/internal/statfmt"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

func init() {
	register(command{name: "stat", summary: "run a command and print its counters as perf stat does, corrected, with 95% intervals", run: runStat})
}

const statHelp = `NAME
    bayesperf stat - count events of a command, perf stat style, with uncertainty

SYNOPSIS
    bayesperf stat [-e EVENTS] [-I MS] [-x SEP | --json] [--summary]
                   [--virtual-counters N] [--fixed-counters EVENTS]
                   [--schedule kernel|bayesperf] [--relations FILE]
                   [--pmu-events DIR] [--mux-interval D] [-o FILE]
                   [--listen ADDR] -- CMD [ARGS...]

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
    --listen ADDR
        Serve the corrected counters at http://ADDR/metrics in the OpenMetrics
        text format, for Prometheus: per event the corrected running total
        (bayesperf_event_count_total), the last interval's value, 95% bounds,
        kernel-scaled value and status, the raw count and times, and the
        measurement's health (docs/consumers.md lists them). Values are
        published at the end of every -I interval, or every second without
        -I. ADDR is HOST:PORT; with port 0 the kernel picks one and it is
        printed on stderr. The endpoint stops when the measurement ends.

EXAMPLES
    bayesperf stat -e task-clock,page-faults,minor-faults,major-faults -- make
    bayesperf stat --virtual-counters 4 -I 100 -x, \
        -e 'page-faults,minor-faults,major-faults,raw_syscalls:sys_enter,syscalls:sys_enter_*' \
        -- bayesperf workload syscalls

EXIT STATUS
    CMD's exit status; 2 for a usage error (unknown event, bad flag, no
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

// statSession is one measurement: events, schedule, estimators, and the printer.
type statSession struct {
	evs      []perf.EventDesc
	names    []string
	sched    *schedule.Schedule
	unit     float64 // multiplexing interval, ns: the unit of slice durations
	mux      time.Duration
	interval time.Duration // -I, 0 without
	// period is how often values are published: -I, or listenPeriod when only
	// --listen asks for them; 0 for neither.
	period  time.Duration
	virtual bool // --virtual-counters: the virtual PMU enforces a budget
	// sawMux says the kernel multiplexed some event (running < enabled in a slice).
	sawMux  bool
	steps   int // wake-ups so far
	summary bool

	bp     *model.Model
	lx     *baseline.Estimator
	feed   pipeline.Feed // to bp and lx, durations in multiplexing intervals
	slices []inference.Slice
	ivFrom int           // first slice of the current -I interval
	nextIv time.Duration // when the current interval ends, since start
	start  time.Time
	pr     *statfmt.Printer
	out    io.Writer
	closer io.Closer

	ln         net.Listener          // --listen, bound by newStatSession
	listenAddr string                // --listen as given
	exp        *openmetrics.Exporter // serves ln once the target is known
	warn       func(string)
}

// listenPeriod is how often --listen publishes without -I: Prometheus' scrape interval
// is rarely shorter than a second.
const listenPeriod = time.Second

// newStatSession checks the flags and builds everything but the PMU. warn receives
// notes for the user (one line each).
func newStatSession(f *statFlags, warn func(string)) (*statSession, error) {
	if f.intervalMs != 0 && f.intervalMs < 10 {
		return nil, usageErr("-I %d: the interval must be at least 10 ms", f.intervalMs)
	}
	if f.vcounters < 0 {
		return nil, usageErr("--virtual-counters %d: need at least 1 counter", f.vcounters)
	}
	if f.sched != "kernel" && f.sched != "bayesperf" {
		return nil, usageErr("--schedule %s: want kernel or bayesperf", f.sched)
	}
	if f.mux != 0 && f.mux < time.Millisecond {
		return nil, usageErr("--mux-interval %v: want at least 1ms (the kernel's minimum), or leave it out for the kernel's", f.mux)
	}
	if f.sep != "" && f.asJSON {
		return nil, usageErr("-x and --json exclude each other")
	}
	if len(f.fixed) > 0 && f.vcounters == 0 {
		return nil, usageErr("--fixed-counters needs --virtual-counters")
	}
	list := strings.Join(f.events, ",")
	if list == "" {
		list = "task-clock,context-switches,cpu-migrations,page-faults"
	}
	evs, err := perf.ParseEvents(list)
	if err != nil {
		return nil, eventListErr(err)
	}
	var fixedIdx []int
	for _, name := range splitList(f.fixed) {
		idx := slices.IndexFunc(evs, func(e perf.EventDesc) bool { return e.Name == name })
		if idx >= 0 {
			fixedIdx = append(fixedIdx, idx)
			continue
		}
		more, err := perf.ParseEvents(name)
		if err != nil {
			return nil, eventListErr(fmt.Errorf("--fixed-counters: %w", err))
		}
		for _, m := range more {
			m.Group = len(evs) + 1000 // its own group, never with the user's
			evs = append(evs, m)
			fixedIdx = append(fixedIdx, len(evs)-1)
		}
	}
	seen := map[string]bool{}
	for _, e := range evs {
		if seen[e.Name] {
			return nil, usageErr("event %s is listed twice: give each event once (a tracepoint glob may already include it)", e.Name)
		}
		seen[e.Name] = true
	}
	s := &statSession{evs: evs, interval: time.Duration(f.intervalMs) * time.Millisecond, summary: f.summary, virtual: f.vcounters > 0, warn: warn}
	for _, e := range evs {
		s.names = append(s.names, e.Name)
	}
	rels, err := loadRelations(f.relFile, f.pmuDir)
	if err != nil {
		return nil, err
	}
	var r perf.Resolver
	rels = relation.BindUniverse(rels, s.names, append(perf.SymbolNames(), r.Tracepoints()...))

	s.mux = f.mux
	if s.mux <= 0 {
		s.mux = vpmu.MuxInterval()
	}
	s.unit = float64(s.mux.Nanoseconds())
	counters := f.vcounters
	if counters == 0 {
		counters = len(evs) // every event on a counter of its own: nothing rotates
	}
	sp := vpmu.Spec(evs, counters, fixedIdx)
	if f.vcounters > 0 && f.sched == "bayesperf" {
		if s.sched, err = eval.OwnSchedule(sp, s.names, rels); err != nil {
			return nil, fmt.Errorf("build bayesperf schedule: %w", err)
		}
		if s.sched == nil {
			warn("no bayesperf schedule for these events (no relation links them): using the kernel's round robin")
		}
	}
	if s.sched == nil {
		if s.sched, err = schedule.Kernel(sp); err != nil {
			return nil, usageError{fmt.Errorf("build kernel schedule: %w", err)}
		}
	}
	if s.bp, err = pipeline.NewModel(pipeline.ModelConfig{Names: s.names, Relations: rels}); err != nil {
		return nil, err
	}
	s.lx = baseline.New(baseline.Linux, len(evs))
	s.feed = pipeline.Feed{Estimators: []inference.Estimator{s.bp, s.lx}, Unit: s.unit}

	s.out = os.Stderr
	if f.output != "" {
		of, err := os.Create(f.output)
		if err != nil {
			return nil, usageErr("-o %s: %v; give a file in a directory you can write", f.output, errors.Unwrap(err))
		}
		s.out, s.closer = of, of
	}
	s.pr = &statfmt.Printer{W: s.out, Interval: s.interval}
	switch {
	case f.asJSON:
		s.pr.Mode = statfmt.JSON
	case f.sep != "":
		s.pr.Mode, s.pr.Sep = statfmt.CSV, f.sep
	}
	s.period = s.interval
	if f.listen != "" {
		if s.period == 0 {
			s.period = listenPeriod
		}
		s.listenAddr = f.listen
		if s.ln, err = net.Listen("tcp", f.listen); err != nil {
			if s.closer != nil {
				s.closer.Close()
			}
			return nil, usageErr("--listen %s: %v; give a free HOST:PORT (port 0 picks one)", f.listen, err)
		}
	}
	s.nextIv = s.period
	return s, nil
}

// serve starts the --listen endpoint for target pid, if asked for. A port the kernel
// picked (ADDR:0) is said on stderr, the only way to learn it.
func (s *statSession) serve(pid int) {
	if s.ln == nil {
		return
	}
	s.exp = openmetrics.New(pid, s.names)
	s.exp.Serve(s.ln, func(err error) { s.warn(fmt.Sprintf("--listen: %v", err)) })
	if _, port, _ := net.SplitHostPort(s.ln.Addr().String()); port != "" && strings.HasSuffix(s.listenAddr, ":0") {
		s.warn("serving OpenMetrics on http://" + s.ln.Addr().String() + "/metrics")
	}
}

// publish hands one interval's lines, ending at end, to the --listen endpoint.
func (s *statSession) publish(end time.Time, cs []statfmt.Counter) {
	if s.exp != nil {
		s.exp.Publish(end, cs, openmetrics.Health{Slices: len(s.slices), NumericalFailures: s.feed.Skipped})
	}
}

// vpmuConfig is the virtual PMU for the session: one view (the schedule), no truth.
func (s *statSession) vpmuConfig(pid int) vpmu.Config {
	return vpmu.Config{Events: s.evs, Views: []vpmu.View{{Name: "stat", Schedule: s.sched}},
		Pid: pid, CPU: perf.AnyCPU, Inherit: true, Interval: s.mux}
}

// observe merges one step of each PMU (one per followed thread) into one slice, as perf
// sums a process's threads (pipeline.Merge), and feeds it to the estimators. Idle steps
// add nothing; when every step is idle, or nothing ran, there is no slice.
func (s *statSession) observe(steps []vpmu.Step) error {
	var parts []inference.Slice
	for _, st := range steps {
		if !st.Idle && len(st.Views) > 0 {
			parts = append(parts, st.Views[0])
		}
	}
	sl, ok := pipeline.Merge(0, len(s.evs), parts)
	if !ok {
		return nil
	}
	s.sawMux = s.sawMux || pipeline.Multiplexed(sl)
	sl, err := s.feed.Add(sl)
	s.slices = append(s.slices, sl)
	return err
}

// counters are the lines for slices [from, to).
func (s *statSession) counters(from, to int) []statfmt.Counter {
	out := make([]statfmt.Counter, len(s.evs))
	for i := range out {
		out[i] = statfmt.Counter{Event: s.names[i], Status: inference.StatusNotCounted.String()}
	}
	if from >= to {
		return out
	}
	bp, lx := s.bp.Estimate(from, to), s.lx.Estimate(from, to)
	for i := range out {
		c := &out[i]
		for _, sl := range s.slices[from:to] {
			c.Count += sl.Readings[i].Count
			c.Enabled += sl.Readings[i].Enabled
			c.Running += sl.Readings[i].Running
		}
		c.Counted = c.Enabled > 0
		if i < len(bp) {
			e := bp[i]
			c.Value, c.Lo, c.Hi, c.Status = e.Value, e.Value, e.Value, e.Status.String()
			if e.HasInterval {
				c.Lo, c.Hi = e.Lo, e.Hi
			}
		}
		if i < len(lx) {
			c.Linux = lx[i].Value
		}
	}
	return out
}

// quietPeriod is how often the kernel's counters are read while the kernel has not
// multiplexed any of them: then every value is exact whatever the slicing, and reading
// every few milliseconds would only cost CPU time and disturb the target (each read of an
// inherited event interrupts the CPUs its threads run on).
const quietPeriod = 100 * time.Millisecond

// nextWake is when to take the next slice after the one taken at last: every
// multiplexing interval under the virtual PMU (it rotates the events then) and while the
// kernel multiplexes (an event the kernel rotates out shows it in the first slices),
// else every quietPeriod after 3 slices at full rate; and at the end of the current -I
// interval, so that interval lines cover exactly their span.
func (s *statSession) nextWake(last time.Time) time.Time {
	s.steps++
	period := s.mux
	if !s.virtual && !s.sawMux && s.steps >= 3 {
		period = max(quietPeriod, s.mux)
	}
	next := last.Add(period)
	if s.period > 0 {
		if b := s.start.Add(s.nextIv); b.Before(next) {
			next = b
		}
	}
	return next
}

// tick prints (-I) and publishes (--listen) the interval that has ended by now, if one
// has: its lines are written and flushed before the loop reads the next slice.
func (s *statSession) tick(now time.Time) error {
	if s.period <= 0 {
		return nil
	}
	el := now.Sub(s.start)
	if el < s.nextIv {
		return nil
	}
	cs := s.counters(s.ivFrom, len(s.slices))
	var err error
	if s.interval > 0 {
		err = s.pr.IntervalBlock(el, cs)
	}
	s.publish(now, cs)
	s.ivFrom = len(s.slices)
	for s.nextIv <= el {
		s.nextIv += s.period
	}
	return err
}

// finish prints the last partial interval and the totals (always without -I, with -I
// only with --summary).
func (s *statSession) finish(target string, foot statfmt.Footer) error {
	var errs []error
	if s.period > 0 && len(s.slices) > s.ivFrom {
		cs := s.counters(s.ivFrom, len(s.slices))
		if s.interval > 0 {
			errs = append(errs, s.pr.IntervalBlock(foot.Elapsed, cs))
		}
		s.publish(s.start.Add(foot.Elapsed), cs)
	}
	if s.exp != nil {
		errs = append(errs, s.exp.Close())
	} else if s.ln != nil {
		errs = append(errs, s.ln.Close())
	}
	if s.interval == 0 || s.summary {
		s.bp.Finish() // totals are smoothed: later slices inform earlier ones
		cs := s.counters(0, len(s.slices))
		errs = append(errs, s.pr.Header(target), s.pr.Totals(cs, foot.Elapsed, s.interval > 0), s.pr.Footer(foot))
	}
	if s.closer != nil {
		errs = append(errs, s.closer.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
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
	if len(argv) == 0 {
		return fail(usageErr("no command given; usage: bayesperf stat -e EVENTS [flags] -- CMD [ARGS...]"))
	}
	s, err := newStatSession(&f, func(msg string) { fmt.Fprintln(os.Stderr, "bayesperf stat:", msg) })
	if err != nil {
		return fail(err)
	}
	cmd, err := lookCommand(argv)
	if err != nil {
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	var p stepper
	err = perf.StartAttached(cmd, func(pid int) error {
		var err error
		p, err = s.open(pid)
		return err
	})
	if err != nil {
		return fail(err)
	}
	defer p.Close()
	s.serve(cmd.Process.Pid)
	s.start = time.Now()
	s.pr.Start = s.start

	// SIGINT ends the command, not us: like perf stat we then print what was counted.
	// A terminal already delivered it to the command's process group.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	fromTTY := foregroundTTY()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	wake := time.NewTimer(s.mux)
	defer wake.Stop()
	var werr error
loop:
	for {
		select {
		case werr = <-done:
			st, err := p.Flush()
			if err != nil {
				return fail(fmt.Errorf("final step: %w", err))
			}
			if err := s.observe([]vpmu.Step{st}); err != nil {
				return fail(err)
			}
			break loop
		case sig := <-sigs:
			if !fromTTY || (sig != syscall.SIGINT && sig != syscall.SIGQUIT) {
				_ = cmd.Process.Signal(sig)
			}
		case now := <-wake.C:
			st, err := p.Step()
			if err == nil {
				err = s.observe([]vpmu.Step{st})
			}
			if err == nil {
				err = s.tick(now)
			}
			if err != nil {
				_ = cmd.Process.Kill()
				<-done
				return fail(err)
			}
			wake.Reset(time.Until(s.nextWake(now)))
		}
	}
	foot := statfmt.Footer{Elapsed: time.Since(s.start), Rusage: true}
	if ps := cmd.ProcessState; ps != nil {
		foot.User, foot.Sys = ps.UserTime(), ps.SystemTime()
	}
	if err := s.finish(statfmt.ForCommand(argv), foot); err != nil {
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

// stepper is what the measurement loop needs from a source of per-slice observations:
// the virtual PMU (vpmu.PMU) or the kernel's own scheduling of the events (vpmu.Kernel).
type stepper interface {
	Step() (vpmu.Step, error)
	Flush() (vpmu.Step, error)
	Close() error
}

// open opens the session's source of observations on task pid: the virtual PMU with
// --virtual-counters, the kernel's own events otherwise. It is started.
func (s *statSession) open(pid int) (stepper, error) {
	if !s.virtual {
		return vpmu.OpenKernel(s.evs, pid)
	}
	p, err := vpmu.Open(s.vpmuConfig(pid))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
