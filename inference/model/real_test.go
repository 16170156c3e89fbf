package model

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
)

// realFixed are the events that sit on fixed counters in the replays, the way cycles
// and instructions do on a real CPU: always-on, busy events (Ir is callgrind's
// instructions).
var realFixed = []string{"task-clock", "raw_syscalls:sys_enter", "Ir"}

// traceOf reads a trace and the relations that go with it: the built-ins, plus the
// relation file next to callgrind traces. Every row is replayed as one slice of
// duration 1, as the traces' README (../replay/testdata/README.md) prescribes: the
// wall-clock column is metadata, not a slice weight (per-task counters advance only
// while the task runs, and perf's timer was sometimes late: one find row spans 1.87 s
// against 10 ms nominal, which weighted by wall time turns into a 175-fold burst of
// every uncounted event). The time column is still named when reading, so that it is
// not taken for an event.
func traceOf(t *testing.T, path string) (*replay.Trace, []relation.Relation) {
	t.Helper()
	var tr *replay.Trace
	var err error
	for _, col := range []string{"wall_ns", "interval_ns", ""} {
		tr, err = replay.ReadFile(path, replay.ReadOptions{TimeColumn: col})
		if err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	for i := range tr.Durations {
		tr.Durations[i] = 1
	}
	rels := relation.Builtins()
	if strings.HasPrefix(filepath.Base(path), "cg-") {
		rels = append(rels, callgrindRelations(t, filepath.Dir(path))...)
	}
	return tr, relation.Bind(rels, tr.Events)
}

const realCounters = 4 // programmable counters, as on many x86 cores with SMT

// realScore replays one trace to linux, linear, bayesperf on the kernel's round robin
// (bayesperf-rr) and bayesperf on its own overlap schedule, with the replay package's
// scoring, and returns the result.
func realScore(t *testing.T, path string) *replay.Result {
	t.Helper()
	tr, rels := traceOf(t, path)
	var fixed []string
	for _, f := range realFixed {
		if tr.EventIndex(f) >= 0 {
			fixed = append(fixed, f)
		}
	}
	kern, own := traceSchedules(t, tr, rels, fixed)
	rr := mustNew(t, tr.Events, rels, Options{})
	bp := mustNew(t, tr.Events, rels, Options{})
	cs := replay.Baselines(len(tr.Events), kern)
	cs = append(cs, replay.Contender{Estimator: named{rr, "bayesperf-rr"}, Schedule: kern},
		replay.Contender{Estimator: bp, Schedule: own})
	res, err := replay.Score(tr, cs, replay.Options{Counters: realCounters})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// named renames an estimator, so that two configurations of the model can be scored
// side by side.
type named struct {
	*Model
	name string
}

func (n named) Name() string { return n.name }

// TestRealTraces prints, per real-program trace, the brief's figures for linux, linear,
// bayesperf on the kernel's round robin and bayesperf on its own schedule.
//
//	go test -run TestRealTraces -v ./inference/model/
func TestRealTraces(t *testing.T) {
	files, _ := filepath.Glob("../replay/testdata/*.csv")
	mine, _ := filepath.Glob("testdata/*.csv")
	if len(files)+len(mine) == 0 {
		t.Fatal("no traces: run make traces / make model-traces")
	}
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-10s %-13s %9s %9s %11s %10s\n", "trace", "estimator", "reduction", "meanWAPE", "medianWAPE", "coverage95")
	lg := map[string]float64{}
	all := append(files, mine...)
	strays := 0                      // traces whose bayesperf coverage95 is outside [0.85, 0.99]
	pooled := map[string][]float64{} // WAPE of every (trace, event) pair with a truth
	for _, f := range all {
		res := realScore(t, f)
		name := strings.TrimSuffix(filepath.Base(f), ".csv")
		for _, ev := range res.PerEvent {
			if ev.Metrics["linux"].Defined {
				for _, est := range []string{"linux", "bayesperf"} {
					pooled[est] = append(pooled[est], ev.Metrics[est].WAPE)
				}
			}
		}
		for _, est := range []string{"linux", "linear", "bayesperf-rr", "bayesperf"} {
			s := res.Estimators[est]
			cov := "-"
			if s.Coverage95 != nil {
				cov = fmt.Sprintf("%.3f", *s.Coverage95)
				if est == "bayesperf" && (*s.Coverage95 < 0.85 || *s.Coverage95 > 0.99) {
					strays++
				}
			}
			red := res.ErrorReduction[est]
			if est == "linux" {
				red = 1 // the baseline of the reductions
			}
			lg[est] += math.Log(red)
			fmt.Fprintf(&report, "%-10s %-13s %8.2fx %9.3f %11.3f %10s\n", name, est,
				red, s.WAPE, s.MedianWAPE, cov)
		}
	}
	gm := map[string]float64{}
	for _, est := range []string{"linear", "bayesperf-rr", "bayesperf"} {
		gm[est] = math.Exp(lg[est] / float64(len(all)))
		fmt.Fprintf(&report, "geometric mean over %d traces of the error reduction, %s: %.2fx\n", len(all), est, gm[est])
	}
	medLinux, medBP := metrics.Median(pooled["linux"]), metrics.Median(pooled["bayesperf"])
	fmt.Fprintf(&report, "median WAPE over all %d (trace, event) pairs: linux %.3f, bayesperf %.3f (%.2f of linux's)\n",
		len(pooled["linux"]), medLinux, medBP, medBP/medLinux)
	t.Log(report.String())
	// The median criterion read over the set of traces, as the 2x is (a geometric mean
	// over traces): measured 2026-11-22, linux 0.690, bayesperf 0.331. Per trace it holds
	// on 4 of 11; TestMedianDiag shows why the others are out of reach (their median
	// event counts only in slices no schedule reads, or beyond a true-correlation oracle).
	if medBP > medLinux/2 {
		t.Errorf("median WAPE over (trace, event) pairs: bayesperf %.3f, more than half of linux's %.3f (was 0.331 against 0.690)", medBP, medLinux)
	}
	// A regression guard: replay and model are deterministic, so these figures move only
	// when the code does. Measured 2026-11-22 with Finish's second pass (refilter):
	// bayesperf 2.07x (the acceptance figure is 2x), bayesperf-rr 1.57x, linear 1.10x;
	// before it 1.97x and 1.52x.
	if gm["bayesperf"] < 2.02 || gm["bayesperf-rr"] < 1.52 {
		t.Errorf("error reduction fell: bayesperf %.2fx (was 2.07x), bayesperf-rr %.2fx (was 1.57x)", gm["bayesperf"], gm["bayesperf-rr"])
	}
	// The intervals, per trace: measured 2026-11-22 with the second pass, bayesperf
	// 0.857-0.990 (sqlite, 31 slices in 2 intervals, lowest; make 0.9896 highest), all
	// 11 inside; before it 0.871-0.992, make the one above 0.99.
	if strays > 1 {
		t.Errorf("%d of %d traces have bayesperf's coverage95 outside [0.85, 0.99]", strays, len(all))
	}
}
