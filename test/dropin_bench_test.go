package test

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkDropinRead compares, in one run of test/c/readbench.c under bayesperf run, a
// read() of a counting event served from the shim's mirror with the raw read system call
// on the same fd. It reports ns/read for both and their ratio (native/mirror).
func BenchmarkDropinRead(b *testing.B) {
	prog := dropinBin(b, "readbench")
	var native, mirror float64
	for b.Loop() {
		r, st := bayesperfRun(b, prog, "100000")
		if r.status != 0 {
			b.Fatalf("readbench: status %d\n%s%s", r.status, r.stdout, r.stderr)
		}
		if st.MirrorReads < 200000 || st.PassthroughReads != 0 {
			b.Fatalf("stats %+v: the shim's reads were not served from the mirror", st)
		}
		for line := range strings.Lines(r.stdout) {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			v, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "native_ns":
				native = v
			case "shim_ns":
				mirror = v
			}
		}
	}
	b.ReportMetric(native, "native-ns/read")
	b.ReportMetric(mirror, "mirror-ns/read")
	if mirror > 0 {
		b.ReportMetric(native/mirror, "speedup")
	}
}

// BenchmarkDropinStartup times how long `perf stat -- startstamp` takes to start its
// workload (test/c/startstamp prints the CLOCK_MONOTONIC time it started at; the clock is
// read just before the command is started): natively, through `bayesperf run
// --virtual-counters 2 --collector read`, and through `--collector bpf` (issue 15 item 9:
// the BPF collector should add at most 50 ms to the tool's start). The three are
// interleaved in every iteration, so that they see the same machine; it reports the
// median ms of each, bpf's median and worst excess over read(2) in the same iteration,
// and the ratios of the medians to native. Beside the wall time it reports the CPU time
// (user and system) of each whole run, sidecar included: on a machine of few CPUs the
// start waits mostly for CPU, and CPU time is far less noisy than wall time under load.
// Root (BPF).
func BenchmarkDropinStartup(b *testing.B) {
	needRoot(b, "the bpf collector")
	dir := dropinBins(b)
	bp, stamp := filepath.Join(dir, "bayesperf"), filepath.Join(dir, "startstamp")
	tool := []string{"perf", "stat", "-x,", "--", stamp}
	// start returns the ms from just before argv starts to its workload's start, and the
	// CPU ms of the whole run (every descendant is waited for, so RUSAGE_CHILDREN has it).
	start := func(argv ...string) (float64, float64) {
		var before, after unix.Rusage
		unix.Getrusage(unix.RUSAGE_CHILDREN, &before)
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		r := run(b, nil, argv...)
		if r.status != 0 {
			b.Fatalf("%q: status %d\n%s%s", argv, r.status, r.stdout, r.stderr)
		}
		unix.Getrusage(unix.RUSAGE_CHILDREN, &after)
		cpu := float64(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) / 1e6
		for line := range strings.Lines(r.stdout) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "start_ns "); ok {
				ns, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatalf("startstamp printed %q", line)
				}
				return float64(ns-ts.Nano()) / 1e6, cpu
			}
		}
		b.Fatalf("%q: no start_ns line\n%s", argv, r.stdout)
		return 0, 0
	}
	var native, read, bpf, excess, readCPU, bpfCPU []float64
	for b.Loop() {
		n, _ := start(tool...)
		r, rc := start(append([]string{bp, "run", "--virtual-counters", "2", "--collector", "read", "--"}, tool...)...)
		p, pc := start(append([]string{bp, "run", "--virtual-counters", "2", "--collector", "bpf", "--"}, tool...)...)
		native, read, bpf, excess = append(native, n), append(read, r), append(bpf, p), append(excess, p-r)
		readCPU, bpfCPU = append(readCPU, rc), append(bpfCPU, pc)
	}
	med := func(x []float64) float64 {
		y := slices.Clone(x)
		slices.Sort(y)
		return y[len(y)/2]
	}
	b.ReportMetric(med(native), "native-ms")
	b.ReportMetric(med(read), "read-ms")
	b.ReportMetric(med(bpf), "bpf-ms")
	b.ReportMetric(med(excess), "bpf-over-read-ms")
	b.ReportMetric(slices.Max(excess), "bpf-over-read-worst-ms")
	b.ReportMetric(med(read)/med(native), "read/native")
	b.ReportMetric(med(bpf)/med(native), "bpf/native")
	b.ReportMetric(med(readCPU), "read-cpu-ms")
	b.ReportMetric(med(bpfCPU), "bpf-cpu-ms")
}
