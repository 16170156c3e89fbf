package test

// The measured program carries nothing of bayesperf (issue 15): a perf client's workload
// execs without the shim, without our environment variables and without our fds, so its
// counts are the native ones; a shell that starts a tool, and the tool, keep the shim.
// Needs the perf binary, gcc and perf_event_open for software events and tracepoints
// (root, or perf_event_paranoid and tracefs permissions that allow them).

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// workloadEvents are counts of `true` that the shim's loading changed (issue 15: 50/29/8
// natively, 55/37/11 through bayesperf): the two tracepoint counts are exact from run to
// run, page faults vary by a few.
var workloadEvents = []string{"page-faults", "raw_syscalls:sys_enter", "syscalls:sys_enter_mmap"}

// TestDropinWorkloadCountsNative: `perf stat -e page-faults,raw_syscalls:sys_enter,
// syscalls:sys_enter_mmap -- true`, 7 runs natively and 7 through bayesperf run,
// interleaved. For each event the median through bayesperf must equal the native median
// within the native runs' own spread (max - min): exactly, for the syscall counts that
// do not vary. Loading the shim in `true` added 5 faults, 8 syscalls and 3 mmaps.
func TestDropinWorkloadCountsNative(t *testing.T) {
	argv := []string{"perf", "stat", "-x,", "-e", strings.Join(workloadEvents, ","), "--", "true"}
	const runs = 7
	nat, bp := map[string][]float64{}, map[string][]float64{}
	collect := func(into map[string][]float64, r result, how string) {
		if r.status != 0 {
			t.Fatalf("%s: status %d\n%s", how, r.status, r.stderr)
		}
		if w := bayesperfWarnings(r.stderr); len(w) != 0 {
			t.Errorf("%s: warnings %q", how, w)
		}
		got := byEvent(parseStatCSV(t, r.stderr, false))
		for _, ev := range workloadEvents {
			l, ok := got[ev]
			if !ok {
				t.Fatalf("%s: no %s line in\n%s", how, ev, r.stderr)
			}
			into[ev] = append(into[ev], l.num(t))
		}
	}
	var st stats
	for range runs {
		collect(nat, run(t, nil, argv...), "native")
		var r result
		r, st = bayesperfRun(t, argv...)
		collect(bp, r, "bayesperf run")
	}
	if st.Events < uint64(len(workloadEvents)) || st.MirrorReads == 0 {
		t.Errorf("stats %+v: want perf's %d events registered and read from mirrors", st, len(workloadEvents))
	}
	for _, ev := range workloadEvents {
		n, g := nat[ev], bp[ev]
		spread := slices.Max(n) - slices.Min(n)
		if d := median(g) - median(n); d > spread || -d > spread {
			t.Errorf("%s of true: median %v through bayesperf, %v natively (runs %v and %v); want equal within the native spread %v",
				ev, median(g), median(n), g, n, spread)
		}
		t.Logf("%s of true: native %v, through bayesperf %v", ev, n, g)
	}
}

// probeScript, run by sh as the measured program, prints its own maps, environment and
// open fds, in three sections separated by "@@".
const probeScript = `cat /proc/$$/maps; echo @@; tr '\0' '\n' </proc/$$/environ; echo; echo @@; ` +
	`for f in /proc/$$/fd/*; do echo "${f##*/} $(readlink "$f")"; done`

// probe is what a measured program saw of itself.
type probe struct {
	files []string          // distinct paths in its maps
	env   map[string]string // its environment
	fds   map[string]string // fd number -> link, pipe/socket inode numbers elided
}

var inodeRe = regexp.MustCompile(`:\[[0-9]+\]`)

func parseProbe(t *testing.T, out string) probe {
	t.Helper()
	sec := strings.Split(out, "@@\n")
	if len(sec) != 3 {
		t.Fatalf("probe output has %d sections, want 3:\n%s", len(sec), out)
	}
	p := probe{env: map[string]string{}, fds: map[string]string{}}
	seen := map[string]bool{}
	for l := range strings.Lines(sec[0]) {
		if f := strings.Fields(l); len(f) >= 6 && !seen[f[5]] {
			seen[f[5]] = true
			p.files = append(p.files, f[5])
		}
	}
	slices.Sort(p.files)
	for l := range strings.Lines(sec[1]) {
		if k, v, ok := strings.Cut(strings.TrimSuffix(l, "\n"), "="); ok {
			p.env[k] = v
		}
	}
	for l := range strings.Lines(sec[2]) {
		if n, link, ok := strings.Cut(strings.TrimSpace(l), " "); ok {
			p.fds[n] = inodeRe.ReplaceAllString(link, "")
		}
	}
	return p
}

// TestDropinWorkloadCarriesNothing: the measured program of perf stat, run natively and
// through bayesperf run with a user preload of its own (LD_PRELOAD=libother.so), maps the
// same files, has the same environment and the same fds: no libbayesperf.so, no
// BAYESPERF_* variable, no memfd or socket of ours; the user's preload stays.
func TestDropinWorkloadCarriesNothing(t *testing.T) {
	tmp := t.TempDir()
	other := filepath.Join(tmp, "libother.so")
	src := filepath.Join(tmp, "other.c")
	if err := os.WriteFile(src, []byte("int bayesperf_test_other;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", other, src).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", other, err, out)
	}
	argv := []string{"perf", "stat", "-x,", "-e", "page-faults", "--", "sh", "-c", probeScript}
	env := []string{"LD_PRELOAD=" + other}
	nr := run(t, env, argv...)
	gr := run(t, env, append([]string{dropinBin(t, "bayesperf"), "run", "--"}, argv...)...)
	if nr.status != 0 || gr.status != 0 {
		t.Fatalf("status %d natively, %d through bayesperf\n%s\n%s", nr.status, gr.status, nr.stderr, gr.stderr)
	}
	n, g := parseProbe(t, nr.stdout), parseProbe(t, gr.stdout)
	for _, f := range g.files {
		if strings.Contains(f, "bayesperf") {
			t.Errorf("the measured program maps %s", f)
		}
	}
	if !slices.Contains(g.files, other) {
		t.Errorf("the user's preload %s is not mapped in the measured program: %q", other, g.files)
	}
	if !slices.Equal(n.files, g.files) {
		t.Errorf("mapped files differ:\nnative    %q\nbayesperf %q", n.files, g.files)
	}
	for k, v := range g.env {
		if nv, ok := n.env[k]; !ok || nv != v || strings.Contains(v, "libbayesperf") {
			t.Errorf("the measured program's environment has %s=%s (natively %q)", k, v, nv)
		}
	}
	if !maps.Equal(n.env, g.env) {
		t.Errorf("environments differ:\nnative    %v\nbayesperf %v", n.env, g.env)
	}
	if !maps.Equal(n.fds, g.fds) {
		t.Errorf("open fds differ:\nnative    %v\nbayesperf %v", n.fds, g.fds)
	}
	t.Logf("measured program: %d mapped files, %d variables, fds %v, the same natively and through bayesperf", len(g.files), len(g.env), g.fds)
}

// TestDropinShellStartsTool: `bayesperf run -- sh -c 'perf stat ... -- true'`: the shell
// never opens a perf event, so the perf it starts keeps the shim and is served (events
// registered, reads from mirrors), while perf's own workload runs without it: its
// syscall counts (exact from run to run) equal a native run's.
func TestDropinShellStartsTool(t *testing.T) {
	events := strings.Join(workloadEvents[1:], ",")
	tool := "perf stat -x, -e " + events + " -- true"
	nat := run(t, nil, "sh", "-c", tool)
	got, st := bayesperfRun(t, "sh", "-c", tool)
	if nat.status != 0 || got.status != 0 {
		t.Fatalf("status %d natively, %d through bayesperf\n%s\n%s", nat.status, got.status, nat.stderr, got.stderr)
	}
	if w := bayesperfWarnings(got.stderr); len(w) != 0 {
		t.Errorf("warnings %q", w)
	}
	if st.Events < 2 || st.MirrorReads == 0 {
		t.Errorf("stats %+v: want the perf that sh started registered and served from mirrors", st)
	}
	n, g := byEvent(parseStatCSV(t, nat.stderr, false)), byEvent(parseStatCSV(t, got.stderr, false))
	for _, ev := range workloadEvents[1:] {
		if n[ev].value != g[ev].value {
			t.Errorf("%s of true under sh -c 'perf stat': %s through bayesperf, %s natively", ev, g[ev].value, n[ev].value)
		}
	}
	t.Logf("sh -c 'perf stat': %d events registered, %d mirror reads; %s", st.Events, st.MirrorReads,
		fmt.Sprint(slices.Sorted(maps.Keys(g))))
}

// TestDropinClientSpawnsWorkload: perf clients that start a program otherwise than perf
// (test/c/spawn_client: open an event on itself, then posix_spawnp the program, or execvp
// it in its own place). A program the client's event counts (an inherited event and
// posix_spawn; an event that survives the exec) has none of ours in its environment,
// and the user's own preload stays; a program it does not count (an event on the client
// alone, then posix_spawn: a tool starting another tool) keeps the shim.
func TestDropinClientSpawnsWorkload(t *testing.T) {
	dir := dropinBins(t)
	lib := filepath.Join(dir, "libbayesperf.so")
	const show = `echo "preload=[$LD_PRELOAD] socket=[${BAYESPERF_SOCKET:+set}] verbose=[$BAYESPERF_VERBOSE]"`
	for _, c := range []struct {
		mode    string
		counted bool
	}{{"spawn-inherit", true}, {"exec", true}, {"spawn", false}} {
		for _, user := range []string{"", "/nonexistent/libuser.so"} {
			var env []string
			if user != "" {
				env = []string{"LD_PRELOAD=" + user} // ld.so warns and goes on: the variable is what counts
			}
			r := run(t, env, filepath.Join(dir, "bayesperf"), "run", "-v", "--", filepath.Join(dir, "spawn_client"), c.mode, "sh", "-c", show)
			want := fmt.Sprintf("preload=[%s] socket=[] verbose=[]", user)
			if !c.counted {
				want = fmt.Sprintf("preload=[%s] socket=[set] verbose=[1]", strings.TrimSuffix(lib+":"+user, ":"))
			}
			if r.status != 0 || strings.TrimSpace(r.stdout) != want {
				t.Errorf("spawn_client %s with LD_PRELOAD=%q: status %d, the program printed %q, want %q\n%s", c.mode, user, r.status, r.stdout, want, r.stderr)
			}
		}
	}
}
