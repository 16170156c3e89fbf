package eval

import (
	"bufio"
	"fmt"
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
}

// CorpusFamilies are the corpus's three families (see its README.md).
var CorpusFamilies = []CorpusFamily{
	{Prefix: "cg-", Description: "callgrind microarchitecture traces with exact derived totals",
		Counters: 4, Fixed: []string{"Ir"}, TimeColumn: "basic_blocks", Relations: "callgrind.rel"},
	{Prefix: "sys-", Description: "kernel traces with every syscall the program makes",
		Counters: 8, Fixed: []string{"task-clock"}},
	{Prefix: "live-", Description: "live runs saved by bayesperf eval --save-trace",
		Counters: 8, Fixed: []string{"task-clock"}, TimeColumn: "time_ns"},
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
	tr, err := replay.ReadFile(file, replay.ReadOptions{TimeColumn: fam.TimeColumn})
	if err != nil {
		return nil, err
	}
	rels := relation.Builtins()
	if fam.Relations != "" {
		fh, err := os.Open(filepath.Join(dir, fam.Relations))
		if err != nil {
			return nil, err
		}
		more, err := relation.ParseFile(fam.Relations, fh)
		fh.Close()
		if err != nil {
			return nil, err
		}
		rels = append(rels, more...)
	}
	opt := Options{Counters: fam.Counters, Relations: relation.BindUniverse(rels, tr.Events, universe), Learned: m}
	obs, err := FromTrace(tr, fam.Counters, fam.Fixed, opt.Relations)
	if err != nil {
		return nil, err
	}
	return Score(obs, opt)
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
