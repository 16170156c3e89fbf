package eval

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// corpusDir is the evaluation corpus: real-program traces split once into a tuning and
// a validation half (its README.md and split.txt).
const corpusDir = "../../inference/replay/testdata/corpus"

// guard is the regression guard TestCorpus holds by default, per family prefix: what the
// model reached on the validation half when the corpus was made (2026-11-26), with a
// margin, wherever that falls short of issue 13's acceptance (CorpusAcceptance). Both
// are judged and reported; BAYESPERF_CORPUS_STRICT=1 fails on the acceptance.
var (
	// Measured: callgrind median 2.47x, coverage 0.900-0.982 (bzip2, just above the
	// acceptance), median sharpness up to 0.59 (bzip2, whose wide D1mw and DLmw
	// intervals widen L1_misses and LL_misses), worst ratio up to 4.5x (tar ILmr, md5
	// D1mw); kernel median 1.33x, total error at most 0.001 above linux's (du), worst
	// ratio up to 4.83x; live median 1.79x, total error at most 0.001 above linux's
	// (du); and on each family events that linux got exactly (WAPE 0) while bayesperf,
	// on its own schedule, never read their single occurrence (the guard leaves out
	// events linux got within 0.01; the acceptance does not). The third batch of
	// programs (2026-11-29: scored once before any tuning on it, see the corpus README)
	// moved the validation medians to 2.40x (callgrind: gzip 2.03x, objdump 4.13x,
	// uniq 2.29x), 1.38x (kernel) and 1.56x (live: gzip 1.56x, node 1.56x, against 1.81x
	// on the first six); the live guard follows, 0.11x below the new median. Reported
	// values that keep the exact identities and second-pass sum readings (2026-11-29)
	// took the callgrind median to 2.59x (every start: 2.45x), its sixth trace, uniq,
	// 0.13x above the fifth: the guard follows to 2.4x.
	guard = map[string]CorpusBar{
		"cg-":   {Worst: 6, MinLinuxWAPE: 0.01, MedianReduce: 2.4, Coverage: [2]float64{0.85, 0.99}, Sharpness: 0.7},
		"sys-":  {Worst: 8, MinLinuxWAPE: 0.01, TotalSlack: 0.02, MedianReduce: 1.2},
		"live-": {Worst: 8, MinLinuxWAPE: 0.01, TotalSlack: 0.02, MedianReduce: 1.45},
	}
	// traceGuard holds a trace added after the guards were set whose first measurement
	// fell below its family's guard at what was measured then, with a margin, instead
	// of the family's guard (median reduction and coverage stay the family's). Its
	// shortfalls are reported against the acceptance like any other.
	traceGuard = map[string]CorpusBar{
		// Added 2026-11-28 (validation): unlinkat 8.73x linux's WAPE. The run ends with
		// rm -rf, a burst of unlinkat that the kernel's rotation happened to count and
		// bayesperf's schedule did not. (Its mean WAPE and total error were above
		// linux's too when it was added, until zero counts were left out of soft
		// identities: 0.902 against 1.072, 0.753 against 0.846.)
		"sys-tgz.csv": {Worst: 10, TotalSlack: 0.02},
	}
)

// corpusHalf is the corpus half a test replays (BAYESPERF_CORPUS=tune: the tuning
// half, else the validation half), the corpus's split, and the event names this
// machine knows, which the relations are bound against.
func corpusHalf(t *testing.T) (half string, split map[string]string, universe []string) {
	t.Helper()
	half = Valid
	if os.Getenv("BAYESPERF_CORPUS") == Tune {
		half = Tune
	}
	split, err := ReadSplit(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	return half, split, hostUniverse()
}

// hostUniverse is the event names this machine knows (perf's symbolic events and its
// tracepoints), which relations over exhaustive sums are bound against as eval binds them.
func hostUniverse() []string {
	var r perf.Resolver
	return append(perf.SymbolNames(), r.Tracepoints()...)
}

// scoreCorpusAt scores a corpus trace of either half with bayesperf's schedule cycle
// started at configuration start (ScoreCorpusTraceAt).
func scoreCorpusAt(t *testing.T, file string, start int) *Result {
	t.Helper()
	_, _, universe := corpusHalf(t)
	fam, ok := FamilyOf(file)
	if !ok {
		t.Fatalf("%s is in no corpus family", file)
	}
	res, err := ScoreCorpusTraceAt(corpusDir, fam, filepath.Join(corpusDir, file), universe, start)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// eventOf is the result of the event named ev in res.
func eventOf(t *testing.T, res *Result, ev string) PerEvent {
	t.Helper()
	for _, pe := range res.PerEvent {
		if pe.Event == ev {
			return pe
		}
	}
	t.Fatalf("no event %s in the trace", ev)
	return PerEvent{}
}

// TestCorpus replays the validation half of the corpus (BAYESPERF_CORPUS=tune: the
// tuning half, reported but never failed) and judges bayesperf on every trace against
// linux's scaling on the same observations: mean WAPE and total error, the worst
// event, and per family the median error reduction, the coverage and the sharpness of
// the intervals. It prints every figure it judges and what falls short of issue 13's
// acceptance, each event's shortfall with linux-own and bayesperf-rr beside it: "in the
// readings" where the kernel's scaling of the readings bayesperf's schedule took falls
// short of the same bar.
//
//	go test -count=1 -run TestCorpus -v ./internal/eval/
func TestCorpus(t *testing.T) {
	half, split, universe := corpusHalf(t)
	strict := os.Getenv("BAYESPERF_CORPUS_STRICT") != ""
	var report strings.Builder
	fmt.Fprintf(&report, "\n%-22s %s\n", "trace ("+half+")", figuresHeader)
	for _, fam := range CorpusFamilies {
		files, err := CorpusTraces(corpusDir, fam, split, half)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) < 6 {
			t.Errorf("%s: %d traces in the %s half, want at least 6", fam.Prefix, len(files), half)
		}
		var names []string
		var results []*Result
		var broken []string // below the guard
		grd := guard[fam.Prefix]
		for _, f := range files {
			name := filepath.Base(f)
			grd := grd
			if tg, ok := traceGuard[name]; ok {
				grd.Worst, grd.WAPESlack, grd.TotalSlack = tg.Worst, tg.WAPESlack, tg.TotalSlack
			}
			res, err := ScoreCorpusTrace(corpusDir, fam, f, universe)
			if err != nil {
				t.Fatal(err)
			}
			names, results = append(names, name), append(results, res)
			fmt.Fprintf(&report, "%-22s %s\n", name, figures(res))
			for _, s := range grd.Shortfalls(res) {
				broken = append(broken, name+": "+s.What)
			}
		}
		if len(results) == 0 {
			continue
		}
		var reds []float64
		for _, res := range results {
			reds = append(reds, res.ErrorReduction[BayesPerf])
		}
		med := metrics.Median(reds)
		if med < grd.MedianReduce {
			broken = append(broken, fmt.Sprintf("%s*: median error reduction %.2fx", fam.Prefix, med))
		}
		short := CorpusAcceptance[fam.Prefix].FamilyShortfalls(fam.Prefix, names, results)
		fmt.Fprintf(&report, "%-22s %8.2fx median over %d traces; %d short of issue 13's acceptance, %d of them in the readings\n",
			fam.Prefix+"*", med, len(results), len(short), InReadings(short))
		for _, s := range short {
			fmt.Fprintf(&report, "    short: %s\n", s)
		}
		if half != Valid {
			continue
		}
		for _, m := range broken {
			t.Errorf("regression guard: %s", m)
		}
		if strict {
			for _, s := range short {
				t.Errorf("acceptance: %s", s)
			}
		}
	}
	t.Log(report.String())
}

// figuresHeader heads the columns figures writes.
const figuresHeader = "reduction  meanWAPE/linux     total/linux   cov95 sharpness  worst_ratio (event), harmed"

// figures is one trace's line of the corpus reports after its label: bayesperf's error
// reduction, mean WAPE and total error beside Linux's, coverage95, sharpness, worst
// ratio (event) and harmed events.
func figures(res *Result) string {
	bp, lx := res.Estimators[BayesPerf], res.Estimators[Linux]
	return fmt.Sprintf("%8.2fx %7.3f/%7.3f %7.3f/%7.3f %7.3f %9.3f  %.2fx (%s), %d", res.ErrorReduction[BayesPerf],
		bp.WAPE, lx.WAPE, bp.TotalError, lx.TotalError, deref(bp.Coverage95), deref(bp.Sharpness),
		deref(bp.WorstRatio), deref(bp.WorstEvent), deref(bp.Harmed))
}

// TestCorpusPhases is a diagnostic, skipped unless BAYESPERF_CORPUS_PHASES is set (make
// corpus-phases): it replays every trace of a corpus half (BAYESPERF_CORPUS=tune: the
// tuning half) once per start of bayesperf's schedule cycle and prints, per trace, the
// spread of the figures TestCorpus judges at the first start only.
//
//	BAYESPERF_CORPUS_PHASES=1 go test -count=1 -run TestCorpusPhases -v ./internal/eval/
func TestCorpusPhases(t *testing.T) {
	if os.Getenv("BAYESPERF_CORPUS_PHASES") == "" {
		t.Skip("diagnostic: make corpus-phases (BAYESPERF_CORPUS_PHASES=1)")
	}
	half, split, universe := corpusHalf(t)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %6s %22s %11s %14s %9s  %s\n", "trace ("+half+")", "starts", "reduction (min-max)",
		"WAPE>linux", "max WAPE/lx", "harmed", "worst_ratio (event)")
	for _, fam := range CorpusFamilies {
		files, err := CorpusTraces(corpusDir, fam, split, half)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			rs, err := ScoreCorpusPhases(corpusDir, fam, f, universe)
			if err != nil {
				t.Fatal(err)
			}
			ps := SpreadOverPhases(rs)
			fmt.Fprintf(&b, "%-22s %6d %7.2fx (%.2f-%.2f) %11d %14.2f %9.1f  %.2fx (%s)\n", filepath.Base(f), ps.Phases,
				ps.Reduction, ps.MinReduction, ps.MaxReduction, ps.WAPEAbove, ps.MaxWAPERatio, ps.Harmed, ps.WorstRatio, ps.WorstEvent)
		}
	}
	t.Log(b.String())
}

// TestCorpusBudgets is a diagnostic, skipped unless BAYESPERF_CORPUS_BUDGETS is set (make
// corpus-budgets): it replays every trace of a corpus half (BAYESPERF_CORPUS=tune: the
// tuning half) at its family's other counter budgets (CorpusFamily.Budgets), first start
// only, and prints TestCorpus's figures there, with per family and budget the median
// error reduction, the traces whose mean WAPE is above Linux's and the largest worst
// ratio. Nothing was tuned at these budgets.
//
//	BAYESPERF_CORPUS_BUDGETS=1 go test -count=1 -run TestCorpusBudgets -v ./internal/eval/
func TestCorpusBudgets(t *testing.T) {
	if os.Getenv("BAYESPERF_CORPUS_BUDGETS") == "" {
		t.Skip("diagnostic: make corpus-budgets (BAYESPERF_CORPUS_BUDGETS=1)")
	}
	half, split, universe := corpusHalf(t)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %8s %s\n", "trace ("+half+")", "counters", figuresHeader)
	for _, fam := range CorpusFamilies {
		files, err := CorpusTraces(corpusDir, fam, split, half)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range fam.Budgets {
			printFamily(t, &b, fam, files, fmt.Sprintf(" %8d", c), func(f string) (*Result, error) {
				return ScoreCorpusBudget(corpusDir, fam, f, universe, c)
			})
		}
	}
	t.Log(b.String())
}

// TestCorpusOnline prints the figures of the values a live reader gets (make
// corpus-online), which the acceptance does not judge and TestCorpus does not show: the
// first pass alone can do harm that the final pass repairs.
func TestCorpusOnline(t *testing.T) {
	if os.Getenv("BAYESPERF_CORPUS_ONLINE") == "" {
		t.Skip("diagnostic: make corpus-online (BAYESPERF_CORPUS_ONLINE=1)")
	}
	half, split, universe := corpusHalf(t)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-22s %s\n", "trace ("+half+", online)", figuresHeader)
	for _, fam := range CorpusFamilies {
		files, err := CorpusTraces(corpusDir, fam, split, half)
		if err != nil {
			t.Fatal(err)
		}
		printFamily(t, &b, fam, files, "", func(f string) (*Result, error) {
			return ScoreCorpusOnline(corpusDir, fam, f, universe)
		})
	}
	t.Log(b.String())
}

// printFamily scores each of a family's files with score and writes to b one line of
// TestCorpus's figures per trace and the family's summary (familyTally), each after the
// trace's name and col.
func printFamily(t *testing.T, b *strings.Builder, fam CorpusFamily, files []string, col string, score func(file string) (*Result, error)) {
	t.Helper()
	var ft familyTally
	for _, f := range files {
		res, err := score(f)
		if err != nil {
			t.Fatalf("%s%s: %v", f, col, err)
		}
		ft.add(f, res)
		fmt.Fprintf(b, "%-22s%s %s\n", filepath.Base(f), col, figures(res))
	}
	if len(ft.reds) > 0 {
		fmt.Fprintf(b, "%-22s%s %s\n", fam.Prefix+"*", col, ft.summary())
	}
}

// familyTally sums up a family's traces for the diagnostics: bayesperf's error
// reductions, the traces whose mean WAPE is above Linux's, and the largest worst ratio.
type familyTally struct {
	reds    []float64
	above   int
	worst   float64
	worstAt string
}

func (ft *familyTally) add(file string, res *Result) {
	bp, lx := res.Estimators[BayesPerf], res.Estimators[Linux]
	ft.reds = append(ft.reds, res.ErrorReduction[BayesPerf])
	if bp.WAPE > lx.WAPE {
		ft.above++
	}
	if w := deref(bp.WorstRatio); w > ft.worst {
		ft.worst, ft.worstAt = w, fmt.Sprintf("%s %s", filepath.Base(file), deref(bp.WorstEvent))
	}
}

func (ft *familyTally) summary() string {
	return fmt.Sprintf("%8.2fx median over %d traces; mean WAPE above linux's on %d; largest worst ratio %.2fx (%s)",
		metrics.Median(ft.reds), len(ft.reds), ft.above, ft.worst, ft.worstAt)
}
