package testutil

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// RequireRoot skips tb unless the test runs as root, saying why it needs root.
func RequireRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		tb.Skipf("needs root: %s", why)
	}
}

// RequirePerfTracepoints returns the path of the perf binary, or skips tb unless perf
// can count the syscalls and sched tracepoints here: the perf binary, root or
// perf_event_paranoid -1, and the syscall tracepoints in tracefs.
func RequirePerfTracepoints(tb testing.TB) string {
	tb.Helper()
	perf, err := exec.LookPath("perf")
	if err != nil {
		tb.Skip("needs the perf binary (Debian package linux-perf): not in PATH")
	}
	if os.Geteuid() != 0 {
		b, _ := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
		if strings.TrimSpace(string(b)) != "-1" {
			tb.Skip("needs root or perf_event_paranoid = -1 to count tracepoints")
		}
	}
	if _, err := os.Stat("/sys/kernel/tracing/events/syscalls"); err != nil {
		if _, err2 := os.Stat("/sys/kernel/debug/tracing/events/syscalls"); err2 != nil {
			tb.Skipf("needs syscall tracepoints (CONFIG_FTRACE_SYSCALLS, tracefs mounted): %v", err)
		}
	}
	return perf
}
