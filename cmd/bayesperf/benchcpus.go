package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

const benchCPUsHelp = `NAME
    bayesperf bench cpus - CPU time of system-wide counting, per core and second

SYNOPSIS
    bayesperf bench cpus [--events N] [--counters C] [--duration D] [--json]

DESCRIPTION
    Runs 'bayesperf stat -a -I 1000 --json -o /dev/null' on every online CPU
    while 'sleep' runs, the stream a controller would read, with the first N
    events of a pool of software events and tracepoints (35 by default): with
    the kernel's own scheduling of the events (nothing multiplexes them here:
    the cost of reading them) and on a virtual PMU of C programmable counters
    per CPU (one bayesperf model per CPU, stepped every multiplexing interval
    on its own CPU). Each is run for D and for 2D, and the difference of their
    user+system CPU times, over D, is the cost of one more second of counting,
    without the start-up (listing tracepoints, opening events) that a short run
    would spread over it. It reports that per core, the CPU time of one model's
    slice, and what it makes on a 96-core machine: one model per core, so the
    CPU time grows with the cores.

OPTIONS
    --events N      Events per CPU (default 35).
    --counters C    Programmable counters of the virtual PMU (default 4).
    --duration D    How long each run counts (default 5s).
    --json          One JSON object instead of the table.

EXIT STATUS
    0 when both runs completed; 1 when one failed (system-wide counting
    needs root or perf_event_paranoid <= 0); 2 for a usage error.
`

// benchPool are the events bench cpus takes its first N from: software events, then
// tracepoints with relations between them, then more tracepoints.
var benchPool = []string{
	"cpu-clock", "page-faults", "minor-faults", "major-faults", "context-switches", "cpu-migrations",
	"raw_syscalls:sys_enter", "raw_syscalls:sys_exit", "sched:sched_switch", "sched:sched_wakeup",
	"sched:sched_waking", "sched:sched_migrate_task", "sched:sched_process_fork", "sched:sched_process_exec",
	"sched:sched_process_exit", "syscalls:sys_enter_read", "syscalls:sys_enter_write", "syscalls:sys_enter_openat",
	"syscalls:sys_enter_close", "syscalls:sys_enter_mmap", "syscalls:sys_enter_munmap", "syscalls:sys_enter_futex",
	"syscalls:sys_enter_newfstatat", "syscalls:sys_enter_lseek", "syscalls:sys_enter_ioctl", "syscalls:sys_enter_poll",
	"syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_nanosleep", "syscalls:sys_enter_clock_nanosleep", "syscalls:sys_enter_getpid",
	"kmem:mm_page_alloc", "kmem:mm_page_free", "kmem:kmalloc", "kmem:kfree",
	"exceptions:page_fault_user", "exceptions:page_fault_kernel", "timer:hrtimer_start", "timer:hrtimer_expire_entry",
	"irq:softirq_entry", "irq:softirq_exit", "signal:signal_generate", "signal:signal_deliver",
}

// benchCPUsRun is one measured run.
type benchCPUsRun struct {
	Mode      string     `json:"mode"`               // "kernel" or "virtual"
	CPUSec    [2]float64 `json:"cpu_seconds"`        // runs of D and 2D
	PerCoreMs float64    `json:"ms_per_core_second"` // CPU ms per core and second counted
	SliceUs   float64    `json:"us_per_model_slice"` // virtual: CPU us per model and slice
}

func benchCPUs(args []string) int {
	fail := func(err error) int { return exitWith("bench cpus", err) }
	fs := flag.NewFlagSet("bench cpus", flag.ContinueOnError)
	n := fs.Int("events", 35, "")
	counters := fs.Int("counters", 4, "")
	durStr := fs.String("duration", "5s", "")
	asJSON := fs.Bool("json", false, "")
	if code, stop := parseCmdLine("bench cpus", benchCPUsHelp, fs, args); stop {
		return code
	}
	dur, err := parseSeconds(*durStr)
	switch {
	case err != nil:
		return fail(usageErr("--duration: %w", err))
	case fs.NArg() != 0:
		return fail(usageErr("unexpected argument %q (see 'bayesperf bench --help')", fs.Arg(0)))
	case *n < 1 || *n > len(benchPool):
		return fail(usageErr("--events %d: want 1 to %d", *n, len(benchPool)))
	case *counters < 1 || dur < 100*time.Millisecond:
		return fail(usageErr("--counters must be positive and --duration at least 100ms"))
	}
	self, err := os.Executable()
	if err != nil {
		return fail(fmt.Errorf("find this binary: %w", err))
	}
	cpus, err := perf.OnlineCPUs()
	if err != nil {
		return fail(err)
	}
	evs := strings.Join(benchPool[:*n], ",")
	mux := vpmu.MuxInterval()
	var runs []benchCPUsRun
	for _, mode := range []string{"kernel", "virtual"} {
		r := benchCPUsRun{Mode: mode}
		for k, d := range []time.Duration{dur, 2 * dur} {
			argv := []string{"stat", "-a", "-I", "1000", "--json", "-o", os.DevNull, "-e", evs}
			if mode == "virtual" {
				argv = append(argv, "--virtual-counters", fmt.Sprint(*counters))
			}
			argv = append(argv, "--", "sleep", fmt.Sprintf("%.3f", d.Seconds()))
			cmd := exec.Command(self, argv...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				return fail(fmt.Errorf("%s run: %v: %s", mode, err, strings.TrimSpace(stderr.String())))
			}
			r.CPUSec[k] = (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		}
		perSec := max(r.CPUSec[1]-r.CPUSec[0], 0) / dur.Seconds()
		r.PerCoreMs = 1e3 * perSec / float64(len(cpus))
		if mode == "virtual" {
			r.SliceUs = 1e6 * perSec * mux.Seconds() / float64(len(cpus))
		}
		runs = append(runs, r)
	}
	const bigMachine = 96
	virt := runs[1]
	out := struct {
		CPUs       int            `json:"cpus"`
		Events     int            `json:"events"`
		Counters   int            `json:"counters"`
		DurationS  float64        `json:"duration_s"`
		MuxUs      float64        `json:"mux_interval_us"`
		Runs       []benchCPUsRun `json:"runs"`
		Cores96    float64        `json:"cores_busy_at_96"` // CPU-seconds per second on 96 cores
		VirtualOnK float64        `json:"virtual_over_kernel"`
	}{len(cpus), *n, *counters, dur.Seconds(), float64(mux.Microseconds()), runs,
		bigMachine * virt.PerCoreMs / 1e3, virt.PerCoreMs / max(runs[0].PerCoreMs, 1e-9)}
	if *asJSON {
		b, _ := json.Marshal(out) // plain numbers and strings always marshal
		fmt.Printf("%s\n", b)
		return 0
	}
	fmt.Printf("system-wide counting of %d events on %d CPUs for %v (multiplexing every %v)\n\n", *n, len(cpus), dur, mux)
	fmt.Printf("  %-8s %20s %22s %20s\n", "mode", "CPU s (D, 2D)", "ms per core-second", "us per model-slice")
	for _, r := range runs {
		su := "-"
		if r.SliceUs > 0 {
			su = fmt.Sprintf("%.1f", r.SliceUs)
		}
		fmt.Printf("  %-8s %9.3f %10.3f %22.2f %20s\n", r.Mode, r.CPUSec[0], r.CPUSec[1], r.PerCoreMs, su)
	}
	fmt.Printf("\nvirtual PMU (%d counters) over the kernel's scheduling: %.1fx the CPU time\n", *counters, out.VirtualOnK)
	fmt.Printf("on %d cores (one model per core, each stepped on its core): %.2f cores busy\n", bigMachine, out.Cores96)
	return 0
}
