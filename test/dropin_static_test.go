package test

// A static binary is out of LD_PRELOAD's reach (issue 15): bayesperf run says so in one
// line and still runs it. Needs gcc with a static libc (libc6-dev) and perf_event_open
// for software events.

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDropinStaticCommand: test/c/spawn_client (a perf client: it opens a software event
// on itself, then runs `true`) built static and run through bayesperf run exits as it
// does natively, registers no event (the shim never loaded), and bayesperf run printed
// exactly one line saying it is static and to use bayesperf attach. Built dynamically,
// the same program is served (one event) and nothing is printed.
func TestDropinStaticCommand(t *testing.T) {
	static := filepath.Join(t.TempDir(), "spawn_client_static")
	if out, err := exec.Command("gcc", "-static", "-O2", "-o", static, filepath.Join("c", "spawn_client.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc -static (needs libc6-dev's libc.a): %v\n%s", err, out)
	}
	nat := run(t, nil, static, "spawn", "true")
	r, st := bayesperfRun(t, static, "spawn", "true")
	w := bayesperfWarnings(r.stderr)
	if r.status != nat.status || len(w) != 1 || !strings.Contains(w[0], "static binary") || !strings.Contains(w[0], "bayesperf attach") {
		t.Errorf("static command: status %d (native %d), bayesperf lines %q; want the native status and one line naming bayesperf attach", r.status, nat.status, w)
	}
	if st.Events != 0 {
		t.Errorf("static command: %d events registered; the shim cannot have loaded", st.Events)
	}
	d, dst := bayesperfRun(t, dropinBin(t, "spawn_client"), "spawn", "true")
	if d.status != 0 || len(bayesperfWarnings(d.stderr)) != 0 || dst.Events != 1 {
		t.Errorf("dynamic command: status %d, lines %q, %d events; want 0, none, 1", d.status, bayesperfWarnings(d.stderr), dst.Events)
	}
	t.Logf("static: %q; dynamic: %d event registered", w, dst.Events)
}
