package test

// A Go client of the sidecar's socket protocol (package shim's codec) for the hardening
// tests: it behaves or lies on purpose, and reports what the sidecar answered.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// protoClient is one connection to a sidecar.
type protoClient struct {
	conn *net.UnixConn
	seq  uint32
}

func dialSidecar(t testing.TB, sock string) *protoClient {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatalf("connect to the sidecar: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &protoClient{conn: c}
}

// greetedClient dials the sidecar at sock and says HELLO, failing t without an answer,
// and closes the client page it is handed: a client ready to register events.
func greetedClient(t testing.TB, sock string) *protoClient {
	t.Helper()
	c := dialSidecar(t, sock)
	p, err := c.hello()
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(p)
	return c
}

// send writes raw bytes with optional fds.
func (c *protoClient) send(b []byte, fds ...int) error {
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	_, _, err := c.conn.WriteMsgUnix(b, oob, nil)
	return err
}

// recv reads one reply; io.EOF when the sidecar closed the connection.
func (c *protoClient) recv() (shim.MsgHdr, any, []int, error) {
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4*4))
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, oobn, _, _, err := c.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		if errors.Is(err, unix.ECONNRESET) {
			err = io.EOF
		}
		return shim.MsgHdr{}, nil, nil, err
	}
	if n == 0 {
		return shim.MsgHdr{}, nil, nil, io.EOF
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			if f, err := unix.ParseUnixRights(&m); err == nil {
				fds = append(fds, f...)
			}
		}
	}
	h, body, err := shim.Decode(buf[:n])
	return h, body, fds, err
}

// call sends one well-formed request and returns the reply body and the fd that came
// with it (-1 for none).
func (c *protoClient) call(typ uint16, body any, fds ...int) (any, int, error) {
	c.seq++
	b, err := shim.Encode(typ, c.seq, body)
	if err != nil {
		return nil, -1, err
	}
	if err := c.send(b, fds...); err != nil {
		return nil, -1, fmt.Errorf("send: %w", err)
	}
	h, rep, rfds, err := c.recv()
	if err != nil {
		return nil, -1, err
	}
	if h.Seq != c.seq || h.Type != typ|shim.MsgReply {
		return nil, -1, fmt.Errorf("reply %+v to request %#x seq %d", h, typ, c.seq)
	}
	fd := -1
	for i, f := range rfds {
		if i == 0 {
			fd = f
		} else {
			unix.Close(f)
		}
	}
	return rep, fd, nil
}

// hello performs the handshake and returns the client page's fd.
func (c *protoClient) hello() (int, error) {
	rep, fd, err := c.call(shim.MsgHello, shim.Hello{Pid: int32(os.Getpid())})
	if err != nil {
		return -1, err
	}
	if r, ok := rep.(shim.HelloReply); !ok || r.Status != 0 || fd < 0 {
		return -1, fmt.Errorf("hello reply %+v fd %d", rep, fd)
	}
	return fd, nil
}

// register hands fd over as handle with attr and returns the reply status and the
// mirror page's fd (-1 when declined).
func (c *protoClient) register(handle uint32, attr *perfabi.Attr, pid int, fds ...int) (int32, int, error) {
	m := shim.Register{Handle: handle, Pid: int32(pid), CPU: -1, GroupFd: -1, AttrSize: perfabi.AttrSize}
	copy(m.Attr[:], attr.Encode())
	r, fd, err := callFor[shim.RegisterReply](c, shim.MsgRegister, m, fds...)
	return r.Status, fd, err
}

// status sends a request whose reply is a Status and returns it.
func (c *protoClient) status(typ uint16, body any) (int32, int, error) {
	s, fd, err := callFor[shim.Status](c, typ, body)
	return s.Status, fd, err
}

// callFor sends a request whose reply is an R and returns it with the fd that came
// with it (-1 on an error).
func callFor[R any](c *protoClient, typ uint16, body any, fds ...int) (R, int, error) {
	var r R
	rep, fd, err := c.call(typ, body, fds...)
	if err != nil {
		return r, -1, err
	}
	r, ok := rep.(R)
	if !ok {
		return r, -1, fmt.Errorf("reply %+v is not a %T", rep, r)
	}
	return r, fd, nil
}

// closed reports whether the sidecar has closed the connection (within 5 s).
func (c *protoClient) closed() bool {
	_, _, fds, err := c.recv()
	for _, f := range fds {
		unix.Close(f)
	}
	return errors.Is(err, io.EOF) || errors.Is(err, unix.EPIPE)
}

// perfAttr is a software event attr of the kernel's current size.
func perfAttr(config uint64, readFormat uint64) *perfabi.Attr {
	return &perfabi.Attr{
		Type:       unix.PERF_TYPE_SOFTWARE,
		Config:     config,
		Size:       perfabi.AttrSize,
		ReadFormat: readFormat,
	}
}

// sidecarUnderRun starts `bayesperf run --pidfile --stats -- sh -c 'echo $BAYESPERF_SOCKET
// >F; exec CMD...'`: a real tool that is the sidecar's well-behaved client, and the
// socket's path for the test's own clients. It returns the command (started), the
// sidecar's pid, the socket path and the stats file.
func sidecarUnderRun(t *testing.T, stderr io.Writer, argv ...string) (*exec.Cmd, int, string, string) {
	t.Helper()
	tmp := t.TempDir()
	sf, sockfile := filepath.Join(tmp, "stats.json"), filepath.Join(tmp, "sock")
	script := `echo "$BAYESPERF_SOCKET" > "$0.tmp" && mv "$0.tmp" "$0" && exec "$@"`
	cmd, pid := startRun(t, nil, stderr, append([]string{"--stats", sf, "--", "sh", "-c", script, sockfile}, argv...)...)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if b, err := os.ReadFile(sockfile); err == nil {
			return cmd, pid, strings.TrimSpace(string(b)), sf
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the tool never wrote the socket path")
		}
	}
}

// procFds counts pid's open fds and those that are memfds.
func procFds(pid int) (fds, memfds int, err error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return 0, 0, err
	}
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		fds++
		if strings.HasPrefix(l, "/memfd:") {
			memfds++
		}
	}
	return fds, memfds, nil
}

// procMemfdMaps counts pid's mappings of bayesperf memfds (the sidecar closes its memfd
// fds once handed over and keeps only the mappings).
func procMemfdMaps(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, err
	}
	return strings.Count(string(b), "/memfd:bayesperf"), nil
}

// procRSSKiB is pid's VmRSS.
func procRSSKiB(pid int) (int, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kb int
		if n, _ := fmt.Sscanf(sc.Text(), "VmRSS: %d kB", &kb); n == 1 {
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && len(s) > i+2 && s[i+2] != 'Z'
}
