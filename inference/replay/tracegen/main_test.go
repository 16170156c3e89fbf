package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// requirePerfTracepoints skips only when the machine truly lacks what recording needs:
// the perf binary, and root (tracepoints need it here).
func requirePerfTracepoints(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("needs the perf binary (linux-perf): not found")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to count tracepoints")
	}
}

// Recording a real program end to end gives a trace that reads back with every event and
// exact whole-run identities. (The syscall census, -syscalls N, is left out: enabling
// all 360 syscall tracepoints takes perf some 18 s of waiting on this kernel.)
func TestRecordRealProgram(t *testing.T) {
	requirePerfTracepoints(t)
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
