package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/bayesperf/bayesperf/inference/learned"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/internal/eval"
)

const trainUsage = `usage:
  bayesperf train --corpus DIR [--half tune|valid|all] -o MODEL.json [--seed N] [--epochs N]
  bayesperf train --trace FILE.csv [--trace FILE.csv...] --counters N [--fixed EVENTS]
                  [--time-column NAME] -o MODEL.json [--seed N] [--epochs N]

Fits the two learned multiplexing correctors of source 001 (an MLP and a bidirectional
GRU, see docs/learned.md) on traces of exact per-slice counts, and writes them to
MODEL.json for 'bayesperf eval --model MODEL.json', which scores them beside linux,
fixed, linear and bayesperf.

Each trace is multiplexed by the kernel's round robin, exactly as 'bayesperf eval
--trace' simulates it, and the networks learn to map what the kernel let through to the
true count of every slice that was not counted whole. One MLP and one Bi-GRU are shared
by every event of every trace (inputs are normalised per event).

--corpus trains on a half of the evaluation corpus (inference/replay/testdata/corpus;
split.txt names the halves; by default the tuning half), each family replayed with its
own counters, fixed events and time column. --trace trains on the given files, all
replayed with the same --counters, --fixed and --time-column.

Training is deterministic: the same traces, flags and --seed write the same file. It
runs on one core; with the defaults it took 8 to 18 s for a tuning half of 22 traces
on the project's 2-core VMs, whatever the number of traces (each epoch draws a fixed
number of slices); --epochs scales it linearly.

Exit status: 0 after writing MODEL.json; 2 for a usage error (bad flag, unreadable or
malformed trace); 1 for another failure. Each failure is one line on stderr.

Flags:
`

func runTrain(args []string) int {
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	var traces, fixed listFlag
	corpus := fs.String("corpus", "", "train on the corpus in DIR (see --half)")
	half := fs.String("half", eval.Tune, "--corpus: which half of split.txt: tune, valid or all")
	fs.Var(&traces, "trace", "trace CSV of exact per-slice counts to train on (repeatable)")
	fs.Var(&fixed, "fixed", "--trace: events on fixed counters: they always count (repeatable)")
	counters := fs.Int("counters", 4, "--trace: programmable counters of the simulated PMU")
	timeCol := fs.String("time-column", "", "--trace: metadata column holding each slice's duration")
	out := fs.String("o", "", "write the model to FILE (required)")
	def := learned.DefaultConfig()
	seed := fs.Uint64("seed", def.Seed, "seed of the weights' initialisation, the sampling and the dropout")
	epochs := fs.Int("epochs", def.MLPEpochs, "training epochs of each network")
	quiet := fs.Bool("q", false, "do not print progress on stderr")
	if code, stop := parseCmdLine("train", flagHelp(fs, trainUsage), fs, args); stop {
		return code
	}
	fail := func(err error) int { return exitWith("train", err) }
	switch {
	case *out == "":
		return fail(usageErr("no output file; add -o MODEL.json"))
	case (*corpus == "") == (len(traces) == 0):
		return fail(usageErr("give either --corpus DIR or --trace FILE.csv (see 'bayesperf train --help')"))
	case fs.NArg() > 0:
		return fail(usageErr("unexpected argument %q: train takes no command", fs.Arg(0)))
	case *epochs < 1:
		return fail(usageErr("--epochs %d: want at least 1", *epochs))
	case *counters < 1:
		return fail(usageErr("--counters %d: a PMU has at least 1 counter", *counters))
	}
	var runs []learned.Run
	if *corpus != "" {
		if *half != eval.Tune && *half != eval.Valid && *half != "all" {
			return fail(usageErr("--half %s: want tune, valid or all", *half))
		}
		split, err := eval.ReadSplit(*corpus)
		if err != nil {
			return fail(usageError{err})
		}
		for _, fam := range eval.CorpusFamilies {
			for _, h := range []string{eval.Tune, eval.Valid} {
				if *half != "all" && *half != h {
					continue
				}
				files, err := eval.CorpusTraces(*corpus, fam, split, h)
				if err != nil {
					return fail(usageError{err})
				}
				for _, f := range files {
					r, err := fam.TrainingRun(f)
					if err != nil {
						return fail(usageError{fmt.Errorf("%s: %w", f, err)})
					}
					runs = append(runs, r)
				}
			}
		}
	}
	for _, f := range traces {
		tr, err := replay.ReadFile(f, replay.ReadOptions{TimeColumn: *timeCol})
		if err != nil {
			return fail(usageError{fmt.Errorf("%w; %s", err, traceFormat)})
		}
		r, err := eval.KernelRun(filepath.Base(f), tr, *counters, splitList(fixed))
		if err != nil {
			return fail(usageError{err})
		}
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return fail(usageErr("no traces to train on in %s (half %s)", *corpus, *half))
	}
	cfg := def
	cfg.Seed, cfg.MLPEpochs, cfg.GRUEpochs = *seed, *epochs, *epochs
	log := func(s string) {
		if !*quiet {
			fmt.Fprintf(os.Stderr, "bayesperf train: %s\n", s)
		}
	}
	start := time.Now()
	log(fmt.Sprintf("%d traces", len(runs)))
	m, err := learned.Train(runs, cfg, log)
	if err != nil {
		return fail(err)
	}
	log(fmt.Sprintf("trained in %.1f s", time.Since(start).Seconds()))
	f, err := os.Create(*out)
	if err != nil {
		return fail(fmt.Errorf("create model file: %w", err))
	}
	werr := m.Write(f)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fail(werr)
	}
	return 0
}
