package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

	rels []relation.Relation // bound to names
	// cpus are the CPUs of a system-wide run (-a, -C), nil for a task target, and
	// cpuList the -C list as given; perCPU prints one line per CPU (-A).
	cpus    []int
	cpuList string
	perCPU  bool
	// tracks are what is measured and modelled apart: the task, or each CPU.
	tracks []*track

	nextIv time.Duration // when the current interval ends, since start
	start  time.Time
	pr     *statfmt.Printer
	out    io.Writer
	closer io.Closer

	ln         net.Listener          // --listen, bound by newStatSession
	listenAddr string                // --listen as given
	statePath  string                // --state: the counters kept across restarts
	exp        *openmetrics.Exporter // serves ln once the target is known
	warn       func(string)
}

// track is one target the session models on its own: the task (its threads' counts
// summed, as perf sums them), or one CPU of a system-wide run, whose events share no
// slices with another CPU's.
type track struct {
	cpu    int       // the CPU counted; perf.AnyCPU for a task
	src    []stepper // one per followed thread, or the one PMU
	steps  []vpmu.Step
	bp     *model.Model
	lx     *baseline.Estimator
	feed   pipeline.Feed // to bp and lx, durations in multiplexing intervals
	slices []inference.Slice
	ivFrom int  // first slice of the current -I interval
	sawMux bool // the kernel multiplexed some event (running < enabled in a slice)
	// pin, for a CPU's track, runs its steps on that CPU (see pinned), and busy, read
	// there, makes its slices last the time the CPU was busy (nil: wall time).
	pin  *pinned
	busy *perf.BusyMeter
}

// listenPeriod is how often --listen publishes without -I: Prometheus' scrape interval
// is rarely shorter than a second.
const listenPeriod = time.Second

// newStatSession checks the flags and builds everything but the PMU. warn receives
// notes for the user (one line each).
func newStatSession(f *statFlags, warn func(string)) (*statSession, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	cpus, err := f.targetCPUs()
	if err != nil {
		return nil, err
	}
	evs, fixedIdx, err := f.eventList()
	if err != nil {
		return nil, err
	}
	s := &statSession{evs: evs, interval: time.Duration(f.intervalMs) * time.Millisecond, summary: f.summary, virtual: f.vcounters > 0, warn: warn,
		cpus: cpus, cpuList: f.cpuList, perCPU: f.perCPU}
	for _, e := range evs {
		s.names = append(s.names, e.Name)
	}
	rels, err := loadRelations(f.relFile, f.pmuDir)
	if err != nil {
		return nil, err
	}
	var r perf.Resolver
	rels = relation.BindUniverse(rels, s.names, append(perf.SymbolNames(), r.Tracepoints()...))
	s.rels = rels

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
	// A model the relations cannot build fails here, before anything is opened.
	if _, err := pipeline.NewModel(s.modelConfig(perf.AnyCPU)); err != nil {
		return nil, err
	}

	if err := s.openOutput(f); err != nil {
		return nil, err
	}
	s.nextIv = s.period
	return s, nil
}

// check refuses the flags that do not go together or are out of range.
func (f *statFlags) check() error {
	if f.intervalMs != 0 && f.intervalMs < 10 {
		return usageErr("-I %d: the interval must be at least 10 ms", f.intervalMs)
	}
	if f.vcounters < 0 {
		return usageErr("--virtual-counters %d: need at least 1 counter", f.vcounters)
	}
	if f.sched != "kernel" && f.sched != "bayesperf" {
		return usageErr("--schedule %s: want kernel or bayesperf", f.sched)
	}
	if f.mux != 0 && f.mux < time.Millisecond {
		return usageErr("--mux-interval %v: want at least 1ms (the kernel's minimum), or leave it out for the kernel's", f.mux)
	}
	if f.sep != "" && f.asJSON {
		return usageErr("-x and --json exclude each other")
	}
	if len(f.fixed) > 0 && f.vcounters == 0 {
		return usageErr("--fixed-counters needs --virtual-counters")
	}
	if f.state != "" {
		if f.listen == "" {
			return usageErr("--state %s needs --listen: it keeps the endpoint's counters across restarts", f.state)
		}
		if fi, err := os.Stat(filepath.Dir(f.state)); err != nil || !fi.IsDir() {
			return usageErr("--state %s: no directory %s; give a file in a directory you can write", f.state, filepath.Dir(f.state))
		}
	}
	return nil
}

// eventList parses -e (perf stat's default events without it) and --fixed-counters: the
// events, the user's first, and the indices of the fixed ones among them. An event
// listed twice is refused.
func (f *statFlags) eventList() (evs []perf.EventDesc, fixedIdx []int, err error) {
	list := strings.Join(f.events, ",")
	if list == "" {
		list = "task-clock,context-switches,cpu-migrations,page-faults"
	}
	evs, err = perf.ParseEvents(list)
	if err != nil {
		return nil, nil, eventListErr(err)
	}
	for _, name := range splitList(f.fixed) {
		idx := slices.IndexFunc(evs, func(e perf.EventDesc) bool { return e.Name == name })
		if idx >= 0 {
			fixedIdx = append(fixedIdx, idx)
			continue
		}
		more, err := perf.ParseEvents(name)
		if err != nil {
			return nil, nil, eventListErr(fmt.Errorf("--fixed-counters: %w", err))
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
			return nil, nil, usageErr("event %s is listed twice: give each event once (a tracepoint glob may already include it)", e.Name)
		}
		seen[e.Name] = true
	}
	return evs, fixedIdx, nil
}

// openOutput opens -o's file (stderr without it), sets the printer up for -x or --json,
// and listens on --listen's address.
func (s *statSession) openOutput(f *statFlags) error {
	var err error
	s.out = os.Stderr
	if f.output != "" {
		of, err := os.Create(f.output)
		if err != nil {
			return usageErr("-o %s: %v; give a file in a directory you can write", f.output, errors.Unwrap(err))
		}
		s.out, s.closer = of, of
	}
	s.pr = &statfmt.Printer{W: s.out, Interval: s.interval, PerCPU: s.perCPU}
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
		s.statePath = f.state
		if s.ln, err = net.Listen("tcp", f.listen); err != nil {
			if s.closer != nil {
				s.closer.Close()
			}
			return usageErr("--listen %s: %v; give a free HOST:PORT (port 0 picks one)", f.listen, err)
		}
	}
	return nil
}

// serve starts the --listen endpoint for target pid, if asked for. A port the kernel
// picked (ADDR:0) is said on stderr, the only way to learn it. With --state the
// counters resume from the file when it was written for the same target.
func (s *statSession) serve(pid int) {
	if s.ln == nil {
		return
	}
	if s.perCPU {
		s.exp = openmetrics.NewCPUs(s.cpus, s.names) // one series per event and CPU, as -A prints
	} else {
		s.exp = openmetrics.New(pid, s.names)
	}
	if s.statePath != "" {
		resumed, err := s.exp.Resume(s.statePath, s.targetIdentity(pid))
		switch {
		case err != nil:
			s.warn(fmt.Sprintf("--state %s: %v; the counters start from 0 and are not kept", s.statePath, err))
		case resumed:
			s.warn(fmt.Sprintf("--state %s: counters resumed (created %s)", s.statePath, s.exp.Created().UTC().Format(time.RFC3339Nano)))
		}
	}
	s.exp.Serve(s.ln, func(err error) { s.warn(fmt.Sprintf("--listen: %v", err)) })
	if _, port, _ := net.SplitHostPort(s.ln.Addr().String()); port != "" && strings.HasSuffix(s.listenAddr, ":0") {
		s.warn("serving OpenMetrics on http://" + s.ln.Addr().String() + "/metrics")
	}
}

// targetIdentity names the target of the --state file: a process by its start time
// since this boot (a pid reused by another process is another target), a system-wide
// run by its CPUs.
func (s *statSession) targetIdentity(pid int) string {
	if pid == -1 {
		return fmt.Sprintf("cpus %v", s.cpus)
	}
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	start := ""
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
			start = f[19] // starttime, field 22 of proc(5)
		}
	}
	return fmt.Sprintf("boot %s start %s", strings.TrimSpace(string(boot)), start)
}

// publish hands one interval's lines, ending at end, to the --listen endpoint.
func (s *statSession) publish(end time.Time, cs []statfmt.Counter) {
	if s.exp == nil {
		return
	}
	var h openmetrics.Health
	for _, tr := range s.tracks {
		h.Slices += len(tr.slices)
		h.NumericalFailures += tr.feed.Skipped
	}
	if err := s.exp.Publish(end, cs, h); err != nil {
		s.warn("--state: " + err.Error())
	}
}

// vpmuConfig is the virtual PMU for the session on task pid (inherited by its
// children), or on every task of cpu when pid is -1: one view (the schedule), no truth.
func (s *statSession) vpmuConfig(pid, cpu int) vpmu.Config {
	return vpmu.Config{Events: s.evs, Views: []vpmu.View{{Name: "stat", Schedule: s.sched}},
		Pid: pid, CPU: cpu, Inherit: pid != -1, Interval: s.mux}
}

// modelConfig is the model of a track counting on cpu (perf.AnyCPU: the task).
func (s *statSession) modelConfig(cpu int) pipeline.ModelConfig {
	mc := pipeline.ModelConfig{Names: s.names, Relations: s.rels}
	if cpu == perf.AnyCPU && s.virtual {
		// A task's task-clock counts the time the task ran, which every reading's
		// enabled time is: known in every slice, as in the drop-in path, though the
		// virtual PMU multiplexes it. (The kernel never multiplexes it: there its
		// own count is exact, and the model takes it as it is.)
		for _, e := range s.evs {
			mc.Attrs = append(mc.Attrs, e.Attr)
		}
	}
	return mc
}

// newTrack builds the estimators of a track counting on cpu (perf.AnyCPU: the task)
// from sources src, and adds it to the session.
func (s *statSession) newTrack(cpu int, src []stepper) (*track, error) {
	bp, err := pipeline.NewModel(s.modelConfig(cpu))
	if err != nil {
		return nil, err
	}
	tr := &track{cpu: cpu, src: src, steps: make([]vpmu.Step, len(src)), bp: bp, lx: baseline.New(baseline.Linux, len(s.evs))}
	tr.feed = pipeline.Feed{Estimators: []inference.Estimator{tr.bp, tr.lx}, Unit: s.unit}
	s.tracks = append(s.tracks, tr)
	return tr, nil
}

// step ends the current slice of every track (flush: the last one, after the target
// ended) and feeds it to the track's estimators. The tracks of CPUs step at once, each
// on its own CPU.
func (s *statSession) step(flush bool) error {
	errs := make([]error, len(s.tracks))
	for k, tr := range s.tracks {
		if tr.pin != nil {
			tr.pin.req <- flush
		} else {
			errs[k] = s.stepTrack(tr, flush)
		}
	}
	for k, tr := range s.tracks {
		if tr.pin != nil {
			errs[k] = <-tr.pin.done
		}
		s.sawMux = s.sawMux || tr.sawMux
	}
	return errors.Join(errs...)
}

// stepTrack is step for one track.
func (s *statSession) stepTrack(tr *track, flush bool) error {
	for i, p := range tr.src {
		var err error
		if flush {
			tr.steps[i], err = p.Flush()
		} else {
			tr.steps[i], err = p.Step()
		}
		if err != nil {
			if tr.cpu != perf.AnyCPU {
				return fmt.Errorf("CPU %d: %w", tr.cpu, err)
			}
			return err
		}
		if tr.busy != nil {
			// A CPU's rates are per unit of its busy time, as a task's are per unit of
			// its running time: an idle stretch is no time at the target's pace.
			if b, err := tr.busy.Busy(tr.steps[i].EnabledNs()); err == nil {
				tr.steps[i].SetBusy(b)
			}
		}
	}
	return s.observe(tr, tr.steps)
}

// close closes every track's sources.
func (s *statSession) close() {
	for _, tr := range s.tracks {
		if tr.pin != nil {
			close(tr.pin.req)
		}
		for _, p := range tr.src {
			p.Close()
		}
	}
}

// observe merges one step of each PMU (one per followed thread) into one slice, as perf
// sums a process's threads (pipeline.Merge), and feeds it to the estimators. Idle steps
// add nothing; when every step is idle, or nothing ran, there is no slice.
func (s *statSession) observe(tr *track, steps []vpmu.Step) error {
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
	tr.sawMux = tr.sawMux || pipeline.Multiplexed(sl)
	sl, err := tr.feed.Add(sl)
	tr.slices = append(tr.slices, sl)
	return err
}

// counters are track tr's lines for its slices [from, to).
func (s *statSession) counters(tr *track, from, to int) []statfmt.Counter {
	out := make([]statfmt.Counter, len(s.evs))
	for i := range out {
		out[i] = statfmt.Counter{Event: s.names[i], Status: inference.StatusNotCounted.String(), CPU: tr.cpu}
	}
	if from >= to {
		return out
	}
	bp, lx := tr.bp.Estimate(from, to), tr.lx.Estimate(from, to)
	for i := range out {
		c := &out[i]
		for _, sl := range tr.slices[from:to] {
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
	lines := s.lines(false)
	var err error
	if s.interval > 0 {
		err = s.pr.IntervalBlock(el, lines)
	}
	s.publish(now, lines)
	for s.nextIv <= el {
		s.nextIv += s.period
	}
	return err
}

// finish prints the last partial interval and the totals (always without -I, with -I
// only with --summary).
func (s *statSession) finish(target string, foot statfmt.Footer) error {
	var errs []error
	if s.period > 0 && s.pending() {
		lines := s.lines(false)
		if s.interval > 0 {
			errs = append(errs, s.pr.IntervalBlock(foot.Elapsed, lines))
		}
		s.publish(s.start.Add(foot.Elapsed), lines)
	}
	if s.exp != nil {
		errs = append(errs, s.exp.Close())
	} else if s.ln != nil {
		errs = append(errs, s.ln.Close())
	}
	if s.interval == 0 || s.summary {
		lines := s.lines(true)
		errs = append(errs, s.pr.Header(target), s.pr.Totals(lines, foot.Elapsed, s.interval > 0), s.pr.Footer(foot))
	}
	if s.closer != nil {
		errs = append(errs, s.closer.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// stepper is what the measurement loop needs from a source of per-slice observations:
// the virtual PMU (vpmu.PMU) or the kernel's own scheduling of the events (vpmu.Kernel).
type stepper interface {
	Step() (vpmu.Step, error)
	Flush() (vpmu.Step, error)
	Close() error
}

// open opens the session's source of observations on task pid, or on every task of cpu
// when pid is -1: the virtual PMU with --virtual-counters, the kernel's own events
// otherwise. It is started.
func (s *statSession) open(pid, cpu int) (stepper, error) {
	if !s.virtual {
		return vpmu.OpenKernel(s.evs, pid, cpu)
	}
	p, err := vpmu.Open(s.vpmuConfig(pid, cpu))
	if err != nil {
		return nil, err
	}
	if err := p.Start(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}
