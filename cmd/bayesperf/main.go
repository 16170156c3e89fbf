// Command bayesperf makes existing perf-based tools report corrected hardware counter
// values, with an honest uncertainty, when the kernel multiplexes more events than the
// CPU has counters.
//
// Each subcommand lives in its own file and registers itself in init with register, so
// that this file stays a dispatcher and subcommands can be added without touching it.
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
