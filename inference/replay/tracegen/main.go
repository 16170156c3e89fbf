// Command tracegen records a trace of exact per-interval event counts of a real program,
// for replay by package replay and `bayesperf eval --trace`.
//
// It runs the program under `perf stat -I MS -x,` with software events and tracepoints,
// which the kernel never multiplexes, so every count is exact. All events are put in one
// event group: perf then reads them with a single group read at each interval tick, so
// every event's row covers exactly the same time span (read one by one, event k would be
// read some 50 µs after event k-1 and rows would be skewed against each other). With
// -syscalls N it first runs the program once counting every syscalls:sys_enter_*
// tracepoint (a census; perf takes some 15 s to enable all of them) and keeps the N most
// frequent, so that raw_syscalls:sys_enter is (nearly) the sum of the recorded
// syscalls:sys_enter_* events; it prints how close.
//
//	go run ./inference/replay/tracegen -o trace.csv -syscalls 12 -- gzip -9 -k file
//
// With -syscalls all it keeps every syscall-entry tracepoint the census saw at least
// once, so raw_syscalls:sys_enter equals their sum over the run: exactly, unless the
// recording run makes a syscall the census run did not (a program whose syscalls vary
// from run to run), or enters a syscall that has no syscalls:sys_enter_* tracepoint
// (an unimplemented syscall number); the report line
// "raw_syscalls:sys_enter = sum(syscalls:sys_enter_*)" says how close it came. Rows can
// still be off by one at an interval tick. -syscalls 0 records no syscall tracepoints.
//
//	go run ./inference/replay/tracegen -o trace.csv -syscalls all -- tar -xf file.tar
//
// With -callgrind N it instead runs the program under valgrind's callgrind with cache
// and branch simulation, dumping the event totals every N basic blocks: one row per
// dump, 17 hardware-like events (Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim Ge
// sysCount sysTime sysCpuTime) with a basic_blocks column as the time base. Callgrind
// counts a single process (children are not followed). The per-part totals are checked
// against callgrind's own "Collected" totals, and the cache and branch inequalities
// (misses <= accesses) row by row.
//
//	go run ./inference/replay/tracegen -o trace.csv -callgrind 2000000 -- gzip -c file
//
// With -derived (callgrind only) six totals follow the 17 events, each the exact sum of
// callgrind events in every row: L1_misses = I1mr + D1mr + D1mw, LL_misses = ILmr + DLmr
// + DLmw, D1_misses = D1mr + D1mw, D_accesses = Dr + Dw, Br_total = Bc + Bi, Br_misses =
// Bcm + Bim. The identities and the inequalities between the totals are checked row by row.
//
// The program's stdout is discarded unless -stdout is given; its stderr is kept.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// defaultEvents are software events and tracepoints that real programs exercise and that
// are tied by relations (page-faults = minor + major, faults seen by the exceptions
// tracepoints, context-switches = sched:sched_switch, forks and exits, page allocations).
var defaultEvents = []string{
	"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches",
	"cpu-migrations", "raw_syscalls:sys_enter", "raw_syscalls:sys_exit",
	"sched:sched_switch", "sched:sched_wakeup", "sched:sched_process_fork",
	"sched:sched_process_exec", "sched:sched_process_exit",
	"exceptions:page_fault_user", "exceptions:page_fault_kernel",
	"kmem:mm_page_alloc", "kmem:mm_page_free", "kmem:kmalloc", "kmem:kfree",
	"filemap:mm_filemap_add_to_page_cache",
}

func main() {
	out := flag.String("o", "", "output trace CSV (required)")
	ms := flag.Int("I", 10, "interval in ms (perf's minimum is 10)")
	events := flag.String("e", strings.Join(defaultEvents, ","), "comma-separated events")
	nsys := syscallsFlag(12)
	flag.Var(&nsys, "syscalls", "also record the N most frequent syscalls:sys_enter_* of the program, or `all` (N|all) that it makes")
	keepStdout := flag.Bool("stdout", false, "keep the program's stdout")
	cgBBs := flag.Int("callgrind", 0, "record with callgrind, one row per N basic blocks, instead of perf")
	derived := flag.Bool("derived", false, "with -callgrind: add exact derived totals (L1_misses, LL_misses, D1_misses, D_accesses, Br_total, Br_misses)")
	flag.Parse()
	cmd := flag.Args()
	if *out == "" || len(cmd) == 0 {
		fmt.Fprintln(os.Stderr, "usage: tracegen -o FILE [-I MS] [-e EVENTS] [-syscalls N|all] -- CMD ARGS")
		os.Exit(2)
	}
	var err error
	if *cgBBs > 0 {
		err = runCallgrind(*out, *cgBBs, *derived, *keepStdout, cmd)
	} else {
		err = run(*out, *ms, strings.Split(*events, ","), int(nsys), *keepStdout, cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
}

// allSyscalls, as run's nsys, keeps every syscall the census saw (-syscalls all).
const allSyscalls = -1

// syscallsFlag is -syscalls: a number of syscalls to keep, or "all" (allSyscalls).
type syscallsFlag int

func (f *syscallsFlag) String() string {
	if *f < 0 {
		return "all"
	}
	return strconv.Itoa(int(*f))
}

func (f *syscallsFlag) Set(s string) error {
	if s == "all" {
		*f = allSyscalls
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a number of syscalls (0 for none) or all, not %q", s)
	}
	*f = syscallsFlag(n)
	return nil
}

// run records cmd into out. nsys > 0 adds the program's nsys most frequent syscall-entry
// tracepoints to events, allSyscalls every one it makes, 0 none.
func run(out string, ms int, events []string, nsys int, keepStdout bool, cmd []string) error {
	if nsys != 0 {
		sys, err := topSyscalls(nsys, keepStdout, cmd)
		if err != nil {
			return err
		}
		have := make(map[string]bool, len(events))
		for _, e := range events {
			have[e] = true
		}
		for _, e := range sys {
			if !have[e] {
				events = append(events, e)
			}
		}
	}
	tmp, err := os.CreateTemp("", "tracegen-*.csv")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"stat", "-I", strconv.Itoa(ms), "-x,", "-o", tmp.Name(),
		"-e", "{" + strings.Join(events, ",") + "}", "--"}
	if err := perf(append(args, cmd...), keepStdout); err != nil {
		return err
	}
	f, err := os.Open(tmp.Name())
	if err != nil {
		return fmt.Errorf("open perf output: %w", err)
	}
	tr, err := replay.ParsePerfStatInterval(f)
	f.Close()
	if err != nil {
		return err
	}
	if err := writeTrace(out, tr, "intervals", ""); err != nil {
		return err
	}
	report(tr)
	return nil
}

// writeTrace writes tr as CSV to the file out and says so on stderr: its rows (called
// rows), events and size, then note.
func writeTrace(out string, tr *replay.Trace, rows, note string) error {
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	fmt.Fprintf(os.Stderr, "tracegen: %s: %d %s x %d events, %d bytes%s\n", out, tr.Slices(), rows, len(tr.Events), buf.Len(), note)
	return nil
}

func perf(args []string, keepStdout bool) error {
	c := exec.Command("perf", args...)
	if keepStdout {
		c.Stdout = os.Stdout
	}
	c.Stderr = os.Stderr
	if err := c.Run(); err != nil {
		return fmt.Errorf("run perf %s: %w", strings.Join(args, " "), err)
	}
	return nil
}

// topSyscalls runs the program once counting every syscall-entry tracepoint and returns
// the n most frequent (n < 0: every one seen at least once), most frequent first.
func topSyscalls(n int, keepStdout bool, cmd []string) ([]string, error) {
	tmp, err := os.CreateTemp("", "tracegen-sys-*.csv")
	if err != nil {
		return nil, fmt.Errorf("create temp file: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if err := perf(append([]string{"stat", "-x,", "-o", tmp.Name(), "-e", "syscalls:sys_enter_*", "--"}, cmd...), keepStdout); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("read syscall census: %w", err)
	}
	type kv struct {
		name string
		n    float64
	}
	var all []kv
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) < 3 || strings.HasPrefix(f[0], "#") {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil || v <= 0 {
			continue
		}
		all = append(all, kv{f[2], v})
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].n > all[j].n })
	var names []string
	var total, kept float64
	for i, s := range all {
		total += s.n
		if n < 0 || i < n {
			kept += s.n
			names = append(names, s.name)
		}
	}
	if n < 0 {
		fmt.Fprintf(os.Stderr, "tracegen: %d distinct syscalls (%.0f entries), keeping all of them\n", len(all), total)
	} else {
		fmt.Fprintf(os.Stderr, "tracegen: %d distinct syscalls, the top %d make %.2f%% of entries\n", len(all), len(names), 100*kept/math.Max(total, 1))
	}
	return names, nil
}

// report prints how well the relations we expect hold row by row, so that a reader of
// the trace knows which ones are exact.
func report(tr *replay.Trace) {
	idx := func(n string) int { return tr.EventIndex(n) }
	check := func(label string, lhs int, rhs []int) {
		if lhs < 0 {
			return
		}
		var bad int
		var sumL, sumR, sumAbs float64
		for _, row := range tr.Counts {
			var r float64
			for _, j := range rhs {
				if j >= 0 {
					r += float64(row[j])
				}
			}
			d := float64(row[lhs]) - r
			if d != 0 {
				bad++
			}
			sumL += float64(row[lhs])
			sumR += r
			sumAbs += math.Abs(d)
		}
		fmt.Fprintf(os.Stderr, "tracegen: %-60s rows off: %d/%d, total lhs %.0f rhs %.0f, sum|diff| %.0f\n", label, bad, len(tr.Counts), sumL, sumR, sumAbs)
	}
	check("page-faults = minor-faults + major-faults", idx("page-faults"), []int{idx("minor-faults"), idx("major-faults")})
	check("context-switches = sched:sched_switch", idx("context-switches"), []int{idx("sched:sched_switch")})
	check("page-faults = exceptions:page_fault_user + _kernel", idx("page-faults"), []int{idx("exceptions:page_fault_user"), idx("exceptions:page_fault_kernel")})
	var sys []int
	for i, n := range tr.Events {
		if strings.HasPrefix(n, "syscalls:sys_enter_") {
			sys = append(sys, i)
		}
	}
	check("raw_syscalls:sys_enter = sum(syscalls:sys_enter_*)", idx("raw_syscalls:sys_enter"), sys)
	check("raw_syscalls:sys_enter = raw_syscalls:sys_exit", idx("raw_syscalls:sys_enter"), []int{idx("raw_syscalls:sys_exit")})
}
