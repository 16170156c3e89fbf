package test

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Self-monitoring programs (issue 15, item 2): programs that count their own work
// between their own PERF_EVENT_IOC_ENABLE and DISABLE, resetting in between, must read
// through bayesperf what they read natively (the shim adds nothing to the window), and
// under --virtual-counters what a PMU that follows those ioctls would show. The
// reference is the same program run natively several times in the same test: its
// run-to-run spread is the noise.

// noise is the range of one count over native runs, widened by its spread: a value
// through bayesperf inside it is "equal within run-to-run noise".
type noise struct{ lo, hi float64 }

func noiseOf(vals []float64) noise {
	lo, hi := slices.Min(vals), slices.Max(vals)
	return noise{lo - (hi - lo), hi + (hi - lo)}
}

func (n noise) has(v float64) bool { return v >= n.lo && v <= n.hi }

// nativeNoise is, per count, the noise of the native runs' values.
func nativeNoise(runs []map[string]float64) map[string]noise {
	want := map[string]noise{}
	for name := range runs[0] {
		var v []float64
		for _, r := range runs {
			v = append(v, r[name])
		}
		want[name] = noiseOf(v)
	}
	return want
}

// selfmonLine matches a line of test/c/selfmon.
var selfmonLine = regexp.MustCompile(`^(\S+) total (\d+) scaled (\d+) enabled (\d+) running (\d+)$`)

// selfmonCount is one event as test/c/selfmon prints it, summed over its windows.
type selfmonCount struct{ total, scaled, enabled, running float64 }

func parseSelfmon(t *testing.T, out string) map[string]selfmonCount {
	t.Helper()
	m := map[string]selfmonCount{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := selfmonLine.FindStringSubmatch(l)
		if f == nil {
			t.Fatalf("selfmon printed %q", l)
		}
		var c [4]float64
		for i := range c {
			c[i], _ = strconv.ParseFloat(f[2+i], 64)
		}
		m[f[1]] = selfmonCount{c[0], c[1], c[2], c[3]}
	}
	return m
}

// selfmonExact are the events of test/c/selfmon that count the program's own work alone,
// the same in every run; context-switches also count what else the machine runs (the
// sidecar, next to the program, among it), so they are logged, not compared.
var selfmonExact = []string{"page-faults", "raw_syscalls:sys_enter", "syscalls:sys_enter_getppid"}

// TestDropinSelfMonitoring: test/c/selfmon counts itself in 5 windows, each reset,
// enabled, 20000 getppid and 2000 fresh pages, disabled, read (4 events, opened
// disabled on itself). Natively three times; then through bayesperf:
//   - the identity stage, reading 4 times inside each window as well: every count equal
//     to native within the noise (the shim reads events that count the reader from the
//     kernel, and does nothing a window counts);
//   - --virtual-counters 4 --correct none (every event fits: the view counts all the
//     time): equal to native within the noise. Before, the virtual PMU ignored the
//     tool's ioctls: the values were cumulative since the events were registered
//     (27124 getppid for 10000 under vc2);
//   - the same reading 4 times inside each window (vc4-reads): equal to native too. A
//     read of a self-counting event under the virtual PMU is a round trip to the
//     sidecar, which the tool's own events counted (100180 system calls for 100100
//     natively, 10004 page faults for 10000): the shim now makes it with the reader's
//     events paused (prctl), and prefaults the mirror page it reads (self_pauses in
//     --stats counts the paused refreshes: one per read inside a window);
//   - --virtual-counters 2 --correct none, reading after each window only (vc2) and 4
//     times inside it too (vc2-reads): multiplexed (running below enabled), and never a
//     raw count above what the window counted natively (a multiplexed event counts a
//     part of the window, never more).
//
// Root: tracepoints. About 10 s.
func TestDropinSelfMonitoring(t *testing.T) {
	needRoot(t, "the program opens tracepoints")
	dir := dropinBins(t)
	prog := []string{filepath.Join(dir, "selfmon"), "5", "20000", "2000"}
	// Natively three times each way: reading inside the windows too, or after them only.
	want := map[string]map[string]noise{}
	for _, mid := range []string{"4", "0"} {
		var native []map[string]selfmonCount
		for range 3 {
			r := run(t, nil, append(prog, mid)...)
			if r.status != 0 {
				t.Fatalf("native selfmon: status %d\n%s%s", r.status, r.stdout, r.stderr)
			}
			native = append(native, parseSelfmon(t, r.stdout))
		}
		want[mid] = map[string]noise{}
		for _, ev := range append(selfmonExact, "context-switches") {
			var v []float64
			for _, n := range native {
				v = append(v, n[ev].total)
			}
			want[mid][ev] = noiseOf(v)
			t.Logf("native, %s reads in each window: %-28s %v", mid, ev, v)
		}
	}
	bp := filepath.Join(dir, "bayesperf")
	for _, tc := range []struct {
		name  string
		flags []string
		mid   string
		exact bool // every count within the noise; else multiplexed, raw within the window
	}{
		{"identity", nil, "4", true},
		{"vc4", []string{"--virtual-counters", "4", "--correct", "none"}, "0", true},
		{"vc4-reads", []string{"--virtual-counters", "4", "--correct", "none"}, "4", true},
		{"vc2", []string{"--virtual-counters", "2", "--correct", "none"}, "0", false},
		{"vc2-reads", []string{"--virtual-counters", "2", "--correct", "none"}, "4", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sf := filepath.Join(t.TempDir(), "stats.json")
			args := append(append([]string{bp, "run", "--stats", sf}, tc.flags...), "--")
			r := run(t, patientShim, append(append(args, prog...), tc.mid)...)
			if r.status != 0 {
				t.Fatalf("bayesperf run: status %d\n%s%s", r.status, r.stdout, r.stderr)
			}
			var st struct {
				SelfReads  uint64 `json:"self_reads"`
				SelfPauses uint64 `json:"self_pauses"`
			}
			readJSON(t, sf, &st)
			t.Logf("self reads %d, refreshes made paused %d", st.SelfReads, st.SelfPauses)
			// 5 windows of mid reads of the 4 events inside: each a round trip, which
			// must not count; the reads after a window (every event disabled) need no
			// pause.
			if mid, _ := strconv.Atoi(tc.mid); tc.flags != nil && st.SelfPauses != uint64(5*mid*4) {
				t.Errorf("%d refreshes made with the reader's events paused, want %d (every read inside the windows)", st.SelfPauses, 5*mid*4)
			}
			got := parseSelfmon(t, r.stdout)
			for _, ev := range append(selfmonExact, "context-switches") {
				c := got[ev]
				t.Logf("%-28s total %8.0f scaled %8.0f running %5.1f%%, native %v", ev, c.total, c.scaled,
					100*c.running/max(c.enabled, 1), want[tc.mid][ev])
			}
			for _, ev := range selfmonExact {
				c, n := got[ev], want[tc.mid][ev]
				switch {
				case tc.exact && !n.has(c.total):
					t.Errorf("%s: %.0f through bayesperf, native %.0f..%.0f (with the spread)", ev, c.total, n.lo, n.hi)
				case !tc.exact && c.total > n.hi:
					t.Errorf("%s: a multiplexed raw count of %.0f, above the window's native %.0f", ev, c.total, n.hi)
				case !tc.exact && (c.running >= c.enabled || c.running == 0):
					t.Errorf("%s: running %.0f of enabled %.0f: not multiplexed on 2 counters", ev, c.running, c.enabled)
				}
			}
		})
	}
}

// stressNG runs stress-ng's cpu stressor with --perf (it counts its own stressor between
// its own ENABLE and DISABLE) through prefix, and returns its counts by name. Its
// tracepoints need debugfs at /sys/kernel/debug: when it is not mounted there, the
// command runs in a private mount namespace that mounts it, which changes nothing
// outside.
func stressNG(t *testing.T, prefix ...string) map[string]float64 {
	t.Helper()
	out, _ := stressNGRun(t, prefix...)
	return out
}

// stressNGRun is stressNG that also returns the run, for what bayesperf logged.
func stressNGRun(t *testing.T, prefix ...string) (map[string]float64, result) {
	t.Helper()
	argv := append(prefix, "stress-ng", "--cpu", "1", "--cpu-ops", "2000", "--perf", "-t", "10")
	if _, err := os.Stat("/sys/kernel/debug/tracing/events"); err != nil {
		argv = append([]string{"unshare", "-m", "sh", "-c", `mount -t debugfs none /sys/kernel/debug && exec "$@"`, "sh"}, argv...)
	}
	r := run(t, patientShim, argv...)
	if r.status != 0 {
		t.Fatalf("%q: status %d\n%s%s", argv, r.status, r.stdout, r.stderr)
	}
	// "stress-ng: info:  [PID]      486 Page Faults Total     195.362 /sec"
	line := regexp.MustCompile(`\]\s+([0-9.]+) (\S.*?)\s+[0-9.]+ [KMB]?/sec`)
	out := map[string]float64{}
	for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
		if f := line.FindStringSubmatch(l); f != nil {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("stress-ng printed %q", l)
			}
			out[f[2]] = v
		}
	}
	if len(out) < 10 {
		t.Fatalf("stress-ng --perf printed %d counts:\n%s%s", len(out), r.stdout, r.stderr)
	}
	return out, r
}

// stressExact are the counts of stress-ng --perf that count the stressor's own work,
// the same in every run. The others (context switches, RCU, IRQs, page frees...) count
// what the whole machine does while the stressor runs, which bayesperf's sidecar is
// part of: they are logged.
var stressExact = []string{"Page Faults Total", "Page Faults Minor", "Page Faults User", "System Call Enter", "System Call Exit"}

// majorSlack is how far a stressExact count may stray from the native noise because of
// the run's major faults: a major fault is a page the page cache did not hold, which
// depends on what the machine evicted between runs, not on the stressor's work, and the
// kernel counts it in the page-fault totals either instead of a minor fault or beside
// one (a fault retried after the page is read in). CI runs through bayesperf had 1
// major fault where 15 native runs had none and 488 page faults (487 minor) against
// their 484..487, and 2 major faults with 485 page faults (483 minor) against
// 484..487. So each page-fault count may be off by up to the major faults, in either
// direction. The price: in vc64 (which does not check Major against the native zero, as
// vc2 does) a major fault of bayesperf's own making would widen its own tolerance.
func majorSlack(name string, major float64) float64 {
	if strings.HasPrefix(name, "Page Faults") {
		return major
	}
	return 0
}

// hasNear reports whether v is within n, widened by slack on both sides.
func (n noise) hasNear(v, slack float64) bool { return v >= n.lo-slack && v <= n.hi+slack }

// exactNoise is nativeNoise of stressExact's counts.
func exactNoise(runs []map[string]float64) map[string]noise {
	own := make([]map[string]float64, len(runs))
	for i, r := range runs {
		own[i] = map[string]float64{}
		for _, name := range stressExact {
			own[i][name] = r[name]
		}
	}
	return nativeNoise(own)
}

// TestDropinStressNGPerf: stress-ng --perf (59 events on itself, reset and enabled one
// by one around the stressor, disabled and read after it) natively three times, then
// through bayesperf with --virtual-counters 64 (every event fits) and the default
// correction: the counts of the stressor's own work equal native within the noise.
// Before, they were everything since the last registration (584 page faults and 172
// system calls for 486 and 114). With --virtual-counters 2, the setting, the
// stressor's page faults that counted nothing in any native window (major, kernel)
// read 0 (before: major faults 23-308 where the truth was 0). Root (tracepoints); stress-ng comes with make deps. About
// 25 s.
func TestDropinStressNGPerf(t *testing.T) {
	needRoot(t, "stress-ng --perf opens tracepoints")
	if _, err := exec.LookPath("stress-ng"); err != nil {
		t.Skip("needs stress-ng, which make deps installs (mk/shim.mk)")
	}
	bp := dropinBin(t, "bayesperf")
	// Five native runs: the stressor's page faults vary by a few between runs (482-489),
	// and three runs that happened to agree (486 each) made the noise 0 and failed CI on
	// a run through bayesperf that read 484; ten more are taken when a count falls
	// outside the noise of these (see vc64).
	var native []map[string]float64
	for range 5 {
		native = append(native, stressNG(t))
	}
	want := nativeNoise(native)
	zero := map[string]bool{}
	for name := range native[0] {
		zero[name] = want[name].hi == 0
	}
	// Five native runs can agree by chance and call the noise 0 (five of 486 page
	// faults in one CI run, 485 through bayesperf; five of 486 and a truth of 485 in
	// vc2's report at load 6): before calling a difference ours, moreNative lets ten
	// more native runs say how much the count varies.
	moreNative := func(t *testing.T) map[string]noise {
		for range 10 {
			native = append(native, stressNG(t))
		}
		want = nativeNoise(native)
		return want
	}
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"vc64", []string{"--virtual-counters", "64"}},
		{"vc2", []string{"--virtual-counters", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := append([]string{bp, "run"}, tc.flags...)
			var sf, rf string
			if tc.name == "vc2" {
				sf, rf = filepath.Join(t.TempDir(), "stats.json"), filepath.Join(t.TempDir(), "report.json")
				prefix = append(prefix, "-v", "--stats", sf, "--report", rf)
			}
			got, r := stressNGRun(t, append(prefix, "--")...)
			var names []string
			for name := range want {
				names = append(names, name)
			}
			slices.Sort(names)
			for _, name := range names {
				t.Logf("%-26s %8.0f, native %s", name, got[name], fmt.Sprint(want[name]))
			}
			if tc.name == "vc64" {
				major := got["Page Faults Major"]
				outside := func(exact map[string]noise) (bad []string) {
					for _, name := range stressExact {
						if !exact[name].hasNear(got[name], majorSlack(name, major)) {
							bad = append(bad, name)
						}
					}
					return bad
				}
				exact := exactNoise(native)
				if len(outside(exact)) > 0 {
					moreNative(t)
					exact = exactNoise(native)
				}
				for _, name := range outside(exact) {
					n := exact[name]
					t.Errorf("%s: %.0f through bayesperf with %.0f major faults, native %.0f..%.0f over %d runs (with the spread)", name, got[name], major, n.lo, n.hi, len(native))
				}
				return
			}
			// A count that is zero in every native window must print zero when it is zero
			// in this run's window too. Through bayesperf the stressor may take a major
			// fault or two that native runs did not (see majorSlack): CI printed 5 major
			// faults where the report's truth of the window was 489 page faults, 487
			// minor. Then the count is the model's to estimate, and checkStressWindow's
			// bounds are what hold it.
			round := stressRound(t, rf)
			for _, name := range []string{"Page Faults Major", "Page Faults Kernel"} {
				e := round[stressPerfNames[name]]
				switch {
				case !zero[name] || got[name] == 0:
				case e.Truth == nil:
					t.Errorf("%s: %.0f through bayesperf, 0 in every native window, and the report has no truth of %s", name, got[name], stressPerfNames[name])
				case *e.Truth == 0:
					t.Errorf("%s: %.0f through bayesperf, 0 in every native window and in this run's", name, got[name])
				default:
					t.Logf("%s: %.0f through bayesperf, %d in this run's window, 0 in every native one", name, got[name], *e.Truth)
				}
			}
			checkStressReport(t, r.stderr, sf, rf, want["Page Faults Total"])
			checkStressWindow(t, rf, got, exactNoise(native), func() map[string]noise { moreNative(t); return exactNoise(native) })
		})
	}
}

// goneLine is what -v logs when a target of a client's virtual PMU ends: a task
// ("pid N") or a CPU ("CPU N").
var goneLine = regexp.MustCompile(`vstage: client (\d+): target ((?:pid|CPU) \d+) gone after \d+ slices`)

// goneTargets counts the lines of -v's log (stderr) that say a target ended, by
// targetKey.
func goneTargets(stderr string) map[string]int {
	out := map[string]int{}
	for _, f := range goneLine.FindAllStringSubmatch(stderr, -1) {
		out[f[1]+" "+f[2]]++
	}
	return out
}

// targetKey names a report entry's client and target as goneTargets does.
func targetKey(client, pid, cpu int) string {
	if pid == -1 {
		return fmt.Sprintf("%d CPU %d", client, cpu)
	}
	return fmt.Sprintf("%d pid %d", client, pid)
}

// checkStressReport checks what bayesperf run -v --stats --report said of stress-ng
// --perf (issue 15): stress-ng registers its 59 events one by one on itself, each a
// rebuild of its virtual PMU whose copies count at once (the events are not enabled on
// exec), and before, every rebuild logged "target gone ... final totals" (58 lines) and
// left a report entry of its own (59 entries of 1 to 59 events). Now the one client and
// target has one entry over all its events and every PMU's slices, one such line, and
// a truth of page faults over the whole life of its PMUs, so at least the faults of
// stress-ng's window (pf, natively) and the --stats truth.
func checkStressReport(t *testing.T, stderr, sf, rf string, pf noise) {
	t.Helper()
	var rep repeatReport
	readJSON(t, rf, &rep)
	st := readStats(t, sf)
	gone := goneTargets(stderr)
	seen := map[string]bool{}
	for _, c := range rep.Clients {
		k := targetKey(c.Client, c.Pid, c.CPU)
		if seen[k] {
			t.Errorf("report: client %d target %d has more than one entry", c.Client, c.Pid)
		}
		seen[k] = true
		if gone[k] != 1 {
			t.Errorf("client %d target %d: %d lines say it is gone, want 1", c.Client, c.Pid, gone[k])
		}
	}
	if len(rep.Clients) != 1 || len(gone) != 1 {
		t.Fatalf("report has %d entries and the log %d targets gone, want 1 each (stress-ng's stressor): %v", len(rep.Clients), len(gone), gone)
	}
	c := rep.Clients[0]
	if uint64(len(c.Totals)) != st.Events || c.Slices == 0 {
		t.Errorf("report: %d events over %d slices, want the %d registered over some", len(c.Totals), c.Slices, st.Events)
	}
	for _, e := range c.Totals {
		if e.Event != "page-faults" {
			continue
		}
		if e.Truth == nil || e.Lo == nil || e.Hi == nil {
			t.Fatalf("report: page-faults %+v without truth or interval", e)
		}
		t.Logf("report: page-faults %.0f [%.0f, %.0f], truth %d over %d slices; stats truth %d", e.Value, *e.Lo, *e.Hi, *e.Truth, c.Slices, st.Truth["page-faults"])
		if float64(*e.Truth) < pf.lo || *e.Truth != st.Truth["page-faults"] {
			t.Errorf("report's truth of page-faults %v: want at least the window's %.0f natively, and the stats' %d", e.Truth, pf.lo, st.Truth["page-faults"])
		}
	}
}

// stressPerfNames are the perf names of the stress-ng counts the tests find in the
// report: stressExact's, and those vc2 checks against a native zero.
var stressPerfNames = map[string]string{
	"Page Faults Total": "page-faults", "Page Faults Minor": "minor-faults",
	"Page Faults User": "exceptions:page_fault_user", "System Call Enter": "raw_syscalls:sys_enter",
	"System Call Exit":  "raw_syscalls:sys_exit",
	"Page Faults Major": "major-faults", "Page Faults Kernel": "exceptions:page_fault_kernel",
}

// stressRound is the report's last round of reads (stress-ng's, after its window): its
// events by perf name.
func stressRound(t *testing.T, rf string) map[string]reportEvent {
	t.Helper()
	var rep runReport
	readJSON(t, rf, &rep)
	if len(rep.Clients) != 1 || len(rep.Clients[0].Interval) == 0 {
		t.Fatalf("report: %d clients, want 1 with a round of reads", len(rep.Clients))
	}
	iv := rep.Clients[0].Interval
	byName := map[string]reportEvent{}
	for _, e := range iv[len(iv)-1].Events {
		byName[e.Event] = e
	}
	return byName
}

// checkStressWindow checks the report's round of stress-ng's reads (after its window)
// for stressExact's counts: "tool" is what stress-ng printed (got), and "truth" what its
// own kernel events counted in the window, so within native noise (want); before, they
// were the model's running total over the PMU's life (142 page faults where stress-ng
// printed 0) and the always-on copy's count over it (613 against 485 in the window). The
// model's estimate over the round's span and its interval are logged beside them: with
// 59 events on 2 counters no value can be right within noise (docs/selfmon.md). A truth
// outside want (give or take majorSlack) asks more for the noise of more native
// runs before it is an error.
func checkStressWindow(t *testing.T, rf string, got map[string]float64, want map[string]noise, more func() map[string]noise) {
	t.Helper()
	byName := stressRound(t, rf)
	for _, name := range stressExact {
		e, ok := byName[stressPerfNames[name]]
		if !ok || e.Tool == nil || e.Truth == nil || e.Lo == nil || e.Hi == nil {
			t.Errorf("report's round: %s (%s) missing or without tool, truth or interval: %+v", name, stressPerfNames[name], e)
			continue
		}
		n := want[name]
		t.Logf("report's round: %-26s tool %6.0f (printed %6.0f), truth %5d (native %v), model %6.0f [%.0f, %.0f] over the span", name, *e.Tool, got[name], *e.Truth, n, e.Value, *e.Lo, *e.Hi)
		if math.Abs(*e.Tool-got[name]) > 1 {
			t.Errorf("%s: the report's tool value %.0f, stress-ng printed %.0f", name, *e.Tool, got[name])
		}
		truth, slack := float64(*e.Truth), 0.0
		if m, ok := byName["major-faults"]; ok && m.Truth != nil {
			slack = majorSlack(name, float64(*m.Truth))
		}
		if !n.hasNear(truth, slack) && more != nil {
			want, more = more(), nil
			n = want[name]
		}
		if !n.hasNear(truth, slack) {
			t.Errorf("%s: the report's truth %.0f with %.0f major faults, native %.0f..%.0f (with the spread)", name, truth, slack, n.lo, n.hi)
		}
	}
}
