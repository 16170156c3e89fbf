package test

// Monotonic values across a fallback (issue 15): under --virtual-counters a corrected
// running total may be above the kernel's count of the same event; when the sidecar dies
// and the shim falls back to the kernel, perf stat -I must never see a total lower than
// one it already saw (its unsigned delta wrapped: an interval of 18446744073709551616
// page faults). Needs the perf binary and perf_event_open for software events and
// tracepoints.

import (
	"io"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// monoEvents are more events than the 2 virtual counters, with relations between them
// (page-faults = minor + major; raw_syscalls >= the one syscall), so the model's
// estimates differ from the kernel's counts in both directions.
// Every other trial groups two of them, which perf reads with PERF_FORMAT_GROUP.
var monoEvents = []string{
	"page-faults,minor-faults,major-faults,raw_syscalls:sys_enter,syscalls:sys_enter_mmap,context-switches",
	"{page-faults,minor-faults},major-faults,raw_syscalls:sys_enter,syscalls:sys_enter_mmap,context-switches",
}

// monoWorkload touches 3000 pages at once, sleeps 20 times for 1 ms, then spins 600 ms
// touching a page per ms, and exits 3: rates that change, so the estimates of events not
// counted in a slice miss in both directions.
var monoWorkload = []string{"3000", "20", "3", "600"}

// TestHardeningVirtualSidecarKilledMonotonic: $BAYESPERF_MONO_TRIALS (10) runs of
// `perf stat -I 100 -x,` of monoEvents (alternately) through `bayesperf run --virtual-counters 2`, the
// sidecar killed with SIGKILL after a delay drawn from [0, 800 ms) (seed
// $BAYESPERF_FAULT_SEED, 1) once it holds the tool's events. Every interval value perf
// prints must be below 2^63 (a wrapped delta is near 2^64), the exit status must be
// perf's native one, and the page-fault intervals must add up to no more than twice the
// native total: the values after the kill continue the corrected total served before it
// (itself an estimate of at most the native total, plus its error) with the kernel's
// exact increments, so only the correction's error at the kill is added, never a count.
func TestHardeningVirtualSidecarKilledMonotonic(t *testing.T) {
	wl := append([]string{dropinBin(t, "workload")}, monoWorkload...)
	argvOf := func(i int) []string {
		return append([]string{"perf", "stat", "-I", "100", "-x,", "-e", monoEvents[i%2], "--"}, wl...)
	}
	nat := run(t, nil, argvOf(0)...)
	natTotal := byEvent(parseStatCSV(t, run(t, nil, append([]string{"perf", "stat", "-x,", "-e", "page-faults", "--"}, wl...)...).stderr, false))["page-faults"].num(t)

	seed := uint64(envInt("BAYESPERF_FAULT_SEED", 1))
	rng := rand.New(rand.NewPCG(seed, 0x6d6f6e6f))
	trials := envInt("BAYESPERF_MONO_TRIALS", 10)
	var mid, lines int
	worst := 0.0 // the largest page-fault sum over the native total
	for i := range trials {
		delay := time.Duration(rng.Int64N(int64(800 * time.Millisecond)))
		pr, pw := io.Pipe()
		got := collectTimedLines(pr)
		cmd, pid := startRun(t, nil, pw, append([]string{"--virtual-counters", "2", "--"}, argvOf(i)...)...)
		waitSidecarHolds(t, cmd, pid, 6)
		time.Sleep(delay)
		syscall.Kill(pid, syscall.SIGKILL) // ESRCH is fine: perf may be done already
		err := waitTimeout(cmd, 60*time.Second)
		if err == errWaitTimeout {
			pw.Close()
			t.Fatalf("trial %d (kill after %v): the tool hung for 60 s", i, delay)
		}
		pw.Close()
		var text strings.Builder
		for _, l := range <-got {
			text.WriteString(l.text + "\n")
		}
		status := 0
		if ee, ok := err.(*exec.ExitError); ok {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != nat.status {
			t.Errorf("trial %d (kill after %v): status %d, natively %d\n%s", i, delay, status, nat.status, text.String())
		}
		lost := strings.Contains(text.String(), "lost the sidecar")
		if lost {
			mid++
		}
		var faults float64
		for _, l := range parseStatCSV(t, text.String(), true) {
			if l.value == "<not counted>" || l.value == "<not supported>" {
				continue
			}
			lines++
			v, perr := strconv.ParseFloat(l.value, 64)
			if perr != nil {
				t.Errorf("trial %d: %s at %s: value %q is not a number", i, l.event, l.interval, l.value)
				continue
			}
			if v >= math.Exp2(63) {
				t.Errorf("trial %d (kill after %v, sidecar lost mid-run: %v): %s at %s = %s: a total went backwards",
					i, delay, lost, l.event, l.interval, l.value)
			}
			if l.event == "page-faults" {
				faults += v
			}
		}
		worst = max(worst, faults/natTotal)
		if faults > 2*natTotal {
			t.Errorf("trial %d (kill after %v): page-fault intervals add up to %v, native total %v", i, delay, faults, natTotal)
		}
	}
	if mid == 0 {
		t.Errorf("no trial killed the sidecar while perf was reading")
	}
	t.Logf("seed %d: %d SIGKILLs under --virtual-counters 2, %d noticed by perf mid-run; %d interval values, none wrapped; page-fault intervals added up to at most %.3f x the native total %v",
		seed, trials, mid, lines, worst, natTotal)
}
