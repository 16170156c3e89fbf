// Command bayesperf makes existing perf-based tools report corrected hardware counter
// values, with an honest uncertainty, when the kernel multiplexes more events than the
// CPU has counters.
//
// Each subcommand lives in its own file; the list below (subcommands) names them all in
// one place, and this file is otherwise a dispatcher.
package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand: run receives the arguments after the subcommand name and
// returns the process exit status.
type command struct {
	name    string
	summary string // one line for the top-level help
	run     func(args []string) int
}

// subcommands lists every subcommand; init registers them.
var subcommands = []command{
	{name: "attach", summary: "count events of a running process until SIGINT, perf stat -p style, corrected", run: runAttach},
	{name: "bench", summary: "measure what reading a counter through bayesperf costs (bench read)", run: benchMain},
	{name: "eval", summary: "score every estimator against exact truth, live under the virtual PMU or on a trace", run: runEval},
	{name: "list", summary: "list the events this machine offers, or the relations known between events", run: runList},
	{name: "run", summary: "run an unmodified perf-based tool with corrected counter values (drop-in)", run: runMain},
	{name: "sidecar", summary: "serve libbayesperf.so clients on a socket (bayesperf run starts it for you)", run: sidecarMain},
	{name: "stat", summary: "run a command and print its counters as perf stat does, corrected, with 95% intervals", run: runStat},
	{name: "train", summary: "fit the learned estimators (mlp, bigru) on traces and write a model file", run: runTrain},
	{name: "workload", summary: "run a built-in workload with phase behaviour (for demos and eval)", run: runWorkload},
	{name: "version", summary: "print the version of bayesperf", run: runVersion},
}

func init() {
	for _, c := range subcommands {
		register(c)
	}
}

var commands = map[string]command{}

func register(c command) {
	if _, dup := commands[c.name]; dup {
		panic("bayesperf: subcommand registered twice: " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: bayesperf <command> [flags] [-- CMD ARGS...]

bayesperf corrects hardware performance counter values that the kernel had to
multiplex, using the relations between events and their history (BayesPerf).

Commands:
`)
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-8s %s\n", n, commands[n].summary)
	}
	fmt.Fprint(w, "\nRun 'bayesperf <command> --help' for the flags of one command.\n")
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "bayesperf: no command given; run 'bayesperf --help' for the commands")
		os.Exit(exitUsage)
	}
	name := os.Args[1]
	switch name {
	case "-h", "--help", "help":
		usage(os.Stdout)
		return
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "bayesperf: unknown command %q; known: %s (run 'bayesperf --help')\n", name, strings.Join(sortedNames(), ", "))
		os.Exit(exitUsage)
	}
	os.Exit(c.run(os.Args[2:]))
}

func sortedNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
