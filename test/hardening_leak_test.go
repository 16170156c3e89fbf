package test

// Leaks (issue 8): many open/close cycles of perf events through the shim must leave the
// tool and the sidecar with the fds, memfd mappings and memory they had. Needs
// perf_event_open for software events on a child process.

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// leakCycles is the number of measured cycles; $BAYESPERF_LEAK_CYCLES overrides it
// (`make leaks` runs more).
func leakCycles() int {
	if n, err := strconv.Atoi(os.Getenv("BAYESPERF_LEAK_CYCLES")); err == nil && n > 0 {
		return n
	}
	return 1000
}

// rssBatchBoundKiB bounds the sidecar's RSS growth over the last batch of cycles, once
// warm-up has let the Go heap find its size. Go's RSS moves by a GC cycle's garbage
// (measured: +0.4 to +1.5 MiB over a batch of 1000, and +0.4 MiB from cycle 3000 to 6000),
// so this catches leaks of pages (a 4 KiB mirror page per registered event would be
// +6.9 MiB a batch), not of a few bytes per event; fds and memfd mappings, which are
// what a leaked event would hold, are checked exactly.
const rssBatchBoundKiB = 2048

// sidecarRSSTotalBoundKiB bounds the sidecar's growth from the first mark to the last:
// a heap's worth of live and garbage objects, not a per-cycle cost.
const sidecarRSSTotalBoundKiB = 8 << 10

func TestHardeningNoLeaks(t *testing.T) {
	dir := dropinBins(t)
	tmp := t.TempDir()
	pidfile, sf := filepath.Join(tmp, "pid"), filepath.Join(tmp, "stats.json")
	n := leakCycles()
	cmd := exec.Command(filepath.Join(dir, "bayesperf"), "run", "--pidfile", pidfile, "--stats", sf, "--",
		filepath.Join(dir, "hardening_leak"), strconv.Itoa(n))
	in, out, stderr := startPiped(t, cmd)
	pid := waitPidfile(t, cmd, pidfile)
	type sample struct{ toolFds, toolMaps, toolRSS, scFds, scMaps, scRSS int }
	var marks []sample
	var fails []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		var s sample
		var name string
		if n, _ := fmt.Sscanf(line, "%s %d %d %d", &name, &s.toolFds, &s.toolMaps, &s.toolRSS); n != 4 || !strings.HasPrefix(name, "mark") {
			fails = append(fails, line)
			continue
		}
		s.scFds, s.scMaps = waitFdsStable(t, pid)
		var err error
		if s.scRSS, err = procRSSKiB(pid); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, s)
		fmt.Fprintln(in)
	}
	in.Close()
	if err := cmd.Wait(); err != nil || len(fails) > 0 {
		t.Fatalf("hardening_leak: %v\n%s\n%s", err, strings.Join(fails, "\n"), stderr.String())
	}
	if w := bayesperfWarnings(stderr.String()); len(w) != 0 {
		t.Errorf("warnings %q: the tool lost the sidecar", w)
	}
	if len(marks) != 3 {
		t.Fatalf("%d marks, want 3", len(marks))
	}
	a, b, c := marks[0], marks[1], marks[2]
	for _, m := range marks[1:] {
		if m.toolFds != a.toolFds || m.toolMaps != a.toolMaps {
			t.Errorf("tool: fds %d -> %d, memfd mappings %d -> %d; want no change", a.toolFds, m.toolFds, a.toolMaps, m.toolMaps)
		}
		if m.scFds != a.scFds || m.scMaps != a.scMaps {
			t.Errorf("sidecar: fds %d -> %d, memfd mappings %d -> %d; want no change", a.scFds, m.scFds, a.scMaps, m.scMaps)
		}
	}
	if c.scRSS-b.scRSS > rssBatchBoundKiB || c.scRSS-a.scRSS > sidecarRSSTotalBoundKiB {
		t.Errorf("sidecar RSS %d -> %d -> %d KiB over 2 x %d cycles; want <= %d KiB growth in the second batch and %d in all",
			a.scRSS, b.scRSS, c.scRSS, n, rssBatchBoundKiB, sidecarRSSTotalBoundKiB)
	}
	// The shim allocates nothing per event that outlives it; the tool's own stdio and
	// page tables may move by a few pages.
	if c.toolRSS-a.toolRSS > 256 {
		t.Errorf("tool RSS %d -> %d KiB over 2 x %d cycles; want growth <= 256 KiB", a.toolRSS, c.toolRSS, n)
	}
	st := readStats(t, sf)
	// Every cycle registers 1 event (the dup is the same event), plus 2 every 4th and
	// 2 every 10th.
	perCycles := func(k int) int { return k + 2*((k+3)/4) + 2*((k+9)/10) }
	if want := 3 * perCycles(n); int(st.Events) != want || st.MirrorReads == 0 {
		t.Errorf("stats %+v: want %d events registered and reads served from mirrors", st, want)
	}
	t.Logf("3 x %d cycles (%d events): tool fds %d/%d/%d memfd maps %d/%d/%d RSS %d/%d/%d KiB; sidecar fds %d/%d/%d memfd maps %d/%d/%d RSS %d/%d/%d KiB",
		n, st.Events, a.toolFds, b.toolFds, c.toolFds, a.toolMaps, b.toolMaps, c.toolMaps, a.toolRSS, b.toolRSS, c.toolRSS,
		a.scFds, b.scFds, c.scFds, a.scMaps, b.scMaps, c.scMaps, a.scRSS, b.scRSS, c.scRSS)
}
