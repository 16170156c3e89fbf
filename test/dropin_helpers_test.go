package test

// Helpers of the drop-in end-to-end tests (dropin_*_test.go). They need: Linux with
// perf_event_open for software events, the perf binary (linux-perf), gcc and make (to
// build the shim and the C test programs), and root for `perf stat -a`. `make deps`
// installs all of them.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

var (
	dropinOnce sync.Once
	dropinDir  string
	dropinErr  error
)

// dropinBins builds bin/bayesperf, bin/libbayesperf.so (with the Makefile's own rule) and
// the C programs of test/c into one directory, once per test binary. $BAYESPERF_BIN
// names a directory that already holds bayesperf and libbayesperf.so, to test those.
func dropinBins(t testing.TB) string {
	t.Helper()
	dropinOnce.Do(func() {
		dropinDir, dropinErr = buildDropin()
	})
	if dropinErr != nil {
		t.Fatalf("build drop-in binaries: %v", dropinErr)
	}
	return dropinDir
}

// eventCountRe matches the event count in perf report --stdio's header: with -c 1, the
// number of samples.
var eventCountRe = regexp.MustCompile(`# Event count \(approx.\): ([0-9]+)`)

// perfReport runs perf report --stdio on the file data with more args and returns its
// output and the event count of its header, failing t when there is none.
func perfReport(t testing.TB, data string, args ...string) (string, float64) {
	t.Helper()
	rep := run(t, nil, append([]string{"perf", "report", "-i", data, "--stdio"}, args...)...)
	m := eventCountRe.FindStringSubmatch(rep.stdout)
	if m == nil {
		t.Fatalf("no event count in perf report:\n%s%s", rep.stdout, rep.stderr)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	return rep.stdout, n
}

// dropinBin returns the path of the program name that dropinBins built.
func dropinBin(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(dropinBins(t), name)
}

func buildDropin() (string, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return "", fmt.Errorf("the perf binary is required (apt-get install linux-perf): %w", err)
	}
	// One directory per test process (parallel `go test` runs must not share binaries);
	// the package has no TestMain to remove it, so each run removes those of test
	// processes that are gone.
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), "bayesperf-dropin-test-*"))
	for _, d := range old {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(d), "bayesperf-dropin-test-"))
		if err == nil && pid != os.Getpid() && syscall.Kill(pid, 0) == syscall.ESRCH {
			os.RemoveAll(d)
		}
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("bayesperf-dropin-test-%d", os.Getpid()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	root, err := filepath.Abs("..")
	if err != nil {
		return "", err
	}
	if bin := os.Getenv("BAYESPERF_BIN"); bin != "" {
		for _, f := range []string{"bayesperf", "libbayesperf.so"} {
			if err := copyFile(filepath.Join(bin, f), filepath.Join(dir, f)); err != nil {
				return "", err
			}
		}
	} else {
		gob := exec.Command("go", "build", "-o", filepath.Join(dir, "bayesperf"), "./cmd/bayesperf")
		gob.Dir = root
		if out, err := gob.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build ./cmd/bayesperf: %v\n%s", err, out)
		}
		so := filepath.Join(dir, "libbayesperf.so")
		if out, err := exec.Command("make", "-s", "-C", root, "BIN="+dir, so).CombinedOutput(); err != nil {
			return "", fmt.Errorf("make %s: %v\n%s", so, err, out)
		}
	}
	srcs, _ := filepath.Glob(filepath.Join(root, "test", "c", "*.c"))
	for _, src := range srcs {
		exe := filepath.Join(dir, strings.TrimSuffix(filepath.Base(src), ".c"))
		if out, err := exec.Command("gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", exe, src).CombinedOutput(); err != nil {
			return "", fmt.Errorf("compile %s: %v\n%s", src, err, out)
		}
	}
	return dir, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}

// result is one finished command.
type result struct {
	stdout, stderr string
	status         int // exit status, or 128+signal
}

// run runs argv with extra environment entries, failing the test if it cannot start or
// takes longer than a minute.
func run(t testing.TB, env []string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.status = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.status = 128 + int(ws.Signal())
		}
	default:
		t.Fatalf("run %q: %v", argv, err)
	}
	if ctx.Err() != nil {
		t.Fatalf("run %q: timed out\nstderr:\n%s", argv, r.stderr)
	}
	return r
}

// stats is the JSON `bayesperf run --stats` writes.
type stats struct {
	Events           uint64 `json:"events"`
	MirrorReads      uint64 `json:"mirror_reads"`
	PassthroughReads uint64 `json:"passthrough_reads"`
	RecordsMirrored  uint64 `json:"records_mirrored"`
	RecordsLost      uint64 `json:"records_lost"`
	SidecarPid       int    `json:"sidecar_pid"`
	SyncRefreshes    uint64 `json:"sync_refreshes"`
	SelfReads        uint64 `json:"self_reads"`
	Clients          uint64 `json:"clients"`
	SidecarLost      bool   `json:"sidecar_lost"`
	// Collector is the virtual PMU's collector; Truth the hidden always-on copies'
	// counts by event (both with --virtual-counters).
	Collector string            `json:"collector"`
	Truth     map[string]uint64 `json:"truth"`
}

// bayesperfRun runs `bayesperf run --stats F -- argv...` and returns the result and the
// stats.
func bayesperfRun(t testing.TB, argv ...string) (result, stats) {
	t.Helper()
	sf := filepath.Join(t.TempDir(), "stats.json")
	r := run(t, nil, append([]string{dropinBin(t, "bayesperf"), "run", "--stats", sf, "--"}, argv...)...)
	return r, readStats(t, sf)
}

// runMaybeThrough runs argv through bayesperf run when through is set, as bayesperfRun
// does, and otherwise natively with env added (stats are then zero).
func runMaybeThrough(t testing.TB, through bool, env []string, argv ...string) (result, stats) {
	t.Helper()
	if through {
		return bayesperfRun(t, argv...)
	}
	return run(t, env, argv...), stats{}
}

func readStats(t testing.TB, path string) stats {
	t.Helper()
	var s stats
	readJSON(t, path, &s)
	return s
}

// readReport reads the --report of bayesperf run, which must name a client.
func readReport(t testing.TB, path string) runReport {
	t.Helper()
	var rep runReport
	readJSON(t, path, &rep)
	if len(rep.Clients) == 0 {
		t.Fatalf("report %s names no client", path)
	}
	return rep
}

// readJSON decodes the JSON file path (a --stats or --report) into v, failing t if it
// cannot.
func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("parse %s: %v\n%s", path, err, b)
	}
}

// statLine is one line of `perf stat -x,` output.
type statLine struct {
	interval string // -I timestamp, "" without -I
	value    string // as printed (may be "<not counted>")
	unit     string
	event    string
	runtime  uint64 // ns the event was enabled (perf's "run time" column)
}

// parseStatCSV parses `perf stat -x,` output (stderr), skipping comments and blank lines.
func parseStatCSV(t testing.TB, s string, interval bool) []statLine {
	t.Helper()
	var out []statLine
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "bayesperf") {
			continue
		}
		f := strings.Split(line, ",")
		var l statLine
		if interval {
			l.interval, f = f[0], f[1:]
		}
		if len(f) < 4 {
			t.Fatalf("unexpected perf stat line %q", line)
		}
		l.value, l.unit, l.event = f[0], f[1], f[2]
		l.runtime, _ = strconv.ParseUint(f[3], 10, 64)
		out = append(out, l)
	}
	return out
}

// nativeStat runs `perf stat -x, args...` without bayesperf, which must succeed, and
// returns its lines by event.
func nativeStat(t testing.TB, args ...string) map[string]statLine {
	t.Helper()
	r := run(t, nil, append([]string{"perf", "stat", "-x,"}, args...)...)
	if r.status != 0 {
		t.Fatalf("perf stat: status %d\n%s", r.status, r.stderr)
	}
	return byEvent(parseStatCSV(t, r.stderr, false))
}

func (l statLine) num(t testing.TB) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(l.value, 64)
	if err != nil {
		t.Fatalf("event %s: value %q is not a number", l.event, l.value)
	}
	return v
}

// byEvent indexes lines by event name (last wins).
func byEvent(ls []statLine) map[string]statLine {
	m := map[string]statLine{}
	for _, l := range ls {
		m[l.event] = l
	}
	return m
}

func eventNames(ls []statLine) []string {
	var n []string
	for _, l := range ls {
		n = append(n, l.event+"/"+l.unit)
	}
	return n
}

func within(a, b, abs, rel float64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d <= abs+rel*max(a, b)
}

// waitSidecarHolds waits until the sidecar pid holds at least n perf event fds (handed
// over by the tool's shim), so that a fault injected next hits a tool that is already
// being served, not one still connecting: on a loaded machine perf can take longer to
// start than any fixed sleep (it then reports a sidecar it could not reach, not one it
// lost).
func waitSidecarHolds(t *testing.T, cmd *exec.Cmd, pid, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if perfFds(pid) >= n {
			return
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatalf("the sidecar (pid %d) holds no perf event of the tool after 30 s", pid)
}

// perfFds counts the perf event fds process pid holds.
func perfFds(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && l == "anon_inode:[perf_event]" {
			n++
		}
	}
	return n
}

// needRoot skips t, saying why it needs root, unless the tests run as root (CI does).
func needRoot(t testing.TB, why string) {
	t.Helper()
	testutil.RequireRoot(t, why+" (CI runs the tests as root)")
}

// startPiped starts cmd with a pipe to its stdin and one from its stdout, keeping its
// stderr; a failure to start fails t.
func startPiped(t testing.TB, cmd *exec.Cmd) (stdin io.WriteCloser, stdout io.ReadCloser, stderr *strings.Builder) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if stdout, err = cmd.StdoutPipe(); err != nil {
		t.Fatal(err)
	}
	stderr = &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	return stdin, stdout, stderr
}

// startRun starts `bayesperf run --pidfile F args...` (args: run's flags, "--" and the
// tool) with the extra environment entries env and its stderr going to stderr, and waits
// for the sidecar's pid in F. It returns the started command and the sidecar's pid.
func startRun(t *testing.T, env []string, stderr io.Writer, args ...string) (*exec.Cmd, int) {
	t.Helper()
	pidfile := filepath.Join(t.TempDir(), "pid")
	cmd := exec.Command(dropinBin(t, "bayesperf"), append([]string{"run", "--pidfile", pidfile}, args...)...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, waitPidfile(t, cmd, pidfile)
}

// waitPidfile waits for bayesperf run (cmd) to write the sidecar's pid.
func waitPidfile(t *testing.T, cmd *exec.Cmd, pidfile string) int {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(pidfile); err == nil && strings.HasSuffix(string(b), "\n") {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				return pid
			}
		}
	}
	cmd.Process.Kill()
	cmd.Wait()
	t.Fatal("no sidecar pid in the pidfile after 10 s")
	return 0
}

// errWaitTimeout is waitTimeout's error for a command it had to kill.
var errWaitTimeout = errors.New("no exit in time")

// waitTimeout waits at most d for the started cmd to exit and returns Wait's error. A
// command still running then is killed, with the processes pids (a sidecar that holds
// cmd's stderr open would keep Wait from returning), and reaped; the error is then
// errWaitTimeout.
func waitTimeout(cmd *exec.Cmd, d time.Duration, pids ...int) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		cmd.Process.Kill()
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		<-done
		return errWaitTimeout
	}
}
