package test

import (
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// repeatReport is the part of --report these tests read.
type repeatReport struct {
	Clients []struct {
		Client int           `json:"client"`
		Pid    int           `json:"pid"`
		CPU    int           `json:"cpu"`
		Slices int           `json:"slices"`
		Totals []reportEvent `json:"totals"`
	} `json:"clients"`
}

// readRepeat reads the --stats truth and the --report of a run.
func readRepeat(t *testing.T, sf, rf string) (map[string]uint64, repeatReport) {
	t.Helper()
	var rep repeatReport
	readJSON(t, rf, &rep)
	return readStats(t, sf).Truth, rep
}

// TestDropinRepeatTruth: `perf stat -r 3` under --virtual-counters 2 with --stats and
// --report: a new child per repetition, each with its own virtual PMU, so the report has
// three targets with every event and the truth covers the three runs: its page faults
// are three times the native average of `perf stat -r 3` of the same workload, within
// 20%. The bound tells three runs from two (a third short); the faults vary by about 1%
// from run to run on a quiet machine, but were 10.4% off under the load of a CI run.
// Before, the sidecar built each repetition's PMU on the first repetition's child, which
// was gone: the report and the truth covered the first run only (truth 620 page faults
// for 3 runs of about 630), and the other runs were not multiplexed at all. Each child
// has one entry and one line of -v saying it is gone: perf registers its events one by
// one, each a rebuild, and before, each rebuild logged "gone ... final totals". Root
// (tracepoint-free, but the virtual PMU opens copies on the child). About 5 s.
func TestDropinRepeatTruth(t *testing.T) {
	needRoot(t, "the virtual PMU opens copies of the events on perf's children")
	tmp := t.TempDir()
	sf, rf := filepath.Join(tmp, "stats.json"), filepath.Join(tmp, "report.json")
	bp := dropinBin(t, "bayesperf")
	work := []string{bp, "workload", "syscalls", "--duration", "300ms"}
	perfArgs := append([]string{"perf", "stat", "-r", "3", "-x,", "-e", "page-faults,minor-faults,context-switches", "--"}, work...)
	native := run(t, nil, perfArgs...)
	if native.status != 0 {
		t.Fatalf("native perf stat -r 3: status %d\n%s", native.status, native.stderr)
	}
	avg := byEvent(parseStatCSV(t, native.stderr, false))["page-faults"].num(t)
	r := run(t, patientShim, append([]string{bp, "run", "-v", "--virtual-counters", "2", "--stats", sf, "--report", rf, "--"}, perfArgs...)...)
	if r.status != 0 {
		t.Fatalf("bayesperf run: status %d\n%s", r.status, r.stderr)
	}
	truth, rep := readRepeat(t, sf, rf)
	pids := map[int]bool{}
	for _, c := range rep.Clients {
		if c.Slices > 0 && len(c.Totals) == 3 {
			pids[c.Pid] = true
		}
	}
	if len(pids) != 3 || len(rep.Clients) != 3 {
		t.Errorf("report: %d entries, %d targets with slices and all 3 events; want 3 of each (one per repetition): %+v", len(rep.Clients), len(pids), rep.Clients)
	}
	gone := goneTargets(r.stderr)
	for _, c := range rep.Clients {
		if n := gone[targetKey(c.Client, c.Pid, c.CPU)]; n != 1 {
			t.Errorf("client %d target %d: %d lines of the log say it is gone, want 1", c.Client, c.Pid, n)
		}
	}
	if len(gone) != len(rep.Clients) {
		t.Errorf("the log says %d targets are gone, the report has %d: %v", len(gone), len(rep.Clients), gone)
	}
	got := float64(truth["page-faults"])
	t.Logf("truth page-faults %v over 3 runs; native perf stat -r 3 average %v", got, avg)
	if math.Abs(got-3*avg) > 0.2*3*avg {
		t.Errorf("truth page-faults %v, want 3 x the native average %v within 20%%", got, avg)
	}
}

// TestDropinPerThreadTruth: `perf stat --per-thread -p PID` of a multi-threaded program
// (bayesperf workload sleep: threads that wake each other) under --virtual-counters 2:
// every thread perf prints is a target of the report, and for each the report's truth of
// task-clock lies between what perf printed for it (the truth copies start when the
// thread's events are registered, before perf enables its own, and end after perf's
// last read) and the thread's whole time on a CPU (/proc/PID/task/TID/schedstat, read
// after the run) plus that of the threads started while perf counted, which inherited
// events count in their creator. Before, only the first thread's events were virtualised (3 of 18
// registered events) and the truth was that thread's alone. Root. About 4 s.
func TestDropinPerThreadTruth(t *testing.T) {
	needRoot(t, "the virtual PMU opens copies of the events on another process")
	tmp := t.TempDir()
	sf, rf := filepath.Join(tmp, "stats.json"), filepath.Join(tmp, "report.json")
	bp := dropinBin(t, "bayesperf")
	w := exec.Command(bp, "workload", "sleep", "--duration", "20s")
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { w.Process.Kill(); w.Wait() }()
	// The workload's threads are up once it has more than one.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if ts, _ := os.ReadDir("/proc/" + strconv.Itoa(w.Process.Pid) + "/task"); len(ts) > 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the workload started no threads")
		}
	}
	r := run(t, patientShim, bp, "run", "--virtual-counters", "2", "--stats", sf, "--report", rf, "--",
		"perf", "stat", "--per-thread", "-p", strconv.Itoa(w.Process.Pid), "-x,", "-e", "context-switches,task-clock", "--", "sleep", "2")
	if r.status != 0 {
		t.Fatalf("bayesperf run: status %d\n%s", r.status, r.stderr)
	}
	// perf --per-thread -x, prints "comm-tid,value,unit,event,...".
	perfClock := map[int]float64{} // per thread: task-clock, ms
	for _, l := range strings.Split(r.stderr, "\n") {
		f := strings.Split(l, ",")
		if len(f) < 4 {
			continue
		}
		i := strings.LastIndex(f[0], "-")
		tid, err := strconv.Atoi(f[0][i+1:])
		if i < 0 || err != nil {
			continue
		}
		v, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			v = 0 // <not counted>
		}
		if f[3] == "task-clock" {
			perfClock[tid] = v
		}
	}
	_, rep := readRepeat(t, sf, rf)
	truth := map[int]float64{} // per thread: task-clock truth in ms, over its report
	entries := map[[2]int]int{}
	for _, c := range rep.Clients {
		if entries[[2]int{c.Client, c.Pid}]++; entries[[2]int{c.Client, c.Pid}] == 2 {
			t.Errorf("report: client %d thread %d has more than one entry", c.Client, c.Pid)
		}
		for _, e := range c.Totals {
			if e.Event == "task-clock" && e.Truth != nil {
				truth[c.Pid] += float64(*e.Truth) / 1e6
			}
		}
	}
	if len(perfClock) < 2 {
		t.Fatalf("perf printed %d threads, want several:\n%s", len(perfClock), r.stderr)
	}
	// Inherited events count, in the thread that created it, a thread the program
	// starts while perf counts (perf lists only the threads it found at its start): a
	// thread's value may then exceed its own time on a CPU by the unlisted threads'.
	// Natively, 2 of about 45 runs of this workload started a thread in the 2 s and
	// perf printed 156.33 ms for a thread that had run 47.94 ms.
	born := 0.0
	for tid := range threadIDs(t, w.Process.Pid) {
		if _, listed := perfClock[tid]; !listed {
			born += cpuMs(t, w.Process.Pid, tid)
		}
	}
	// perf -x, prints task-clock in ms with two decimals: a value it printed is known to
	// half a hundredth of a ms, which matters for a thread that ran a few tens of
	// microseconds (CI once: perf printed 0.04 ms, the truth, 0.04 ms to two decimals,
	// lay below 0.99 of 0.04).
	const printed = 0.005
	strict := 0 // threads whose truth lies in [0.99 perf's, its own and new threads' time on a CPU]
	for tid, v := range perfClock {
		ran := cpuMs(t, w.Process.Pid, tid)
		got, ok := truth[tid]
		t.Logf("thread %d: perf printed %.2f ms, truth %.4f ms, on a CPU %.2f ms in all (threads started during the run: %.2f ms)", tid, v, got, ran, born)
		switch {
		case !ok:
			t.Errorf("thread %d: no truth of task-clock reported", tid)
		case got >= 0.99*v-printed && got <= ran+born:
			strict++
		case math.Abs(got-v) <= 0.02*v:
			// Not understood (issue 15), at most one thread, rarely: the truth 1.5%
			// below perf's value (41.02 against 41.63 ms, on a CPU 65.50 ms).
			t.Logf("thread %d: truth %.2f ms within 2%% of perf's %.2f ms but not in [0.99 perf's, %.2f ms]", tid, got, v, ran+born)
		default:
			t.Errorf("thread %d: truth of task-clock %.2f ms, want between perf's %.2f ms and the %.2f ms on a CPU of the thread and of threads started during the run", tid, got, v, ran+born)
		}
	}
	if strict < len(perfClock)-1 {
		t.Errorf("%d of %d threads' truths within [0.99 perf's value, the thread's and new threads' time on a CPU]; want all but at most one", strict, len(perfClock))
	}
}

// threadIDs lists the threads of process pid.
func threadIDs(t *testing.T, pid int) map[int]bool {
	t.Helper()
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			out[tid] = true
		}
	}
	return out
}

// cpuMs is thread tid's time on a CPU so far, in ms (schedstat's first field).
func cpuMs(t *testing.T, pid, tid int) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid) + "/schedstat")
	if err != nil {
		t.Fatalf("thread %d: %v", tid, err)
	}
	ns, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatalf("thread %d: schedstat %q: %v", tid, b, err)
	}
	return ns / 1e6
}

// TestDropinPerCPUReport: `perf stat -a` (one event per CPU each) under
// --virtual-counters 2 --correct none --schedule kernel (the round robin: every event
// counts 2/3 of the time) with --stats and --report. Before, the virtual
// PMU left per-CPU events alone: perf printed them counted 100% of the time, the report
// had no entry and the --stats truth none. Now each CPU is a virtual PMU as a real
// CPU's is: perf prints every event multiplexed (3 events on 2 counters), the report
// has one entry per online CPU with all 3 events and some slices, -v says once that
// each is done, and the truth of page faults summed over the CPUs, which is the
// --stats truth, is at least the faults of the workload perf runs, counted natively by
// perf stat beside it (the CPUs count the workload and whatever else runs). Root. A few
// seconds.
func TestDropinPerCPUReport(t *testing.T) {
	needRoot(t, "the virtual PMU opens per-CPU copies of the events")
	tmp := t.TempDir()
	sf, rf := filepath.Join(tmp, "stats.json"), filepath.Join(tmp, "report.json")
	bp := dropinBin(t, "bayesperf")
	work := []string{bp, "workload", "syscalls", "--duration", "300ms"}
	native := nativeStat(t, append([]string{"-e", "page-faults", "--"}, work...)...)["page-faults"].num(t)
	r := run(t, patientShim, append([]string{bp, "run", "-v", "--virtual-counters", "2", "--correct", "none", "--schedule", "kernel", "--stats", sf, "--report", rf, "--",
		"perf", "stat", "-a", "-x,", "-e", "page-faults,context-switches,minor-faults", "--"}, work...)...)
	if r.status != 0 {
		t.Fatalf("bayesperf run: status %d\n%s", r.status, r.stderr)
	}
	// perf -x, prints "value,unit,event,run time,percent,,": the share of time counted.
	for _, l := range strings.Split(r.stderr, "\n") {
		f := strings.Split(l, ",")
		if len(f) < 5 || strings.HasPrefix(l, "bayesperf") {
			continue
		}
		if pc, err := strconv.ParseFloat(f[4], 64); err != nil || pc >= 100 || pc <= 0 {
			t.Errorf("perf printed %q: want the event counted part of the time (multiplexed)", l)
		}
	}
	truth, rep := readRepeat(t, sf, rf)
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		t.Fatal(err)
	}
	online := 0
	for _, rg := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, _ := strings.Cut(rg, "-")
		a, _ := strconv.Atoi(lo)
		z := a
		if hi != "" {
			z, _ = strconv.Atoi(hi)
		}
		online += z - a + 1
	}
	gone := goneTargets(r.stderr)
	cpus := map[int]bool{}
	var faults uint64
	for _, c := range rep.Clients {
		k := targetKey(c.Client, c.Pid, c.CPU)
		if c.Pid != -1 || c.CPU < 0 || cpus[c.CPU] || len(c.Totals) != 3 || c.Slices == 0 || gone[k] != 1 {
			t.Errorf("report entry %s: %d events over %d slices, %d lines say it is done; want one entry per CPU, 3 events, some slices, 1 line", k, len(c.Totals), c.Slices, gone[k])
		}
		cpus[c.CPU] = true
		for _, e := range c.Totals {
			if e.Event == "page-faults" && e.Truth != nil {
				faults += *e.Truth
			}
		}
	}
	if len(cpus) != online {
		t.Errorf("report: %d CPUs, want the %d online", len(cpus), online)
	}
	t.Logf("truth of page faults over %d CPUs %d (--stats %d); the workload's own natively %.0f", len(cpus), faults, truth["page-faults"], native)
	if faults != truth["page-faults"] || float64(faults) < native {
		t.Errorf("truth of page faults %d over the CPUs, --stats %d: want them equal and at least the workload's %.0f", faults, truth["page-faults"], native)
	}
}
