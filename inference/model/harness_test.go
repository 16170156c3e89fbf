package model

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/graph"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// trace is a run with exact counts per slice (synthetic, see synth_test.go).
type trace struct {
	name   string
	events []string
	dur    []float64
	counts [][]uint64
}

// roundRobin is the kernel's schedule for singleton groups: at slice t the list of
// non-fixed events rotated by t, the first `counters` of it counted, fixed events always.
func roundRobin(n, counters int, fixed []int) func(t int) []int {
	var flex []int
	for e := range n {
		if !slices.Contains(fixed, e) {
			flex = append(flex, e)
		}
	}
	return func(t int) []int {
		out := slices.Clone(fixed)
		for i := 0; i < counters && i < len(flex); i++ {
			out = append(out, flex[(t+i)%len(flex)])
		}
		return out
	}
}

// simulate multiplexes the trace: every event enabled in every slice, running (with its
// exact count) only in the slices the schedule gives it.
func simulate(tr *trace, sched func(t int) []int) []inference.Slice {
	out := make([]inference.Slice, len(tr.counts))
	for t, row := range tr.counts {
		ns := uint64(math.Max(1, math.Round(tr.dur[t])))
		s := inference.Slice{Index: t, Duration: tr.dur[t], Readings: make([]inference.Reading, len(row))}
		on := sched(t)
		for e := range row {
			r := inference.Reading{Event: inference.EventID(e), Enabled: ns}
			if slices.Contains(on, e) {
				r.Count, r.Running = row[e], ns
			}
			s.Readings[e] = r
		}
		out[t] = s
	}
	return out
}

// score holds the brief's accuracy metrics of one estimator on one run.
type score struct {
	wape     []float64 // per event; NaN when the event never occurs
	coverage float64   // NaN without intervals
}

func (s score) meanWAPE() float64 {
	sum, n := 0.0, 0
	for _, w := range s.wape {
		if !math.IsNaN(w) {
			sum += w
			n++
		}
	}
	return sum / float64(n)
}

// run feeds the slices to the estimator and scores it over reporting intervals of
// window slices against the truth.
func run(t testing.TB, est inference.Estimator, slicesIn []inference.Slice, truth [][]float64, window int) score {
	t.Helper()
	for _, s := range slicesIn {
		if err := est.Observe(s); err != nil {
			t.Fatalf("%s: %v", est.Name(), err)
		}
	}
	est.Finish()
	n := len(truth[0])
	absErr := make([]float64, n)
	tot := make([]float64, n)
	in, cnt := 0, 0
	hasInt := false
	for from := 0; from < len(slicesIn); from += window {
		to := min(from+window, len(slicesIn))
		es := est.Estimate(from, to)
		for e := range n {
			c := 0.0
			for u := from; u < to; u++ {
				c += truth[u][e]
			}
			absErr[e] += math.Abs(es[e].Value - c)
			tot[e] += c
			if es[e].HasInterval {
				hasInt = true
				cnt++
				if c >= es[e].Lo-1e-9*math.Abs(c) && c <= es[e].Hi+1e-9*math.Abs(c) {
					in++
				}
			}
		}
	}
	sc := score{wape: make([]float64, n), coverage: math.NaN()}
	for e := range n {
		sc.wape[e] = math.NaN()
		if tot[e] > 0 {
			sc.wape[e] = absErr[e] / tot[e]
		}
	}
	if hasInt {
		sc.coverage = float64(in) / float64(cnt)
	}
	return sc
}

// mustNew is New, failing t on an error.
func mustNew(t *testing.T, events []string, rels []relation.Relation, opt Options) *Model {
	t.Helper()
	md, err := New(events, rels, opt)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

func mustRelation(t *testing.T, text string) relation.Relation {
	t.Helper()
	r, err := relation.ParseLine(text)
	if err != nil || r == nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	return *r
}

// The replays of recorded traces: real programs (../replay/testdata, testdata), live runs
// under the virtual PMU (../../internal/eval/testdata, testdata/live) and the corpus.

// realFixed are the events that sit on fixed counters in the replays, the way cycles
// and instructions do on a real CPU: always-on, busy events (Ir is callgrind's
// instructions).
var realFixed = []string{"task-clock", "raw_syscalls:sys_enter", "Ir"}

const realCounters = 4 // programmable counters, as on many x86 cores with SMT

// realTraces lists the real-program traces, the replay package's and this package's.
func realTraces(t *testing.T) []string {
	t.Helper()
	return traceFiles(t, "no traces: run make traces / make model-traces", "../replay/testdata/*.csv", "testdata/*.csv")
}

// liveTraces lists the traces recorded under the virtual PMU, internal/eval's and this
// package's.
func liveTraces(t *testing.T) []string {
	t.Helper()
	return traceFiles(t, "no live traces: run make live-traces", "../../internal/eval/testdata/live-*.csv", "testdata/live/*.csv")
}

// traceFiles lists the files that match the patterns, failing t with missing if none do.
func traceFiles(t *testing.T, missing string, patterns ...string) []string {
	t.Helper()
	var files []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal(missing)
	}
	return files
}

// traceName is the name reports give a trace: its file name without .csv.
func traceName(path string) string { return strings.TrimSuffix(filepath.Base(path), ".csv") }

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

// timedTrace reads a trace whose time_ns column gives each slice's duration (the live
// traces, the PMU testbed's).
func timedTrace(t *testing.T, path string) *replay.Trace {
	t.Helper()
	tr, err := replay.ReadFile(path, replay.ReadOptions{TimeColumn: "time_ns"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// callgrindRelations reads the relations of callgrind's events, callgrind.rel in dir
// (the corpus's or the replay package's test data).
func callgrindRelations(t *testing.T, dir string) []relation.Relation {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "callgrind.rel"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rels, err := relation.ParseFile("callgrind.rel", f)
	if err != nil {
		t.Fatal(err)
	}
	return rels
}

// fixedOf are the events of realFixed in the trace.
func fixedOf(tr *replay.Trace) []string {
	var fixed []string
	for _, f := range realFixed {
		if tr.EventIndex(f) >= 0 {
			fixed = append(fixed, f)
		}
	}
	return fixed
}

// schedules builds, for the events on the counters of sp, the kernel's round robin and
// bayesperf's overlap schedule over rels.
func schedules(t *testing.T, events []string, rels []relation.Relation, sp schedule.Spec) (kern, own *schedule.Schedule) {
	t.Helper()
	kern, err := schedule.Kernel(sp)
	if err != nil {
		t.Fatal(err)
	}
	if own, err = schedule.Overlap(sp, graph.FromRelations(events, rels), schedule.OverlapOptions{}); err != nil {
		t.Fatal(err)
	}
	return kern, own
}

// traceSchedules builds, for tr at realCounters with the fixed events, the kernel's round
// robin and bayesperf's overlap schedule over rels, as `bayesperf eval --trace` does.
func traceSchedules(t *testing.T, tr *replay.Trace, rels []relation.Relation, fixed []string) (kern, own *schedule.Schedule) {
	t.Helper()
	sp, err := replay.KernelSpec(tr, realCounters, fixed)
	if err != nil {
		t.Fatal(err)
	}
	return schedules(t, tr.Events, rels, sp)
}

// liveSchedules binds the built-in relations to tr's events and builds both schedules.
func liveSchedules(t *testing.T, tr *replay.Trace, fixed []string) (rels []relation.Relation, kern, own *schedule.Schedule) {
	t.Helper()
	rels = relation.Bind(relation.Builtins(), tr.Events)
	kern, own = traceSchedules(t, tr, rels, fixed)
	return rels, kern, own
}

// replayScore is replay.Score, failing t on an error.
func replayScore(t *testing.T, tr *replay.Trace, opt replay.Options, cs ...replay.Contender) *replay.Result {
	t.Helper()
	res, err := replay.Score(tr, cs, opt)
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

// realScore replays one trace to linux, linear, bayesperf on the kernel's round robin
// (bayesperf-rr) and bayesperf on its own overlap schedule, with the replay package's
// scoring, and returns the result.
func realScore(t *testing.T, path string) *replay.Result {
	t.Helper()
	tr, rels := traceOf(t, path)
	kern, own := traceSchedules(t, tr, rels, fixedOf(tr))
	rr := mustNew(t, tr.Events, rels, Options{})
	bp := mustNew(t, tr.Events, rels, Options{})
	cs := append(replay.Baselines(len(tr.Events), kern), replay.Contender{Estimator: named{rr, "bayesperf-rr"}, Schedule: kern},
		replay.Contender{Estimator: bp, Schedule: own})
	return replayScore(t, tr, replay.Options{Counters: realCounters}, cs...)
}

// liveScore replays a live trace (../../internal/eval/testdata/live-*.csv) the way
// `bayesperf eval --trace FILE --time-column time_ns --counters 4 [--fixed ...]`
// does: each row a slice of its time_ns, the kernel's round robin for linux, linear
// and bayesperf-rr, bayesperf's overlap schedule for bayesperf, the built-in relations
// bound to the run's events.
func liveScore(t *testing.T, path string, fixed []string, opt Options) *replay.Result {
	t.Helper()
	tr := timedTrace(t, path)
	rels, kern, own := liveSchedules(t, tr, fixed)
	rr := mustNew(t, tr.Events, rels, opt)
	bp := mustNew(t, tr.Events, rels, opt)
	cs := append(replay.Baselines(len(tr.Events), kern), replay.Contender{Estimator: named{rr, "bayesperf-rr"}, Schedule: kern},
		replay.Contender{Estimator: bp, Schedule: own})
	return replayScore(t, tr, replay.Options{Counters: realCounters, Online: liveOnline}, cs...)
}

// liveOnline scores the live values (each interval estimated right after it ends, as a
// tool reading through the drop-in path sees them) instead of the smoothed ones.
var liveOnline bool

// dropin is bayesperf as the drop-in path serves it (internal/vpmu/vstage): a tool
// reading running totals, each the posterior mean of the event's total up to the read
// given everything so far, published values never decreasing, and taking differences
// (perf stat -I). Asked online for interval [from, to), it returns the published total
// at to minus the one at from.
type dropin struct {
	*Model
	pub []float64
}

func (d *dropin) Name() string { return "bayesperf-dropin" }

func (d *dropin) Estimate(from, to int) []inference.Estimate {
	tot := d.Model.Estimate(0, to)
	if d.pub == nil {
		d.pub = make([]float64, len(tot))
	}
	out := make([]inference.Estimate, len(tot))
	for e, x := range tot {
		p := math.Max(d.pub[e], x.Value)
		out[e] = inference.Estimate{Value: p - d.pub[e], Status: x.Status}
		d.pub[e] = p
	}
	return out
}

// dropinOptions are the model's options as vstage sets them: a task's enabled time is
// its task-clock, so the model is told.
func dropinOptions(tr *replay.Trace) Options {
	var opt Options
	if tr.EventIndex("task-clock") >= 0 {
		opt.Clocks = []string{"task-clock"}
	}
	return opt
}

// dropinScore replays a live trace as liveScore does, online, to linux and, on
// bayesperf's schedule, bayesperf served as the drop-in path serves it
// (bayesperf-dropin) and bayesperf's online values (bayesperf: each interval estimated
// right after it ends).
func dropinScore(t *testing.T, tr *replay.Trace, fixed []string) *replay.Result {
	t.Helper()
	rels, kern, own := liveSchedules(t, tr, fixed)
	opt := dropinOptions(tr)
	a := mustNew(t, tr.Events, rels, opt)
	b := mustNew(t, tr.Events, rels, opt)
	cs := append(replay.Baselines(len(tr.Events), kern)[:1], replay.Contender{Estimator: &dropin{Model: a}, Schedule: own},
		replay.Contender{Estimator: b, Schedule: own})
	return replayScore(t, tr, replay.Options{Counters: realCounters, Online: true}, cs...)
}

// liveDropin returns dropinScore's error reductions against linux of the live trace at
// path: of bayesperf served as the drop-in path serves it, and of its online values.
func liveDropin(t *testing.T, path string, fixed []string) (cum, online float64) {
	t.Helper()
	res := dropinScore(t, timedTrace(t, path), fixed)
	return res.ErrorReduction["bayesperf-dropin"], res.ErrorReduction["bayesperf"]
}

// corpusReplay replays a callgrind trace of the corpus (tuning half) as the corpus's
// README says, on bayesperf's own schedule, and returns the trace, the reporting
// intervals and the final estimates per interval.
func corpusReplay(t *testing.T, name string) (*replay.Trace, [][2]int, [][]inference.Estimate) {
	t.Helper()
	tr, _, ivs, ans := corpusModel(t, name)
	return tr, ivs, ans
}

// corpusModel is corpusReplay with the model too, finished, for its whole-run values.
func corpusModel(t *testing.T, name string) (*replay.Trace, *Model, [][2]int, [][]inference.Estimate) {
	t.Helper()
	dir := "../replay/testdata/corpus"
	tr, err := replay.ReadFile(filepath.Join(dir, name), replay.ReadOptions{TimeColumn: "basic_blocks"})
	if err != nil {
		t.Fatal(err)
	}
	rels := relation.Bind(append(relation.Builtins(), callgrindRelations(t, dir)...), tr.Events)
	_, own := traceSchedules(t, tr, rels, []string{"Ir"})
	md := mustNew(t, tr.Events, rels, Options{})
	ivs := replay.Intervals(tr.Slices(), replay.DefaultWindow)
	ans, err := replay.Feed(md, replay.Simulate(tr, own), ivs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr, md, ivs, ans
}

// eventScores scores event e's estimates over the intervals against the trace.
func eventScores(tr *replay.Trace, ivs [][2]int, ans [][]inference.Estimate, e int) metrics.Event {
	truth := make([]float64, len(ivs))
	est := make([]inference.Estimate, len(ivs))
	for k, iv := range ivs {
		truth[k] = tr.Truth(iv[0], iv[1])[e]
		est[k] = ans[k][e]
	}
	return metrics.ForEvent(truth, est)
}
