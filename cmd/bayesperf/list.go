package main

import (
	"flag"
	"fmt"
	"os"
	"path"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
)

func init() {
	register(command{name: "list", summary: "list the event names (and built-in relations) known here", run: runList})
}

func runList(args []string) int {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	rels := fs.Bool("relations", false, "list the built-in relations instead of events")
	help := flagHelp(fs, "usage: bayesperf list [--relations] [GLOB]\n\nGLOB filters names, e.g. 'syscalls:sys_enter_*'.\n\n")
	if code, stop := parseCmdLine("list", help, fs, args); stop {
		return code
	}
	glob := "*"
	switch fs.NArg() {
	case 0:
	case 1:
		glob = fs.Arg(0)
	default:
		return exitWith("list", usageErr("one GLOB at most, got %d arguments; quote a glob so the shell leaves it alone", fs.NArg()))
	}
	if _, err := path.Match(glob, ""); err != nil {
		return exitWith("list", usageErr("bad glob %q: %v; use * ? and [...] as in 'syscalls:sys_enter_*'", glob, err))
	}
	if *rels {
		for _, r := range relation.Builtins() {
			fmt.Printf("%-60s # %s\n", r.Text, r.Note)
		}
		return 0
	}
	var r perf.Resolver
	section := func(title string, names []string) {
		var hit []string
		for _, n := range names {
			if ok, _ := path.Match(glob, n); ok {
				hit = append(hit, n)
			}
		}
		if len(hit) == 0 {
			return
		}
		fmt.Printf("%s:\n", title)
		for _, n := range hit {
			fmt.Printf("  %s\n", n)
		}
	}
	section("generic hardware and software events (and aliases)", perf.SymbolNames())
	section("cache events", perf.CacheEventNames())
	var pmus []string
	for _, n := range r.KnownNames() {
		if len(n) > 1 && n[len(n)-1] == '/' {
			pmus = append(pmus, n)
		}
	}
	section("PMU events (sysfs)", pmus)
	section("tracepoints (tracefs)", r.Tracepoints())
	if _, err := perf.FindTracefs(!r.NoMount); err != nil {
		// Without this line a user who may not read tracefs sees no tracepoints, and no why.
		fmt.Fprintf(os.Stderr, "bayesperf list: tracepoints not listed: %s\n", oneLine(err.Error()))
	}
	return 0
}
