package test

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// correctEvents are 18 software events and tracepoints that the mixed workload exercises
// (thousands of counts each in 2 s), more than four times the 4 virtual counters.
// sched:sched_switch is left out: on the test VM it sometimes stops counting for every
// perf user (native perf stat prints 0), which would only shrink the comparison.
const correctEvents = "page-faults,minor-faults,context-switches,task-clock," +
	"raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_read,syscalls:sys_exit_read," +
	"syscalls:sys_enter_write,syscalls:sys_exit_write,syscalls:sys_enter_getpid,syscalls:sys_enter_getppid," +
	"syscalls:sys_enter_openat,syscalls:sys_enter_close,sched:sched_wakeup,exceptions:page_fault_user," +
	"kmem:mm_page_alloc,syscalls:sys_enter_futex"

// patientShim lets the shim wait 10 s for the sidecar instead of 2: registrations with
// correction on build a model and a schedule, and the shared 2-CPU test VM sometimes
// starves the sidecar for seconds; the timeout detects a dead sidecar, which these tests
// do not test.
var patientShim = []string{"BAYESPERF_TIMEOUT_MS=10000"}

// runReport is the part of `bayesperf run --report` the test reads.
type runReport struct {
	Clients []reportClient `json:"clients"`
}

type reportClient struct {
	Correct  string `json:"correct"`
	Schedule string `json:"schedule"`
	Slices   int    `json:"slices"`
	Totals   []reportEvent
	Interval []struct {
		Events []reportEvent `json:"events"`
	} `json:"intervals"`
}

type reportEvent struct {
	Event  string   `json:"event"`
	Value  float64  `json:"value"`
	Lo     *float64 `json:"lo"`
	Hi     *float64 `json:"hi"`
	Linux  float64  `json:"linux"`
	Tool   *float64 `json:"tool"`
	Truth  *uint64  `json:"truth"`
	Status string   `json:"status"`
}

// correctedRun is one `bayesperf run --virtual-counters 4 ... -- perf stat -I 100 -x,`
// of the mixed workload: perf's intervals (value per event, ns for task-clock), the
// report's intervals (truth, what the tool was given, bayesperf's interval) and the
// stats file's truth totals.
type correctedRun struct {
	perf   []map[string]float64
	report []map[string]reportEvent
	truth  map[string]uint64
}

// runDropinStat runs `bayesperf run --virtual-counters 4 --stats S --report R FLAGS --
// perf stat -I 100 -x, -e correctEvents -- bayesperf workload mixed` as root, checks that
// it ran cleanly, and returns perf's intervals, the report's intervals and the stats'
// truth (at least 10 intervals, a report interval for each of perf's), the report's last
// client (its events' virtual PMU). Callers check the rest.
func runDropinStat(t *testing.T, flags ...string) (correctedRun, reportClient) {
	t.Helper()
	needRoot(t, "the virtual PMU opens tracepoints on the measured command")
	tmp := t.TempDir()
	sf, rf := filepath.Join(tmp, "stats.json"), filepath.Join(tmp, "report.json")
	bp := dropinBin(t, "bayesperf")
	argv := append([]string{bp, "run", "--virtual-counters", "4", "--stats", sf, "--report", rf}, flags...)
	argv = append(argv, "--", "perf", "stat", "-I", "100", "-x,", "-e", correctEvents, "--",
		bp, "workload", "mixed", "--duration", correctDuration())
	r := run(t, patientShim, argv...)
	if r.status != 0 {
		t.Fatalf("%q: status %d\n%s", argv, r.status, r.stderr)
	}
	if strings.Contains(r.stderr, "bayesperf: ") {
		t.Fatalf("the shim gave up on the sidecar:\n%s", r.stderr)
	}
	if _, err := os.Stat(rf); err != nil {
		// The sidecar wrote no report: it died, or run killed it.
		var lines []string
		for l := range strings.Lines(r.stderr) {
			if strings.Contains(l, "bayesperf") || strings.Contains(l, "panic") || strings.HasPrefix(l, "\t") || strings.HasPrefix(l, "goroutine") {
				lines = append(lines, l)
			}
		}
		sb, _ := os.ReadFile(sf)
		t.Fatalf("no report: %v; stats %s; bayesperf's lines on stderr:\n%s", err, sb, strings.Join(lines, ""))
	}
	var out correctedRun
	// perf's intervals, in the order it prints them (one timestamp per interval).
	last := ""
	for _, l := range parseStatCSV(t, r.stderr, true) {
		if l.interval != last {
			out.perf = append(out.perf, map[string]float64{})
			last = l.interval
		}
		v, err := strconv.ParseFloat(l.value, 64)
		if err != nil {
			v = 0 // <not counted>: perf shows no value
		}
		if l.unit == "msec" {
			v *= 1e6
		}
		out.perf[len(out.perf)-1][l.event] = v
	}
	rep := readReport(t, rf)
	c := rep.Clients[len(rep.Clients)-1]
	for _, iv := range c.Interval {
		m := map[string]reportEvent{}
		for _, e := range iv.Events {
			m[e.Event] = e
		}
		out.report = append(out.report, m)
	}
	out.truth = readStats(t, sf).Truth
	if len(out.perf) < 10 || len(out.report) < len(out.perf) {
		t.Fatalf("%d perf intervals, %d report intervals: want at least 10, and a report interval for each of perf's\n%s", len(out.perf), len(out.report), r.stderr)
	}
	return out, c
}

// runCorrected is runDropinStat, with perf's intervals checked to be the report's: what
// the virtual PMU gave the tool is what perf printed.
func runCorrected(t *testing.T, flags ...string) correctedRun {
	t.Helper()
	out, _ := runDropinStat(t, flags...)
	// The report's intervals are the tool's rounds of reads: perf's i-th interval is the
	// report's i-th, and perf printed what it was given (tolerance: perf prints msec
	// with 2 decimals, and a read may meet the periodic republish of a later value).
	match, total := 0, 0
	for i, pv := range out.perf {
		for ev, v := range pv {
			e, ok := out.report[i][ev]
			if !ok || e.Tool == nil {
				continue
			}
			total++
			if math.Abs(v-*e.Tool) <= 1e4+1e-3*math.Abs(v) {
				match++
			}
		}
	}
	if total == 0 || float64(match) < 0.9*float64(total) {
		t.Fatalf("perf's intervals match the report's tool values in %d of %d cases: the intervals are not aligned", match, total)
	}
	return out
}

// wapes is per event Σ|estimate − truth| / Σtruth over perf's intervals (events whose
// truth is 0 throughout are left out): the estimate is what perf printed, or with
// linux set the report's kernel-style scaled value of the same interval.
func (c correctedRun) wapes(linux bool) map[string]float64 {
	abs, tot := map[string]float64{}, map[string]float64{}
	for i, pv := range c.perf {
		for ev, v := range pv {
			e, ok := c.report[i][ev]
			if !ok || e.Truth == nil {
				continue
			}
			if linux {
				v = e.Linux
			}
			abs[ev] += math.Abs(v - float64(*e.Truth))
			tot[ev] += float64(*e.Truth)
		}
	}
	out := map[string]float64{}
	for ev, t := range tot {
		if t > 0 {
			out[ev] = abs[ev] / t
		}
	}
	return out
}

// reduction is eval's error reduction: the geometric mean over the events of both of
// WAPE_base / WAPE_x, each ratio capped to [1/100, 100].
func reduction(t *testing.T, what string, base, x map[string]float64) (float64, int) {
	var logSum float64
	k := 0
	for ev, a := range base {
		b, ok := x[ev]
		if !ok {
			continue
		}
		r := 100.0
		if b > 0 {
			r = math.Min(100, math.Max(0.01, a/b))
		}
		logSum += math.Log(r)
		k++
		if what != "" {
			t.Logf("%s: %-32s WAPE %.3f -> %.3f", what, ev, a, b)
		}
	}
	if k == 0 {
		return 0, 0
	}
	return math.Exp(logSum / float64(k)), k
}

// TestDropinCorrected: bayesperf run --virtual-counters 4 --stats S --report R -- perf
// stat -I 100 -x, with 18 software events and tracepoints on the mixed workload, once
// with --correct none --schedule kernel (what Linux prints on a real CPU) and once with
// the defaults (--correct bayesperf on bayesperf's schedule), 3 pairs of 5 s runs.
//
// Asserted in every run: perf prints, interval by interval, exactly what the sidecar
// gave it (the report's intervals are perf's); the stats file has the truth of every
// event; bayesperf's 95% intervals hold the truth of most intervals of most events.
// Asserted over the pooled pairs (per event, Σ|error| and Σtruth over every run): the
// error reduction of perf's intervals, as eval computes it (geometric mean over events
// of WAPE_linux / WAPE_bayesperf), between the two runs of each pair (the acceptance's
// comparison) and within the bayesperf run against the kernel-style values of a second
// copy of the events multiplexed as the kernel would.
//
// The bounds sit below what was measured: 2026-11-22, 10 repetitions of this test
// (3 pairs of 5 s runs each, 40-62 s) on the shared 2-CPU VM under a load of 5-7, with
// the code of this commit, gave two-run figures of 1.68x-2.97x (median 2.46x, geometric
// sd of 20%) and same-run figures of 1.83x-2.38x (median 2.30x, 8%); without task-clock
// 1.50x-2.68x and 1.68x-2.22x. (10 earlier repetitions, half of them before the
// schedule's no-carry default: 1.72x-2.78x and 2.03x-2.60x.) task-clock is the enabled
// time, which the model knows exactly (WAPE about 0.001 against Linux's
// 0.006-0.022). Single pairs and 2 s runs are too noisy to bound: 4 repetitions of 3
// pairs of 2 s runs gave pooled two-run figures of 1.33x-3.17x, single pairs 1.01x-3.81x.
//
// BAYESPERF_CORRECT_RUNS=N (default 3) and BAYESPERF_CORRECT_DURATION (default 5s)
// change the pooling and the workload's duration; the bounds are only asserted with
// the defaults.
func TestDropinCorrected(t *testing.T) {
	// A report has an interval for every round of reads, perf prints one for each but
	// the reads after the command's exit: keep perf's, so the runs line up.
	r := comparePairs(t, "bayesperf", func() correctedRun {
		n := runCorrected(t, "--correct", "none", "--schedule", "kernel")
		n.report = n.report[:len(n.perf)]
		return n
	}, func() correctedRun {
		b := runCorrected(t)
		checkCorrectedRun(t, b)
		b.report = b.report[:len(b.perf)]
		return b
	})
	r.check(t, "bayesperf run", "--correct none --schedule kernel -> --correct bayesperf",
		"kernel-style scaling on the kernel's round robin -> bayesperf", minReductionBetween, minReductionSame)
}

// pairedReductions are the error reductions of perf's intervals that comparePairs
// measures over runs pairs of runs pooled: from the uncorrected to the corrected runs
// (two), and within the corrected runs from the report's kernel-style values to the
// corrected ones (same), over k and k2 events, and the same without task-clock (NC).
type pairedReductions struct {
	runs                     int
	two, same, twoNC, sameNC float64
	k, k2                    int
}

// check logs r, naming the corrected run and the comparisons between the runs and within
// the corrected run, and with the default runs and duration fails the test where a
// reduction is below its bound.
func (r pairedReductions) check(t *testing.T, run, between, within string, minBetween, minWithin float64) {
	t.Helper()
	t.Logf("error reduction of perf's intervals, %s: %.2fx over %d events (%d pairs of runs); %.2fx without task-clock", between, r.two, r.k, r.runs, r.twoNC)
	t.Logf("error reduction within the %s, %s: %.2fx over %d events; %.2fx without task-clock", run, within, r.same, r.k2, r.sameNC)
	if r.runs != defaultCorrectRuns || correctDuration() != defaultCorrectDuration {
		return
	}
	if r.two < minBetween {
		t.Errorf("error reduction between the runs %.2fx, below %.2fx", r.two, minBetween)
	}
	if r.same < minWithin {
		t.Errorf("error reduction within the %s %.2fx, below %.2fx", run, r.same, minWithin)
	}
}

// comparePairs runs BAYESPERF_CORRECT_RUNS (default 3) pairs of runs, none then
// corrected (each returns a run whose report has perf's intervals only), and measures
// the reductions from none's to corrected's errors; name names the correction in the
// log. It fails t unless at least 16 events have a truth in both runs.
func comparePairs(t *testing.T, name string, none, corrected func() correctedRun) pairedReductions {
	t.Helper()
	r := pairedReductions{runs: defaultCorrectRuns}
	if n, err := strconv.Atoi(os.Getenv("BAYESPERF_CORRECT_RUNS")); err == nil && n > 0 {
		r.runs = n
	}
	var base, pooled correctedRun
	for i := range r.runs {
		n, b := none(), corrected()
		base.perf, base.report = append(base.perf, n.perf...), append(base.report, n.report...)
		pooled.perf, pooled.report = append(pooled.perf, b.perf...), append(pooled.report, b.report...)
		if r.runs > 1 {
			two, _ := reduction(t, "", n.wapes(false), b.wapes(false))
			same, _ := reduction(t, "", b.wapes(true), b.wapes(false))
			t.Logf("pair %d: error reduction %.2fx (two runs), %.2fx (same run)", i+1, two, same)
		}
	}
	r.two, r.k = reduction(t, "none -> "+name, base.wapes(false), pooled.wapes(false))
	r.same, r.k2 = reduction(t, "same run, linux -> "+name, pooled.wapes(true), pooled.wapes(false))
	if r.k < 16 || r.k2 < 16 {
		t.Fatalf("only %d (%d) events with a truth in both runs (in the corrected run), want 16", r.k, r.k2)
	}
	r.twoNC, _ = reduction(t, "", withoutEvent(base.wapes(false), "task-clock"), withoutEvent(pooled.wapes(false), "task-clock"))
	r.sameNC, _ = reduction(t, "", withoutEvent(pooled.wapes(true), "task-clock"), withoutEvent(pooled.wapes(false), "task-clock"))
	return r
}

const (
	defaultCorrectRuns     = 3
	defaultCorrectDuration = "5s"
	// Bounds below the measured minimums (see TestDropinCorrected): about 2.9 and 4.3
	// geometric standard deviations below the geometric means of the 10 repetitions
	// (2.39x, 2.24x). The acceptance's 2x is the median, not a floor.
	minReductionBetween = 1.4
	minReductionSame    = 1.6
)

// withoutEvent is m without event ev.
func withoutEvent(m map[string]float64, ev string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if k != ev {
			out[k] = v
		}
	}
	return out
}

// checkCorrectedRun checks what holds in every --correct bayesperf run: coverage of the
// truth by the 95% intervals, and the stats file's truth.
func checkCorrectedRun(t *testing.T, bayes correctedRun) {
	t.Helper()

	// Coverage: per event, the share of intervals whose truth lies in the reported 95%
	// interval; most events must be covered in most intervals.
	covered, events := 0, 0
	for ev := range bayes.wapes(false) {
		in, n := 0, 0
		for _, m := range bayes.report {
			e, ok := m[ev]
			if !ok || e.Truth == nil || e.Lo == nil || e.Hi == nil {
				continue
			}
			n++
			if tr := float64(*e.Truth); tr >= *e.Lo-0.5 && tr <= *e.Hi+0.5 {
				in++
			}
		}
		if n == 0 {
			continue
		}
		events++
		if float64(in) >= 0.75*float64(n) {
			covered++
		}
		t.Logf("%-32s truth within the 95%% interval in %d of %d intervals", ev, in, n)
	}
	if events < 16 || float64(covered) < 0.75*float64(events) {
		t.Errorf("%d of %d events have the truth within their 95%% interval in 75%% of the intervals, want 75%% of the events", covered, events)
	}

	// The stats file's truth is the hidden copies' total; the report's intervals end
	// at the tool's last read, so they add up to no more than it.
	if want := len(strings.Split(correctEvents, ",")); len(bayes.truth) != want {
		t.Errorf("stats truth has %d events, want the %d of the run", len(bayes.truth), want)
	}
	for ev, tot := range bayes.truth {
		var sum uint64
		for _, m := range bayes.report {
			if e, ok := m[ev]; ok && e.Truth != nil {
				sum += *e.Truth
			}
		}
		if sum > tot {
			t.Errorf("%s: report intervals add up to a truth of %d, more than the total %d", ev, sum, tot)
		}
	}
}

// TestDropinCorrectedTotals: perf stat without -I through --correct bayesperf on 2
// virtual counters prints, once the command has exited, the smoother's final totals of
// the report, each counted "100%" of the time (time_running = time_enabled), so that
// perf's own scaling leaves them unchanged.
func TestDropinCorrectedTotals(t *testing.T) {
	needRoot(t, "the virtual PMU opens tracepoints on the measured command")
	rf := filepath.Join(t.TempDir(), "report.json")
	bp := dropinBin(t, "bayesperf")
	evs := "page-faults,minor-faults,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_getpid,syscalls:sys_enter_close"
	r := run(t, patientShim, bp, "run", "--virtual-counters", "2", "--report", rf, "--", "perf", "stat", "-x,", "-e", evs, "--",
		bp, "workload", "syscalls", "--duration", "1s")
	if r.status != 0 {
		t.Fatalf("status %d\n%s", r.status, r.stderr)
	}
	rep := readReport(t, rf)
	totals := map[string]reportEvent{}
	for _, e := range rep.Clients[len(rep.Clients)-1].Totals {
		totals[e.Event] = e
	}
	lines := parseStatCSV(t, r.stderr, false)
	if len(lines) != len(strings.Split(evs, ",")) {
		t.Fatalf("perf printed %d lines, want %d:\n%s", len(lines), len(strings.Split(evs, ",")), r.stderr)
	}
	inferred := 0
	for _, l := range lines {
		e, ok := totals[l.event]
		if !ok {
			t.Errorf("%s: not in the report's totals", l.event)
			continue
		}
		if pct := runPercent(r.stderr, l.event); pct != "100.00" {
			t.Errorf("%s: perf says counted %q%% of the time, want 100.00", l.event, pct)
		}
		if got := l.num(t); math.Abs(got-math.Round(e.Value)) > 1 {
			t.Errorf("%s: perf printed %v, the report's final total is %v (%s)", l.event, got, e.Value, e.Status)
		}
		if e.Status == "inferred" {
			inferred++
		}
	}
	if inferred == 0 {
		t.Errorf("no event was inferred on 2 counters: the totals are not the model's")
	}
}

// runPercent is the "run %" field of event's line in perf stat -x, output.
func runPercent(out, event string) string {
	for line := range strings.Lines(out) {
		if f := strings.Split(strings.TrimSpace(line), ","); len(f) >= 5 && f[2] == event {
			return f[4]
		}
	}
	return ""
}

// TestDropinCorrectedRecord: with correction on, perf record -e page-faults -c 1 still
// writes one sample per fault: as many as natively (the samples come from the kernel's
// own event, which the virtual PMU leaves alone).
func TestDropinCorrectedRecord(t *testing.T) {
	needRoot(t, "the virtual PMU opens events on the measured command")
	native, _, _ := recordSamples(t, false, noSidecarEnv(t), []string{"-e", "page-faults", "-c", "1"}, "1500", "0", "0")
	data := filepath.Join(t.TempDir(), "perf.data")
	argv := append([]string{dropinBin(t, "bayesperf"), "run", "--virtual-counters", "4", "--",
		"perf", "record", "-q", "-s", "-o", data, "-e", "page-faults", "-c", "1", "--"}, workload(t, "1500", "0", "0")...)
	r := run(t, nil, argv...)
	if r.status != 0 {
		t.Fatalf("%q: status %d\n%s", argv, r.status, r.stderr)
	}
	_, got := perfReport(t, data, "-T")
	if got < 1500 || !within(got, native, faultsAbs, faultsRel) {
		t.Errorf("page-fault samples with correction on: %v, natively %v (the workload touches 1500 pages)", got, native)
	}
}

// correctDuration is how long the corrected runs' workload runs: $BAYESPERF_CORRECT_DURATION
// (a Go duration), defaultCorrectDuration by default.
func correctDuration() string {
	if d := os.Getenv("BAYESPERF_CORRECT_DURATION"); d != "" {
		return d
	}
	return defaultCorrectDuration
}
