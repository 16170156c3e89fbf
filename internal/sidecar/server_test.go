package sidecar

// These tests need Linux with perf_event_open for software events (any kernel of the
// last decade, perf_event_paranoid <= 2 for self-monitoring) and memfd sealing.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

func startServer(t *testing.T, cfg Config) (*Server, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "d")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg.SocketPath = filepath.Join(dir, "sock")
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv, cfg.SocketPath
}

// testClient speaks the shim's protocol from Go.
type testClient struct {
	t    *testing.T
	conn *net.UnixConn
	seq  uint32
}

func dial(t *testing.T, path string) *testClient {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &testClient{t: t, conn: c}
}

// call sends one request with an optional fd and returns the reply body and fd (-1).
func (c *testClient) call(typ uint16, body any, fd int) (any, int) {
	c.t.Helper()
	c.seq++
	rep, rfd, err := roundTrip(c.conn, c.seq, typ, body, fd)
	if err != nil {
		c.t.Fatal(err)
	}
	return rep, rfd
}

// roundTrip sends request seq with an optional fd on conn and returns the reply body
// and the fd that came with it (-1); it checks the reply answers the request. It
// does not fail the test itself, so that a goroutine other than the test's may call it.
func roundTrip(conn *net.UnixConn, seq uint32, typ uint16, body any, fd int) (any, int, error) {
	b, err := shim.Encode(typ, seq, body)
	if err != nil {
		return nil, -1, err
	}
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	if _, _, err := conn.WriteMsgUnix(b, oob, nil); err != nil {
		return nil, -1, err
	}
	buf := make([]byte, 1024)
	roob := make([]byte, 64)
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := conn.ReadMsgUnix(buf, roob)
	if err != nil {
		return nil, -1, fmt.Errorf("read reply: %w", err)
	}
	h, rep, err := shim.Decode(buf[:n])
	if err != nil || h.Seq != seq || h.Type != typ|shim.MsgReply {
		return nil, -1, fmt.Errorf("reply %+v: %v", h, err)
	}
	rfd := -1
	if fds := parseFds(roob[:oobn]); len(fds) > 0 {
		rfd = fds[0]
	}
	return rep, rfd, nil
}

// openPageFaults opens page-faults of the calling thread (pid 0 is a thread, not the
// process), so it locks the test's goroutine to that thread for the rest of the test:
// otherwise the faults a test makes land on whichever thread the goroutine moved to.
func openPageFaults(t *testing.T, format uint64) int {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	attr := perfabi.Attr{
		Type:       unix.PERF_TYPE_SOFTWARE,
		Config:     unix.PERF_COUNT_SW_PAGE_FAULTS,
		Size:       perfabi.AttrSize,
		ReadFormat: format,
		Flags:      perfabi.FlagDisabled,
	}
	fd, err := perfabi.Open(&attr, 0, -1, -1)
	if err != nil {
		t.Fatalf("perf_event_open page-faults (software events must work here): %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// helloClient dials the server at path and says hello as this process.
func helloClient(t *testing.T, path string) *testClient {
	t.Helper()
	c := dial(t, path)
	rep, pageFd := c.call(shim.MsgHello, shim.Hello{Pid: int32(os.Getpid())}, -1)
	if hr := rep.(shim.HelloReply); hr.Status != 0 {
		t.Fatalf("hello %+v", hr)
	}
	unix.Close(pageFd)
	return c
}

// registerPageFaults opens page-faults with format (openPageFaults), registers it as
// handle h and returns the event's fd and its mirror page mapped read-only.
func registerPageFaults(t *testing.T, c *testClient, h uint32, format uint64) (int, *shim.Mirror) {
	t.Helper()
	fd := openPageFaults(t, format)
	rep, mfd := c.call(shim.MsgRegister, registerMsg(h, format), fd)
	if rr := rep.(shim.RegisterReply); rr.Status != 0 || mfd < 0 {
		t.Fatalf("register %+v", rr)
	}
	defer unix.Close(mfd)
	mem, err := unix.Mmap(mfd, 0, shim.PageSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Munmap(mem) })
	m, err := shim.NewMirror(mem)
	if err != nil {
		t.Fatal(err)
	}
	return fd, m
}

func registerMsg(handle uint32, format uint64) shim.Register {
	r := shim.Register{Handle: handle, Pid: 0, CPU: -1, GroupFd: -1, AttrSize: 64}
	r.Attr[0] = 1 // PERF_TYPE_SOFTWARE
	r.Attr[4] = 64
	r.Attr[8] = 2 // page-faults
	for i := range 8 {
		r.Attr[32+i] = byte(format >> (8 * i))
	}
	return r
}

func touchPages(n int) {
	b, _ := unix.Mmap(-1, 0, n*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	for i := range n {
		b[i*4096] = 1
	}
	unix.Munmap(b)
}

// TestServerMirrorsCounts registers a real perf fd and checks the mirror follows the
// kernel: periodically while counting, exactly after a refresh once disabled. The
// default stale bound is two coarse-clock ticks plus the period.
func TestServerMirrorsCounts(t *testing.T) {
	srv, path := startServer(t, Config{Period: time.Millisecond})
	c := dial(t, path)
	rep, pageFd := c.call(shim.MsgHello, shim.Hello{Pid: int32(os.Getpid())}, -1)
	if hr := rep.(shim.HelloReply); hr.Status != 0 || pageFd < 0 || hr.PageSize != shim.PageSize || hr.StaleNs != uint64(2*CoarseTick()+time.Millisecond) || hr.Flags != shim.HelloKernelExact {
		t.Fatalf("hello reply %+v fd %d", hr, pageFd)
	}
	unix.Close(pageFd)

	const format = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning | perfabi.FormatID
	fd := openPageFaults(t, format)
	rep, mfd := c.call(shim.MsgRegister, registerMsg(1, format), fd)
	if rr := rep.(shim.RegisterReply); rr.Status != 0 || mfd < 0 {
		t.Fatalf("register reply %+v fd %d", rr, mfd)
	}
	defer unix.Close(mfd)
	seals, err := unix.FcntlInt(uintptr(mfd), unix.F_GET_SEALS, 0)
	want := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_FUTURE_WRITE | unix.F_SEAL_SEAL
	if err != nil || seals&want != want {
		t.Errorf("mirror seals %#x (%v), want %#x", seals, err, want)
	}
	if err := unix.Ftruncate(mfd, 2*shim.PageSize); err == nil {
		t.Error("a client could grow its mirror page")
	}
	if _, err := unix.Mmap(mfd, 0, shim.PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
		t.Error("a client could map its mirror page writable")
	}
	mem, err := unix.Mmap(mfd, 0, shim.PageSize, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	m, _ := shim.NewMirror(mem)

	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_ENABLE, 0); err != nil {
		t.Fatal(err)
	}
	touchPages(200)
	// A read (refresh) republishes, and republishing goes on for Config.ActiveWindow.
	if rep, _ := c.call(shim.MsgRefresh, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != 0 {
		t.Fatalf("refresh %+v", rep)
	}
	h, v, _ := m.Snapshot()
	if h.State != shim.MirrorOK || len(v.Members) != 1 || v.Members[0].Value < 200 {
		t.Fatalf("mirror does not show the 200 faults after a refresh: %+v %+v", h, v)
	}
	unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	rep, _ = c.call(shim.MsgRefresh, shim.Handle{Handle: 1}, -1)
	if st := rep.(shim.Status); st.Status != 0 {
		t.Fatalf("refresh status %d", st.Status)
	}
	_, v, _ = m.Snapshot()
	k := readKernel(t, fd, format)
	if v.Members[0] != k.Members[0] || v.Enabled != k.Enabled || v.Running != k.Running {
		t.Errorf("after refresh of a disabled event: mirror %+v, kernel %+v", v, k)
	}
	if rep, _ := c.call(shim.MsgRefresh, shim.Handle{Handle: 99}, -1); rep.(shim.Status).Status != -int32(unix.ENOENT) {
		t.Errorf("refresh of an unknown handle: %+v, want -ENOENT", rep)
	}
	if rep, _ := c.call(shim.MsgUnregister, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != 0 {
		t.Errorf("unregister: %+v", rep)
	}
	if rep, _ := c.call(shim.MsgUnregister, shim.Handle{Handle: 1}, -1); rep.(shim.Status).Status != -int32(unix.ENOENT) {
		t.Errorf("second unregister: %+v, want -ENOENT", rep)
	}
	if st := srv.Stats(); st.Events != 1 || st.Clients != 1 || st.Publishes < 3 || st.Stage != "identity" {
		t.Errorf("stats %+v", st)
	}
}

// TestServerDeclinesNonPerfFd: a pipe sent as a perf fd is declined, and the connection
// stays usable.
func TestServerDeclinesNonPerfFd(t *testing.T) {
	srv, path := startServer(t, Config{})
	c := dial(t, path)
	_, pfd := c.call(shim.MsgHello, shim.Hello{Pid: int32(os.Getpid())}, -1)
	unix.Close(pfd)
	p := testutil.Pipe(t)
	rep, mfd := c.call(shim.MsgRegister, registerMsg(1, 0), p[0])
	if rr := rep.(shim.RegisterReply); rr.Status != -int32(unix.EBADF) || mfd >= 0 {
		t.Errorf("register of a pipe: %+v fd %d, want -EBADF and no mirror", rr, mfd)
	}
	rep, mfd = c.call(shim.MsgRegister, registerMsg(2, 0), -1)
	if rr := rep.(shim.RegisterReply); rr.Status != -int32(unix.EBADF) || mfd >= 0 {
		t.Errorf("register without an fd: %+v fd %d, want -EBADF", rr, mfd)
	}
	fd := openPageFaults(t, 0)
	bad := registerMsg(3, 0)
	bad.Attr[32] = 0x80 // unknown read_format bit
	if rep, _ := c.call(shim.MsgRegister, bad, fd); rep.(shim.RegisterReply).Status != -int32(unix.EINVAL) {
		t.Errorf("register with a malformed attr: %+v, want -EINVAL", rep)
	}
	if st := srv.Stats(); st.Declined != 3 || st.Events != 0 {
		t.Errorf("stats %+v: want 3 declined, 0 events", st)
	}
}

// TestServerDropsProtocolErrors: a client sending garbage is disconnected; others are not
// affected.
func TestServerDropsProtocolErrors(t *testing.T) {
	_, path := startServer(t, Config{})
	bad := dial(t, path)
	if _, _, err := bad.conn.WriteMsgUnix([]byte("not a message"), nil, nil); err != nil {
		t.Fatal(err)
	}
	bad.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, _, _, err := bad.conn.ReadMsgUnix(make([]byte, 64), nil); n != 0 || (err != nil && errors.Is(err, os.ErrDeadlineExceeded)) {
		t.Errorf("garbage got a reply (%d bytes, %v); want the connection closed", n, err)
	}
	good := dial(t, path)
	if rep, fd := good.call(shim.MsgHello, shim.Hello{Pid: int32(os.Getpid())}, -1); rep.(shim.HelloReply).Status != 0 {
		t.Errorf("second client refused: %+v", rep)
	} else {
		unix.Close(fd)
	}
	// A HELLO that lies about the pid is refused by closing the connection.
	liar := dial(t, path)
	b, _ := shim.Encode(shim.MsgHello, 1, shim.Hello{Pid: int32(os.Getpid()) + 1})
	liar.conn.WriteMsgUnix(b, nil, nil)
	liar.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, _, _, _ := liar.conn.ReadMsgUnix(make([]byte, 64), nil); n != 0 {
		t.Errorf("HELLO with another pid was answered")
	}
}

func TestNewChecksSocketDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{SocketPath: filepath.Join(dir, "sock")}); err == nil {
		t.Error("New accepted a socket directory with mode 0755")
	}
}

// FuzzServeMessages feeds arbitrary bytes to a client's message handler: it must answer
// or refuse, never panic.
func FuzzServeMessages(f *testing.F) {
	for _, typ := range []uint16{shim.MsgHello, shim.MsgRefresh, shim.MsgUnregister} {
		var body any = shim.Handle{Handle: 1}
		if typ == shim.MsgHello {
			body = shim.Hello{Pid: 0}
		}
		b, _ := shim.Encode(typ, 1, body)
		f.Add(b, false)
		f.Add(b, true)
	}
	r, _ := shim.Encode(shim.MsgRegister, 2, registerMsg(1, 0))
	f.Add(r, true)
	srv := &Server{cfg: Config{Stage: Identity{}, Logf: func(string, ...any) {}}, clients: map[int]*client{}}
	f.Fuzz(func(t *testing.T, b []byte, hello bool) {
		c := newClient(srv, 0, nil, 0, false)
		if hello {
			hb, _ := shim.Encode(shim.MsgHello, 1, shim.Hello{})
			_, fd, err := c.handle(hb, nil)
			if err != nil {
				t.Fatalf("hello: %v", err)
			}
			unix.Close(fd)
		}
		reply, fd, err := c.handle(b, nil)
		if fd >= 0 {
			unix.Close(fd)
		}
		if err == nil && reply != nil {
			if _, _, derr := shim.Decode(reply); derr != nil {
				t.Fatalf("reply does not decode: %v", derr)
			}
		}
		if c.page != nil {
			unix.Munmap(c.page)
		}
	})
}

// readKernel reads the perf event fd with read(2), as a tool would without the shim,
// and decodes the values in its read_format.
func readKernel(t *testing.T, fd int, format uint64) shim.Values {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	k, err := shim.ParseRead(format, buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	return k
}
