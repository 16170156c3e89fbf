package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/internal/testutil"
)

// Recording a real program end to end gives a trace that reads back with every event and
// exact whole-run identities. (The syscall census, -syscalls N, is left out: enabling
// all 360 syscall tracepoints takes perf some 18 s of waiting on this kernel.)
func TestRecordRealProgram(t *testing.T) {
	testutil.RequirePerfTracepoints(t)
	out := filepath.Join(t.TempDir(), "t.csv")
	cmd := []string{"sh", "-c", "for i in 1 2 3; do ls -R /usr/include/linux > /dev/null; done"}
	events := append(append([]string{}, defaultEvents...), "syscalls:sys_enter_openat", "syscalls:sys_enter_getdents64",
		"syscalls:sys_enter_write", "syscalls:sys_enter_close")
	if err := run(out, 10, events, 0, false, cmd); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.ReadFile(out, replay.ReadOptions{TimeColumn: "wall_ns"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != len(defaultEvents)+4 {
		t.Fatalf("%d events, want %d defaults + 4 syscalls: %v", len(tr.Events), len(defaultEvents), tr.Events)
	}
	nsys := 0
	for _, e := range tr.Events {
		if strings.HasPrefix(e, "syscalls:sys_enter_") {
			nsys++
		}
	}
	if nsys != 4 {
		t.Errorf("%d syscall tracepoints, want 4", nsys)
	}
	whole := tr.Truth(0, tr.Slices())
	at := func(n string) float64 { return whole[tr.EventIndex(n)] }
	if at("page-faults") == 0 || at("page-faults") != at("minor-faults")+at("major-faults") {
		t.Errorf("page-faults %v, minor+major %v", at("page-faults"), at("minor-faults")+at("major-faults"))
	}
	// sh and its three ls children exec (children are counted through inheritance).
	if at("sched:sched_process_exec") != 4 {
		t.Errorf("%v execs, want 4 (sh and 3 ls)", at("sched:sched_process_exec"))
	}
	// exit_group enters and never returns, so entries can only exceed exits.
	if at("raw_syscalls:sys_enter") < at("raw_syscalls:sys_exit") || at("raw_syscalls:sys_exit") == 0 {
		t.Errorf("sys_enter %v, sys_exit %v", at("raw_syscalls:sys_enter"), at("raw_syscalls:sys_exit"))
	}
}

// requireSyscallTracepoints skips when the kernel has no per-syscall tracepoints to count
// (tracefs not mounted, or a kernel built without CONFIG_FTRACE_SYSCALLS).
func requireSyscallTracepoints(t *testing.T) {
	t.Helper()
	for _, d := range []string{"/sys/kernel/tracing/events/syscalls", "/sys/kernel/debug/tracing/events/syscalls"} {
		if _, err := os.Stat(filepath.Join(d, "sys_enter_openat")); err == nil {
			return
		}
	}
	t.Skip("needs the syscalls:sys_enter_* tracepoints: no tracefs events/syscalls (mount tracefs on /sys/kernel/tracing)")
}

// With -syscalls all, the census keeps every syscall the program makes, so the recorded
// syscalls:sys_enter_* tracepoints add up to raw_syscalls:sys_enter over the whole run.
// The program's syscalls do not vary between runs (no threads, no timing-dependent calls).
func TestRecordAllSyscalls(t *testing.T) {
	testutil.RequirePerfTracepoints(t)
	requireSyscallTracepoints(t)
	if testing.Short() {
		t.Skip("-short: the syscall census makes perf enable every syscall tracepoint, up to ~20 s")
	}
	out := filepath.Join(t.TempDir(), "t.csv")
	cmd := []string{"sh", "-c", "for i in 1 2 3; do ls -R /usr/include/linux > /dev/null; done; cat /etc/passwd | wc -l > /dev/null"}
	if err := run(out, 10, append([]string(nil), defaultEvents...), allSyscalls, false, cmd); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.ReadFile(out, replay.ReadOptions{TimeColumn: "wall_ns"})
	if err != nil {
		t.Fatal(err)
	}
	whole := tr.Truth(0, tr.Slices())
	var sum float64
	var names []string
	for i, e := range tr.Events {
		if strings.HasPrefix(e, "syscalls:sys_enter_") {
			names = append(names, e)
			sum += whole[i]
			if whole[i] == 0 {
				t.Errorf("%s: the census saw it, the recording counted none", e)
			}
		}
	}
	// sh, ls, cat and wc together make some 35 distinct syscalls; far more than the
	// 12 that -syscalls defaults to.
	if len(names) < 20 {
		t.Errorf("%d syscall tracepoints recorded, want every one the program makes (>= 20): %v", len(names), names)
	}
	for _, must := range []string{"syscalls:sys_enter_execve", "syscalls:sys_enter_openat", "syscalls:sys_enter_getdents64", "syscalls:sys_enter_pipe2"} {
		if tr.EventIndex(must) < 0 {
			t.Errorf("%s not recorded: %v", must, names)
		}
	}
	raw := whole[tr.EventIndex("raw_syscalls:sys_enter")]
	if raw == 0 || sum != raw {
		t.Errorf("raw_syscalls:sys_enter %v, sum of the %d syscalls:sys_enter_* %v: with all syscalls they must be equal", raw, len(names), sum)
	}
}

func TestSyscallsFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want syscallsFlag
		ok   bool
	}{{"all", allSyscalls, true}, {"12", 12, true}, {"0", 0, true}, {"-1", 0, false}, {"ALL", 0, false}, {"x", 0, false}} {
		var f syscallsFlag
		err := f.Set(c.in)
		if (err == nil) != c.ok || (c.ok && f != c.want) {
			t.Errorf("Set(%q) = %v, %v; want %v ok=%v", c.in, f, err, c.want, c.ok)
		}
		if c.ok && f.String() != c.in {
			t.Errorf("Set(%q).String() = %q", c.in, f.String())
		}
	}
}
