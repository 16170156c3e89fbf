package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bayesperf/bayesperf/inference/learned"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/internal/eval"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error { *l = append(*l, s); return nil }

// traceFormat says what a trace must look like, for the errors of a malformed one.
const traceFormat = "a trace is a CSV file: a header naming the events, then one row of exact counts per slice ('bayesperf eval --save-trace FILE' writes one)"

const evalUsage = `usage:
  bayesperf eval -e EVENTS --counters N [--fixed EVENTS] [-I MS] [--relations FILE]
                 [--collector auto|read|bpf] [--mux-interval D] [--save-trace FILE]
                 [--online] [--linux-own] [--json] [--plot FILE] -- CMD ARGS...
  bayesperf eval --trace FILE.csv --counters N [--fixed EVENTS] [--window K]
                 [--relations FILE] [--time-column NAME] [--model FILE] [--online]
                 [--linux-own] [--json] [--plot FILE]
  bayesperf eval --reads FILE.csv [--json] [--plot FILE]

Live mode runs CMD with every event opened for it and multiplexes them on a virtual PMU
of N counters (plus the --fixed events, which always count), exactly as the kernel
rotates flexible groups, while a hidden always-on copy of every event records the truth.
The copies are read at every slice boundary by a BPF program in the kernel when this
process can load one (root, or CAP_BPF and CAP_PERFMON), otherwise with read(2); the
table and --json say which (--collector forces one).
Replay mode reads a CSV of exact per-slice counts and simulates the kernel's round robin.
Every estimator (linux, fixed, linear, bayesperf-rr, and bayesperf on its own schedule
when available) sees the same observations and is scored against the truth. With
--model FILE (written by 'bayesperf train'), the learned estimators mlp and bigru are
scored too, on the kernel's multiplexing as linux and fixed see it. With --linux-own,
linux-own is scored too: the kernel's count*enabled/running of the readings bayesperf's
own schedule took. Where bayesperf and linux differ, linux-own tells which part is the
schedule's (what was read) and which the model's (what was made of it), as bayesperf-rr
does from the other side.
Reads mode scores a drop-in run on a real PMU from the rows 'bayesperf run --truth
FILE.csv' wrote, one per read of a hardware event by the tool: per interval (an event's
reads), linux is what perf stat -I prints from the kernel's values and bayesperf-rr what
it prints from the values it was served (the kernel's own multiplexing corrected, with
--correct bayesperf), against the exact count of pinned copies.

EVENTS use perf's syntax: task-clock,page-faults,{a,b},sched:sched_switch,syscalls:*...

The model takes an exact relation (every relation of a --relations file, and the exact
built-ins) as true in every slice. When the truth breaks one, eval warns on stderr and
scores the run anyway: estimates of its events are then not to be trusted. A trace
breaks it in a row off by more than 2 counts and a thousandth of its terms (the row
farthest off is named), or over the whole run; a live run, whose copies are read one
after another while CMD runs on, only over the whole run.

Exit status: 0 after scoring; 2 for a usage error (bad flag, unknown event, an unreadable
or malformed --relations or --trace file); 127 when CMD cannot be started; 1 for another
failure. Each failure is one line on stderr.

Flags:
`

func runEval(args []string) int {
	c := newEvalCmd()
	if code, stop := parseCmdLine("eval", flagHelp(c.fs, evalUsage), c.fs, args); stop {
		return code
	}
	fail := func(err error) int { return exitWith("eval", err) }
	if *c.reads != "" {
		return c.scoreReads(fail)
	}
	if *c.counters < 1 {
		return fail(usageErr("--counters %d: a PMU has at least 1 counter", *c.counters))
	}
	rels, err := loadRelations(*c.relFile, "")
	if err != nil {
		return fail(err)
	}
	var lm *learned.Model
	if *c.modelFile != "" {
		if lm, err = loadModel(*c.modelFile); err != nil {
			return fail(err)
		}
	}
	var r perf.Resolver
	universe := append(perf.SymbolNames(), r.Tracepoints()...)
	opt := eval.Options{Counters: *c.counters, Learned: lm, LinuxOwn: *c.linuxOwn}
	var (
		obs           eval.Observations
		title         string
		collectorUsed string // live: "read" or "bpf"
	)
	if *c.trace != "" {
		if obs, title, err = c.replay(rels, universe, &opt); err != nil {
			return fail(err)
		}
	} else {
		var code int
		var done bool
		if obs, title, collectorUsed, code, done = c.live(rels, universe, &opt, fail); done {
			return code
		}
	}
	opt.Online = *c.online
	res, err := eval.Score(obs, opt)
	if err != nil {
		return fail(err)
	}
	res.Collector = collectorUsed
	return writeResult(res, title, *c.asJSON, *c.plotFile, fail)
}

// evalCmd is bayesperf eval's command line.
type evalCmd struct {
	fs                                    *flag.FlagSet
	events, fixed                         listFlag
	counters, interval, window            *int
	mux                                   *time.Duration
	relFile, collector, trace, timeCol    *string
	saveTrace, plotFile, modelFile, reads *string
	online, asJSON, linuxOwn              *bool
	cf                                    statFlags
}

func newEvalCmd() *evalCmd {
	c := &evalCmd{fs: flag.NewFlagSet("eval", flag.ContinueOnError)}
	fs := c.fs
	fs.Var(&c.events, "e", "events to measure (perf syntax; repeatable)")
	fs.Var(&c.fixed, "fixed", "events on fixed counters: they always count (repeatable)")
	c.counters = fs.Int("counters", 4, "programmable counters of the (virtual) PMU")
	c.interval = fs.Int("I", 100, "live: reporting interval, ms")
	c.mux = fs.Duration("mux-interval", 0, "live: multiplexing interval (default: the kernel's perf_event_mux_interval_ms)")
	c.relFile = fs.String("relations", "", "relation file to add to the built-in relations")
	c.collector = fs.String("collector", "auto", "live: how counters are read: bpf (in-kernel snapshots at each slice), read (read(2) per slice), or auto: bpf when this process can load it, else read")
	c.trace = fs.String("trace", "", "replay: trace CSV of exact per-slice counts")
	c.window = fs.Int("window", 25, "replay: slices per reporting interval")
	c.timeCol = fs.String("time-column", "", "replay: metadata column holding each slice's duration")
	c.online = fs.Bool("online", false, "score the live values (each interval estimated right after it ends) instead of the final, smoothed ones")
	c.linuxOwn = fs.Bool("linux-own", false, "also score linux-own, the kernel's scaling of the readings bayesperf's own schedule took")
	c.asJSON = fs.Bool("json", false, "print exactly one JSON object instead of the table")
	c.saveTrace = fs.String("save-trace", "", "live: also write the run's exact per-slice counts as a trace CSV (replay it with --trace FILE --time-column time_ns)")
	c.plotFile = fs.String("plot", "", "draw truth and estimates of the worst events and the errors to FILE.png or FILE.svg")
	c.modelFile = fs.String("model", "", "also score the learned estimators mlp and bigru of FILE (written by 'bayesperf train')")
	c.reads = fs.String("reads", "", "score the reads of a drop-in run written by 'bayesperf run --truth FILE.csv'")
	fs.BoolVar(&c.cf.allCPUs, "a", false, "live: count every task on every online CPU while CMD runs, one virtual PMU and one model per CPU, and score each CPU")
	fs.StringVar(&c.cf.cpuList, "C", "", "live: as -a, on the CPUs of a list (0-3,6)")
	return c
}

// scoreReads scores the reads of a drop-in run (--reads FILE).
func (c *evalCmd) scoreReads(fail func(error) int) int {
	if len(c.events) > 0 || c.fs.NArg() > 0 || *c.trace != "" {
		return fail(usageErr("--reads scores a file: do not give -e, --trace or a command"))
	}
	f, err := os.Open(*c.reads)
	if err != nil {
		return fail(usageError{err})
	}
	res, err := eval.ScoreReads(f)
	f.Close()
	if err != nil {
		return fail(usageError{fmt.Errorf("%s: %w", *c.reads, err)})
	}
	return writeResult(res, "reads "+*c.reads+" (bayesperf run --truth; the kernel multiplexes)", *c.asJSON, *c.plotFile, fail)
}

// replay replays --trace FILE: the observations, the report's title; it sets opt's
// relations and window.
func (c *evalCmd) replay(rels []relation.Relation, universe []string, opt *eval.Options) (obs eval.Observations, title string, err error) {
	if len(c.events) > 0 || c.fs.NArg() > 0 {
		return obs, "", usageErr("--trace replays a file: do not give -e or a command")
	}
	if *c.window < 1 {
		return obs, "", usageErr("--window %d: an interval has at least 1 slice", *c.window)
	}
	tr, err := replay.ReadFile(*c.trace, replay.ReadOptions{TimeColumn: *c.timeCol})
	if err != nil {
		return obs, "", (usageError{fmt.Errorf("%w; %s", err, traceFormat)})
	}
	opt.Relations = relation.BindUniverse(rels, tr.Events, universe)
	warnBroken(*c.trace, tr, opt.Relations, true)
	opt.Window = *c.window
	if obs, err = eval.FromTrace(tr, *c.counters, splitList(c.fixed), opt.Relations); err != nil {
		return obs, "", (usageError{err})
	}
	title = "trace " + *c.trace
	return obs, title, nil
}

// live runs the command under the virtual PMU: the observations, the report's title and
// the collector used, or done with the exit code when there is nothing more to do (an
// error, or the per-CPU results written).
func (c *evalCmd) live(rels []relation.Relation, universe []string, opt *eval.Options, fail func(error) int) (obs eval.Observations, title, collectorUsed string, code int, done bool) {
	switch {
	case len(c.events) == 0 && c.fs.NArg() == 0:
		return obs, "", "", fail(usageErr("nothing to evaluate; usage: bayesperf eval -e EVENTS [flags] -- CMD [ARGS...] or bayesperf eval --trace FILE.csv (see 'bayesperf eval --help')")), true
	case len(c.events) == 0:
		return obs, "", "", fail(usageErr("no events given; add -e EVENTS before the command (e.g. -e task-clock,page-faults)")), true
	case c.fs.NArg() == 0:
		return obs, "", "", fail(usageErr("no command given; usage: bayesperf eval -e EVENTS [flags] -- CMD [ARGS...]")), true
	}
	coll, err := eval.ResolveCollector(*c.collector)
	if err != nil {
		return obs, "", "", fail(usageErr("--collector %s: want auto, read or bpf", *c.collector)), true
	}
	if *c.mux != 0 && *c.mux < time.Millisecond {
		return obs, "", "", fail(usageErr("--mux-interval %v: want at least 1ms (the kernel's minimum), or leave it out for the kernel's", *c.mux)), true
	}
	if *c.interval < 1 {
		return obs, "", "", fail(usageErr("-I %d: the reporting interval must be at least 1 ms", *c.interval)), true
	}
	evs, err := perf.ParseEvents(strings.Join(c.events, ","))
	if err != nil {
		return obs, "", "", fail(eventListErr(err)), true
	}
	evs, fixedIdx, err := withFixed(evs, splitList(c.fixed))
	if err != nil {
		return obs, "", "", fail(err), true
	}
	names := make([]string, len(evs))
	for i, e := range evs {
		names[i] = e.Name
	}
	names = perf.Distinct(names) // as eval.RunLive names them
	opt.Relations = relation.BindUniverse(rels, names, universe)
	muxIv := *c.mux
	if muxIv <= 0 {
		muxIv = vpmu.MuxInterval()
	}
	opt.Window = max(1, int((time.Duration(*c.interval)*time.Millisecond+muxIv/2)/muxIv))
	cmd, err := lookCommand(c.fs.Args())
	if err != nil {
		return obs, "", "", fail(err), true
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if *c.asJSON {
		cmd.Stdout = os.Stderr // keep stdout for exactly one JSON object
	}
	live := eval.Live{Events: evs, Fixed: fixedIdx, Counters: *c.counters, Interval: muxIv, Rels: opt.Relations, Collector: coll}
	cpus, err := c.cf.targetCPUs()
	if err != nil {
		return obs, "", "", fail(err), true
	}
	if cpus != nil {
		if *c.saveTrace != "" || *c.plotFile != "" {
			return obs, "", "", fail(usageErr("-a and -C score each CPU: --save-trace and --plot take one run")), true
		}
		live.Collector = "read"
		runs, err := eval.RunLiveCPUs(live, cpus, cmd)
		if err != nil {
			return obs, "", "", fail(err), true
		}
		opt.Online = *c.online
		return obs, "", "", writeCPUResults(runs, cpus, *opt, strings.Join(c.fs.Args(), " "), *c.asJSON, fail), true
	}
	lr, err := eval.RunLive(live, cmd)
	if err != nil {
		return obs, "", "", fail(err), true
	}
	if lr.ExitErr != nil {
		fmt.Fprintf(os.Stderr, "bayesperf eval: %s: %v (scoring the run anyway)\n", c.fs.Arg(0), lr.ExitErr)
	}
	obs = lr.Obs
	tr := lr.Trace()
	warnBroken("the run", tr, opt.Relations, false)
	if *c.saveTrace != "" {
		f, err := os.Create(*c.saveTrace)
		if err != nil {
			return obs, "", "", fail(fmt.Errorf("create trace file: %w", err)), true
		}
		werr := tr.WriteCSV(f)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return obs, "", "", fail(werr), true
		}
	}
	title = fmt.Sprintf("'%s' (%.2f s, multiplexing every %v, collector %s)", strings.Join(c.fs.Args(), " "), float64(lr.WallNs)/1e9, lr.Interval, lr.Collector)
	collectorUsed = lr.Collector
	return obs, title, collectorUsed, 0, false
}

// warnBroken tells, on stderr, which exact relations the exact counts of what (a trace
// file, or a live run, whose rows are checked only as totals: see BrokenRelations) break:
// the model assumes them in every slice, so the estimates of their events are then not
// to be trusted.
func warnBroken(what string, tr *replay.Trace, rels []relation.Relation, rows bool) {
	for _, b := range eval.BrokenRelations(tr, rels, rows) {
		fmt.Fprintf(os.Stderr, "bayesperf eval: warning: %s: exact relation %s; bayesperf assumes it in every slice, so its events' estimates are not to be trusted (drop the relation or mend the data)\n", what, b)
	}
}

// withFixed returns the indices of the fixed events in evs, appending those not among
// them (each in a group of its own).
func withFixed(evs []perf.EventDesc, fixed []string) ([]perf.EventDesc, []int, error) {
	var fixedIdx []int
	for _, f := range fixed {
		idx := -1
		for i, e := range evs {
			if e.Name == f {
				idx = i
			}
		}
		if idx < 0 {
			more, err := perf.ParseEvents(f)
			if err != nil {
				return nil, nil, eventListErr(fmt.Errorf("--fixed: %w", err))
			}
			for _, m := range more {
				m.Group = len(evs) + 1000
				evs = append(evs, m)
				fixedIdx = append(fixedIdx, len(evs)-1)
			}
			continue
		}
		fixedIdx = append(fixedIdx, idx)
	}
	return evs, fixedIdx, nil
}

// writeResult prints res as the table (or JSON) and draws the plot when asked.
func writeResult(res *eval.Result, title string, asJSON bool, plotFile string, fail func(error) int) int {
	var out io.Writer = os.Stdout
	if asJSON {
		if err := res.WriteJSON(out); err != nil {
			return fail(err)
		}
	} else {
		res.WriteTable(out, title)
	}
	if plotFile != "" {
		if err := eval.Plot(res, plotFile); err != nil {
			return fail(err)
		}
	}
	return 0
}

// splitList splits repeated comma-separated flag values (no groups or PMU terms in fixed
// event names).
func splitList(l []string) []string {
	var out []string
	for _, s := range l {
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

// loadModel reads a model file written by bayesperf train; a bad file is a usage error.
func loadModel(file string) (*learned.Model, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, usageError{fmt.Errorf("open model: %w", err)}
	}
	defer f.Close()
	m, err := learned.Load(f)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: %w", file, err)}
	}
	return m, nil
}

// writeCPUResults scores each CPU's run and prints its table (or, with asJSON, one
// object {"cpus": [...]} of the CPUs' results, each with its "cpu"), then, in the table,
// bayesperf's error reduction on every CPU and their median.
func writeCPUResults(runs []*eval.LiveRun, cpus []int, opt eval.Options, command string, asJSON bool, fail func(error) int) int {
	type cpuResult struct {
		CPU int `json:"cpu"`
		*eval.Result
	}
	var all []cpuResult
	var reds []float64
	var line strings.Builder
	for i, lr := range runs {
		res, err := eval.Score(lr.Obs, opt)
		if err != nil {
			return fail(fmt.Errorf("CPU %d: %w", cpus[i], err))
		}
		res.Collector = lr.Collector
		all = append(all, cpuResult{cpus[i], res})
		if r, ok := res.ErrorReduction[eval.BayesPerf]; ok {
			reds = append(reds, r)
			fmt.Fprintf(&line, " CPU%d %.2fx", cpus[i], r)
		}
		if !asJSON {
			res.WriteTable(os.Stdout, fmt.Sprintf("CPU %d, every task, while '%s' ran (%.2f s, multiplexing every %v)", cpus[i], command, float64(lr.WallNs)/1e9, lr.Interval))
		}
	}
	if asJSON {
		b, err := json.Marshal(struct {
			CPUs []cpuResult `json:"cpus"`
		}{all})
		if err != nil {
			return fail(fmt.Errorf("encode results: %w", err))
		}
		fmt.Printf("%s\n", b)
		return 0
	}
	if len(reds) > 0 {
		fmt.Printf("\nbayesperf's error reduction per CPU:%s; median %.2fx\n", line.String(), metrics.Median(reds))
	}
	return 0
}
