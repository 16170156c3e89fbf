package bpf

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// benchEvents returns n counting events: the software counters, then syscall tracepoints.
func benchEvents(b *testing.B, n int) []perfabi.Attr {
	var attrs []perfabi.Attr
	for _, sw := range []uint64{unix.PERF_COUNT_SW_TASK_CLOCK, unix.PERF_COUNT_SW_PAGE_FAULTS,
		unix.PERF_COUNT_SW_PAGE_FAULTS_MIN, unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ,
		unix.PERF_COUNT_SW_CONTEXT_SWITCHES, unix.PERF_COUNT_SW_CPU_MIGRATIONS, unix.PERF_COUNT_SW_CPU_CLOCK} {
		attrs = append(attrs, softwareAttr(sw))
	}
	var names []string
	for _, root := range tracefsRoots {
		m, _ := filepath.Glob(filepath.Join(root, "events/syscalls/sys_enter_*"))
		if len(m) > 0 {
			names = m
			break
		}
	}
	slices.Sort(names)
	for _, p := range names {
		if len(attrs) >= n {
			break
		}
		attrs = append(attrs, tracepointAttr(b, "syscalls", filepath.Base(p)))
	}
	if len(attrs) < n {
		b.Fatalf("found %d events, want %d (requires tracefs with syscall tracepoints)", len(attrs), n)
	}
	return attrs[:n]
}

func processCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSliceCost measures, per slice of 1ms on a busy target, what the BPF collector
// costs (its programs' run time as the kernel accounts it, plus this process's CPU
// time to consume the records) and what the read() collector costs for the same events
// and slices (this process's CPU time, syscalls included), and reports their ratio.
func BenchmarkSliceCost(b *testing.B) {
	for _, n := range []int{4, 35} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) { benchSliceCost(b, n) })
	}
}

// benchSliceCost is BenchmarkSliceCost for n events.
func benchSliceCost(b *testing.B, n int) {
	const slice = time.Millisecond
	cmd, in, _ := startHelper(b, "spin")
	in.Write([]byte{'g'})
	pid := cmd.Process.Pid
	attrs := benchEvents(b, n)

	stats, err := EnableKernelStats()
	if err != nil {
		b.Fatalf("enable BPF stats (requires root): %v", err)
	}
	defer stats.Close()
	c, err := NewCollector(Options{Pid: pid, Events: attrs, Slice: slice})
	if err != nil {
		b.Fatalf("NewCollector (requires root): %v", err)
	}
	defer c.Close()
	for range 3 { // warm up
		if _, err := c.Next(); err != nil {
			b.Fatal(err)
		}
	}
	rt0, runs0, err := c.KernelTime()
	if err != nil {
		b.Fatal(err)
	}
	st0, _ := c.Stats()
	cpu0 := processCPU()
	slicesDone := 0
	for b.Loop() {
		if _, err := c.Next(); err != nil {
			b.Fatal(err)
		}
		slicesDone++
	}
	bpfUser := processCPU() - cpu0
	rt1, runs1, err := c.KernelTime()
	if err != nil {
		b.Fatal(err)
	}
	st1, _ := c.Stats()
	c.Close()
	if runs1 == runs0 || st1.Records == st0.Records {
		b.Fatalf("the bpf programs did not run (%d runs, %d records)", runs1-runs0, st1.Records-st0.Records)
	}
	bpfKernel := rt1 - rt0

	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(slicesDone) }
	readCost := func(group bool) (float64, error) {
		d, err := readSliceCost(pid, attrs, slice, slicesDone, group)
		return per(d), err
	}
	readFD, err := readCost(false)
	if err != nil {
		b.Fatalf("read() collector: %v", err)
	}
	bpfTotal := per(bpfUser) + per(bpfKernel)
	b.ReportMetric(per(bpfKernel), "bpf-kernel-ns/slice")
	b.ReportMetric(float64(bpfKernel.Nanoseconds())/float64(st1.Records-st0.Records), "bpf-kernel-ns/record")
	b.ReportMetric(per(bpfUser), "bpf-user-ns/slice")
	b.ReportMetric(readFD, "read-ns/slice")
	b.ReportMetric(readFD/bpfTotal, "read/bpf")
	if readGroup, err := readCost(true); err == nil {
		b.ReportMetric(readGroup, "groupread-ns/slice")
		b.ReportMetric(readGroup/bpfTotal, "groupread/bpf")
	} else {
		b.Logf("group read not measured: %v", err)
	}
	b.Logf("%d slices, %d program runs (ticks, and context switches anywhere), %d records", slicesDone, runs1-runs0, st1.Records-st0.Records)
}

// readSliceCost is the read() collector's cost on the same target, events and number of
// slices (this process's CPU time, in all): one read per event, or one read per group.
func readSliceCost(pid int, attrs []perfabi.Attr, slice time.Duration, nslices int, group bool) (time.Duration, error) {
	var evs []*perf.Event
	defer func() {
		for _, e := range evs {
			e.Close()
		}
	}()
	var leader *perf.Event
	for i, a := range attrs {
		a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
		if group && i == 0 {
			a.ReadFormat |= perfabi.FormatGroup
		}
		e, err := perf.Open(a, pid, -1, leader)
		if err != nil {
			return 0, err
		}
		evs = append(evs, e)
		if group && i == 0 {
			leader = e
		}
	}
	rc, err := perf.NewReadCollector(evs, slice, false)
	if err != nil {
		return 0, err
	}
	cpu0 := processCPU()
	for range nslices {
		if _, err := rc.Next(); err != nil {
			return 0, err
		}
	}
	return processCPU() - cpu0, nil
}

// helperSpin keeps the CPU busy with page faults and syscalls until killed.
func helperSpin() {
	waitGo()
	for {
		work(16, 8, 0, time.Millisecond)
	}
}

// BenchmarkFirstExitSyscall measures what on_first_exit (hold.go) adds to every system
// call on the machine while an early collector holds: getppid(2) timed in this process
// (which no collector tracks) with no collector, then with one holding with on_first_exit
// only, in each iteration, and reports both and their difference (medians).
func BenchmarkFirstExitSyscall(b *testing.B) {
	target := exec.Command("sleep", "600")
	if err := target.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	const calls = 200000
	perCall := func() float64 {
		start := time.Now()
		for range calls {
			unix.Getppid()
		}
		return float64(time.Since(start).Nanoseconds()) / calls
	}
	var without, with []float64
	for b.Loop() {
		without = append(without, perCall())
		c, err := NewCollector(Options{Pid: target.Process.Pid, Threads: true, HoldProcesses: true,
			Events: []perfabi.Attr{softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS)}, holdMode: holdFirstExit})
		if err != nil {
			b.Fatalf("NewCollector (requires root): %v", err)
		}
		with = append(with, perCall())
		c.Close()
	}
	med := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		return y[len(y)/2]
	}
	b.ReportMetric(med(without), "ns/syscall")
	b.ReportMetric(med(with), "ns/syscall-first-exit")
	b.ReportMetric(med(with)-med(without), "ns-added")
}
