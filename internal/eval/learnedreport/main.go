// Command learnedreport regenerates docs/learned.md: the learned estimators of source 001
// (mlp, bigru; inference/learned) against the Bayesian model and the baselines, on the
// validation half of the corpus with a model trained on the tuning half (programs the
// model never saw), and per application (trained on the first part of one program's
// run, tested on the rest). Run it through `make learned`.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/bayesperf/bayesperf/inference/learned"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/internal/eval"
	"github.com/bayesperf/bayesperf/internal/perf"
)

func main() {
	corpus := flag.String("corpus", "inference/replay/testdata/corpus", "evaluation corpus")
	model := flag.String("model", "docs/learned-model.json", "model trained on the tuning half (bayesperf train)")
	out := flag.String("out", "docs/learned.md", "report to write")
	cut := flag.Float64("cut", 0.6, "per-application runs: share of each trace's slices to train on")
	trainCmd := flag.String("train-cmd", "", "the command that trained -model, quoted in the report")
	flag.Parse()
	if err := run(*corpus, *model, *out, *cut, *trainCmd); err != nil {
		fmt.Fprintln(os.Stderr, "learnedreport:", err)
		os.Exit(1)
	}
}

var names = []string{eval.Linux, eval.Fixed, eval.Linear, eval.BayesPerfRR, eval.BayesPerf, eval.MLP, eval.BiGRU}

type scored struct {
	file string
	res  *eval.Result
}

type perApp struct {
	file        string
	cross, own  *eval.Result // the tuning-half model, the model of the run's first part
	trainSecond float64
}

func run(dir, modelFile, out string, cut float64, trainCmd string) error {
	f, err := os.Open(modelFile)
	if err != nil {
		return err
	}
	m, err := learned.Load(f)
	f.Close()
	if err != nil {
		return err
	}
	split, err := eval.ReadSplit(dir)
	if err != nil {
		return err
	}
	var r perf.Resolver
	universe := append(perf.SymbolNames(), r.Tracepoints()...)
	fams := map[string][]scored{}
	apps := map[string][]perApp{}
	for _, fam := range eval.CorpusFamilies {
		files, err := eval.CorpusTraces(dir, fam, split, eval.Valid)
		if err != nil {
			return err
		}
		for _, file := range files {
			fmt.Fprintf(os.Stderr, "%s...\n", filepath.Base(file))
			res, err := eval.ScoreCorpusTraceWith(dir, fam, file, universe, m)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			fams[fam.Prefix] = append(fams[fam.Prefix], scored{filepath.Base(file), res})
			pa, err := perApplication(dir, fam, file, universe, m, cut)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			apps[fam.Prefix] = append(apps[fam.Prefix], pa)
		}
	}
	return write(out, dir, modelFile, trainCmd, m, cut, fams, apps)
}

// perApplication trains a model on the first cut of the trace's slices (source 001's
// per-application setting) and scores it, and the cross-application model m, on the rest.
func perApplication(dir string, fam eval.CorpusFamily, file string, universe []string, m *learned.Model, cut float64) (perApp, error) {
	tr, err := replay.ReadFile(file, replay.ReadOptions{TimeColumn: fam.TimeColumn})
	if err != nil {
		return perApp{}, err
	}
	k := int(cut * float64(len(tr.Counts)))
	head := &replay.Trace{Events: tr.Events, Counts: tr.Counts[:k], Durations: tr.Durations[:k]}
	tail := &replay.Trace{Events: tr.Events, Counts: tr.Counts[k:], Durations: tr.Durations[k:]}
	run, err := eval.KernelRun(filepath.Base(file)+" (first part)", head, fam.Counters, fam.Fixed)
	if err != nil {
		return perApp{}, err
	}
	cfg := m.Training.Config
	start := time.Now()
	own, err := learned.Train([]learned.Run{run}, cfg, nil)
	if err != nil {
		return perApp{}, err
	}
	secs := time.Since(start).Seconds()
	rels := relation.Builtins()
	if fam.Relations != "" {
		fh, err := os.Open(filepath.Join(dir, fam.Relations))
		if err != nil {
			return perApp{}, err
		}
		more, err := relation.ParseFile(fam.Relations, fh)
		fh.Close()
		if err != nil {
			return perApp{}, err
		}
		rels = append(rels, more...)
	}
	opt := eval.Options{Counters: fam.Counters, Relations: relation.BindUniverse(rels, tr.Events, universe)}
	obs, err := eval.FromTrace(tail, fam.Counters, fam.Fixed, opt.Relations)
	if err != nil {
		return perApp{}, err
	}
	opt.Learned = m
	cross, err := eval.Score(obs, opt)
	if err != nil {
		return perApp{}, err
	}
	opt.Learned = own
	ownRes, err := eval.Score(obs, opt)
	if err != nil {
		return perApp{}, err
	}
	return perApp{filepath.Base(file), cross, ownRes, secs}, nil
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func familyTable(b *strings.Builder, rows []scored) {
	fmt.Fprintf(b, "| estimator | mean WAPE | median over traces | RA | DTW-cost | error reduction (median) | worst_ratio (trace: event) | harmed | traces beating bayesperf |\n")
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---|---:|---|\n")
	for _, name := range names {
		var w, ra, dtw, red []float64
		worst, worstAt, harmed := 0.0, "–", 0
		var beat []string
		for _, r := range rows {
			s, ok := r.res.Estimators[name]
			if !ok {
				continue
			}
			w, ra, dtw = append(w, s.WAPE), append(ra, s.RA), append(dtw, s.DTW)
			if v, ok := r.res.ErrorReduction[name]; ok {
				red = append(red, v)
			}
			if s.WorstRatio != nil && *s.WorstRatio > worst {
				worst, worstAt = *s.WorstRatio, fmt.Sprintf("%s: %s", strings.TrimSuffix(r.file, ".csv"), *s.WorstEvent)
			}
			if s.Harmed != nil {
				harmed += *s.Harmed
			}
			if bp, ok := r.res.Estimators[eval.BayesPerf]; ok && name != eval.BayesPerf && s.WAPE < bp.WAPE {
				beat = append(beat, strings.TrimSuffix(r.file, ".csv"))
			}
		}
		if len(w) == 0 {
			continue
		}
		redS := "–"
		if len(red) > 0 {
			redS = fmt.Sprintf("%.2fx", metrics.Median(red))
		}
		beatS := fmt.Sprintf("%d of %d", len(beat), len(w))
		if name == eval.BayesPerf {
			beatS = "–"
		} else if len(beat) > 0 {
			beatS += " (" + strings.Join(beat, ", ") + ")"
		}
		fmt.Fprintf(b, "| %s | %s | %s | %.3f | %.3f | %s | %.2fx (%s) | %d | %s |\n", name, pct(mean(w)), pct(metrics.Median(w)),
			mean(ra), mean(dtw), redS, worst, worstAt, harmed, beatS)
	}
}

func traceTable(b *strings.Builder, rows []scored) {
	show := []string{eval.Linux, eval.Fixed, eval.BayesPerf, eval.MLP, eval.BiGRU}
	fmt.Fprintf(b, "| trace | events | %s |\n|---|---:|%s\n", strings.Join(show, " | "), strings.Repeat("---:|", len(show)))
	for _, r := range rows {
		var cells []string
		for _, n := range show {
			s, ok := r.res.Estimators[n]
			if !ok {
				cells = append(cells, "–")
				continue
			}
			cells = append(cells, fmt.Sprintf("%s / %.2f", pct(s.WAPE), s.RA))
		}
		fmt.Fprintf(b, "| %s | %d | %s |\n", strings.TrimSuffix(r.file, ".csv"), r.res.Events, strings.Join(cells, " | "))
	}
}

func appTable(b *strings.Builder, rows []perApp) (ownWins, crossWins, fixedBeaten, n int) {
	fmt.Fprintf(b, "| trace | slices tested | fixed | bayesperf | mlp (other programs) | mlp (this program) | bigru (other programs) | bigru (this program) |\n")
	fmt.Fprintf(b, "|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		c, o := r.cross.Estimators, r.own.Estimators
		bp := "–"
		if s, ok := c[eval.BayesPerf]; ok {
			bp = pct(s.WAPE)
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s |\n", strings.TrimSuffix(r.file, ".csv"), r.cross.Slices,
			pct(c[eval.Fixed].WAPE), bp, pct(c[eval.MLP].WAPE), pct(o[eval.MLP].WAPE), pct(c[eval.BiGRU].WAPE), pct(o[eval.BiGRU].WAPE))
		for _, name := range []string{eval.MLP, eval.BiGRU} {
			n++
			if o[name].WAPE < c[name].WAPE {
				ownWins++
			} else {
				crossWins++
			}
			if o[name].WAPE < c[eval.Fixed].WAPE {
				fixedBeaten++
			}
		}
	}
	return
}

func write(out, dir, modelFile, trainCmd string, m *learned.Model, cut float64, fams map[string][]scored, apps map[string][]perApp) error {
	rev := "unknown"
	if b, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		rev = strings.TrimSpace(string(b))
	}
	cfg := m.Training.Config
	var b strings.Builder
	fmt.Fprintf(&b, "# Learned correctors (source 001) against the Bayesian model\n\n")
	fmt.Fprintf(&b, "<!-- Generated by `make learned` (go run ./internal/eval/learnedreport) on %s, revision %s. Do not edit: rerun it. -->\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), rev)
	fmt.Fprintf(&b, "Source 001 fits an MLP and a bidirectional GRU that map the kernel's multiplexed readings to the true counts, per event and per application. ")
	fmt.Fprintf(&b, "`inference/learned` implements both (see its doc.go for the inputs and why one network is shared by all events); `bayesperf train` fits them and `bayesperf eval --model FILE` scores them as `mlp` and `bigru` beside the other estimators, on the kernel's round robin as `linux` and `fixed` see it. ")
	fmt.Fprintf(&b, "Metrics are the brief's: per event and interval of 25 slices, WAPE, RA, DTW-cost; error reduction is the geometric mean over events of WAPE_linux / WAPE_X; worst_ratio is the largest WAPE_X / WAPE_linux over events where Linux's WAPE is at least 1%%, harmed counts events with WAPE_X > 1.5 WAPE_linux + 0.01. The learned estimators give no interval (coverage: none).\n\n")
	fmt.Fprintf(&b, "The model (`%s`) was trained on the %d traces of the tuning half of `%s` (all three families together)", modelFile, len(m.Training.Runs), dir)
	if trainCmd != "" {
		fmt.Fprintf(&b, " by `%s`", trainCmd)
	}
	fmt.Fprintf(&b, ": %d training slices (event, slice not counted whole); MLP hidden %v, dropout %.1f, learning rate %g, %d epochs of %d slices; Bi-GRU one layer of %d units per direction, learning rate %g, %d epochs of %d sequences of %d slices; seed %d. ",
		m.Training.Samples, cfg.MLPHidden, cfg.Dropout, cfg.MLPRate, cfg.MLPEpochs, cfg.MLPSamples, cfg.GRUHidden, cfg.GRURate, cfg.GRUEpochs, cfg.GRUChunks, cfg.GRUChunkLen, cfg.Seed)
	fmt.Fprintf(&b, "Final training MSE in log1p units: fixed interpolation %.3f, mlp %.3f, bigru %.3f.\n\n", m.Training.FixedLoss, m.Training.MLPLoss, m.Training.GRULoss)

	fmt.Fprintf(&b, "## Programs the models never saw: the validation half\n\n")
	fmt.Fprintf(&b, "Every program below is in the validation half: the model never saw a run of it. Per family, the mean over traces of each trace's mean WAPE over events (and the median over traces), the mean RA and DTW-cost, the median over traces of the error reduction, the worst worst_ratio over the family's traces, the harmed events summed over traces, and the traces where the estimator's mean WAPE is below bayesperf's.\n\n")
	for _, fam := range eval.CorpusFamilies {
		rows := fams[fam.Prefix]
		fmt.Fprintf(&b, "### %s* (%s; %d traces, %d counters, %s fixed)\n\n", fam.Prefix, fam.Description, len(rows), fam.Counters, strings.Join(fam.Fixed, ","))
		familyTable(&b, rows)
		fmt.Fprintf(&b, "\nPer trace, mean WAPE / RA:\n\n")
		traceTable(&b, rows)
		fmt.Fprintln(&b)
	}
	fmt.Fprintf(&b, "### In short\n\n")
	for _, fam := range eval.CorpusFamilies {
		rows := fams[fam.Prefix]
		avg := func(name string) float64 {
			var w []float64
			for _, r := range rows {
				if s, ok := r.res.Estimators[name]; ok {
					w = append(w, s.WAPE)
				}
			}
			return mean(w)
		}
		bp, ml, gr, fx := avg(eval.BayesPerf), avg(eval.MLP), avg(eval.BiGRU), avg(eval.Fixed)
		verdict := "bayesperf is ahead of both"
		switch {
		case ml < bp && gr < bp:
			verdict = "both learned estimators are ahead of bayesperf"
		case ml < bp:
			verdict = "mlp is ahead of bayesperf"
		case gr < bp:
			verdict = "bigru is ahead of bayesperf"
		}
		fmt.Fprintf(&b, "- %s*: mean WAPE fixed %s, bayesperf %s, mlp %s, bigru %s: %s on the family mean.\n", fam.Prefix, pct(fx), pct(bp), pct(ml), pct(gr), verdict)
	}
	fmt.Fprintf(&b, "\nRead the worst_ratio and harmed columns beside the means: a learned estimator's mean WAPE can beat linux's while its geometric-mean error reduction is below 1 (the typical event made worse) and single events are made many times worse than Linux's scaling. The networks learn a correction of the fixed interpolation that is right on average over the training events, with no relation between events and no notion of its own uncertainty; bayesperf's answer comes with a 95%% interval (see docs/accuracy.md for its coverage).\n\n")
	fmt.Fprintf(&b, "## Per application: trained on the program's own run\n\n")
	fmt.Fprintf(&b, "Source 001 trains per application on 70 runs and tests on other runs of the same program. The corpus has one run per program, so each validation trace is cut in time: a model is trained (same configuration and seed) on its first %.0f%% of slices and tested on the last %.0f%%, beside the tuning-half model (\"other programs\") on the same slices. Mean WAPE over events:\n\n", 100*cut, 100*(1-cut))
	tot, own, cross, beat := 0, 0, 0, 0
	for _, fam := range eval.CorpusFamilies {
		fmt.Fprintf(&b, "### %s*\n\n", fam.Prefix)
		o, c, f, n := appTable(&b, apps[fam.Prefix])
		own, cross, beat, tot = own+o, cross+c, beat+f, tot+n
		fmt.Fprintln(&b)
	}
	var secs []float64
	for _, rows := range apps {
		for _, r := range rows {
			secs = append(secs, r.trainSecond)
		}
	}
	fmt.Fprintf(&b, "Over all (trace, network) pairs: the program's own model beats the other programs' model in %d of %d, and beats fixed in %d of %d. Training one per-application model took %.1f s on average (one core).\n\n", own, tot, beat, tot, mean(secs))
	if math.IsNaN(mean(secs)) {
		return fmt.Errorf("no per-application run")
	}
	return os.WriteFile(out, []byte(b.String()), 0o644)
}
