package test

// A sidecar run as root (as it would be for BPF) that serves a non-root user's tools
// (`bayesperf sidecar --allow-uid USER`): the user must still see nothing it could not
// open itself. Needs root (to create bpuser and run programs as it), perf, gcc and
// perf_event_paranoid >= 1 for the system-wide case (the test raises it to 2 for its
// duration when it is lower).

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// startSidecarArgs runs `bayesperf sidecar --socket DIR/sock --stats F args...` as root
// in a fresh directory of mode dirMode; stop ends it and returns its --stats.
func startSidecarArgs(t *testing.T, dirMode os.FileMode, args ...string) (pid int, sock string, stop func() sidecarStatsFull) {
	t.Helper()
	dir, err := os.MkdirTemp("", "bayesperf-rootsidecar-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, dirMode); err != nil {
		t.Fatal(err)
	}
	sock = filepath.Join(dir, "sock")
	sf := filepath.Join(t.TempDir(), "stats.json")
	cmd := exec.Command(dropinBin(t, "bayesperf"), append([]string{"sidecar", "--socket", sock, "--stats", sf}, args...)...)
	lifeline, out, stderr := startPiped(t, cmd)
	stopped := false
	stop = func() sidecarStatsFull {
		if stopped {
			return sidecarStatsFull{}
		}
		stopped = true
		lifeline.Close()
		switch err := waitTimeout(cmd, 10*time.Second); {
		case err == errWaitTimeout:
			t.Errorf("sidecar did not stop within 10 s of its lifeline closing")
			return sidecarStatsFull{}
		case err != nil:
			t.Errorf("sidecar exited with %v\n%s", err, stderr.String())
		}
		var s sidecarStatsFull
		b, err := os.ReadFile(sf)
		if err == nil {
			err = json.Unmarshal(b, &s)
		}
		if err != nil {
			t.Errorf("sidecar stats: %v", err)
		}
		return s
	}
	t.Cleanup(func() { stop() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("sidecar said %q, %v; want ready\n%s", line, err, stderr.String())
	}
	return cmd.Process.Pid, sock, stop
}

// sidecarStatsFull are the sidecar's --stats fields this test checks.
type sidecarStatsFull struct {
	Events     uint64 `json:"events"`
	MirrorRead uint64 `json:"mirror_reads"`
	Rings      uint64 `json:"rings"`
	Declined   uint64 `json:"declined"`
}

// userRun runs argv as uid/gid in a directory it may write, with the shim preloaded and
// pointed at sock when sock is not "", and returns its result.
func userRun(t *testing.T, uid, gid uint32, wd, sock string, argv ...string) result {
	t.Helper()
	cmd := asUser(uid, gid, argv...)
	cmd.Dir = wd
	cmd.Env = os.Environ()
	if sock != "" {
		cmd.Env = append(cmd.Env, "LD_PRELOAD="+dropinBin(t, "libbayesperf.so"), "BAYESPERF_SOCKET="+sock)
	} else {
		cmd.Env = append(cmd.Env, "LD_PRELOAD=", "BAYESPERF_SOCKET=")
	}
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %q as uid %d: %v", argv, uid, err)
	}
	err := waitTimeout(cmd, time.Minute)
	if err == errWaitTimeout {
		t.Fatalf("%q as uid %d: no exit within a minute", argv, uid)
	}
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%q as uid %d: %v", argv, uid, err)
	}
	return r
}

var pageFaultValueRe = regexp.MustCompile(`(?m)^\s*([0-9.]+),[^,]*,page-faults`)

// TestHardeningRootSidecarOtherUser: a root sidecar started with --allow-uid bpuser
// serves bpuser's perf stat (counts exact, reads from mirrors); a third user is still
// refused; bpuser cannot, through it, count a root-owned process or count system-wide
// when perf_event_paranoid forbids it (perf fails exactly as it does natively: the
// kernel refuses the open in the tool, and the sidecar has no way to open events for
// it); and bpuser's sampling rings are left to the kernel, so its locked-memory limit
// holds (perf record -m 2048 fails as natively, where a root sidecar mapping the ring
// would have let it through); a raw client that closes its fds after registering them
// cannot make the sidecar hold more of its events than its own RLIMIT_NOFILE. The
// flag refuses --virtual-counters (whose copies are
// opened with the sidecar's rights on the pid a client names) and unknown users.
func TestHardeningRootSidecarOtherUser(t *testing.T) {
	uid, gid := secondUser(t)
	dir := dropinBins(t)
	wd, err := os.MkdirTemp("", "bayesperf-bpuser-") // bpuser's working directory
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(wd) })
	if err := os.Chmod(wd, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(dir), dir, filepath.Dir(wd)} {
		if st, err := os.Stat(p); err == nil && st.Mode().Perm()&0o001 == 0 {
			t.Fatalf("%s (mode %v) is not reachable by bpuser", p, st.Mode().Perm())
		}
	}

	// The flag's refusals.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--allow-uid", "bpuser", "--virtual-counters", "4"}, "--allow-uid with --virtual-counters"},
		{[]string{"--allow-uid", "bpuser", "--correct", "bayesperf"}, "--allow-uid with --correct bayesperf"},
		{[]string{"--allow-uid", "no-such-user-here"}, "no-such-user-here"},
	} {
		r := run(t, nil, append([]string{filepath.Join(dir, "bayesperf"), "sidecar", "--socket", filepath.Join(t.TempDir(), "sock")}, c.args...)...)
		if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); r.status != 2 || len(lines) != 1 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("bayesperf sidecar %q: status %d stderr %q; want status 2 and one line naming %q", c.args, r.status, r.stderr, c.want)
		}
	}

	paranoid, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := strconv.Atoi(strings.TrimSpace(string(paranoid))); p < 1 {
		if err := os.WriteFile("/proc/sys/kernel/perf_event_paranoid", []byte("2"), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.WriteFile("/proc/sys/kernel/perf_event_paranoid", paranoid, 0o644) })
	}

	pid, sock, stop := startSidecarArgs(t, 0o711, "--allow-uid", "bpuser")
	peer := filepath.Join(dir, "hardening_peer")
	if got := peerSays(t, asUser(uid, gid, peer, sock)); got != "accepted" {
		t.Errorf("bpuser connecting to the sidecar that allows it: %s, want accepted", got)
	}
	if got := peerSays(t, asUser(65534, 65534, peer, sock)); got != "refused" {
		t.Errorf("uid 65534 connecting to a sidecar that allows only bpuser: %s, want refused", got)
	}
	if got := peerSays(t, exec.Command(peer, sock)); got != "accepted" {
		t.Errorf("root connecting: %s, want accepted", got)
	}

	// bpuser's own workload: served, exact. It spins 20 ms, for perf stat's exit status
	// (see TestHardeningSecondUserRefused: perf loses it to its SIGCHLD handler when the
	// workload is gone before it reaches wait4).
	r := userRun(t, uid, gid, wd, sock, "perf", "stat", "-x,", "-e", "page-faults", "--", filepath.Join(dir, "workload"), "500", "0", "3", "20")
	var faults float64
	if m := pageFaultValueRe.FindStringSubmatch(r.stderr); m != nil {
		faults, _ = strconv.ParseFloat(m[1], 64)
	}
	if r.status != 3 || len(bayesperfWarnings(r.stderr)) != 0 || faults < 500 || faults > 700 {
		t.Errorf("perf stat as bpuser through the root sidecar: status %d, %v page faults; want the workload's status 3, no warning, 500..700 faults\n%s", r.status, faults, r.stderr)
	}

	// A root-owned process, and the whole system: what the kernel refuses bpuser
	// natively, it refuses through the sidecar, and nothing is counted.
	target := exec.Command("sleep", "60")
	if err := target.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { target.Process.Kill(); target.Wait() }()
	for _, c := range []struct {
		what string
		argv []string
	}{
		{"-p of a root process", []string{"perf", "stat", "-x,", "-e", "page-faults", "-p", strconv.Itoa(target.Process.Pid), "--", "sleep", "0.2"}},
		{"-a (system-wide)", []string{"perf", "stat", "-x,", "-a", "-e", "page-faults", "--", "sleep", "0.2"}},
	} {
		nat := userRun(t, uid, gid, wd, "", c.argv...)
		thr := userRun(t, uid, gid, wd, sock, c.argv...)
		if nat.status == 0 || thr.status != nat.status || pageFaultValueRe.MatchString(thr.stderr) {
			t.Errorf("perf stat %s as bpuser: status %d through the root sidecar, %d natively; want the same refusal and no count\n%s", c.what, thr.status, nat.status, thr.stderr)
		}
	}

	// Sampling: rings stay the kernel's, mapped by bpuser under its own limits.
	count := func(sockArg, pages string) (int, float64) {
		data := filepath.Join(wd, "perf-"+pages+strconv.Itoa(len(sockArg))+".data")
		r := userRun(t, uid, gid, wd, sockArg, "perf", "record", "-q", "-o", data, "-m", pages, "-e", "page-faults", "-c", "1", "--", filepath.Join(dir, "workload"), "1000", "0", "0")
		if r.status != 0 {
			return r.status, 0
		}
		_, n := perfReport(t, data, "-f", "--sort", "comm") // -f: the file is bpuser's
		return 0, n
	}
	nst, nat := count("", "256")
	tst, thr := count(sock, "256")
	if nst != 0 || tst != 0 || thr < 1000 || !within(thr, nat, faultsAbs, faultsRel) {
		t.Errorf("perf record -m 256 as bpuser: status %d with %v samples through the root sidecar, %d with %v natively", tst, thr, nst, nat)
	}
	nbig, _ := count("", "2048")
	tbig, _ := count(sock, "2048")
	if nbig == 0 || tbig != nbig {
		t.Errorf("perf record -m 2048 (8 MiB rings, over bpuser's locked-memory limit) as bpuser: status %d through the root sidecar, %d natively; want the same refusal", tbig, nbig)
	}

	// A raw protocol client as bpuser with RLIMIT_NOFILE 32 that closes its own fds
	// after each REGISTER: the sidecar keeps no more of its events than 32, and declines
	// to map a ring for it.
	foreign := peerSays(t, asUser(uid, gid, filepath.Join(dir, "hardening_foreign"), sock, "32"))
	if want := "registered 32 status -24 map -95"; foreign != want {
		t.Errorf("bpuser's raw client: %q, want %q (32 events, then EMFILE; MAP: EOPNOTSUPP)", foreign, want)
	}

	if !alive(pid) {
		t.Fatal("the sidecar died")
	}
	st := stop()
	if st.Events == 0 || st.MirrorRead == 0 || st.Rings != 0 {
		t.Errorf("sidecar stats %+v: want bpuser's events registered and read from mirrors, and no ring mirrored", st)
	}
	t.Logf("root sidecar --allow-uid bpuser (uid %d): uid 65534 refused; bpuser perf stat %v page faults from mirrors; -p of a root process and -a refused as natively; perf record -m 256 %v samples (native %v) through the kernel's rings (0 mirrored), -m 2048 refused as natively (status %d); raw client with RLIMIT_NOFILE 32: %s; sidecar events %d", uid, faults, thr, nat, tbig, foreign, st.Events)
}
