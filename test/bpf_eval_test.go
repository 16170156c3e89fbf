package test

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Requirements: root (BPF, tracepoints). CI runs as root, so nothing here skips.

// bpfEvalCommands is how many short processes the shell loop of TestEvalBPFMatchesRead
// runs; each lives about a millisecond, which is what the BPF collector used to miss.
const bpfEvalCommands = 100

// TestEvalBPFMatchesRead runs `bayesperf eval` on the same multi-process workload (a shell
// loop of short commands) with each collector and compares the truth totals of the two
// runs: the read collector's truth comes from inherited events (counting every child from
// its fork), the BPF collector's from per-task events it opens for each new process while
// the process is held stopped.
//
// Tolerances: the counts of this workload that do not depend on timing (execve, openat)
// must be equal. Page faults may differ by at most one per command in BPF's disfavour (the
// kernel writes the child's tid into its memory before it first runs, which inherited
// events count and the held child's own events, opened after that, cannot) plus 0.5% either
// way for run-to-run variation (measured 0.2% between read runs). Without holding the new
// processes, the BPF collector saw 63-79 of the 100 execve and 13-30% fewer page faults.
// Context switches and task-clock depend on the collector's own activity and are only
// logged.
//
// The estimates of both runs are logged, not compared: one pair of runs varies too much
// (bayesperf's wape on this workload ranged 0.075 to 0.38 over eight read runs) for a single
// comparison to say which collector is better.
func TestEvalBPFMatchesRead(t *testing.T) {
	events := []string{"syscalls:sys_enter_execve", "syscalls:sys_enter_openat", "page-faults", "context-switches", "task-clock", "syscalls:sys_enter_mmap"}
	script := fmt.Sprintf("i=0; while [ $i -lt %d ]; do cat /proc/self/stat >/dev/null; i=$((i+1)); done", bpfEvalCommands)
	dir := t.TempDir()
	type run struct {
		totals map[string]float64
		wape   map[string]float64
	}
	runs := map[string]run{}
	for _, coll := range []string{"read", "bpf"} {
		trace := filepath.Join(dir, coll+".csv")
		out, stderr, code := runBin(t, "eval", "-e", strings.Join(events, ","), "--counters", "3", "--collector", coll,
			"--json", "--save-trace", trace, "--", "/bin/sh", "-c", script)
		if code != 0 {
			t.Fatalf("eval --collector %s: exit %d\n%s", coll, code, stderr)
		}
		var res struct {
			Estimators map[string]struct {
				WAPE float64 `json:"wape"`
			} `json:"estimators"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("eval --collector %s: parse JSON: %v\n%s", coll, err, out)
		}
		r := run{totals: traceTotals(t, trace), wape: map[string]float64{}}
		for name, e := range res.Estimators {
			r.wape[name] = e.WAPE
		}
		runs[coll] = r
		t.Logf("%s: truth totals %v; wape %v", coll, r.totals, r.wape)
	}
	rd, bp := runs["read"].totals, runs["bpf"].totals
	if rd["syscalls:sys_enter_execve"] != bpfEvalCommands {
		t.Fatalf("read collector saw %v execve, want %d: the reference itself is wrong", rd["syscalls:sys_enter_execve"], bpfEvalCommands)
	}
	for _, ev := range []string{"syscalls:sys_enter_execve", "syscalls:sys_enter_openat"} {
		if bp[ev] != rd[ev] {
			t.Errorf("%s: bpf %v, read %v: want equal", ev, bp[ev], rd[ev])
		}
	}
	pf, pfRead := bp["page-faults"], rd["page-faults"]
	if lo, hi := pfRead*0.995-bpfEvalCommands, pfRead*1.005; pf < lo || pf > hi {
		t.Errorf("page-faults: bpf %v, read %v: want within [%.0f, %.0f]", pf, pfRead, lo, hi)
	}
}

// bpfEstimateEvents are the events of `make demo` (DEMO_EVENTS in mk/eval.mk): software
// events and tracepoints of every kind the built-in workloads fire.
var bpfEstimateEvents = []string{"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches",
	"cpu-migrations", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "syscalls:sys_enter_read",
	"syscalls:sys_enter_write", "syscalls:sys_enter_mmap", "syscalls:sys_enter_munmap", "syscalls:sys_enter_getpid",
	"syscalls:sys_enter_getppid", "syscalls:sys_enter_openat", "syscalls:sys_enter_close", "sched:sched_switch",
	"sched:sched_wakeup", "sched:sched_process_fork", "sched:sched_process_exec", "sched:sched_process_exit",
	"syscalls:sys_enter_newfstat", "syscalls:sys_enter_lseek", "syscalls:sys_enter_getuid"}

// bpfEstimatePairs is how many pairs of runs TestEvalBPFEstimatesAsGoodAsRead pools.
const bpfEstimatePairs = 5

// TestEvalBPFEstimatesAsGoodAsRead runs `bayesperf eval` on the mixed workload (memory,
// syscall, sleep, fork and compute phases) alternately with each collector and compares,
// pooled over the pairs, the median over runs of bayesperf's median WAPE over events, and
// of the number of slices. One pair says little (bayesperf's median WAPE on this workload
// ranged 0.19-0.47 over 15 read runs), so runs are pooled and medians compared.
//
// Measured before the BPF collector ended a slice at every tick round in which the target
// ran and switched events at its snapshots (SwitchAtSnapshots): medians over 4 pairs of
// 410 slices against 824 and a median WAPE of 0.526 against 0.400; after, over 10 pairs,
// 900 slices against 832, 0.232 against 0.299. Since then the read(2) backend's views are
// exact too (internal/vpmu derives them from the always-on counters), so both collectors
// give the model the same exact observations and differ only in where slices end: the
// bpf/read ratio of the median WAPEs was 0.67-0.90 in four runs of this test, 1.02 in a
// clean-clone make test, 1.07 and 1.14 in a helper's runs. On the Xeon VM of 2026-11-26
// the model is more accurate (median WAPEs 0.06-0.12) and the ratio was 1.33-1.75 in seven
// runs, at this commit and at 7254b96 alike: through bpf the model does somewhat worse
// here, never by 2x (TestDropinCollectorEstimates bounds the corrected totals the same
// way). The assertions say "as good, within that spread": BPF's median WAPE at most 2 times
// read's, and at least 0.8 as many slices.
func TestEvalBPFEstimatesAsGoodAsRead(t *testing.T) {
	wl := []string{statBin(t), "workload", "mixed", "--duration", "2s"}
	type stats struct{ wape, slices []float64 }
	got := map[string]*stats{"read": {}, "bpf": {}}
	for range bpfEstimatePairs {
		for _, coll := range []string{"read", "bpf"} {
			args := append([]string{"eval", "-e", strings.Join(bpfEstimateEvents, ","), "--counters", "4",
				"--fixed", "task-clock", "--collector", coll, "--json", "--"}, wl...)
			out, stderr, code := runBin(t, args...)
			if code != 0 {
				t.Fatalf("eval --collector %s: exit %d\n%s", coll, code, stderr)
			}
			var res struct {
				Slices     int `json:"slices"`
				Estimators map[string]struct {
					MedianWAPE float64 `json:"median_wape"`
				} `json:"estimators"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("eval --collector %s: parse JSON: %v\n%s", coll, err, out)
			}
			bp, ok := res.Estimators["bayesperf"]
			if !ok {
				t.Fatalf("eval --collector %s: no bayesperf estimator in %s", coll, out)
			}
			got[coll].wape = append(got[coll].wape, bp.MedianWAPE)
			got[coll].slices = append(got[coll].slices, float64(res.Slices))
		}
	}
	med := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		if n := len(y); n%2 == 0 {
			return (y[n/2-1] + y[n/2]) / 2
		}
		return y[len(y)/2]
	}
	rd, bp := got["read"], got["bpf"]
	t.Logf("read: median wape %v, slices %v", rd.wape, rd.slices)
	t.Logf("bpf:  median wape %v, slices %v", bp.wape, bp.slices)
	t.Logf("medians: wape bpf %.3f read %.3f, slices bpf %.0f read %.0f", med(bp.wape), med(rd.wape), med(bp.slices), med(rd.slices))
	if med(bp.wape) > 2*med(rd.wape) {
		t.Errorf("bayesperf's median WAPE, median over %d runs: bpf %.3f, read %.3f: want bpf at most 2 times read", bpfEstimatePairs, med(bp.wape), med(rd.wape))
	}
	if med(bp.slices) < 0.8*med(rd.slices) {
		t.Errorf("slices, median over %d runs: bpf %.0f, read %.0f: want at least 0.8 as many with bpf", bpfEstimatePairs, med(bp.slices), med(rd.slices))
	}
}

// traceTotals sums every event column of a trace written by eval --save-trace.
func traceTotals(t *testing.T, path string) map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("read trace %s: %v", path, err)
	}
	if len(rows) < 2 {
		t.Fatalf("trace %s has no slices", path)
	}
	totals := map[string]float64{}
	for _, row := range rows[1:] {
		for i, name := range rows[0] {
			switch name {
			case "interval", "wall_ns", "time_ns":
				continue
			}
			v, err := strconv.ParseFloat(row[i], 64)
			if err != nil || math.IsNaN(v) {
				t.Fatalf("trace %s: column %s: bad value %q", path, name, row[i])
			}
			totals[name] += v
		}
	}
	return totals
}
