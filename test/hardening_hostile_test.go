package test

// Hostile clients (issue 8): clients of the sidecar's socket that send garbage or lie,
// next to a real, well-behaved `perf stat -I` under `bayesperf run`. Needs root only for
// nothing in particular; perf_event_open for software events and the perf binary.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// TestHardeningHostileClients: while perf stat -I 100 counts a 5 s workload through the
// sidecar, other clients send truncated, oversized, garbage and out-of-order messages,
// lie about their pid, pass too many fds, send bad attrs and ring sizes, and lie about
// data_tail in their mirror ring, then scribble over it and unmap it, or map a ring
// read-only and disconnect with it mapped; one client sends requests without reading a
// reply, 200 connect and stay silent. Each gets an error
// status or a closed connection; the sidecar stays up, ends with the fds it had, and perf
// stat prints every interval with the right total and no warning.
func TestHardeningHostileClients(t *testing.T) {
	var stderr strings.Builder
	cmd, pid, sock, sf := sidecarUnderRun(t, &stderr, append([]string{"perf", "stat", "-I", "100", "--summary", "-x,", "-e", "page-faults,task-clock", "--"},
		workload(t, "0", "0", "0", "5000")...)...)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the tool said:\n%s", stderr.String())
		}
	})
	baseFds, baseMem := waitFdsStable(t, pid)
	start := time.Now()
	h := &hostileRun{t: t, sock: sock, rng: rand.New(rand.NewPCG(8, 8))}
	h.breakProtocol()
	h.lie()
	h.deafAndIdle()

	if !alive(pid) {
		t.Fatalf("the sidecar died; the tool said:\n%s", stderr.String())
	}
	elapsed := time.Since(start)
	good := dialSidecar(t, sock)
	if p, err := good.hello(); err != nil {
		t.Errorf("a well-behaved client after the attacks: %v; the tool said:\n%s", err, stderr.String())
	} else {
		unix.Close(p)
	}
	good.conn.Close()
	fds, mem := waitFdsStable(t, pid)
	if fds != baseFds || mem != baseMem {
		t.Errorf("sidecar fds %d (memfd mappings %d) after the attacks, %d (%d) before", fds, mem, baseFds, baseMem)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("bayesperf run -- perf stat: %v\n%s", err, stderr.String())
	}
	if w := bayesperfWarnings(stderr.String()); len(w) != 0 {
		t.Errorf("warnings %q in the well-behaved tool", w)
	}
	var faults, intervals, summary float64
	for _, l := range parseStatCSV(t, stderr.String(), true) {
		if l.event == "page-faults" && l.value != "<not counted>" {
			if l.interval == "summary" {
				summary = l.num(t)
				continue
			}
			faults += l.num(t)
			intervals++
		}
	}
	// --summary is perf's final read; a perf starved on a loaded machine may skip its
	// last interval (natively too), so the intervals may add up to less, never more.
	if intervals < 10 || summary < 5000 || summary > 5200 || faults > summary {
		t.Errorf("%v intervals adding up to %v page faults, summary %v; want >= 10 intervals, a summary of 5000..5200 and no more in the intervals\n%s", intervals, faults, summary, stderr.String())
	}
	s := readStats(t, sf)
	if s.SidecarLost || s.MirrorReads == 0 {
		t.Errorf("stats %+v: want the sidecar alive to the end and perf's reads served from mirrors", s)
	}
	t.Logf("%d hostile requests/connections in %v; sidecar fds %d memfd mappings %d before and after; perf stat: %v intervals, %v page faults, %d mirror reads",
		h.attacks.Load(), elapsed.Round(time.Millisecond), baseFds, baseMem, intervals, faults, s.MirrorReads)
}

// hostileRun is what the phases of TestHardeningHostileClients share: the sidecar's
// socket, a seeded source of garbage and the count of hostile requests sent.
type hostileRun struct {
	t       *testing.T
	sock    string
	rng     *rand.Rand
	attacks atomic.Int64
}

// expectClosed: the sidecar must close a connection that broke the protocol.
func (h *hostileRun) expectClosed(what string, c *protoClient) {
	h.t.Helper()
	h.attacks.Add(1)
	if !c.closed() {
		h.t.Errorf("%s: the sidecar kept the connection", what)
	}
}

// hostileHdr is a message header with valid magic and version.
func hostileHdr(typ uint16, size uint32) []byte {
	b, _ := binary.Append(nil, binary.NativeEndian, shim.MsgHdr{Magic: shim.MsgMagic, Version: shim.ABIVersion, Type: typ, Size: size, Seq: 1})
	return b
}

// breakProtocol sends what breaks the protocol: garbage of every length up to a register
// message before any HELLO, malformed and out-of-order messages, a second HELLO, too
// many fds for one message. The sidecar must close each connection.
func (h *hostileRun) breakProtocol() {
	t := h.t
	hello, _ := shim.Encode(shim.MsgHello, 1, shim.Hello{Pid: int32(os.Getpid())})

	// Garbage of every length up to a register message, before any HELLO.
	for i := range 20 {
		g := make([]byte, 1+h.rng.IntN(400))
		for j := range g {
			g[j] = byte(h.rng.Uint32())
		}
		if i%2 == 0 && len(g) >= 16 { // valid magic and version, garbage after
			copy(g, hostileHdr(uint16(h.rng.IntN(9)), uint32(h.rng.Uint32())))
		}
		c := dialSidecar(t, h.sock)
		c.send(g)
		h.expectClosed("garbage", c)
	}
	for _, m := range []struct {
		what string
		b    []byte
	}{
		{"half a header", hello[:7]},
		{"a header alone", hello[:16]},
		{"a truncated HELLO", hello[:len(hello)-1]},
		{"HELLO saying 4 GiB", append(hostileHdr(shim.MsgHello, 1<<32-1), hello[16:]...)},
		{"HELLO with a trailing byte", append(append([]byte(nil), hello...), 0)},
		{"an oversized packet", append(append([]byte(nil), hello...), make([]byte, 64<<10)...)},
		{"a REFRESH before HELLO", mustEncode(t, shim.MsgRefresh, shim.Handle{Handle: 1})},
		{"a reply type", mustEncode(t, shim.MsgRefresh|shim.MsgReply, shim.Status{})},
		{"HELLO lying about its pid", mustEncode(t, shim.MsgHello, shim.Hello{Pid: int32(os.Getpid() + 1)})},
		{"an empty packet", nil},
	} {
		c := dialSidecar(t, h.sock)
		c.send(m.b)
		h.expectClosed(m.what, c)
	}

	// After a good HELLO: a second HELLO, then too many fds for one message.
	c := greetedClient(t, h.sock)
	c.send(hello)
	h.expectClosed("a second HELLO", c)

	c = greetedClient(t, h.sock)
	var many []int
	for range 12 {
		fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		many = append(many, fd)
	}
	reg := shim.Register{Handle: 1, CPU: -1, GroupFd: -1, AttrSize: 64}
	c.send(mustEncode(t, shim.MsgRegister, reg), many...)
	h.expectClosed("a REGISTER with 12 fds", c)
	for _, fd := range many {
		unix.Close(fd)
	}
}

// lie sends lies that are errors, not protocol breaks: the connection stays. Then a
// client goes away with an event and a ring still registered.
func (h *hostileRun) lie() {
	t := h.t
	c := greetedClient(t, h.sock)
	attr := perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0)
	pf, err := perfabi.Open(attr, 0, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	bad := *attr
	bad.ReadFormat = 1 << 40
	if st, _, err := c.register(1, &bad, 0, pf); err != nil || st != -int32(unix.EINVAL) {
		t.Errorf("register with unknown read_format bits: status %d %v, want -EINVAL", st, err)
	}
	h.attacks.Add(1)
	unix.Close(pf)

	runtime.LockOSThread() // the sampling event counts this thread's page faults
	defer runtime.UnlockOSThread()
	sa := perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, 0)
	sa.SamplePeriod = 1
	sa.SampleType = unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_ADDR
	sfd, err := perfabi.Open(sa, 0, -1, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sfd)
	if st, _, err := c.register(2, sa, 0, sfd); err != nil || st != 0 {
		t.Fatalf("register a sampling event: status %d %v", st, err)
	}
	ringLen := h.lieAboutRing(c)
	// A client that goes away with an event and a ring still registered.
	c2 := greetedClient(t, h.sock)
	if st, mfd, err := c2.register(1, sa, 0, sfd); err != nil || st != 0 {
		t.Errorf("register: status %d %v", st, err)
	} else {
		unix.Close(mfd)
	}
	// A forward ring mapped read-only (overwrite mode) is the kernel's business: the
	// sidecar used to mirror it and die at the first record, storing data_tail into its
	// read-only mapping of the kernel's ring.
	if st, rfd, err := c2.status(shim.MsgMap, shim.Map{Handle: 1, Prot: unix.PROT_READ, Length: uint64(ringLen)}); err != nil || st != -int32(unix.EOPNOTSUPP) || rfd >= 0 {
		t.Errorf("map a forward ring read-only: status %d fd %d %v, want -EOPNOTSUPP", st, rfd, err)
	}
	h.attacks.Add(1)
	touchAnon(64)
	if st, rfd, err := c2.status(shim.MsgMap, shim.Map{Handle: 1, Prot: unix.PROT_READ | unix.PROT_WRITE, Length: uint64(ringLen)}); err != nil || st != 0 {
		t.Errorf("map read-write: status %d %v", st, err)
	} else {
		unix.Close(rfd)
	}
	touchAnon(64)
	c2.conn.Close()
	c.conn.Close()
}

// lieAboutRing registers a sampling event on c, asks for rings of impossible sizes, then
// maps one and lies in it: data_tail values past the head, scribbles over its pages, and
// unmaps it. It returns the ring's length.
func (h *hostileRun) lieAboutRing(c *protoClient) int {
	t := h.t
	pg := os.Getpagesize()
	for _, n := range []uint64{0, 1, uint64(pg), uint64(pg) + 1, 4 * uint64(pg), 1 << 40, math.MaxUint64 - uint64(pg) + 1} {
		if st, fd, err := c.status(shim.MsgMap, shim.Map{Handle: 2, Prot: unix.PROT_READ | unix.PROT_WRITE, Length: n}); err != nil || st != -int32(unix.EINVAL) || fd >= 0 {
			t.Errorf("map a ring of %d bytes: status %d fd %d %v, want -EINVAL", n, st, fd, err)
		}
		h.attacks.Add(1)
	}
	ringLen := 5 * pg
	st, rfd, err := c.status(shim.MsgMap, shim.Map{Handle: 2, Prot: unix.PROT_READ | unix.PROT_WRITE, Length: uint64(ringLen)})
	if err != nil || st != 0 || rfd < 0 {
		t.Fatalf("map a ring: status %d fd %d %v", st, rfd, err)
	}
	ring, err := unix.Mmap(rfd, 0, ringLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	head := (*uint64)(unsafe.Pointer(&ring[1024]))
	tail := (*uint64)(unsafe.Pointer(&ring[1032]))
	flush := func(what string) {
		t.Helper()
		touchAnon(64)
		if st, _, err := c.status(shim.MsgFlush, shim.Handle{Handle: 0}); err != nil || st != 0 {
			t.Errorf("flush after %s: status %d %v", what, st, err)
		}
		h.attacks.Add(1)
	}
	flush("nothing")
	if atomic.LoadUint64(head) == 0 {
		t.Errorf("no record reached the mirror ring of a sampling page-faults event")
	}
	for _, lie := range []uint64{atomic.LoadUint64(head) + 1<<40, math.MaxUint64, atomic.LoadUint64(head) + 8, 3} {
		atomic.StoreUint64(tail, lie)
		flush("data_tail " + itoa(lie))
	}
	for i := pg; i < ringLen; i++ { // scribble over the data pages
		ring[i] = byte(h.rng.Uint32())
	}
	for i := 0; i < 1024; i++ { // and the header the sidecar wrote
		ring[i] = byte(h.rng.Uint32())
	}
	flush("scribbling over the ring")
	if err := unix.Ftruncate(rfd, 0); !errors.Is(err, unix.EPERM) {
		t.Errorf("truncating the ring memfd: %v, want EPERM", err)
	}
	unix.Munmap(ring)
	unix.Close(rfd)
	flush("unmapping the ring")
	if st, _, err := c.status(shim.MsgUnmap, shim.Handle{Handle: 2}); err != nil || st != 0 {
		t.Errorf("unmap: status %d %v", st, err)
	}
	if st, _, err := c.status(shim.MsgUnregister, shim.Handle{Handle: 2}); err != nil || st != 0 {
		t.Errorf("unregister: status %d %v", st, err)
	}
	return ringLen
}

// deafAndIdle opens a client that sends requests and never reads the replies: the
// sidecar's writes to it block (its send buffer fills), which must hold up nobody else.
// And 200 idle connections that never say HELLO.
func (h *hostileRun) deafAndIdle() {
	t := h.t
	deaf := greetedClient(t, h.sock)
	refresh := mustEncode(t, shim.MsgRefresh, shim.Handle{Handle: 1})
	raw, _ := deaf.conn.SyscallConn()
	sent := 0
	raw.Write(func(fd uintptr) bool {
		for sent < 100000 {
			if err := unix.Sendmsg(int(fd), refresh, nil, nil, unix.MSG_DONTWAIT); err != nil {
				break
			}
			sent++
		}
		return true
	})
	h.attacks.Add(int64(sent))
	var idle []*protoClient
	for range 200 {
		idle = append(idle, dialSidecar(t, h.sock))
	}
	h.attacks.Add(200)
	polite := dialSidecar(t, h.sock)
	if p, err := polite.hello(); err != nil {
		t.Errorf("a well-behaved client next to a deaf one and 200 idle ones: %v", err)
	} else {
		unix.Close(p)
	}
	polite.conn.Close()
	deaf.conn.Close()
	for _, ic := range idle {
		ic.conn.Close()
	}
}

func mustEncode(t *testing.T, typ uint16, body any) []byte {
	t.Helper()
	b, err := shim.Encode(typ, 1, body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(v uint64) string { return fmt.Sprintf("%#x", v) }

// touchAnon makes n minor page faults in the calling thread.
func touchAnon(n int) {
	pg := os.Getpagesize()
	b, err := unix.Mmap(-1, 0, n*pg, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return
	}
	for i := range n {
		b[i*pg] = 1
	}
	unix.Munmap(b)
}

// waitFdsStable returns pid's fd and memfd mapping counts once they have not changed for 200 ms
// (connections being dropped close their fds asynchronously), or after 3 s.
func waitFdsStable(t *testing.T, pid int) (int, int) {
	t.Helper()
	var lf, lm int
	stable := time.Now()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		f, _, err := procFds(pid)
		m, merr := procMemfdMaps(pid)
		if err != nil || merr != nil {
			t.Fatalf("count the sidecar's fds: %v", err)
		}
		if f != lf || m != lm {
			lf, lm, stable = f, m, time.Now()
		} else if time.Since(stable) >= 200*time.Millisecond {
			break
		}
	}
	return lf, lm
}

// TestHardeningAttrLies: a client registers real sampling and counting events with
// attrs that do not match them (another sample_type, read_format, sample_id_all,
// write_backward, watermark), maps their rings and makes the kernel write records. The
// sidecar parses kernel records and reads with the attr it was told: it must not crash
// or stop serving, whatever the mismatch.
func TestHardeningAttrLies(t *testing.T) {
	pid, sock := startSidecar(t)
	runtime.LockOSThread() // the events sample this thread
	defer runtime.UnlockOSThread()
	c := greetedClient(t, sock)
	real := perfAttr(unix.PERF_COUNT_SW_PAGE_FAULTS, unix.PERF_FORMAT_ID)
	real.SamplePeriod = 1
	real.SampleType = unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_ADDR | unix.PERF_SAMPLE_READ
	real.Flags = perfabi.FlagSampleIDAll
	const all = unix.PERF_SAMPLE_IP | unix.PERF_SAMPLE_TID | unix.PERF_SAMPLE_TIME | unix.PERF_SAMPLE_ADDR |
		unix.PERF_SAMPLE_READ | unix.PERF_SAMPLE_CALLCHAIN | unix.PERF_SAMPLE_ID | unix.PERF_SAMPLE_CPU |
		unix.PERF_SAMPLE_PERIOD | unix.PERF_SAMPLE_STREAM_ID | unix.PERF_SAMPLE_RAW | unix.PERF_SAMPLE_BRANCH_STACK |
		unix.PERF_SAMPLE_REGS_USER | unix.PERF_SAMPLE_STACK_USER | unix.PERF_SAMPLE_WEIGHT | unix.PERF_SAMPLE_DATA_SRC |
		unix.PERF_SAMPLE_IDENTIFIER | unix.PERF_SAMPLE_TRANSACTION | unix.PERF_SAMPLE_REGS_INTR
	lies := []struct {
		name string
		edit func(a *perfabi.Attr)
		prot int
	}{
		{"every sample_type bit", func(a *perfabi.Attr) { a.SampleType = all }, unix.PROT_READ | unix.PROT_WRITE},
		{"no sample_type", func(a *perfabi.Attr) { a.SampleType = 0 }, unix.PROT_READ | unix.PROT_WRITE},
		{"group read_format", func(a *perfabi.Attr) { a.ReadFormat = unix.PERF_FORMAT_GROUP | 0xf }, unix.PROT_READ | unix.PROT_WRITE},
		{"no sample_id_all", func(a *perfabi.Attr) { a.Flags = 0 }, unix.PROT_READ | unix.PROT_WRITE},
		{"write_backward", func(a *perfabi.Attr) { a.Flags |= perfabi.FlagWriteBackward }, unix.PROT_READ},
		{"watermark 0", func(a *perfabi.Attr) { a.Flags |= perfabi.FlagWatermark; a.WakeupEvents = 0 }, unix.PROT_READ | unix.PROT_WRITE},
		{"watermark 4 GiB", func(a *perfabi.Attr) { a.Flags |= perfabi.FlagWatermark; a.WakeupEvents = 1<<32 - 1 }, unix.PROT_READ | unix.PROT_WRITE},
	}
	pg := os.Getpagesize()
	var summary []string
	for i, lie := range lies {
		fd, err := perfabi.Open(real, 0, -1, -1)
		if err != nil {
			t.Fatalf("perf_event_open: %v", err)
		}
		told := *real
		lie.edit(&told)
		h := uint32(i + 1)
		st, mfd, err := c.register(h, &told, 0, fd)
		if err != nil {
			t.Fatalf("%s: register: %v (the sidecar is alive: %v)", lie.name, err, alive(pid))
		}
		if mfd >= 0 {
			unix.Close(mfd)
		}
		mapped := int32(1)
		if st == 0 {
			mst, rfd, err := c.status(shim.MsgMap, shim.Map{Handle: h, Prot: int32(lie.prot), Length: uint64(5 * pg)})
			if err != nil {
				t.Fatalf("%s: map: %v (the sidecar is alive: %v)", lie.name, err, alive(pid))
			}
			mapped = mst
			if rfd >= 0 {
				unix.Close(rfd)
			}
			for range 3 {
				touchAnon(200)
				if _, _, err := c.status(shim.MsgFlush, shim.Handle{Handle: h, Flags: shim.FlushPaused}); err != nil {
					t.Fatalf("%s: flush: %v (the sidecar is alive: %v)", lie.name, err, alive(pid))
				}
				if _, _, err := c.status(shim.MsgRefresh, shim.Handle{Handle: h}); err != nil {
					t.Fatalf("%s: refresh: %v", lie.name, err)
				}
			}
			if mst == 0 {
				c.status(shim.MsgUnmap, shim.Handle{Handle: h})
			}
		}
		c.status(shim.MsgUnregister, shim.Handle{Handle: h})
		unix.Close(fd)
		summary = append(summary, fmt.Sprintf("%s: register %d map %d", lie.name, st, mapped))
	}
	if !alive(pid) {
		t.Fatal("the sidecar died")
	}
	if _, err := dialSidecar(t, sock).hello(); err != nil {
		t.Errorf("a new client after the lies: %v", err)
	}
	t.Logf("sidecar up after %d lying attrs, 3 x 200 sampled page faults each (%s)", len(lies), strings.Join(summary, ", "))
}
