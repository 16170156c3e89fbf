package test

// Clear errors (issue 8): every user-facing failure of bin/bayesperf prints exactly one
// line on stderr saying what is wrong and what to do, nothing on stdout, no Go stack and
// no usage dump, and exits non-zero: 2 for what the user gave (flags, events, files named
// on the command line), 127 for a command that cannot be started, 1 for the rest.
//
// Needs: root (to create the user bperr with useradd and run as it, and to unmount
// tracefs in a private mount namespace with unshare), setpriv and unshare (util-linux),
// perf_event_open for software events; `make deps` installs the rest.

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// errCase is one failure: bayesperf's arguments, extra environment, who runs it, the exit
// status and a regexp the one line must match.
type errCase struct {
	name string
	args []string
	env  []string
	// asUser runs it as the unprivileged user bperr; noTracefs in a private mount
	// namespace where tracefs is not mounted.
	asUser, noTracefs bool
	code              int
	re                string
	// needs, when set, says why the case cannot fail on this machine ("" when it can).
	needs func() string
}

// TestErrorsOneLine runs bayesperf into every failure of its table and checks that each
// prints its one line (checkOneLine) and exits with its status. It is long because the
// table is: one line per failure, grouped by what is wrong, with the fixtures it names.
func TestErrorsOneLine(t *testing.T) {
	dir := dropinBins(t)
	bp := filepath.Join(dir, "bayesperf")
	fx := t.TempDir()
	write := func(name, text string, mode os.FileMode) string {
		p := filepath.Join(fx, name)
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badRel := write("bad.rel", "# ok so far\npage-faults = minor-faults +\n", 0o644)
	badCSV := write("bad.csv", "page-faults,minor-faults\n10,9\n1,2,3\n", 0o644)
	notExec := write("script", "#!/bin/sh\n", 0o644)
	missing := filepath.Join(fx, "nonexistent")
	hasPMU := func() string {
		if _, err := os.Stat("/sys/bus/event_source/devices/cpu"); err == nil {
			return "this machine has a hardware PMU: cycles opens"
		}
		return ""
	}
	paranoidAtLeast2 := func() string {
		b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
		if v, _ := strconv.Atoi(strings.TrimSpace(string(b))); err != nil || v < 2 {
			return "perf_event_paranoid < 2 here: an unprivileged user may count kernel activity"
		}
		return ""
	}

	cases := []errCase{
		// The dispatcher.
		{name: "no command", code: 2, re: `^bayesperf: no command given; run 'bayesperf --help'`},
		{name: "unknown command", args: []string{"nosuch"}, code: 2, re: `^bayesperf: unknown command "nosuch"; known: attach, .*stat`},

		// Flags, in each subcommand.
		{name: "stat bad flag", args: []string{"stat", "--bogus", "--", "true"}, code: 2, re: `^bayesperf stat: flag provided but not defined: -bogus \(see 'bayesperf stat --help'\)$`},
		{name: "stat missing value", args: []string{"stat", "-e"}, code: 2, re: `^bayesperf stat: flag needs an argument: -e \(see 'bayesperf stat --help'\)$`},
		{name: "stat bad value", args: []string{"stat", "-I", "abc", "--", "true"}, code: 2, re: `^bayesperf stat: invalid value "abc" for flag -I`},
		{name: "stat short interval", args: []string{"stat", "-I", "5", "--", "true"}, code: 2, re: `^bayesperf stat: -I 5: the interval must be at least 10 ms$`},
		{name: "stat tiny mux interval", args: []string{"stat", "--mux-interval", "100us", "--", "true"}, code: 2, re: `^bayesperf stat: --mux-interval 100µs: want at least 1ms`},
		{name: "attach bad pid", args: []string{"attach", "-p", "abc"}, code: 2, re: `^bayesperf attach: invalid value "abc" for flag -p`},
		{name: "eval bad flag", args: []string{"eval", "--bogus"}, code: 2, re: `^bayesperf eval: flag provided but not defined: -bogus \(see 'bayesperf eval --help'\)$`},
		{name: "eval counters", args: []string{"eval", "--counters", "0", "-e", "page-faults", "--", "true"}, code: 2, re: `^bayesperf eval: --counters 0: a PMU has at least 1 counter$`},
		{name: "list bad flag", args: []string{"list", "--bogus"}, code: 2, re: `^bayesperf list: flag provided but not defined: -bogus`},
		{name: "list bad glob", args: []string{"list", "["}, code: 2, re: `^bayesperf list: bad glob "\[": .*; use \* \? and \[\.\.\.\]`},
		{name: "list two globs", args: []string{"list", "a", "b"}, code: 2, re: `^bayesperf list: one GLOB at most, got 2 arguments; quote a glob`},
		{name: "workload bad flag", args: []string{"workload", "--bogus"}, code: 2, re: `^bayesperf workload: flag provided but not defined: -bogus`},
		{name: "workload none", args: []string{"workload"}, code: 2, re: `^bayesperf workload: no workload given; .*'bayesperf workload --list'`},
		{name: "workload unknown", args: []string{"workload", "nosuch"}, code: 2, re: `^bayesperf workload: .*"nosuch".*known: .*memory`},
		{name: "version argument", args: []string{"version", "x"}, code: 2, re: `^bayesperf version: unexpected arguments \["x"\]: version takes none$`},
		{name: "bench none", args: []string{"bench"}, code: 2, re: `^bayesperf bench: no benchmark given; usage: bayesperf bench read`},
		{name: "bench unknown", args: []string{"bench", "write"}, code: 2, re: `^bayesperf bench: unknown benchmark "write"; known: read`},
		{name: "bench bad flag", args: []string{"bench", "read", "--bogus"}, code: 2, re: `^bayesperf bench: flag provided but not defined: -bogus`},
		{name: "bench no readbench", args: []string{"bench", "read", "--readbench", missing}, code: 2, re: `^bayesperf bench read: no readbench program at .*; build it with 'make build'`},
		{name: "sidecar no socket", args: []string{"sidecar"}, code: 2, re: `^bayesperf sidecar: --socket PATH is required; 'bayesperf run' starts a sidecar`},
		{name: "sidecar bad socket dir", args: []string{"sidecar", "--socket", filepath.Join(missing, "sock")}, code: 1, re: `^bayesperf sidecar: check socket directory: .*no such file or directory; .*mode 0700`},
		{name: "run bad flag", args: []string{"run", "--bogus", "--", "true"}, code: 2, re: `^bayesperf run: flag provided but not defined: -bogus \(see 'bayesperf run --help'\)$`},
		{name: "run bad correct", args: []string{"run", "--correct", "foo", "--", "true"}, code: 2, re: `^bayesperf run: --correct foo: want auto, none or bayesperf$`},
		{name: "run no command", args: []string{"run"}, code: 2, re: `^bayesperf run: no command given; usage: bayesperf run \[flags\] -- CMD`},
		{name: "run no shim", args: []string{"run", "--shim", missing, "--", "true"}, code: 2, re: `^bayesperf run: find libbayesperf.so: .*build it with 'make build' or pass --shim PATH$`},

		// Events: unknown, bad syntax, unknown PMU, no hardware PMU.
		{name: "unknown event", args: []string{"stat", "-e", "nosuch", "--", "true"}, code: 2, re: `^bayesperf stat: unknown event "nosuch"; run 'bayesperf list' or 'perf list' for the names$`},
		{name: "bad modifier", args: []string{"stat", "-e", "task-clock:zz", "--", "true"}, code: 2, re: `^bayesperf stat: unknown event "task-clock:zz" \("zz" is not a modifier of task-clock: modifiers are letters of ukh`},
		{name: "unclosed group", args: []string{"stat", "-e", "{task-clock,page-faults", "--", "true"}, code: 2, re: `^bayesperf stat: parse event list: unclosed '\{' at offset 0; write events as perf does: .*\{a,b\}`},
		{name: "empty list", args: []string{"stat", "-e", ",", "--", "true"}, code: 2, re: `^bayesperf stat: parse event list: no events in ","; write events as perf does`},
		{name: "unknown PMU", args: []string{"stat", "-e", "nopmu/config=1/", "--", "true"}, code: 2, re: `^bayesperf stat: resolve event "nopmu/config=1/": unknown PMU "nopmu": .*'bayesperf list' shows the PMUs`},
		{name: "eval unknown event", args: []string{"eval", "-e", "nosuch", "--", "true"}, code: 2, re: `^bayesperf eval: unknown event "nosuch"; run 'bayesperf list'`},
		{name: "no hardware PMU", args: []string{"stat", "-e", "cycles", "--", "true"}, code: 1, re: `^bayesperf stat: open cycles: .*not supported.*: this machine has no hardware PMU .*; count software events or tracepoints instead`, needs: hasPMU},

		// A command is required after --, and must exist.
		{name: "stat no command", args: []string{"stat", "-e", "task-clock"}, code: 2, re: `^bayesperf stat: no command given; usage: bayesperf stat -e EVENTS \[flags\] -- CMD`},
		{name: "eval nothing", args: []string{"eval"}, code: 2, re: `^bayesperf eval: nothing to evaluate; usage: bayesperf eval -e EVENTS .*--trace FILE.csv`},
		{name: "eval no command", args: []string{"eval", "-e", "page-faults"}, code: 2, re: `^bayesperf eval: no command given; usage: bayesperf eval -e EVENTS \[flags\] -- CMD`},
		{name: "eval no events", args: []string{"eval", "--", "true"}, code: 2, re: `^bayesperf eval: no events given; add -e EVENTS`},
		{name: "attach no pid", args: []string{"attach", "-e", "task-clock"}, code: 2, re: `^bayesperf attach: no process given; usage: bayesperf attach -p PID`},
		{name: "attach gone", args: []string{"attach", "-p", "2147483646"}, code: 2, re: `^bayesperf attach: -p 2147483646: no such process$`},
		{name: "stat command not found", args: []string{"stat", "--", "nosuch-command-h4"}, code: 127, re: `^bayesperf stat: cannot run nosuch-command-h4: not found in \$PATH; check the name, or give its path$`},
		{name: "stat not executable", args: []string{"stat", "--", notExec}, code: 127, re: `^bayesperf stat: cannot run .*script: not executable \(permission denied\); chmod \+x it`},
		{name: "eval command not found", args: []string{"eval", "-e", "page-faults", "--", "nosuch-command-h4"}, code: 127, re: `^bayesperf eval: cannot run nosuch-command-h4: not found in \$PATH`},
		{name: "run command not found", args: []string{"run", "--", "nosuch-command-h4"}, code: 127, re: `^bayesperf run: cannot run nosuch-command-h4: not found in \$PATH; check the name`},

		// The perf binary missing from PATH.
		{name: "stat perf missing", args: []string{"stat", "--", "perf", "stat", "true"}, env: []string{"PATH=" + missing}, code: 127, re: `^bayesperf stat: cannot run perf: not found in \$PATH; install it \(Debian: apt-get install linux-perf\)`},
		{name: "run perf missing", args: []string{"run", "--", "perf", "stat", "true"}, env: []string{"PATH=" + missing}, code: 127, re: `^bayesperf run: cannot run perf: not found in \$PATH; install it \(Debian: apt-get install linux-perf\)`},

		// Files named on the command line: relation files (file:line:col), vendor tables,
		// traces, the output file.
		{name: "relations missing", args: []string{"stat", "--relations", missing, "--", "true"}, code: 2, re: `^bayesperf stat: --relations .*nonexistent: no such file or directory; give a readable relation file \(.*'bayesperf list --relations'`},
		{name: "relations directory", args: []string{"stat", "--relations", fx, "--", "true"}, code: 2, re: `^bayesperf stat: --relations .*: is a directory; give a readable relation file`},
		{name: "relations malformed", args: []string{"stat", "--relations", badRel, "--", "true"}, code: 2, re: `^bayesperf stat: .*bad\.rel:2:\d+: .*; fix that line \(one relation per line`},
		{name: "eval relations malformed", args: []string{"eval", "--relations", badRel, "-e", "page-faults", "--", "true"}, code: 2, re: `^bayesperf eval: .*bad\.rel:2:\d+: `},
		{name: "pmu-events missing", args: []string{"stat", "--pmu-events", missing, "--", "true"}, code: 2, re: `^bayesperf stat: --pmu-events .*nonexistent: .*; give Linux's tools/perf/pmu-events/arch directory`},
		{name: "trace missing", args: []string{"eval", "--trace", missing}, code: 2, re: `^bayesperf eval: open trace: .*no such file or directory; a trace is a CSV file`},
		{name: "trace malformed", args: []string{"eval", "--trace", badCSV}, code: 2, re: `^bayesperf eval: read trace .*bad\.csv: read row at line 3: 3 cells, header has 2; a trace is a CSV file: a header naming the events`},
		{name: "trace and events", args: []string{"eval", "--trace", badCSV, "-e", "page-faults"}, code: 2, re: `^bayesperf eval: --trace replays a file: do not give -e or a command$`},
		{name: "output unwritable", args: []string{"stat", "-o", filepath.Join(missing, "out"), "--", "true"}, code: 2, re: `^bayesperf stat: -o .*: no such file or directory; give a file in a directory you can write$`},

		// No permission: an unprivileged user at the machine's perf_event_paranoid.
		{name: "paranoid", args: []string{"stat", "-e", "task-clock", "--", "true"}, asUser: true, code: 1, re: `^bayesperf stat: open task-clock: .*permission denied: perf_event_paranoid is \d+, .*the :u modifier \(task-clock:u\), run as root, or lower it`, needs: paranoidAtLeast2},
		// Not a failure (exit 0), but the user must learn why no tracepoint is listed.
		{name: "list tracefs root only", args: []string{"list", "sched:*"}, asUser: true, code: 0, re: `^bayesperf list: tracepoints not listed: find tracefs: /sys/kernel/tracing is readable by root only; run as root`},
		{name: "relations unreadable", args: []string{"stat", "--relations", "/etc/shadow", "-e", "task-clock:u", "--", "true"}, asUser: true, code: 2, re: `^bayesperf stat: --relations /etc/shadow: permission denied; give a readable relation file`},
		{name: "another user's process", args: []string{"attach", "-p", "1", "-e", "task-clock:u", "--duration", "0.1"}, asUser: true, code: 1, re: `^bayesperf attach: attach to 1: .*permission denied: process 1 belongs to another user; run as root or as its owner$`},
		{name: "tracefs root only", args: []string{"stat", "-e", "sched:sched_switch", "--", "true"}, asUser: true, code: 1, re: `^bayesperf stat: resolve tracepoint "sched:sched_switch": find tracefs: /sys/kernel/tracing is readable by root only; run as root`},

		// tracefs not mounted: root mounts it (see TestErrorsTracefsMounted); a user is told
		// what to run.
		{name: "tracefs unmounted", args: []string{"stat", "-e", "sched:sched_switch", "--", "true"}, asUser: true, noTracefs: true, code: 1, re: `^bayesperf stat: .*find tracefs: not mounted; run as root \(bayesperf mounts it then\), or mount it: mount -t tracefs nodev /sys/kernel/tracing$`},
	}
	root := os.Geteuid() == 0
	var uid, gid uint32
	if root {
		uid, gid = errorsUser(t)
	}
	for _, c := range cases {
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			if (c.asUser || c.noTracefs) && !root {
				t.Skip("needs root to run as the user bperr and to unmount tracefs in a private mount namespace")
			}
			if c.needs != nil {
				if why := c.needs(); why != "" {
					t.Skip(why)
				}
			}
			argv := append([]string{bp}, c.args...)
			if c.asUser {
				argv = append([]string{"setpriv", "--reuid", strconv.Itoa(int(uid)), "--regid", strconv.Itoa(int(gid)), "--clear-groups", "--"}, argv...)
			}
			if c.noTracefs {
				argv = withoutTracefs(argv)
			}
			env := c.env
			if c.asUser {
				env = append(env, "HOME=/")
			}
			r := runCmd(t, env, argv...)
			if r.status != c.code {
				t.Errorf("exit %d, want %d; stderr %q", r.status, c.code, r.stderr)
			}
			checkOneLine(t, r, c.re)
		})
	}
}

// checkOneLine asserts the failure's output: nothing on stdout, one line on stderr that
// matches re, and no Go stack or usage dump.
func checkOneLine(t *testing.T, r result, re string) {
	t.Helper()
	if r.stdout != "" {
		t.Errorf("stdout not empty: %q", r.stdout)
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("want exactly one line on stderr, got %q", r.stderr)
	}
	for _, bad := range []string{"goroutine ", "panic:", "Usage", "usage of", "  -"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("stderr has %q (a stack or a usage dump): %q", bad, r.stderr)
		}
	}
	if !regexp.MustCompile(re).MatchString(strings.TrimSuffix(r.stderr, "\n")) {
		t.Errorf("stderr %q does not match %s", r.stderr, re)
	}
}

// TestErrorsHelpOnlyWhenAsked: --help prints the help on stdout and exits 0, for every
// subcommand; that is the only way to get it.
func TestErrorsHelpOnlyWhenAsked(t *testing.T) {
	bp := dropinBin(t, "bayesperf")
	for _, args := range [][]string{{"--help"}, {"stat", "--help"}, {"attach", "--help"}, {"eval", "--help"},
		{"run", "--help"}, {"sidecar", "--help"}, {"list", "--help"}, {"workload", "--help"}, {"bench", "--help"},
		{"bench", "read", "--help"}, {"eval", "-h"}, {"version", "--help"}} {
		r := runCmd(t, nil, append([]string{bp}, args...)...)
		if r.status != 0 || r.stderr != "" || !strings.Contains(strings.ToLower(r.stdout), "usage") && !strings.Contains(r.stdout, "SYNOPSIS") {
			t.Errorf("bayesperf %s: exit %d, stderr %q, stdout %d bytes without a usage", strings.Join(args, " "), r.status, r.stderr, len(r.stdout))
		}
	}
}

// TestErrorsTracefsMounted: with tracefs unmounted (in a private mount namespace), root's
// bayesperf mounts it, as perf does, and counts the tracepoint.
func TestErrorsTracefsMounted(t *testing.T) {
	needRoot(t, "unmounts tracefs in a private mount namespace")
	bp := dropinBin(t, "bayesperf")
	r := runCmd(t, nil, withoutTracefs([]string{bp, "stat", "-x,", "-e", "sched:sched_process_exec", "--",
		"sh", "-c", "/bin/true; /bin/true; exit 0"})...)
	if r.status != 0 {
		t.Fatalf("exit %d: %s", r.status, r.stderr)
	}
	// Two execs, one per /bin/true (sh's own exec happens before counting starts).
	if !regexp.MustCompile(`(?m)^2,,sched:sched_process_exec,`).MatchString(r.stderr) {
		t.Errorf("no count of 2 execs in %q", r.stderr)
	}
}

// withoutTracefs wraps argv to run in a private mount namespace where tracefs (and
// debugfs, whose tracing directory would mount it on access) is unmounted.
func withoutTracefs(argv []string) []string {
	script := `umount /sys/kernel/tracing 2>/dev/null; umount /sys/kernel/debug/tracing 2>/dev/null; umount /sys/kernel/debug 2>/dev/null; ` +
		`if [ -d /sys/kernel/tracing/events ]; then echo "tracefs still mounted" >&2; exit 99; fi; exec "$@"`
	return append([]string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"}, argv...)
}

// runCmd is run with the command's missing binaries said plainly.
func runCmd(t *testing.T, env []string, argv ...string) result {
	t.Helper()
	if _, err := exec.LookPath(argv[0]); err != nil {
		t.Fatalf("%s is required (util-linux): %v", argv[0], err)
	}
	return run(t, env, argv...)
}

// errorsUser returns the uid and gid of bperr, an unprivileged user created (without a
// home) for this test and removed after it. It needs root.
func errorsUser(t *testing.T) (uint32, uint32) {
	t.Helper()
	return systemUser(t, "bperr")
}
