package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/bayesperf/bayesperf/internal/bench"
)

const benchHelp = `NAME
    bayesperf bench read - ns per counter read: kernel, shim mirror, floor, rdpmc
    (bayesperf bench cpus --help: CPU time of system-wide counting per core)

SYNOPSIS
    bayesperf bench read [--json] [--iterations N] [--batches K]
                         [--age-samples N] [--seed S] [--readbench PATH] [--shim PATH]

DESCRIPTION
    Runs bayesperf-readbench (a C program) once under 'bayesperf run', so that
    libbayesperf.so is preloaded and a sidecar keeps a mirror of its perf event,
    and reports from that one run:

    native   ns per read(2) system call on a counting perf fd: the event is
             task-clock of a child that sleeps, read with TOTAL_TIME_ENABLED and
             TOTAL_TIME_RUNNING, as perf stat reads a target;
    shim     ns per read() of the same fd, which the shim serves from the
             sidecar's seqlock mirror page without a system call;
    floor    ns per raw seqlock copy of { value, enabled, running } from a page
             of the mirror's layout in the same process: the least any read of
             shared memory costs. The shim adds to it a clock_gettime of
             CLOCK_MONOTONIC_COARSE (to check the mirror's age with a margin of
             one kernel tick; shown on its own line, with CLOCK_MONOTONIC, which
             the shim reads only when the coarse clock cannot tell) and its fd
             lookup;
    rdpmc    ns per self-monitoring read through the kernel's user page with the
             rdpmc instruction, where the kernel sets cap_user_rdpmc; otherwise
             null, with the reason (no PMU, not x86, ...);
    age      p50 and p99 of how old the values a shim read returns are, in us:
             the time of the read minus the time of the sidecar's kernel read
             behind the values (update_ns of the mirror page, which the program
             maps like the shim does), over reads spaced by 50-250 us of seeded
             random sleep.

    The methods are timed in batches, interleaved round by round so that all of
    them see the same load; figures are medians over batches, with p10 and p90.
    The run fails if any timed shim read was not served from the mirror. The
    share of the run's mirror reads that read the precise clock is printed
    (from bayesperf run --stats, precise_clock_reads). The acceptance bounds of
    the design (shim >= 15x cheaper than native, within 10 ns of the floor)
    are printed with whether this run meets them; they never change what is
    measured. Runs take about a second; on a busy machine the
    spread widens but the medians hold.

OPTIONS
    --json          Print one JSON object instead of the table. Fields:
                    native_read_ns, shim_read_ns, floor_ns, rdpmc_ns (null when
                    unavailable, with rdpmc_reason), age_p50_us, age_p99_us
                    (null when unavailable, with age_reason), clock_ns
                    (coarse), precise_clock_ns, native_over_shim,
                    shim_over_floor, shim_above_floor_ns, precise_clock_share,
                    *_spread {p10,p50,p90,n}, age_max_us, age_samples,
                    age_ambiguous, batches, batch_reads, mirror_reads,
                    passthrough_reads, sync_refreshes, precise_clock_reads.
    --iterations N  Timed reads per method (default 200000), in K batches of
                    N/K reads each.
    --batches K     Timed batches per method, the unit of the spreads
                    (default 200).
    --age-samples N Shim reads sampled for the data age (default 2000; 0: none).
    --seed S        Seed of the spacing of age samples (default 1).
    --readbench PATH
                    The C program (default: bayesperf-readbench next to this
                    binary, or $BAYESPERF_READBENCH). 'make build' builds it.
    --shim PATH     libbayesperf.so, passed to 'bayesperf run'.

EXAMPLES
    bayesperf bench read
    bayesperf bench read --json --iterations 100000 --batches 100

EXIT STATUS
    0 when the run completed (whether or not the bounds hold); 1 when it
    failed; 2 for a usage error.
`

func benchMain(args []string) int {
	fail := func(err error) int { return exitWith("bench read", err) }
	if len(args) == 0 {
		return exitWith("bench", usageErr("no benchmark given; usage: bayesperf bench read [flags] (see 'bayesperf bench --help')"))
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		fmt.Print(benchHelp)
		return 0
	case "read":
	case "cpus":
		return benchCPUs(args[1:])
	default:
		return exitWith("bench", usageErr("unknown benchmark %q; known: read, cpus (see 'bayesperf bench --help')", args[0]))
	}
	fs := flag.NewFlagSet("bench read", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "")
	iters := fs.Int("iterations", 200000, "")
	batches := fs.Int("batches", 200, "")
	ages := fs.Int("age-samples", 2000, "")
	seed := fs.Uint64("seed", 1, "")
	readbench := fs.String("readbench", os.Getenv("BAYESPERF_READBENCH"), "")
	shimPath := fs.String("shim", "", "")
	if code, stop := parseCmdLine("bench", benchHelp, fs, args[1:]); stop {
		return code
	}
	switch {
	case fs.NArg() != 0:
		return fail(usageErr("unexpected argument %q (see 'bayesperf bench --help')", fs.Arg(0)))
	case *iters <= 0 || *batches <= 0 || *ages < 0:
		return fail(usageErr("--iterations and --batches must be positive, --age-samples not negative"))
	case *iters < *batches:
		return fail(usageErr("--iterations %d is fewer than one read per batch of --batches %d; raise --iterations or lower --batches", *iters, *batches))
	}
	self, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("find this binary: %w", err))
	}
	if *readbench == "" {
		*readbench = filepath.Join(filepath.Dir(self), "bayesperf-readbench")
	}
	if st, err := os.Stat(*readbench); err != nil || !st.Mode().IsRegular() {
		return fail(usageErr("no readbench program at %s; build it with 'make build', or pass --readbench PATH", *readbench))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, _, err := bench.RunRead(ctx, bench.Options{
		Bayesperf: self, Readbench: *readbench, Shim: *shimPath,
		Batches: *batches, BatchReads: *iters / *batches, AgeSamples: *ages, Seed: *seed,
	})
	if err != nil {
		return fail(err)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return fail(fmt.Errorf("write JSON: %w", err))
		}
		return 0
	}
	if err := res.WriteTable(os.Stdout); err != nil {
		return fail(err)
	}
	return 0
}
