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
	"syscall"
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
			switch {
			case l.interval == "summary":
				summary = l.num(t)
			case l.value == "<not counted>":
				// An interval in which none of the measured processes ran (a loaded
				// machine): perf prints this natively too, and it adds nothing.
			default:
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

// forkTool is one run of hardening_forktool under bayesperf run.
type forkTool struct {
	done            string // its "done ..." line
	fails, warnings []string
	err             error
	f0, m0, f1, m1  int // the sidecar's fds and memfd mappings before and after the forks
	st              stats
}

// runForkTool runs hardening_forktool FORKS under bayesperf run and, when kill > 0,
// kills the sidecar with SIGKILL that long after the forks begin.
func runForkTool(t *testing.T, forks int, kill time.Duration) forkTool {
	dir := dropinBins(t)
	tmp := t.TempDir()
	pidfile, sf := filepath.Join(tmp, "pid"), filepath.Join(tmp, "stats.json")
	args := []string{filepath.Join(dir, "bayesperf"), "run", "--pidfile", pidfile, "--stats", sf, "--",
		filepath.Join(dir, "hardening_forktool"), strconv.Itoa(forks)}
	if kill > 0 {
		args = append(args, "--sidecar-may-die")
	}
	cmd := exec.Command(args[0], args[1:]...)
	in, outp, stderr := startPiped(t, cmd)
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
	var r forkTool
	next := func(want string) string {
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("hardening_forktool ended before %q; failures %q\n%s", want, r.fails, stderr.String())
				}
				if strings.HasPrefix(l, "FAIL") {
					r.fails = append(r.fails, l)
					continue
				}
				if strings.HasPrefix(l, want) {
					return l
				}
				t.Fatalf("hardening_forktool said %q, want %q", l, want)
			case <-time.After(2 * time.Minute):
				t.Fatalf("hardening_forktool: no %q within 2 min (hung?); failures %q\n%s", want, r.fails, stderr.String())
			}
		}
	}
	next("ready")
	if kill == 0 {
		r.f0, r.m0 = waitFdsStable(t, sidecar)
	}
	in.Write([]byte("go\n"))
	if kill > 0 {
		time.Sleep(kill)
		syscall.Kill(sidecar, syscall.SIGKILL)
	}
	r.done = next("done")
	if kill == 0 {
		r.f1, r.m1 = waitFdsStable(t, sidecar)
	}
	in.Close()
	r.err = cmd.Wait()
	finished = true
	for l := range lines {
		if strings.HasPrefix(l, "FAIL") {
			r.fails = append(r.fails, l)
		}
	}
	r.warnings = bayesperfWarnings(stderr.String())
	r.st = readStats(t, sf)
	return r
}

// TestHardeningForkExecTool runs hardening_forktool under bayesperf run: 4 threads read
// 8 events on a worker while the tool forks 40 times; each child checks its inherited
// events (passed through) and opens one of its own through a fresh connection, half of
// them after exec'ing the tool again (see the program's comment). Nothing may hang
// (2 min), every child must succeed, the final reads equal the kernel's, the tool holds
// the fds it held before the forks, and the sidecar ends the forks with the fds and
// memfd mappings it had before them (the children's connections and events are gone).
func TestHardeningForkExecTool(t *testing.T) {
	const forks = 40
	r := runForkTool(t, forks, 0)
	if r.err != nil || len(r.fails) != 0 {
		t.Errorf("hardening_forktool: %v; failures:\n%s", r.err, strings.Join(r.fails, "\n"))
	}
	if len(r.warnings) != 0 {
		t.Errorf("warnings %q", r.warnings)
	}
	var nf, ne, fds int
	var reads uint64
	if n, _ := fmt.Sscanf(r.done, "done forks %d execs %d reads %d fds %d", &nf, &ne, &reads, &fds); n != 4 || nf != forks {
		t.Errorf("hardening_forktool said %q", r.done)
	}
	if r.f1 != r.f0 || r.m1 != r.m0 {
		t.Errorf("sidecar: %d fds and %d memfd mappings before the forks, %d and %d after", r.f0, r.m0, r.f1, r.m1)
	}
	// 8 events of the tool, one per child, one more per exec'd child.
	if want := uint64(8 + forks + ne); r.st.Events != want || r.st.Clients != uint64(1+forks+ne) {
		t.Errorf("stats %+v: want %d events from %d clients", r.st, want, 1+forks+ne)
	}
	t.Logf("tool forking %d times (%d exec) while 4 threads read 8 events: %d reads in the threads, %d clients and %d events registered; tool fds %d before and after; sidecar fds %d/%d, memfd mappings %d/%d before/after the forks",
		nf, ne, reads, r.st.Clients, r.st.Events, fds, r.f0, r.f1, r.m0, r.m1)
}

// TestHardeningForkExecToolSidecarKilled: the same tool, with the sidecar killed
// (SIGKILL) 50 ms and 300 ms into the forks, so that it dies while children connect,
// register, read and exec: nothing hangs, every child exits 0 (its reads equal the
// kernel's), the final reads equal the kernel's, the tool holds the fds it held before
// (less the dead connection's socket), and every warning (one per process at most)
// says the events go to the kernel.
func TestHardeningForkExecToolSidecarKilled(t *testing.T) {
	const forks = 40
	var summary []string
	for _, kill := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond} {
		r := runForkTool(t, forks, kill)
		if r.err != nil || len(r.fails) != 0 {
			t.Errorf("sidecar killed after %v: hardening_forktool: %v; failures:\n%s", kill, r.err, strings.Join(r.fails, "\n"))
		}
		for _, w := range r.warnings {
			if !strings.Contains(w, "straight to the kernel") {
				t.Errorf("sidecar killed after %v: warning %q, want one saying events go to the kernel", kill, w)
			}
		}
		if len(r.warnings) > 1+2*forks {
			t.Errorf("sidecar killed after %v: %d warnings from at most %d processes", kill, len(r.warnings), 1+2*forks)
		}
		summary = append(summary, fmt.Sprintf("killed after %v: %s, %d processes warned", kill, r.done, len(r.warnings)))
	}
	t.Logf("tool forking %d times while the sidecar is killed: %s", forks, strings.Join(summary, "; "))
}
