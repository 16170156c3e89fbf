package test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// memoryEvents are the long client's events: 10 software events and tracepoints that the
// mixed workload exercises, on 2 virtual counters.
const memoryEvents = "page-faults,minor-faults,major-faults,context-switches,task-clock,cpu-migrations," +
	"raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_read,syscalls:sys_enter_write"

// TestDropinMemoryBounded runs a long client under the virtual PMU with the bayesperf
// correction and the truth copies (`bayesperf run -v --virtual-counters 2 --stats F --
// perf stat -I 1000 -e memoryEvents -- bayesperf workload mixed --duration 145s`, root
// for the tracepoints) and samples the sidecar's anonymous RSS (RssAnon: the heap and
// stacks; the file-backed part is the binary's code, touched once) every 500 ms from
// 20 s on (the model's kept history fills within the first 8 s), in eight windows of
// 15 s. A leak raises the least-squares slope of every window; the Go heap's sawtooth
// (collections, the scavenger returning pages) raises some and lowers others: the
// median of the eight must stay below what keeping a single float64 per event per
// slice would add, 8 bytes x 10 events x the run's slices (the sidecar's log) / its
// duration, about 20 KiB/s. Three windows of 20 s were too few: CI once saw slopes of
// 23.5, 41.0 and -14.9 KiB/s with the live heap bounded.
//
// The sidecar runs at GOGC=25, which brings the heap's footprint to its steady state
// (1.25x the live heap, not 2x) within the warm-up: at the default it crept up over the
// first minute, 87-100 KiB/s in two of three windows, while the live heap and the
// runtime's heap goal held still (measured with the runtime's own statistics). A leak
// grows the live heap and shows at any GOGC.
//
// Before the sidecar's memory was bounded it grew by a model state per slice: VmRSS
// slope 2,084 KiB/s with these events (28 -> 184 MB in 82 s).
func TestDropinMemoryBounded(t *testing.T) {
	needRoot(t, "the virtual PMU opens tracepoints on the measured command")
	const (
		duration = 145 * time.Second
		from     = 20 * time.Second
		window   = 15 * time.Second
		windows  = 8
		events   = 10
	)
	to := from + windows*window
	tmp := t.TempDir()
	sf := filepath.Join(tmp, "stats.json")
	bp := dropinBin(t, "bayesperf")
	var stderr strings.Builder
	// GOGC=25: see above.
	cmd, pid := startRun(t, slices.Concat(patientShim, []string{"GOGC=25"}), &stderr,
		"-v", "--virtual-counters", "2", "--stats", sf, "--",
		"perf", "stat", "-I", "1000", "-x,", "-e", memoryEvents, "--", bp, "workload", "mixed", "--duration", duration.String())
	start := time.Now()
	type sample struct{ at, kib float64 }
	var samples []sample
	tick := time.NewTicker(500 * time.Millisecond)
	for time.Since(start) < to {
		<-tick.C
		kib, err := procStatusKiB(pid, "RssAnon")
		if err != nil {
			tick.Stop()
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("sidecar gone after %v: %v\n%s", time.Since(start), err, stderr.String())
		}
		if at := time.Since(start); at >= from {
			samples = append(samples, sample{at.Seconds(), float64(kib)})
		}
	}
	tick.Stop()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bayesperf run: %v\n%s", err, stderr.String())
	}
	m := regexp.MustCompile(`vstage: client \d+: target pid \d+ gone after (\d+) slices`).FindAllStringSubmatch(stderr.String(), -1)
	nslices := 0
	for _, s := range m {
		n, _ := strconv.Atoi(s[1])
		nslices += n
	}
	if nslices < 1000 {
		t.Fatalf("the sidecar logged %d slices for a %v client; want at least 1000 (the test needs a busy target)\n%s", nslices, duration, lastLines(stderr.String(), 30))
	}
	bound := 8 * events * float64(nslices) / duration.Seconds() / 1024
	var slopes []float64
	for w := range windows {
		lo, hi := (from + time.Duration(w)*window).Seconds(), (from + time.Duration(w+1)*window).Seconds()
		var at, kib []float64
		for _, s := range samples {
			if s.at >= lo && s.at < hi {
				at, kib = append(at, s.at), append(kib, s.kib)
			}
		}
		if len(at) < 15 {
			t.Fatalf("window %d: %d RSS samples, want 15 or more (the sampler was starved)", w, len(at))
		}
		slopes = append(slopes, lsSlope(at, kib))
	}
	med := slices.Clone(slopes)
	sort.Float64s(med)
	median := (med[windows/2-1] + med[windows/2]) / 2
	t.Logf("sidecar RssAnon %.0f -> %.0f KiB from %v to %v (%d samples); slopes of the %v windows %.1f KiB/s, median %.1f; %d slices in %v, bound %.1f KiB/s",
		samples[0].kib, samples[len(samples)-1].kib, from, to, len(samples), window, slopes, median, nslices, duration, bound)
	if median > bound {
		t.Errorf("sidecar RSS grows by %.1f KiB/s (median of %.1f) under a long client, above %.1f KiB/s (one float64 per event per slice)", median, slopes, bound)
	}
}

// lsSlope is the least-squares slope of y over x.
func lsSlope(x, y []float64) float64 {
	var mx, my float64
	for i := range x {
		mx += x[i]
		my += y[i]
	}
	mx /= float64(len(x))
	my /= float64(len(y))
	var cov, vx float64
	for i := range x {
		cov += (x[i] - mx) * (y[i] - my)
		vx += (x[i] - mx) * (x[i] - mx)
	}
	return cov / vx
}

// procStatusKiB is a "Name: N kB" field of pid's /proc status.
func procStatusKiB(pid int, name string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		var kb float64
		if n, _ := fmt.Sscanf(l, name+": %f kB", &kb); n == 1 {
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no %s for pid %d", name, pid)
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	ls := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(ls) > n {
		ls = ls[len(ls)-n:]
	}
	return fmt.Sprintf("... %s", strings.Join(ls, "\n"))
}
