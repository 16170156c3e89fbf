package test

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// correctEvents are 18 software events and tracepoints for the mixed workload: more than
// four times the 4 virtual counters.
const correctEvents = "page-faults,minor-faults,major-faults,context-switches,cpu-migrations,task-clock," +
	"raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_read,syscalls:sys_enter_write," +
	"syscalls:sys_enter_getpid,syscalls:sys_enter_openat,syscalls:sys_enter_close,syscalls:sys_enter_newfstatat," +
	"sched:sched_switch,sched:sched_wakeup,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap"

// runReport is the part of `bayesperf run --report` the test reads.
type runReport struct {
	Clients []struct {
		Correct  string `json:"correct"`
		Schedule string `json:"schedule"`
		Slices   int    `json:"slices"`
		Totals   []reportEvent
		Interval []struct {
			Events []reportEvent `json:"events"`
		} `json:"intervals"`
	} `json:"clients"`
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

func runCorrected(t *testing.T, flags ...string) correctedRun {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the virtual PMU opens tracepoints on the measured command")
	}
	dir := dropinBins(t)
	tmp := t.TempDir()
	sf, rf := filepath.Join(tmp, "stats.json"), filepath.Join(tmp, "report.json")
	bp := filepath.Join(dir, "bayesperf")
	argv := append([]string{bp, "run", "--virtual-counters", "4", "--stats", sf, "--report", rf}, flags...)
	argv = append(argv, "--", "perf", "stat", "-I", "100", "-x,", "-e", correctEvents, "--",
		bp, "workload", "mixed", "--duration", "2s")
	r := run(t, nil, argv...)
	if r.status != 0 {
		t.Fatalf("%q: status %d\n%s", argv, r.status, r.stderr)
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
	b, err := os.ReadFile(rf)
	if err != nil {
		t.Fatalf("read report: %v", err)
	}
	var rep runReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("parse report: %v", err)
	}
	if len(rep.Clients) == 0 {
		t.Fatalf("report has no client: %s", b)
	}
	c := rep.Clients[len(rep.Clients)-1]
	for _, iv := range c.Interval {
		m := map[string]reportEvent{}
		for _, e := range iv.Events {
			m[e.Event] = e
		}
		out.report = append(out.report, m)
	}
	sb, err := os.ReadFile(sf)
	if err != nil {
		t.Fatalf("read stats: %v", err)
	}
	var st struct {
		Truth map[string]uint64 `json:"truth"`
	}
	if err := json.Unmarshal(sb, &st); err != nil {
		t.Fatalf("parse stats: %v", err)
	}
	out.truth = st.Truth
	if len(out.perf) < 10 || len(out.report) < len(out.perf) {
		t.Fatalf("%d perf intervals, %d report intervals: want at least 10, and a report interval for each of perf's\n%s", len(out.perf), len(out.report), r.stderr)
	}
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

// wapes is per event Σ|perf − truth| / Σtruth over perf's intervals (events whose truth
// is 0 throughout are left out).
func (c correctedRun) wapes() map[string]float64 {
	abs, tot := map[string]float64{}, map[string]float64{}
	for i, pv := range c.perf {
		for ev, v := range pv {
			e, ok := c.report[i][ev]
			if !ok || e.Truth == nil {
				continue
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

// TestDropinCorrected: bayesperf run --virtual-counters 4 -- perf stat -I 100 -x, with 18
// software events and tracepoints: the intervals perf prints with --correct bayesperf
// (the default, on bayesperf's schedule) are closer to the truth of the hidden copies
// than those of --correct none on the kernel's round robin (what Linux prints on a
// real CPU), measured as eval does: the geometric mean over events of WAPE_none /
// WAPE_bayesperf (capped at 100). The model's own 95% intervals hold the truth of most
// intervals.
func TestDropinCorrected(t *testing.T) {
	none := runCorrected(t, "--correct", "none", "--schedule", "kernel")
	bayes := runCorrected(t)
	wn, wb := none.wapes(), bayes.wapes()
	var logSum float64
	var k int
	for ev, a := range wn {
		b, ok := wb[ev]
		if !ok {
			continue
		}
		r := math.Inf(1)
		if b > 0 {
			r = a / b
		}
		r = math.Min(100, math.Max(0.01, r))
		logSum += math.Log(r)
		k++
		t.Logf("%-32s WAPE none %.3f bayesperf %.3f", ev, a, b)
	}
	if k < 16 {
		t.Fatalf("only %d events with a truth in both runs, want 16", k)
	}
	red := math.Exp(logSum / float64(k))
	t.Logf("error reduction (geometric mean over %d events of WAPE_none / WAPE_bayesperf): %.2fx", k, red)
	if red <= 1.0 {
		t.Errorf("error reduction %.2fx: perf's intervals are not closer to the truth with --correct bayesperf", red)
	}

	// Coverage: per event, the share of intervals whose truth lies in the reported 95%
	// interval; most events must be covered in most intervals.
	covered, events := 0, 0
	for ev := range wb {
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
		if float64(in) >= 0.8*float64(n) {
			covered++
		}
		t.Logf("%-32s truth within the 95%% interval in %d of %d intervals", ev, in, n)
	}
	if events < 16 || float64(covered) < 0.75*float64(events) {
		t.Errorf("%d of %d events have the truth within their 95%% interval in 80%% of the intervals, want 75%% of the events", covered, events)
	}

	// The stats file's truth is the hidden copies' total: perf's intervals with
	// --correct none add up to it within multiplexing error, the report's intervals add
	// up to it exactly (up to the reads after the last interval).
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
	if want := len(strings.Split(correctEvents, ",")); len(bayes.truth) != want {
		t.Errorf("stats truth has %d events, want the %d of the run", len(bayes.truth), want)
	}
}

// TestDropinCorrectedRecord: with correction on, perf record -e page-faults -c 1 still
// writes one sample per fault: as many as natively (the samples come from the kernel's
// own event, which the virtual PMU leaves alone).
func TestDropinCorrectedRecord(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the virtual PMU opens events on the measured command")
	}
	native, _, _ := recordSamples(t, false, noSidecarEnv(t), []string{"-e", "page-faults", "-c", "1"}, "1500", "0", "0")
	dir := dropinBins(t)
	data := filepath.Join(t.TempDir(), "perf.data")
	argv := append([]string{filepath.Join(dir, "bayesperf"), "run", "--virtual-counters", "4", "--",
		"perf", "record", "-q", "-s", "-o", data, "-e", "page-faults", "-c", "1", "--"}, workload(t, "1500", "0", "0")...)
	r := run(t, nil, argv...)
	if r.status != 0 {
		t.Fatalf("%q: status %d\n%s", argv, r.status, r.stderr)
	}
	rep := run(t, nil, "perf", "report", "-i", data, "--stdio", "-T")
	m := regexp.MustCompile(`# Event count \(approx.\): ([0-9]+)`).FindStringSubmatch(rep.stdout)
	if m == nil {
		t.Fatalf("no event count in perf report:\n%s", rep.stdout)
	}
	got, _ := strconv.ParseFloat(m[1], 64)
	if got < 1500 || !within(got, native, faultsAbs, faultsRel) {
		t.Errorf("page-fault samples with correction on: %v, natively %v (the workload touches 1500 pages)", got, native)
	}
}
