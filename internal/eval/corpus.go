package eval

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/bayesperf/bayesperf/inference/learned"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
)

// CorpusFamily is how one family of the evaluation corpus
// (inference/replay/testdata/corpus) is replayed: its traces are the files whose name
// starts with Prefix, scored as `bayesperf eval --trace FILE --counters Counters
// --fixed Fixed [--time-column TimeColumn] [--relations Relations]` would score them.
type CorpusFamily struct {
	Prefix      string
	Description string
	Counters    int
	Fixed       []string
	TimeColumn  string // "": every row is a slice of duration 1
	Relations   string // relation file in the corpus directory, added to the built-ins
	// Budgets are counter budgets besides Counters, fewer and more, that `make
	// corpus-budgets` and docs/accuracy.md replay the family at: the acceptance's
	// settings were never tuned away from, so these say whether a figure holds where
	// nothing was looked at (a PMU with fewer counters cycles longer between readings).
	Budgets []int
}

// CorpusFamilies are the corpus's three families (see its README.md).
var CorpusFamilies = []CorpusFamily{
	{Prefix: "cg-", Description: "callgrind microarchitecture traces with exact derived totals",
		Counters: 4, Fixed: []string{"Ir"}, TimeColumn: "basic_blocks", Relations: "callgrind.rel", Budgets: []int{3, 6}},
	{Prefix: "sys-", Description: "kernel traces with every syscall the program makes",
		Counters: 8, Fixed: []string{"task-clock"}, Budgets: []int{4, 12}},
	{Prefix: "live-", Description: "live runs saved by bayesperf eval --save-trace",
		Counters: 8, Fixed: []string{"task-clock"}, TimeColumn: "time_ns", Budgets: []int{4, 12}},
}

// Corpus halves, as split.txt names them.
const (
	Tune  = "tune"
	Valid = "valid"
)

// ReadSplit reads the corpus's split.txt: per trace file name, the half it belongs to
// ("tune" or "valid"), fixed once, before any trace was scored.
func ReadSplit(dir string) (map[string]string, error) {
	f, err := os.Open(filepath.Join(dir, "split.txt"))
	if err != nil {
		return nil, fmt.Errorf("read corpus split: %w", err)
	}
	defer f.Close()
	split := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fs := strings.Fields(line)
		if len(fs) != 2 || (fs[1] != Tune && fs[1] != Valid) {
			return nil, fmt.Errorf("read corpus split: line %d %q: want FILE tune|valid", n, line)
		}
		split[fs[0]] = fs[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read corpus split: %w", err)
	}
	return split, nil
}

// CorpusTraces lists the family's traces in dir that belong to half, sorted by name.
func CorpusTraces(dir string, fam CorpusFamily, split map[string]string, half string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, fam.Prefix+"*.csv"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		switch split[filepath.Base(f)] {
		case half:
			out = append(out, f)
		case "":
			return nil, fmt.Errorf("corpus trace %s is in neither half of split.txt", filepath.Base(f))
		}
	}
	return out, nil
}

// ScoreCorpusTrace replays one trace of the family as `bayesperf eval --trace` does:
// the built-in relations plus the family's relation file, bound against universe (the
// events this machine knows), every estimator on the same observations.
func ScoreCorpusTrace(dir string, fam CorpusFamily, file string, universe []string) (*Result, error) {
	return ScoreCorpusTraceWith(dir, fam, file, universe, nil)
}

// ScoreCorpusTraceWith is ScoreCorpusTrace with the learned estimators of m as well
// (none when m is nil), as `bayesperf eval --trace FILE --model M` scores them.
func ScoreCorpusTraceWith(dir string, fam CorpusFamily, file string, universe []string, m *learned.Model) (*Result, error) {
	return scoreCorpusTrace(dir, fam, file, universe, 0, func(o *Options) { o.Learned = m })
}

// ScoreCorpusTraceAt scores the trace as ScoreCorpusTrace does with bayesperf's schedule
// cycle started start configurations in (FromTraceAt): one of ScoreCorpusPhases' results.
func ScoreCorpusTraceAt(dir string, fam CorpusFamily, file string, universe []string, start int) (*Result, error) {
	return scoreCorpusTrace(dir, fam, file, universe, start, nil)
}

// scoreCorpusTrace replays the trace with bayesperf's cycle started start configurations
// in, with the family's scoring options as set changes them (nil: as they are).
func scoreCorpusTrace(dir string, fam CorpusFamily, file string, universe []string, start int, set func(*Options)) (*Result, error) {
	tr, opt, err := corpusTrace(dir, fam, file, universe)
	if err != nil {
		return nil, err
	}
	if set != nil {
		set(&opt)
	}
	obs, err := FromTraceAt(tr, fam.Counters, fam.Fixed, opt.Relations, start)
	if err != nil {
		return nil, err
	}
	return Score(obs, opt)
}

// ScoreCorpusOnline scores the trace as ScoreCorpusTrace does on the values a tool
// reading live gets (Options.Online: each interval estimated right after its last
// slice, by the filter's first pass smoothed back over the interval), not the final ones.
func ScoreCorpusOnline(dir string, fam CorpusFamily, file string, universe []string) (*Result, error) {
	return scoreCorpusTrace(dir, fam, file, universe, 0, func(o *Options) { o.Online = true })
}

// ScoreCorpusBudget scores the trace as ScoreCorpusTrace does on a budget of counters
// other than the family's (its fixed events still take theirs).
func ScoreCorpusBudget(dir string, fam CorpusFamily, file string, universe []string, counters int) (*Result, error) {
	fam.Counters = counters
	return ScoreCorpusTrace(dir, fam, file, universe)
}

// ScoreCorpusPhases scores the trace as ScoreCorpusTrace does once per start of
// bayesperf's schedule cycle (FromTraceAt): result p has the cycle started p
// configurations in; result 0 is ScoreCorpusTrace's. Where a run starts in the cycle is
// arbitrary, so the spread over the results is how much one figure owes to luck.
func ScoreCorpusPhases(dir string, fam CorpusFamily, file string, universe []string) ([]*Result, error) {
	tr, opt, err := corpusTrace(dir, fam, file, universe)
	if err != nil {
		return nil, err
	}
	var out []*Result
	phases := 1 // until the first replay says how long the cycle is
	for p := 0; p < phases; p++ {
		obs, err := FromTraceAt(tr, fam.Counters, fam.Fixed, opt.Relations, p)
		if err != nil {
			return nil, err
		}
		phases = max(obs.Phases, 1)
		res, err := Score(obs, opt)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// corpusTrace reads a trace of the family with its scoring options: the built-in
// relations plus the family's relation file, bound against universe.
func corpusTrace(dir string, fam CorpusFamily, file string, universe []string) (*replay.Trace, Options, error) {
	tr, err := replay.ReadFile(file, replay.ReadOptions{TimeColumn: fam.TimeColumn})
	if err != nil {
		return nil, Options{}, err
	}
	rels := relation.Builtins()
	if fam.Relations != "" {
		fh, err := os.Open(filepath.Join(dir, fam.Relations))
		if err != nil {
			return nil, Options{}, err
		}
		more, err := relation.ParseFile(fam.Relations, fh)
		fh.Close()
		if err != nil {
			return nil, Options{}, err
		}
		rels = append(rels, more...)
	}
	// linux-own costs little and tells a shortfall of the schedule from one of the model.
	return tr, Options{Counters: fam.Counters, Relations: relation.BindUniverse(rels, tr.Events, universe), LinuxOwn: true}, nil
}

// Command is the `bayesperf eval` command line that scores file as the family does.
func (fam CorpusFamily) Command(file string) string {
	s := fmt.Sprintf("bayesperf eval --trace %s --counters %d --fixed %s", file, fam.Counters, strings.Join(fam.Fixed, ","))
	if fam.TimeColumn != "" {
		s += " --time-column " + fam.TimeColumn
	}
	if fam.Relations != "" {
		s += " --relations " + filepath.Join(filepath.Dir(file), fam.Relations)
	}
	return s
}

// TrainingRun is the trace replayed as the family replays it, under the kernel's round
// robin, as a training run for the learned estimators (named after the file).
func (fam CorpusFamily) TrainingRun(file string) (learned.Run, error) {
	tr, err := replay.ReadFile(file, replay.ReadOptions{TimeColumn: fam.TimeColumn})
	if err != nil {
		return learned.Run{}, err
	}
	return KernelRun(filepath.Base(file), tr, fam.Counters, fam.Fixed)
}

// KernelRun is tr multiplexed by the kernel's round robin at counters counters with the
// fixed events, as a training run for the learned estimators.
func KernelRun(name string, tr *replay.Trace, counters int, fixed []string) (learned.Run, error) {
	ks, err := replay.KernelSchedule(tr, counters, fixed)
	if err != nil {
		return learned.Run{}, fmt.Errorf("build kernel schedule for %s: %w", name, err)
	}
	return learned.Run{Name: name, Events: len(tr.Events), Slices: replay.Simulate(tr, ks), Truth: tr.Counts}, nil
}

// FamilyOf is the corpus family whose prefix starts the file's base name, or false.
func FamilyOf(file string) (CorpusFamily, bool) {
	base := filepath.Base(file)
	for _, fam := range CorpusFamilies {
		if strings.HasPrefix(base, fam.Prefix) {
			return fam, true
		}
	}
	return CorpusFamily{}, false
}

// PhaseSpread is what a trace's figures do over every start of bayesperf's schedule
// cycle (ScoreCorpusPhases), for bayesperf against Linux's scaling.
type PhaseSpread struct {
	Phases int
	// Reduction is the error reduction's geometric mean over the starts, Min and Max
	// its extremes.
	Reduction, MinReduction, MaxReduction float64
	// WAPEAbove counts the starts whose mean WAPE is above Linux's; MaxWAPERatio is the
	// largest mean WAPE / Linux's.
	WAPEAbove    int
	MaxWAPERatio float64
	// WorstRatio is the largest worst_ratio over the starts, of WorstEvent.
	WorstRatio float64
	WorstEvent string
	// Harmed is the mean number of harmed events per start.
	Harmed float64
}

// SpreadOverPhases summarises ScoreCorpusPhases's results.
func SpreadOverPhases(rs []*Result) PhaseSpread {
	if len(rs) == 0 {
		return PhaseSpread{}
	}
	ps := PhaseSpread{Phases: len(rs), MinReduction: math.Inf(1)}
	logSum := 0.0
	for _, r := range rs {
		red := r.ErrorReduction[BayesPerf]
		logSum += math.Log(red)
		ps.MinReduction = math.Min(ps.MinReduction, red)
		ps.MaxReduction = math.Max(ps.MaxReduction, red)
		bp, lx := r.Estimators[BayesPerf], r.Estimators[Linux]
		if bp.WAPE > lx.WAPE {
			ps.WAPEAbove++
		}
		if lx.WAPE > 0 {
			ps.MaxWAPERatio = math.Max(ps.MaxWAPERatio, bp.WAPE/lx.WAPE)
		}
		if bp.WorstRatio != nil && *bp.WorstRatio > ps.WorstRatio {
			ps.WorstRatio, ps.WorstEvent = *bp.WorstRatio, *bp.WorstEvent
		}
		if bp.Harmed != nil {
			ps.Harmed += float64(*bp.Harmed) / float64(len(rs))
		}
	}
	ps.Reduction = math.Exp(logSum / float64(len(rs)))
	return ps
}
