package test

// fork and exec under load (issue 8, concurrency), in the measured program and in the
// tool. Needs perf, gcc and perf_event_open for software events.

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestHardeningForkExecMeasured: perf stat -I 100 (inherit) counts hardening_forkexec,
// which runs 40 children 4 at a time, each forking a grandchild, half of them exec'ing
// the workload: through bayesperf run, perf exits with its native status, warns
// nothing, and its --summary page-fault total equals the native total (shim preloaded,
// no sidecar) within 5% + 30; the intervals add up to no more than that.
func TestHardeningForkExecMeasured(t *testing.T) {
	dir := dropinBins(t)
	argv := []string{"perf", "stat", "-I", "100", "--summary", "-x,", "-e", "page-faults,task-clock", "--",
		filepath.Join(dir, "hardening_forkexec"), "40", filepath.Join(dir, "workload"), "3"}
	nat := run(t, noSidecarEnv(t), argv...)
	r, st := bayesperfRun(t, argv...)
	total := func(r result) (summary, intervals float64) {
		for _, l := range parseStatCSV(t, r.stderr, true) {
			if !strings.HasPrefix(l.event, "page-faults") {
				continue
			}
			if l.interval == "summary" {
				summary = l.num(t)
			} else {
				intervals += l.num(t)
			}
		}
		return
	}
	ns, _ := total(nat)
	gs, gi := total(r)
	if r.status != nat.status {
		t.Errorf("status %d through bayesperf, %d natively (perf stat -I exits 0 whatever the program's status)\n%s", r.status, nat.status, r.stderr)
	}
	if w := bayesperfWarnings(r.stderr); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	if ns < 40*300 || !within(gs, ns, 30, 0.05) || gi > gs+30 {
		t.Errorf("page faults: summary %v (intervals %v) through bayesperf, %v natively; want the native total within 5%% + 30 (40 children x 300 pages, 40 x 50 in grandchildren)", gs, gi, ns)
	}
	if st.Events == 0 || st.MirrorReads == 0 {
		t.Errorf("stats %+v: want perf's events registered and read from mirrors", st)
	}
	t.Logf("measured program forking 40 children (20 exec) and 40 grandchildren under perf stat -I 100: page faults %v through bayesperf (intervals %v), %v natively; %d mirror reads", gs, gi, ns, st.MirrorReads)
}

// TestHardeningForkExecTool runs hardening_forktool under bayesperf run: 4 threads read
// 8 events on a worker while the tool forks 40 times; each child checks its inherited
// events (passed through) and opens one of its own through a fresh connection, half of
// them after exec'ing the tool again (see the program's comment). Nothing may hang
// (2 min), every child must succeed, the final reads equal the kernel's, the tool holds
// the fds it held before the forks, and the sidecar ends the forks with the fds and
// memfd mappings it had before them (the children's connections and events are gone).
func TestHardeningForkExecTool(t *testing.T) {
	dir := dropinBins(t)
	tmp := t.TempDir()
	pidfile, sf := filepath.Join(tmp, "pid"), filepath.Join(tmp, "stats.json")
	const forks = 40
	cmd := exec.Command(filepath.Join(dir, "bayesperf"), "run", "--pidfile", pidfile, "--stats", sf, "--",
		filepath.Join(dir, "hardening_forktool"), strconv.Itoa(forks))
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	finished := false
	defer func() {
		if !finished {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	sidecar := waitPidfile(t, cmd, pidfile)
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(outp)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var fails []string
	next := func(want string) string {
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("hardening_forktool ended before %q; failures %q\n%s", want, fails, stderr.String())
				}
				if strings.HasPrefix(l, "FAIL") {
					fails = append(fails, l)
					continue
				}
				if strings.HasPrefix(l, want) {
					return l
				}
				t.Fatalf("hardening_forktool said %q, want %q", l, want)
			case <-time.After(2 * time.Minute):
				t.Fatalf("hardening_forktool: no %q within 2 min (hung?); failures %q\n%s", want, fails, stderr.String())
			}
		}
	}
	next("ready")
	f0, m0 := waitFdsStable(t, sidecar)
	in.Write([]byte("go\n"))
	done := next("done")
	f1, m1 := waitFdsStable(t, sidecar)
	in.Close()
	werr := cmd.Wait()
	finished = true
	for l := range lines {
		if strings.HasPrefix(l, "FAIL") {
			fails = append(fails, l)
		}
	}
	if werr != nil || len(fails) != 0 {
		t.Errorf("hardening_forktool: %v; failures:\n%s\n%s", werr, strings.Join(fails, "\n"), stderr.String())
	}
	if w := bayesperfWarnings(stderr.String()); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	var nf, ne, fds int
	var reads uint64
	if n, _ := fmt.Sscanf(done, "done forks %d execs %d reads %d fds %d", &nf, &ne, &reads, &fds); n != 4 || nf != forks {
		t.Errorf("hardening_forktool said %q", done)
	}
	if f1 != f0 || m1 != m0 {
		t.Errorf("sidecar: %d fds and %d memfd mappings before the forks, %d and %d after", f0, m0, f1, m1)
	}
	st := readStats(t, sf)
	// 8 events of the tool, one per child, one more per exec'd child.
	if want := uint64(8 + forks + ne); st.Events != want || st.Clients != uint64(1+forks+ne) {
		t.Errorf("stats %+v: want %d events from %d clients", st, want, 1+forks+ne)
	}
	t.Logf("tool forking %d times (%d exec) while 4 threads read 8 events: %d reads in the threads, %d clients and %d events registered; tool fds %d before and after; sidecar fds %d/%d, memfd mappings %d/%d before/after the forks",
		nf, ne, reads, st.Clients, st.Events, fds, f0, f1, m0, m1)
}
