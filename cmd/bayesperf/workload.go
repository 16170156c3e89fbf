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

func init() {
	register(command{name: "workload", summary: "run a built-in workload with phase behaviour (for demos and eval)", run: runWorkload})
}

func runWorkload(args []string) int {
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	dur := fs.Duration("duration", 3*time.Second, "how long to run")
	seed := fs.Uint64("seed", 1, "seed of the phase sequence (same seed, same phases)")
	list := fs.Bool("list", false, "list the workloads and exit")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: bayesperf workload NAME [--duration D] [--seed N]\n       bayesperf workload --list\n\n")
		fs.PrintDefaults()
	}
	// Accept the name before or after the flags.
	var name string
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *list {
		for _, n := range workload.Names() {
			w, _ := workload.Lookup(n)
			fmt.Printf("%-10s %s\n", n, w.Summary)
		}
		return 0
	}
	if name == "" && fs.NArg() > 0 {
		name = fs.Arg(0)
	}
	if name == "" {
		fs.Usage()
		return 2
	}
	w, err := workload.Lookup(name)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bayesperf workload:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := w.Run(ctx, *dur, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "bayesperf workload:", err)
		return 1
	}
	return 0
}
