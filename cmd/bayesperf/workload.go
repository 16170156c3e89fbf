package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/bayesperf/bayesperf/internal/workload"
)

func runWorkload(args []string) int {
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	dur := fs.Duration("duration", 3*time.Second, "how long to run")
	seed := fs.Uint64("seed", 1, "seed of the phase sequence (same seed, same phases)")
	list := fs.Bool("list", false, "list the workloads and exit")
	help := flagHelp(fs, "usage: bayesperf workload NAME [--duration D] [--seed N]\n       bayesperf workload --list\n\n")
	// Accept the name before or after the flags.
	var name string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if code, stop := parseCmdLine("workload", help, fs, args); stop {
		return code
	}
	if *list {
		for _, n := range workload.Names() {
			w, _ := workload.Lookup(n)
			fmt.Printf("%-10s %s\n", n, w.Summary)
		}
		return 0
	}
	rest := fs.Args()
	if name == "" && len(rest) > 0 {
		name, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return exitWith("workload", usageErr("unexpected arguments %q; usage: bayesperf workload NAME [--duration D] [--seed N]", rest))
	}
	if name == "" {
		return exitWith("workload", usageErr("no workload given; usage: bayesperf workload NAME [--duration D] ('bayesperf workload --list' shows the names)"))
	}
	if *dur < 0 {
		return exitWith("workload", usageErr("--duration %v: want a duration such as 3s, not a negative one", *dur))
	}
	w, err := workload.Lookup(name)
	if err != nil {
		return exitWith("workload", usageErr("%v ('bayesperf workload --list' describes them)", err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Run(ctx, *dur, *seed); err != nil {
		return exitWith("workload", err)
	}
	return 0
}
