package main

import (
	"flag"
	"fmt"
	"os"
	"path"

	"github.com/bayesperf/bayesperf/inference/pmuevents"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
)

const listHelp = `NAME
    bayesperf list - the events this machine offers and the relations between them

SYNOPSIS
    bayesperf list [--relations] [--relation-file FILE] [--pmu-events DIR] [GLOB]

DESCRIPTION
    Without --relations, prints the event names this machine offers, named as
    perf list names them: perf's generic hardware and software events and their
    aliases, cache events, the PMUs in sysfs, and the tracepoints in tracefs
    (mounted on demand as root). With --pmu-events, also the vendor events of
    that pmu-events table.

    With --relations, prints every relation bayesperf knows between events, one
    per line in relation-file syntax, then '#', its source in brackets and why it
    holds:

        page-faults = minor-faults + major-faults   # [builtin] equal except ...

    Sources: builtin (checked against perf on this kernel), file:PATH:LINE (a
    relation file), and for vendor tables metric:NAME@DIR (a metric's formula
    expanded into raw events), subevents:EVENT@DIR (umask bits combined) and the
    like.

    GLOB (shell-style: * ? [...]) keeps the event names it matches, or the
    relations that mention an event it matches; quote it so the shell leaves it
    alone.

OPTIONS
    --relations
        List relations instead of events.
    --relation-file FILE
        Add the relations of FILE (one per line: LHS = RHS, LHS <= RHS or
        LHS >= RHS; '#' comments) to the built-in ones.
    --pmu-events DIR
        Linux's tools/perf/pmu-events/arch directory (the host's table is found
        through mapfile.csv and cpuid), or one CPU directory in it, e.g.
        arch/x86/skylake, to read another CPU's table.

EXIT STATUS
    0 on success, 2 for a usage error (bad flag, unreadable FILE or DIR).
`

func runList(args []string) int {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	rels := fs.Bool("relations", false, "list relations instead of events")
	relFile := fs.String("relation-file", "", "add the relations of this file")
	pmuDir := fs.String("pmu-events", "", "a pmu-events arch directory, or one CPU directory in it")
	if code, stop := parseCmdLine("list", listHelp, fs, args); stop {
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
	var table *pmuevents.Table
	if *pmuDir != "" {
		t, err := loadPMUEvents(*pmuDir)
		if err != nil {
			return exitWith("list", err)
		}
		table = t
	}
	if *rels {
		all, err := loadRelations(*relFile, "")
		if err != nil {
			return exitWith("list", err)
		}
		if table != nil {
			more, _ := table.Relations(pmuevents.HostEnv("/"))
			all = append(all, more...)
		}
		for _, r := range all {
			if !mentions(r, glob) {
				continue
			}
			text := r.Text
			if text == "" {
				text = r.String()
			}
			line := fmt.Sprintf("%-60s # [%s]", text, r.Source)
			if r.Note != "" {
				line += " " + r.Note
			}
			fmt.Println(line)
		}
		return 0
	}
	if *relFile != "" {
		return exitWith("list", usageErr("--relation-file only adds relations: give --relations too"))
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
	if table != nil {
		var names []string
		for _, e := range table.Events {
			names = append(names, e.Name)
		}
		section(fmt.Sprintf("vendor events (pmu-events %s)", table.Dir), names)
	}
	if _, err := perf.FindTracefs(!r.NoMount); err != nil {
		// Without this line a user who may not read tracefs sees no tracepoints, and no why.
		fmt.Fprintf(os.Stderr, "bayesperf list: tracepoints not listed: %s\n", oneLine(err.Error()))
	}
	return 0
}

// mentions reports whether relation r names an event matching glob.
func mentions(r relation.Relation, glob string) bool {
	if glob == "*" {
		return true
	}
	for _, e := range r.Events() {
		if ok, _ := path.Match(glob, e); ok {
			return true
		}
	}
	return false
}
