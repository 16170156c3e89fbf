package test

// Privilege hardening (issue 8): who may talk to the sidecar, and what a client can do
// with what the sidecar hands it. These tests need root (to create a second user with
// useradd and to run programs as it), perf_event_open for software events and memfd
// sealing.

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// startSidecar runs `bayesperf sidecar --socket DIR/sock` in a fresh 0700 directory and
// returns its pid and socket; it stops when the test ends.
func startSidecar(t *testing.T) (int, string) {
	t.Helper()
	pid, sock, _ := startSidecarArgs(t, 0o700)
	return pid, sock
}

// secondUser returns the uid and gid of bpuser, creating it (without a home directory)
// if missing and removing it when the test ends.
func secondUser(t *testing.T) (uint32, uint32) {
	t.Helper()
	needRoot(t, "creates a second user and runs programs as it")
	return systemUser(t, "bpuser")
}

// systemUser returns the uid and gid of the user name, creating it (without a home
// directory, without a login shell) if missing and removing it when the test ends.
func systemUser(t *testing.T, name string) (uint32, uint32) {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		if out, err := exec.Command("useradd", "-M", "-s", "/usr/sbin/nologin", name).CombinedOutput(); err != nil {
			t.Fatalf("useradd %s: %v\n%s", name, err, out)
		}
		t.Cleanup(func() {
			if out, err := exec.Command("userdel", name).CombinedOutput(); err != nil {
				t.Errorf("userdel %s: %v\n%s", name, err, out)
			}
		})
		if u, err = user.Lookup(name); err != nil {
			t.Fatal(err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if uid == 0 {
		t.Fatalf("%s is uid 0", name)
	}
	return uint32(uid), uint32(gid)
}

func asUser(uid, gid uint32, argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}}}
	cmd.Dir = "/"
	return cmd
}

func peerSays(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v", cmd.Args, err)
	}
	return strings.TrimSpace(string(out))
}

// TestHardeningSecondUserRefused: the sidecar runs as root; a real second user cannot
// reach its socket (0700 directory), and when the directory is opened up on purpose,
// the peer-credential check refuses it anyway, while root is still served. A tool run
// by that user with the shim preloaded falls back to the kernel with one warning and
// counts correctly.
func TestHardeningSecondUserRefused(t *testing.T) {
	uid, gid := secondUser(t)
	dir := dropinBins(t)
	pid, sock := startSidecar(t)
	peer := filepath.Join(dir, "hardening_peer")

	st, err := os.Stat(filepath.Dir(sock))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory mode %v, want 0700", st.Mode().Perm())
	}
	if got := peerSays(t, asUser(uid, gid, peer, sock)); got != "connect-failed:EACCES" {
		t.Errorf("bpuser connecting through the 0700 directory: %s, want connect-failed:EACCES", got)
	}
	if got := peerSays(t, exec.Command(peer, sock)); got != "accepted" {
		t.Errorf("root connecting: %s, want accepted", got)
	}

	// Open the directory and the socket to everyone: only SO_PEERCRED stands between
	// bpuser and the sidecar now.
	if err := os.Chmod(filepath.Dir(sock), 0o711); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o777); err != nil {
		t.Fatal(err)
	}
	if got := peerSays(t, asUser(uid, gid, peer, sock)); got != "refused" {
		t.Errorf("bpuser connecting to an open socket: %s, want refused by the peer-credential check", got)
	}

	// A real tool as bpuser, shim preloaded, pointed at the root sidecar. The workload
	// spins 20 ms before it exits: perf stat's SIGCHLD handler makes it skip wait4, and
	// exit 0, when the workload is gone before perf gets there (2 of 40 native runs of a
	// 1 ms workload here).
	var stderr strings.Builder
	runTool := func() error {
		tool := asUser(uid, gid, "perf", "stat", "-x,", "-e", "page-faults", "--", filepath.Join(dir, "workload"), "500", "0", "3", "20")
		tool.Env = append(os.Environ(), "LD_PRELOAD="+filepath.Join(dir, "libbayesperf.so"), "BAYESPERF_SOCKET="+sock)
		stderr.Reset()
		tool.Stderr = &stderr
		return tool.Run()
	}
	status := func(err error) int {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			return -1
		}
		return 0
	}
	// The exit status 0 that 2 of 6 full package runs once saw here (logged as a known
	// bug of issue 15, with a second run) was that race of perf's, not the shim's.
	err = runTool()
	if st := status(err); st != 3 {
		t.Errorf("perf stat as bpuser: %v, want the workload's status 3\n%s", err, stderr.String())
	}
	if w := bayesperfWarnings(stderr.String()); len(w) != 1 || !strings.Contains(w[0], "straight to the kernel") {
		t.Errorf("warnings %q, want one saying events go to the kernel", w)
	}
	ls := byEvent(parseStatCSV(t, stderr.String(), false))
	var faults float64
	for name, l := range ls {
		if strings.HasPrefix(name, "page-faults") {
			faults = l.num(t)
		}
	}
	if faults < 500 || faults > 700 {
		t.Errorf("bpuser's page-faults %v, want 500..700 (520 touched pages plus start-up)\n%s", faults, stderr.String())
	}
	if !alive(pid) {
		t.Fatal("the sidecar died")
	}
	if got := peerSays(t, exec.Command(peer, sock)); got != "accepted" {
		t.Errorf("root connecting after bpuser was refused: %s, want accepted", got)
	}
	t.Logf("bpuser (uid %d) vs a root sidecar: 0700 directory: EACCES; directory 0711 and socket 0777: refused by SO_PEERCRED; root: accepted; perf stat as bpuser: %v page faults, kernel fallback with one warning", uid, faults)
}

// TestHardeningRunSocketDirectory: the directory `bayesperf run` creates for its socket
// is 0700 and ours, and the sidecar refuses to listen in one that is not.
func TestHardeningRunSocketDirectory(t *testing.T) {
	dir := dropinBins(t)
	r := run(t, nil, filepath.Join(dir, "bayesperf"), "run", "--", "sh", "-c", `stat -c '%a %u' "$(dirname "$BAYESPERF_SOCKET")"`)
	if got, want := strings.TrimSpace(r.stdout), fmt.Sprintf("700 %d", os.Geteuid()); r.status != 0 || got != want {
		t.Errorf("socket directory %q (status %d), want %q", got, r.status, want)
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}
	r = run(t, nil, filepath.Join(dir, "bayesperf"), "sidecar", "--socket", filepath.Join(open, "sock"))
	if r.status == 0 || !strings.Contains(r.stderr, "0700") {
		t.Errorf("sidecar in a 0755 directory: status %d stderr %q; want a refusal naming 0700", r.status, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(open, "sock")); err == nil {
		t.Error("the sidecar created its socket in a 0755 directory")
	}
}

// TestHardeningSealedMemfds: every page the sidecar hands over is a sealed memfd; a
// client can neither resize it nor (mirror pages) write it, so it cannot change what
// the sidecar sees or make it fault.
func TestHardeningSealedMemfds(t *testing.T) {
	pid, sock := startSidecar(t)
	c := dialSidecar(t, sock)
	page, err := c.hello()
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(page)
	pf, err := perfabi.Open(perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0), 0, -1, -1)
	if err != nil {
		t.Fatalf("perf_event_open page-faults: %v", err)
	}
	defer unix.Close(pf)
	st, mirror, err := c.register(1, perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0), 0, pf)
	if err != nil || st != 0 || mirror < 0 {
		t.Fatalf("register: status %d fd %d: %v", st, mirror, err)
	}
	defer unix.Close(mirror)
	sa := perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0)
	sa.SamplePeriod = 1
	sa.SampleType = unix.PERF_SAMPLE_TID
	sf, err := perfabi.Open(sa, 0, -1, -1)
	if err != nil {
		t.Fatalf("perf_event_open sampling page-faults: %v", err)
	}
	defer unix.Close(sf)
	if st, _, err := c.register(2, sa, 0, sf); err != nil || st != 0 {
		t.Fatalf("register sampling event: status %d: %v", st, err)
	}
	ringLen := 5 * os.Getpagesize()
	st, ring, err := c.status(shim.MsgMap, shim.Map{Handle: 2, Prot: unix.PROT_READ | unix.PROT_WRITE, Length: uint64(ringLen)})
	if err != nil || st != 0 || ring < 0 {
		t.Fatalf("map: status %d fd %d: %v", st, ring, err)
	}
	defer unix.Close(ring)

	base := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	for _, m := range []struct {
		name  string
		fd    int
		seals int
		size  int
	}{
		{"client page", page, base, shim.PageSize},
		{"mirror page", mirror, base | unix.F_SEAL_FUTURE_WRITE, shim.PageSize},
		{"mirror ring", ring, base, ringLen},
	} {
		got, err := unix.FcntlInt(uintptr(m.fd), unix.F_GET_SEALS, 0)
		if err != nil || got&m.seals != m.seals {
			t.Errorf("%s: seals %#x (%v), want at least %#x", m.name, got, err, m.seals)
		}
		if err := unix.Ftruncate(m.fd, 0); !errors.Is(err, unix.EPERM) {
			t.Errorf("%s: shrinking gave %v, want EPERM", m.name, err)
		}
		if err := unix.Ftruncate(m.fd, int64(m.size)*4); !errors.Is(err, unix.EPERM) {
			t.Errorf("%s: growing gave %v, want EPERM", m.name, err)
		}
		if _, err := unix.FcntlInt(uintptr(m.fd), unix.F_ADD_SEALS, 0); !errors.Is(err, unix.EPERM) {
			t.Errorf("%s: adding seals gave %v, want EPERM (F_SEAL_SEAL)", m.name, err)
		}
		var s unix.Stat_t
		if err := unix.Fstat(m.fd, &s); err != nil || s.Size != int64(m.size) {
			t.Errorf("%s: size %d (%v), want %d", m.name, s.Size, err, m.size)
		}
	}
	if _, err := unix.Mmap(mirror, 0, shim.PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); !errors.Is(err, unix.EPERM) {
		t.Errorf("writable mapping of a mirror page: %v, want EPERM", err)
	}
	if _, err := unix.Pwrite(mirror, []byte{1, 2, 3, 4}, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("write to a mirror page: %v, want EPERM", err)
	}
	if mem, err := unix.Mmap(mirror, 0, shim.PageSize, unix.PROT_READ, unix.MAP_SHARED); err != nil {
		t.Errorf("read-only mapping of a mirror page: %v", err)
	} else {
		if m, err := shim.NewMirror(mem); err != nil {
			t.Errorf("mirror page: %v", err)
		} else if h, _, ok := m.Snapshot(); !ok || h.State != shim.MirrorOK {
			t.Errorf("mirror header %+v ok %v, want a published page", h, ok)
		}
		unix.Munmap(mem)
	}
	if !alive(pid) {
		t.Fatal("the sidecar died")
	}
	t.Logf("client page, mirror page and mirror ring sealed (shrink, grow, seal; mirror page also future-write): resizing, resealing, writing and writable mappings all EPERM")
}

// TestHardeningBadFds: a client that hands over no fd, a pipe, an eventfd, or refers
// to a handle it has already closed gets an error status on the same connection; the
// sidecar stays up and serves the same client's real perf fd afterwards.
func TestHardeningBadFds(t *testing.T) {
	pid, sock := startSidecar(t)
	c := greetedClient(t, sock)
	p := testutil.Pipe(t)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	attr := perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0)
	for i, fds := range [][]int{nil, {p[0]}, {efd}, {efd, p[1]}} {
		st, fd, err := c.register(uint32(10+i), attr, 0, fds...)
		if err != nil || st != -int32(unix.EBADF) || fd >= 0 {
			t.Errorf("register with fds %v: status %d fd %d %v, want -EBADF and no fd", fds, st, fd, err)
		}
	}
	pf, err := perfabi.Open(attr, 0, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	st, mirror, err := c.register(1, attr, 0, pf)
	if err != nil || st != 0 {
		t.Fatalf("register a real perf fd after the bad ones: status %d: %v", st, err)
	}
	unix.Close(mirror)
	// The same handle again (a lie: the shim never reuses a live handle).
	if st, _, err := c.register(1, attr, 0, pf); err != nil || st != -int32(unix.EEXIST) {
		t.Errorf("second registration of handle 1: status %d %v, want -EEXIST", st, err)
	}
	unix.Close(pf)
	if st, _, err := c.status(shim.MsgUnregister, shim.Handle{Handle: 1}); err != nil || st != 0 {
		t.Fatalf("unregister: status %d: %v", st, err)
	}
	// Every request about the closed handle, or one never registered, is an error.
	for _, q := range []struct {
		typ  uint16
		body any
	}{
		{shim.MsgRefresh, shim.Handle{Handle: 1}},
		{shim.MsgUnregister, shim.Handle{Handle: 1}},
		{shim.MsgMap, shim.Map{Handle: 1, Prot: unix.PROT_READ, Length: 3 * 4096}},
		{shim.MsgUnmap, shim.Handle{Handle: 1}},
		{shim.MsgRefresh, shim.Handle{Handle: 99}},
	} {
		if st, fd, err := c.status(q.typ, q.body); err != nil || st != -int32(unix.ENOENT) || fd >= 0 {
			t.Errorf("request %#x %+v about a closed handle: status %d fd %d %v, want -ENOENT", q.typ, q.body, st, fd, err)
		}
	}
	if !alive(pid) {
		t.Fatal("the sidecar died")
	}
}

// TestHardeningHandlesPerClient: handles name events only within the connection that
// registered them. Another client asking to refresh, map, unmap, flush or unregister the
// same handle numbers gets -ENOENT (or, for FLUSH of everything, touches nothing of the
// first client's), and the first client's event stays registered and served.
func TestHardeningHandlesPerClient(t *testing.T) {
	pid, sock := startSidecar(t)
	a := greetedClient(t, sock)
	runtime.LockOSThread() // the event counts this thread
	defer runtime.UnlockOSThread()
	attr := perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0)
	attr.Flags = perfabi.FlagDisabled // its count stays 0 until a enables it
	pf, err := perfabi.Open(attr, 0, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pf)
	st, mfd, err := a.register(1, attr, 0, pf)
	if err != nil || st != 0 {
		t.Fatalf("register: %d %v", st, err)
	}
	mem, err := unix.Mmap(mfd, 0, shim.PageSize, unix.PROT_READ, unix.MAP_SHARED)
	unix.Close(mfd)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	mirror, err := shim.NewMirror(mem)
	if err != nil {
		t.Fatal(err)
	}

	b := greetedClient(t, sock)
	for _, q := range []struct {
		typ  uint16
		body any
	}{
		{shim.MsgRefresh, shim.Handle{Handle: 1}},
		{shim.MsgMap, shim.Map{Handle: 1, Prot: unix.PROT_READ | unix.PROT_WRITE, Length: 3 * 4096}},
		{shim.MsgUnmap, shim.Handle{Handle: 1}},
		{shim.MsgUnregister, shim.Handle{Handle: 1}},
	} {
		if st, fd, err := b.status(q.typ, q.body); err != nil || st != -int32(unix.ENOENT) || fd >= 0 {
			t.Errorf("another client's request %#x for handle 1: status %d fd %d %v, want -ENOENT", q.typ, st, fd, err)
		}
	}
	if st, _, err := b.status(shim.MsgFlush, shim.Handle{}); err != nil || st != 0 {
		t.Errorf("another client's FLUSH of all its rings: %d %v", st, err)
	}
	// a's event is still there: enabling it and refreshing shows its count move.
	if err := unix.IoctlSetInt(pf, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		t.Fatal(err)
	}
	touchAnon(100)
	if err := unix.IoctlSetInt(pf, unix.PERF_EVENT_IOC_DISABLE, 0); err != nil {
		t.Fatal(err)
	}
	if st, _, err := a.status(shim.MsgRefresh, shim.Handle{Handle: 1}); err != nil || st != 0 {
		t.Fatalf("the owner's refresh: %d %v", st, err)
	}
	_, v, ok := mirror.Snapshot()
	var k [8]byte
	if n, err := unix.Read(pf, k[:]); err != nil || n != 8 {
		t.Fatal(err)
	}
	kernel := binary.NativeEndian.Uint64(k[:])
	if !ok || len(v.Members) != 1 || v.Members[0].Value != kernel || kernel < 100 {
		t.Errorf("owner's mirror %+v ok %v, kernel %d: want the kernel's count (>= 100)", v, ok, kernel)
	}
	if !alive(pid) {
		t.Fatal("the sidecar died")
	}
}

// A sidecar run as root (as it would be for BPF) that serves a non-root user's tools
// (`bayesperf sidecar --allow-uid USER`): the user must still see nothing it could not
// open itself. Needs root (to create bpuser and run programs as it), perf, gcc and
// perf_event_paranoid >= 1 for the system-wide case (the test raises it to 2 for its
// duration when it is lower).

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

// checkAllowUIDRefusals: bayesperf sidecar --allow-uid refuses --virtual-counters,
// --correct bayesperf and unknown users, in one line and with status 2.
func checkAllowUIDRefusals(t *testing.T, dir string) {
	t.Helper()
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
}

// checkUserSampling: perf record as the user uid:gid in wd, natively and through the
// sidecar at sock, records as many samples, and fails alike over the user's
// locked-memory limit: the sidecar leaves the user's rings to the kernel. It returns the
// samples through the sidecar and natively, and the status over the limit through it.
func checkUserSampling(t *testing.T, uid, gid uint32, wd, dir, sock string) (thr, nat float64, tbig int) {
	t.Helper()
	count := func(sockArg, pages string) (int, float64) {
		data := filepath.Join(wd, "perf-"+pages+strconv.Itoa(len(sockArg))+".data")
		r := userRun(t, uid, gid, wd, sockArg, "perf", "record", "-q", "-o", data, "-m", pages, "-e", "page-faults", "-c", "1", "--", filepath.Join(dir, "workload"), "1000", "0", "0")
		if r.status != 0 {
			return r.status, 0
		}
		_, n := perfReport(t, data, "-f", "--sort", "comm") // -f: the file is bpuser's
		return 0, n
	}
	var nst, tst int
	nst, nat = count("", "256")
	tst, thr = count(sock, "256")
	if nst != 0 || tst != 0 || thr < 1000 || !within(thr, nat, faultsAbs, faultsRel) {
		t.Errorf("perf record -m 256 as bpuser: status %d with %v samples through the root sidecar, %d with %v natively", tst, thr, nst, nat)
	}
	nbig, _ := count("", "2048")
	tbig, _ = count(sock, "2048")
	if nbig == 0 || tbig != nbig {
		t.Errorf("perf record -m 2048 (8 MiB rings, over bpuser's locked-memory limit) as bpuser: status %d through the root sidecar, %d natively; want the same refusal", tbig, nbig)
	}
	return thr, nat, tbig
}

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

	checkAllowUIDRefusals(t, dir)

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
	thr, nat, tbig := checkUserSampling(t, uid, gid, wd, dir, sock)

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
