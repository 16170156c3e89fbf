package test

// End-to-end tests of `bayesperf stat` and `bayesperf attach`. They need Linux with
// perf_event_open for software events and tracepoints (tracefs readable: root here), and
// what dropinBins needs to build bayesperf and the C programs (Go, gcc, make, perf).

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// statBin is the bayesperf of dropinBins: built from this tree into a private directory
// (a bin/bayesperf left by an older build may lack these commands), or
// $BAYESPERF_BIN/bayesperf when set.
func statBin(t *testing.T) string {
	t.Helper()
	return dropinBin(t, "bayesperf")
}

// runBin runs bayesperf with args, returning stdout, stderr and the exit status.
func runBin(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(statBin(t), args...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if waitTimeout(cmd, 60*time.Second) == errWaitTimeout {
		t.Fatalf("bayesperf %v: no exit within a minute\n%s", args, se.String())
	}
	return so.String(), se.String(), cmd.ProcessState.ExitCode()
}

// The events of the multiplexed runs: 14 software events and tracepoints that the
// syscalls workload fires, with relations between some of them (page-faults = minor +
// major, raw_syscalls:sys_enter = sum of the syscalls:sys_enter_*, context-switches =
// sched:sched_switch).
var statEvents = []string{
	"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches",
	"sched:sched_switch", "sched:sched_wakeup", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
	"syscalls:sys_enter_read", "syscalls:sys_enter_write", "syscalls:sys_enter_getpid",
	"syscalls:sys_enter_openat", "syscalls:sys_enter_close",
}

// csvLine is one line of `bayesperf stat -x,`: perf's fields then lo, hi, status, linux.
type csvLine struct {
	ts                 float64 // -I only
	summary            bool
	event, status      string
	counted            bool
	value, lo, hi, lnx float64
	run                uint64
	pct                float64
}

// valueLines yields the lines of bayesperf stat's output that carry values, without
// their newline: not blank, not bayesperf's own messages.
func valueLines(out string) iter.Seq[string] {
	return func(yield func(string) bool) {
		for raw := range strings.Lines(out) {
			raw = strings.TrimRight(raw, "\n")
			if raw == "" || strings.HasPrefix(raw, "bayesperf") {
				continue
			}
			if !yield(raw) {
				return
			}
		}
	}
}

func parseBayesCSV(t *testing.T, out string, interval bool) []csvLine {
	t.Helper()
	var ls []csvLine
	for raw := range valueLines(out) {
		f := strings.Split(raw, ",")
		var l csvLine
		if strings.TrimSpace(f[0]) == "summary" {
			l.summary, f = true, f[1:]
		} else if interval {
			ts, err := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
			if err != nil {
				t.Fatalf("line %q: timestamp: %v", raw, err)
			}
			l.ts, f = ts, f[1:]
		}
		// value,unit,event,run,pct,metric,metric-unit,lo,hi,status,linux
		if len(f) != 11 {
			t.Fatalf("line %q: %d fields after the timestamp, want 11", raw, len(f))
		}
		l.event, l.status = f[2], f[9]
		var err error
		if l.run, err = strconv.ParseUint(f[3], 10, 64); err != nil {
			t.Fatalf("line %q: run time: %v", raw, err)
		}
		if l.pct, err = strconv.ParseFloat(f[4], 64); err != nil {
			t.Fatalf("line %q: run %%: %v", raw, err)
		}
		if f[0] != "<not counted>" {
			l.counted = true
			for i, p := range []*float64{&l.value, &l.lo, &l.hi, &l.lnx} {
				if *p, err = strconv.ParseFloat(f[[]int{0, 7, 8, 10}[i]], 64); err != nil {
					t.Fatalf("line %q: field %d: %v", raw, i, err)
				}
			}
		}
		ls = append(ls, l)
	}
	return ls
}

// checkEstimates checks what must hold of any line: the interval contains the value, a
// value is positive where the event was seen firing, and the multiplexing share is a
// percentage.
func checkEstimates(t *testing.T, ls []csvLine) {
	t.Helper()
	for _, l := range ls {
		if l.pct < 0 || l.pct > 100 {
			t.Errorf("%s: running %.2f%%", l.event, l.pct)
		}
		if !l.counted {
			continue
		}
		// Printed with 0 or 2 decimals: allow the rounding.
		const eps = 0.01
		if l.lo > l.value+eps || l.value > l.hi+eps {
			t.Errorf("%s at %.3f: value %v outside its interval [%v, %v]", l.event, l.ts, l.value, l.lo, l.hi)
		}
		// The truth is at least what was counted (the raw count, kernel-scaled value
		// times the running share): the interval must reach it, up to the printed
		// rounding. And a busy event (kernel-scaled >= 100) must have a positive value;
		// a handful of counts seen in part of an interval may legitimately be estimated
		// below 0.5, which prints as 0.
		if raw := l.lnx * l.pct / 100; l.run > 0 && l.hi < raw*0.999-1 {
			t.Errorf("%s at %.3f: %.0f counted but bayesperf's interval is [%v, %v]", l.event, l.ts, raw, l.lo, l.hi)
		}
		if l.lnx >= 100 && l.run > 0 && !(l.value > 0) {
			t.Errorf("%s at %.3f: counted %v (kernel scaling) but bayesperf says %v", l.event, l.ts, l.lnx, l.value)
		}
	}
}

func TestStatVirtualCountersIntervals(t *testing.T) {
	bin := statBin(t)
	out, errOut, code := runBin(t, "stat", "--virtual-counters", "4", "-I", "100", "-x,", "--summary",
		"-e", strings.Join(statEvents, ","), "--", bin, "workload", "syscalls", "--duration", "1s")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	if out != "" {
		t.Errorf("stdout belongs to the command, got %q", out)
	}
	ls := parseBayesCSV(t, errOut, true)
	var ivs [][]csvLine
	var sum []csvLine
	for _, l := range ls {
		switch {
		case l.summary:
			sum = append(sum, l)
		case len(ivs) == 0 || ivs[len(ivs)-1][0].ts != l.ts:
			ivs = append(ivs, []csvLine{l})
		default:
			ivs[len(ivs)-1] = append(ivs[len(ivs)-1], l)
		}
	}
	// A 1 s run at -I 100: about 10 intervals, more when a loaded machine slows the
	// workload's start or its phases overrun.
	if len(ivs) < 8 || len(ivs) > 30 {
		t.Fatalf("%d interval blocks, want about 10", len(ivs))
	}
	for k, iv := range ivs {
		if len(iv) != len(statEvents) {
			t.Fatalf("interval %d has %d lines, want %d", k, len(iv), len(statEvents))
		}
		for i, l := range iv {
			if l.event != statEvents[i] {
				t.Errorf("interval %d line %d is %s, want %s", k, i, l.event, statEvents[i])
			}
		}
		if k > 0 && iv[0].ts <= ivs[k-1][0].ts {
			t.Errorf("timestamps not increasing: %v then %v", ivs[k-1][0].ts, iv[0].ts)
		}
		// Never early; late only by how long a loaded machine keeps us from running.
		if want := 0.1 * float64(k+1); k < len(ivs)-1 && (iv[0].ts < want-0.001 || iv[0].ts > want+0.25) {
			t.Errorf("interval %d ends at %.3f s, want %.1f s", k, iv[0].ts, want)
		}
	}
	checkEstimates(t, ls)
	// 14 events on 4 counters, kernel-style rotation every few ms: in every full
	// interval and over the run each event counted part of the time only, and its value
	// is inferred, not exact.
	// An interval in which a starved target ran only a few slices may see an event
	// counted throughout or not at all, so per interval this holds of nearly all lines.
	var lines, partial int
	for _, iv := range ivs[:len(ivs)-1] {
		for _, l := range iv {
			lines++
			if l.counted && l.pct < 100 && l.pct > 0 {
				partial++
			}
		}
	}
	if partial < lines*9/10 {
		t.Errorf("%d of %d interval lines show partial running, want nearly all with 4 counters for %d events", partial, lines, len(statEvents))
	}
	if len(sum) != len(statEvents) {
		t.Fatalf("%d summary lines, want %d", len(sum), len(statEvents))
	}
	for _, l := range sum {
		// task-clock is the model's clock: the time the task ran, which every
		// reading's enabled time is, so it is exact though multiplexed.
		if exact := l.event == "task-clock"; !l.counted || l.pct >= 100 || (l.status == "exact") != exact {
			t.Errorf("total of %s: counted %v, running %.2f%%, status %s", l.event, l.counted, l.pct, l.status)
		}
	}
	for _, ev := range []string{"task-clock", "raw_syscalls:sys_enter", "syscalls:sys_enter_getpid"} {
		for _, l := range sum {
			if l.event == ev && !(l.value > 0) {
				t.Errorf("the syscalls workload fires %s, total %v", ev, l.value)
			}
		}
	}
}

func TestStatJSONLines(t *testing.T) {
	bin := statBin(t)
	_, errOut, code := runBin(t, "stat", "--json", "--virtual-counters", "2", "--schedule", "kernel",
		"-e", "page-faults,minor-faults,major-faults,raw_syscalls:sys_enter,syscalls:sys_enter_getpid",
		"--", bin, "workload", "syscalls", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	n := 0
	for line := range strings.Lines(errOut) {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not one JSON object: %v", line, err)
		}
		n++
		for _, k := range []string{"counter-value", "unit", "event", "event-runtime", "pcnt-running", "metric-value", "metric-unit", "lo", "hi", "status", "linux"} {
			if _, ok := m[k]; !ok {
				t.Errorf("line %q lacks %q", line, k)
			}
		}
		v, err := strconv.ParseFloat(m["counter-value"].(string), 64)
		if err != nil {
			t.Fatalf("counter-value %v: %v", m["counter-value"], err)
		}
		lo, hi := m["lo"].(float64), m["hi"].(float64)
		if lo > v+1e-6 || v > hi+1e-6 {
			t.Errorf("%s: %v outside [%v, %v]", m["event"], v, lo, hi)
		}
		if p := m["pcnt-running"].(float64); p >= 100 {
			t.Errorf("%s: 5 events on 2 counters but running %.2f%%", m["event"], p)
		}
	}
	if n != 5 {
		t.Errorf("%d JSON lines, want 5", n)
	}
}

// Without --virtual-counters nothing is multiplexed here (software events never are):
// every value is exact, its interval has no width, and it equals the kernel's.
func TestStatExactWithoutVirtualCounters(t *testing.T) {
	bin := statBin(t)
	evs := "task-clock,page-faults,minor-faults,major-faults,sched:sched_switch"
	_, errOut, code := runBin(t, "stat", "-x,", "-e", evs, "--", bin, "workload", "memory", "--duration", "300ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	ls := parseBayesCSV(t, errOut, false)
	if len(ls) != 5 {
		t.Fatalf("%d lines, want 5:\n%s", len(ls), errOut)
	}
	got := map[string]float64{}
	for _, l := range ls {
		if l.status != "exact" || l.lo != l.value || l.hi != l.value || l.lnx != l.value || l.pct != 100 {
			t.Errorf("%s: status %s, value %v [%v, %v], linux %v, running %.2f%%: want exact", l.event, l.status, l.value, l.lo, l.hi, l.lnx, l.pct)
		}
		got[l.event] = l.value
	}
	// The memory workload faults pages in by the thousand, all minor.
	if got["page-faults"] < 1000 || got["minor-faults"] < 1000 {
		t.Errorf("page-faults %v, minor-faults %v: the memory workload faults thousands of pages", got["page-faults"], got["minor-faults"])
	}
	// The counts are exact, read at the same instants: page-faults = minor + major up to
	// the faults that land between two reads of one step.
	if d := got["page-faults"] - got["minor-faults"] - got["major-faults"]; d < -3 || d > 3 {
		t.Errorf("page-faults %v != minor %v + major %v", got["page-faults"], got["minor-faults"], got["major-faults"])
	}

	// The normal layout: perf's header, one line per event with ± 0.00%, perf's footer.
	_, std, code := runBin(t, "stat", "-e", evs, "--", bin, "workload", "memory", "--duration", "100ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, std)
	}
	if !strings.Contains(std, " Performance counter stats for '"+bin+" workload memory --duration 100ms':\n\n") {
		t.Errorf("no perf header in\n%s", std)
	}
	for _, ev := range strings.Split(evs, ",") {
		re := regexp.MustCompile(`(?m)^ +[0-9.]+ (msec|    ) ` + regexp.QuoteMeta(ev) + ` .*\( ±  0\.00% \)$`)
		if !re.MatchString(std) {
			t.Errorf("no exact line for %s in\n%s", ev, std)
		}
	}
	for _, foot := range []string{"seconds time elapsed", "seconds user", "seconds sys"} {
		if !strings.Contains(std, foot) {
			t.Errorf("footer lacks %q", foot)
		}
	}
}

func TestStatUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"stat", "-e", "page-fault", "--", "true"}, "did you mean page-faults"},
		{[]string{"stat", "-e", "task-clock"}, "no command given"},
		{[]string{"stat", "--no-such-flag", "--", "true"}, "no-such-flag"},
		{[]string{"stat", "--schedule", "fifo", "--", "true"}, "want kernel or bayesperf"},
		{[]string{"stat", "-e", "minor-faults,{minor-faults,major-faults}", "--", "true"}, "listed twice"},
		{[]string{"stat", "-x,", "--json", "--", "true"}, "exclude each other"},
		{[]string{"attach", "-e", "task-clock"}, "no process given"},
		{[]string{"attach", "-p", "1", "-e", "sched:sched_swich"}, "did you mean sched:sched_switch"},
		{[]string{"attach", "-p", "2147483646", "-e", "task-clock"}, "no such process"},
	} {
		out, errOut, code := runBin(t, tc.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)", tc.args, code)
		}
		if out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: want one line on stderr mentioning %q, got %q (stdout %q)", tc.args, tc.want, errOut, out)
		}
	}
	for _, c := range []string{"stat", "attach"} {
		out, _, code := runBin(t, c, "--help")
		if code != 0 || !strings.Contains(out, "EXAMPLES") || !strings.Contains(out, "--virtual-counters") {
			t.Errorf("%s --help: exit %d, %d bytes", c, code, len(out))
		}
	}
	// The command's exit status is stat's, as perf stat's.
	if _, _, code := runBin(t, "stat", "-e", "task-clock", "--", "sh", "-c", "exit 3"); code != 3 {
		t.Errorf("stat of a command exiting 3: exit %d", code)
	}
}

// attach to a running workload, SIGINT after a few intervals: interval lines while it
// runs, then the totals as perf stat -p prints them, exit 0, the workload untouched.
func TestAttachSIGINT(t *testing.T) {
	bin := statBin(t)
	wl := exec.Command(bin, "workload", "syscalls", "--duration", "30s")
	if err := wl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		wl.Process.Kill()
		wl.Wait()
	}()
	time.Sleep(200 * time.Millisecond) // let it start its phases
	at := exec.Command(bin, "attach", "-p", strconv.Itoa(wl.Process.Pid), "-I", "100", "-x,", "--summary",
		"--virtual-counters", "3", "-e", "task-clock,page-faults,raw_syscalls:sys_enter,syscalls:sys_enter_getpid,sched:sched_switch")
	pr, err := at.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := at.Start(); err != nil {
		t.Fatal(err)
	}
	// SIGINT once 4 intervals were printed (attaching may take a while on a loaded
	// machine), or after 10 s.
	var se bytes.Buffer
	copied, four := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(pr)
		n := 0
		for sc.Scan() {
			se.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), ",task-clock,") {
				if n++; n == 4 {
					close(four)
				}
			}
		}
	}()
	select {
	case <-four:
	case <-time.After(10 * time.Second):
	}
	if err := at.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		<-copied
		done <- at.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("attach after SIGINT: %v\n%s", err, se.String())
		}
	case <-time.After(10 * time.Second):
		at.Process.Kill()
		t.Fatalf("attach did not stop within 10 s of SIGINT\n%s", se.String())
	}
	if err := syscall.Kill(wl.Process.Pid, 0); err != nil {
		t.Errorf("the workload is gone after attach stopped: %v", err)
	}
	ls := parseBayesCSV(t, se.String(), true)
	var ivs, sum int
	var clock float64
	for _, l := range ls {
		if l.summary {
			sum++
			if l.event == "task-clock" {
				clock = l.value
			}
		} else if l.event == "task-clock" {
			ivs++
		}
	}
	if ivs < 4 {
		t.Errorf("%d intervals printed before SIGINT, want 4", ivs)
	}
	if sum != 5 {
		t.Errorf("%d total lines, want 5", sum)
	}
	// The workload runs flat out: a good part of the >= 0.4 s attached is its CPU time
	// (msec), even on a loaded machine.
	if clock < 30 {
		t.Errorf("task-clock total %v msec over >= 4 intervals of a busy workload", clock)
	}
	checkEstimates(t, ls)

	// Without -I, the totals alone in perf's layout for a pid.
	_, std, code := runBin(t, "attach", "-p", strconv.Itoa(wl.Process.Pid), "--duration", "0.3", "-e", "task-clock,page-faults")
	if code != 0 {
		t.Fatalf("attach --duration: exit %d\n%s", code, std)
	}
	if !strings.Contains(std, fmt.Sprintf(" Performance counter stats for process id '%d':", wl.Process.Pid)) ||
		!strings.Contains(std, "seconds time elapsed") || strings.Contains(std, "seconds user") {
		t.Errorf("attach totals not in perf stat -p's layout:\n%s", std)
	}
}

// Without --virtual-counters bayesperf stat counts what perf stat counts: the
// deterministic test/c/workload faults a fixed number of pages, and both tools see the
// same number up to the few faults around the exec, which perf's enable_on_exec and our
// stop after the exec split differently (the drop-in tests' tolerance: 3 + 1%).
func TestStatMatchesPerfStat(t *testing.T) {
	wl := dropinBin(t, "workload")
	evs := "page-faults,minor-faults,major-faults"
	native := nativeStat(t, "-e", evs, wl, "5000", "5", "0")
	_, errOut, code := runBin(t, "stat", "-x,", "-e", evs, "--", wl, "5000", "5", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	ls := parseBayesCSV(t, errOut, false)
	if len(ls) != 3 {
		t.Fatalf("%d lines\n%s", len(ls), errOut)
	}
	for _, l := range ls {
		nl, ok := native[l.event]
		if !ok {
			t.Fatalf("perf stat printed no %s", l.event)
		}
		w := nl.num(t)
		if d := l.value - w; d > 3+0.01*w || d < -3-0.01*w {
			t.Errorf("%s: bayesperf stat %v, perf stat %v", l.event, l.value, w)
		}
		if l.event == "minor-faults" && l.value < 5000 {
			t.Errorf("the workload faults 5000 fresh pages, minor-faults %v", l.value)
		}
	}
}

// Under multiplexing, bayesperf's totals are closer to the truth than the kernel's
// scaling. The deterministic C workload faults exactly PAGES + SPIN_MS pages plus its
// startup's, so perf stat of an unmultiplexed run is the truth; bayesperf stat runs it
// with 6 events on 2 virtual counters. Measured on the 2-core VM (26 runs, 800 ms
// spin): page-faults total error 0-8% for bayesperf, 0-50% for Linux's scaling (median
// 2% and 11%), the truth inside bayesperf's 95% interval in 16 of 18 logged runs.
// Asserted: summed over 9 runs (one lucky Linux run can beat it), bayesperf's error is
// below Linux's. Five runs were too few: on 2026-11-22 CI saw Linux's five sum to 380
// (its errors vary 0-50% a run) against bayesperf's 734, where 12 runs by hand gave
// bayesperf about 1000 and Linux several thousand.
func TestStatVirtualTotalsBeatLinux(t *testing.T) {
	wl := dropinBin(t, "workload")
	args := []string{wl, "2000", "20", "0", "600"}
	truth := nativeStat(t, append([]string{"-e", "page-faults"}, args...)...)["page-faults"].num(t)
	if truth < 2600 {
		t.Fatalf("perf stat page-faults %v, want 2600 and more", truth)
	}
	var bpErr, lxErr float64
	inside := 0
	const runs = 9
	for range runs {
		_, errOut, code := runBin(t, append([]string{"stat", "-x,", "--virtual-counters", "2",
			"-e", "page-faults,minor-faults,major-faults,context-switches,sched:sched_switch,raw_syscalls:sys_enter", "--"}, args...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		for _, l := range parseBayesCSV(t, errOut, false) {
			if l.event != "page-faults" {
				continue
			}
			if l.pct >= 100 {
				t.Fatalf("page-faults ran %.2f%% of the time on 2 counters for 6 events", l.pct)
			}
			bpErr += statAbs(l.value - truth)
			lxErr += statAbs(l.lnx - truth)
			if l.lo <= truth && truth <= l.hi {
				inside++
			}
			t.Logf("page-faults truth %v: bayesperf %v [%v, %v], linux %v (running %.2f%%)", truth, l.value, l.lo, l.hi, l.lnx, l.pct)
		}
	}
	t.Logf("summed absolute error over %d runs: bayesperf %.0f, linux %.0f; truth inside the interval %d/%d", runs, bpErr, lxErr, inside, runs)
	if bpErr >= lxErr {
		t.Errorf("bayesperf's page-faults totals are off by %.0f in all, Linux scaling's by %.0f", bpErr, lxErr)
	}
}

func statAbs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
