package statfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// perfStat runs the real perf stat (6.1 on the project machines) with args and returns
// its output lines (perf writes them to stderr). Needs /usr/bin/perf and the right to
// count software events of a child (root here).
func perfStat(t *testing.T, args ...string) []string {
	t.Helper()
	path, err := exec.LookPath("perf")
	if err != nil {
		t.Skip("needs the perf tool to compare layouts: not in PATH")
	}
	cmd := exec.Command(path, append([]string{"stat"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("perf stat %v: %v\n%s", args, err, stderr.String())
	}
	var out []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

func render(t *testing.T, p *Printer, f func() error) []string {
	t.Helper()
	var b bytes.Buffer
	p.W = &b
	if err := f(); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(b.String(), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

var events = []string{"task-clock", "page-faults", "sched:sched_switch"}

// fromCSV turns perf's CSV lines into Counters with perf's values and running times,
// exact (Lo = Hi = Value), so that our line can be compared field by field.
func fromCSV(t *testing.T, lines []string, sep string, skip int) []Counter {
	t.Helper()
	var cs []Counter
	for _, l := range lines {
		f := strings.Split(l, sep)[skip:]
		if len(f) < 5 {
			t.Fatalf("perf CSV line %q: %d fields", l, len(f))
		}
		unit, scale := Unit(f[2])
		if unit != f[1] {
			t.Fatalf("perf shows %s in %q, Unit says %q", f[2], f[1], unit)
		}
		run, err := strconv.ParseUint(f[3], 10, 64)
		if err != nil {
			t.Fatalf("perf CSV run time %q: %v", f[3], err)
		}
		c := Counter{Event: f[2], Running: run, Enabled: run, Status: "exact"}
		if v, err := strconv.ParseFloat(f[0], 64); err == nil {
			c.Counted = true
			c.Value = v / scale
			c.Lo, c.Hi, c.Linux = c.Value, c.Value, c.Value
		}
		cs = append(cs, c)
	}
	return cs
}

func TestCSVMatchesPerf(t *testing.T) {
	for _, sep := range []string{",", ";"} {
		perf := perfStat(t, "-x", sep, "-e", strings.Join(events, ","), "true")
		if len(perf) != len(events) {
			t.Fatalf("perf printed %d lines, want %d: %q", len(perf), len(events), perf)
		}
		cs := fromCSV(t, perf, sep, 0)
		p := &Printer{Mode: CSV, Sep: sep}
		ours := render(t, p, func() error { return p.Totals(cs, time.Second, false) })
		if len(ours) != len(perf) {
			t.Fatalf("%d lines, perf %d", len(ours), len(perf))
		}
		for i := range perf {
			pf, of := strings.Split(perf[i], sep), strings.Split(ours[i], sep)
			if len(of) != len(pf)+4 {
				t.Errorf("sep %q: %d fields, want perf's %d plus lo,hi,status,linux\nperf: %s\nours: %s", sep, len(of), len(pf), perf[i], ours[i])
				continue
			}
			// value, unit, event, run time, run percentage are perf's exactly.
			for k := 0; k <= 4; k++ {
				if of[k] != pf[k] {
					t.Errorf("field %d: %q, perf %q\nperf: %s\nours: %s", k, of[k], pf[k], perf[i], ours[i])
				}
			}
			// The metric unit is perf's; a rate per second (every event but the clock)
			// depends only on the printed values, so it is perf's too up to the rounding
			// of the printed task-clock.
			if of[6] != pf[6] {
				t.Errorf("metric unit %q, perf %q", of[6], pf[6])
			}
			if strings.HasSuffix(pf[6], "/sec") {
				pv, _ := strconv.ParseFloat(pf[5], 64)
				ov, _ := strconv.ParseFloat(of[5], 64)
				// Our task-clock is perf's printed one, rounded to 0.005 msec.
				clockMs := cs[0].Value * 1e-6
				if math.Abs(pv-ov) > 0.006/clockMs*math.Abs(pv)+0.001 {
					t.Errorf("rate %v, perf %v", ov, pv)
				}
			}
			if of[7] != of[0] || of[8] != of[0] || of[10] != of[0] || of[9] != "exact" {
				t.Errorf("exact value should have lo = hi = linux = value: %s", ours[i])
			}
		}
	}
}

// column returns the byte offset of the first occurrence of s in line, -1 if absent.
func column(line, s string) int { return strings.Index(line, s) }

func TestStdMatchesPerf(t *testing.T) {
	perf := perfStat(t, "-e", strings.Join(events, ","), "true")
	// perf's lines: header, one per event, elapsed, user, sys.
	var evLines []string
	for _, l := range perf {
		for _, e := range events {
			if strings.Contains(l, " "+e+" ") {
				evLines = append(evLines, l)
			}
		}
	}
	if len(evLines) != len(events) {
		t.Fatalf("perf event lines %q", evLines)
	}
	// perf's own values, read back from its lines.
	var cs []Counter
	for i, l := range evLines {
		f := strings.Fields(l)
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("perf value in %q: %v", l, err)
		}
		_, scale := Unit(events[i])
		cs = append(cs, Counter{Event: events[i], Counted: true, Value: v / scale, Lo: v / scale, Hi: v / scale, Enabled: 1, Running: 1})
	}
	p := &Printer{Mode: Std}
	ours := render(t, p, func() error {
		if err := p.Header(ForCommand([]string{"true"})); err != nil {
			return err
		}
		if err := p.Totals(cs, 10*time.Millisecond, false); err != nil {
			return err
		}
		return p.Footer(Footer{Elapsed: 10 * time.Millisecond, Rusage: true})
	})
	if ours[0] != perf[0] {
		t.Errorf("header %q, perf %q", ours[0], perf[0])
	}
	if len(ours) != len(perf) {
		t.Fatalf("%d lines, perf %d:\n%s\nperf:\n%s", len(ours), len(perf), strings.Join(ours, "\n"), strings.Join(perf, "\n"))
	}
	for i, pl := range evLines {
		ol := ours[1+i]
		e := events[i]
		// Columns: the value ends, the event name and the metric's '#' start, where
		// perf's do; bayesperf's ± begins where perf's padded line ends.
		if column(ol, " "+e+" ") != column(pl, " "+e+" ") {
			t.Errorf("%s: name at %d, perf %d\nperf: %q\nours: %q", e, column(ol, " "+e+" "), column(pl, " "+e+" "), pl, ol)
		}
		if column(ol, "#") != column(pl, "#") {
			t.Errorf("%s: metric at %d, perf %d\nperf: %q\nours: %q", e, column(ol, "#"), column(pl, "#"), pl, ol)
		}
		if got := column(ol, "  ( ±"); got != len(pl) {
			t.Errorf("%s: ± at %d, perf's line is %d wide\nperf: %q\nours: %q", e, got, len(pl), pl, ol)
		}
		if !strings.Contains(ol, "( ±  0.00% )") {
			t.Errorf("%s: an exact value should show ± 0.00%%: %q", e, ol)
		}
		// The value field is perf's, byte for byte.
		if ol[:19] != pl[:19] {
			t.Errorf("%s: value %q, perf %q", e, ol[:19], pl[:19])
		}
	}
	// Footer lines have perf's shape.
	re := regexp.MustCompile(`^ +\d+\.\d{9} seconds (time elapsed|user|sys)$`)
	for _, l := range ours[len(ours)-3:] {
		if !re.MatchString(l) {
			t.Errorf("footer line %q", l)
		}
	}
	for _, l := range perf[len(perf)-3:] {
		if !re.MatchString(l) {
			t.Errorf("perf footer line %q does not match the shape we print", l)
		}
	}
}

func TestIntervalMatchesPerf(t *testing.T) {
	evs := "task-clock,page-faults"
	perf := perfStat(t, "-I", "100", "-e", evs, "sleep", "0.25")
	csvPerf := perfStat(t, "-I", "100", "-x,", "-e", evs, "sleep", "0.25")
	cs := fromCSV(t, csvPerf[:2], ",", 1)
	p := &Printer{Mode: Std, Interval: 100 * time.Millisecond}
	ours := render(t, p, func() error { return p.IntervalBlock(100*time.Millisecond+12345, cs) })
	if ours[0] != perf[0] {
		t.Errorf("column header %q, perf %q", ours[0], perf[0])
	}
	ts := regexp.MustCompile(`^ +\d+\.\d{9} `)
	for i, e := range []string{"task-clock", "page-faults"} {
		ol, pl := ours[1+i], perf[1+i]
		if a, b := ts.FindString(ol), ts.FindString(pl); a == "" || len(a) != len(b) {
			t.Errorf("timestamp column %q, perf %q", a, b)
		}
		if !strings.HasPrefix(ol, "     0.100012345 ") {
			t.Errorf("timestamp %q", ol[:17])
		}
		if column(ol, " "+e+" ") != column(pl, " "+e+" ") || column(ol, "#") != column(pl, "#") {
			t.Errorf("columns differ\nperf: %q\nours: %q", pl, ol)
		}
	}
	// The CPUs utilized of an interval is over the -I period, as perf's: same value.
	pf := strings.Split(csvPerf[0], ",")
	cp := &Printer{Mode: CSV, Interval: 100 * time.Millisecond}
	oc := render(t, cp, func() error { return cp.IntervalBlock(time.Second, cs) })
	of := strings.Split(oc[0], ",")
	if len(of) != len(pf)+4 || of[1] != pf[1] || of[2] != pf[2] || of[3] != pf[3] || of[7] != pf[7] {
		t.Errorf("interval CSV\nperf: %s\nours: %s", csvPerf[0], oc[0])
	}
	// Ours derives from perf's printed msec (2 decimals), perf's from the exact ns: the
	// metric agrees up to that rounding (0.005 msec over 100 ms) and its own (0.0005).
	pm, _ := strconv.ParseFloat(pf[6], 64)
	om, _ := strconv.ParseFloat(of[6], 64)
	if math.Abs(pm-om) > 0.00105 {
		t.Errorf("CPUs utilized %v, perf %v", om, pm)
	}
	// The header repeats every 25 blocks, as perf's.
	for k := 1; k < 25; k++ {
		if err := p.IntervalBlock(time.Duration(k)*time.Second, cs); err != nil {
			t.Fatal(err)
		}
	}
	again := render(t, p, func() error { return p.IntervalBlock(time.Minute, cs) })
	if again[0] != perf[0] {
		t.Errorf("26th block starts with %q, want the column header", again[0])
	}
}

var jsonKey = regexp.MustCompile(`"([a-z-]+)" :`)

func TestJSONMatchesPerf(t *testing.T) {
	for _, interval := range []bool{false, true} {
		args := []string{"-j", "-e", "task-clock,page-faults"}
		if interval {
			args = append([]string{"-I", "100"}, args...)
		}
		perf := perfStat(t, append(args, "sleep", "0.15")...)
		csvArgs := []string{"-x,", "-e", "task-clock,page-faults"}
		skip := 0
		if interval {
			csvArgs = append([]string{"-I", "100"}, csvArgs...)
			skip = 1
		}
		cs := fromCSV(t, perfStat(t, append(csvArgs, "sleep", "0.15")...)[:2], ",", skip)
		p := &Printer{Mode: JSON}
		var ours []string
		if interval {
			p.Interval = 100 * time.Millisecond
			ours = render(t, p, func() error { return p.IntervalBlock(time.Second, cs) })
		} else {
			ours = render(t, p, func() error { return p.Totals(cs, time.Second, false) })
		}
		for i := range cs {
			var m map[string]any
			if err := json.Unmarshal([]byte(ours[i]), &m); err != nil {
				t.Fatalf("line %q is not one JSON object: %v", ours[i], err)
			}
			pk, ok := jsonKey.FindAllStringSubmatch(perf[i], -1), jsonKey.FindAllStringSubmatch(ours[i], -1)
			extra := []string{"lo", "hi", "status", "linux", "count", "enabled", "running"}
			if len(ok) != len(pk)+len(extra) {
				t.Fatalf("keys %v, perf %v", ok, pk)
			}
			for k := range pk {
				if ok[k][1] != pk[k][1] {
					t.Errorf("key %d %q, perf %q", k, ok[k][1], pk[k][1])
				}
			}
			for k, want := range extra {
				if ok[len(pk)+k][1] != want {
					t.Errorf("extra key %q, want %q", ok[len(pk)+k][1], want)
				}
			}
			if m["lo"] == nil || m["status"] != "exact" {
				t.Errorf("extra fields of an exact value: %v", m)
			}
		}
	}
}

func TestMultiplexedLine(t *testing.T) {
	c := Counter{Event: "page-faults", Counted: true, Value: 1000, Lo: 900, Hi: 1100, Linux: 1200,
		Status: "inferred", Enabled: 400, Running: 100}
	p := &Printer{Mode: Std}
	l := render(t, p, func() error { return p.Totals([]Counter{c}, time.Second, false) })[0]
	if !strings.HasSuffix(l, "  ( ± 10.00% )  (25.00%)") {
		t.Errorf("line %q should end with the ± and perf's running percentage", l)
	}
	p = &Printer{Mode: CSV}
	l = render(t, p, func() error { return p.Totals([]Counter{c}, time.Second, true) })[0]
	if want := "         summary,1000,,page-faults,100,25.00,,,900,1100,inferred,1200"; l != want {
		t.Errorf("csv %q, want %q", l, want)
	}
	// Not counted: perf's placeholder, no interval.
	nc := Counter{Event: "task-clock", Status: "not-counted"}
	p = &Printer{Mode: JSON}
	l = render(t, p, func() error { return p.Totals([]Counter{nc}, time.Second, false) })[0]
	var m map[string]any
	if err := json.Unmarshal([]byte(l), &m); err != nil || m["counter-value"] != "<not counted>" || m["lo"] != nil {
		t.Errorf("not counted JSON %q (%v)", l, err)
	}
}

func TestHalfWidthPct(t *testing.T) {
	for _, tc := range []struct {
		c    Counter
		want float64
	}{
		{Counter{Value: 200, Lo: 190, Hi: 210}, 5},
		{Counter{Value: 200, Lo: 200, Hi: 200}, 0},
		{Counter{Value: 0, Lo: 0, Hi: 0}, 0},
		{Counter{Value: 0, Lo: 0, Hi: 3}, math.Inf(1)},
		{Counter{Value: 10, Lo: math.NaN(), Hi: 3}, 0},
	} {
		if got := HalfWidthPct(tc.c); got != tc.want {
			t.Errorf("HalfWidthPct(%+v) = %v, want %v", tc.c, got, tc.want)
		}
	}
	p := &Printer{Mode: Std}
	l := render(t, p, func() error {
		return p.Totals([]Counter{{Event: "x", Counted: true, Value: 0, Hi: 2, Enabled: 1, Running: 1}}, time.Second, false)
	})[0]
	if !strings.Contains(l, "( ±   inf% )") {
		t.Errorf("zero value with an interval: %q", l)
	}
}

// A <not counted> line (perf stat -p of a process that never ran) has perf's columns.
func TestNotCountedMatchesPerf(t *testing.T) {
	sleeper := exec.Command("sleep", "30")
	if err := sleeper.Start(); err != nil {
		t.Skipf("needs sleep(1) for a process that never runs: %v", err)
	}
	defer func() {
		sleeper.Process.Kill()
		sleeper.Wait()
	}()
	// Until its startup after the exec is over, sleep does run: wait until it sleeps.
	pid := sleeper.Process.Pid
	for i := 0; i < 200; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if j := strings.LastIndexByte(string(b), ')'); err == nil && j >= 0 && strings.HasPrefix(string(b[j:]), ") S") {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	perf := perfStat(t, "-p", strconv.Itoa(pid), "--timeout", "100", "-e", "task-clock,page-faults")
	cs := []Counter{{Event: "task-clock", Status: "not-counted"}, {Event: "page-faults", Status: "not-counted"}}
	p := &Printer{Mode: Std}
	ours := render(t, p, func() error {
		if err := p.Header(ForPid(pid)); err != nil {
			return err
		}
		return p.Totals(cs, 100*time.Millisecond, false)
	})
	if ours[0] != perf[0] {
		t.Errorf("header %q, perf %q", ours[0], perf[0])
	}
	for i := range cs {
		if ours[1+i] != perf[1+i] {
			t.Errorf("not counted line\nperf: %q\nours: %q", perf[1+i], ours[1+i])
		}
	}
}

// With Start set, JSON interval lines say when their interval ended, in wall-clock ns.
func TestJSONEndUnixNs(t *testing.T) {
	start := time.Unix(1700000000, 0)
	p := &Printer{Mode: JSON, Interval: 100 * time.Millisecond, Start: start}
	c := Counter{Event: "page-faults", Counted: true, Value: 3, Lo: 3, Hi: 3, Linux: 3, Status: "exact", Count: 3, Enabled: 5, Running: 5}
	l := render(t, p, func() error { return p.IntervalBlock(250*time.Millisecond, []Counter{c}) })[0]
	var m map[string]any
	if err := json.Unmarshal([]byte(l), &m); err != nil {
		t.Fatal(err)
	}
	if got, want := m["end-unix-ns"], float64(start.Add(250*time.Millisecond).UnixNano()); got != want {
		t.Errorf("end-unix-ns %v, want %v", got, want)
	}
	if m["count"] != 3.0 || m["enabled"] != 5.0 || m["running"] != 5.0 {
		t.Errorf("raw triple %v %v %v, want 3 5 5", m["count"], m["enabled"], m["running"])
	}
}
