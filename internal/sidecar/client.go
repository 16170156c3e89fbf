package sidecar

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// client is one connection from one tool process.
type client struct {
	id      int
	srv     *Server
	conn    *net.UnixConn
	credPid int32
	foreign bool // a user other than the sidecar's (Config.AllowUIDs): see foreignPolicy
	pid     int32
	page    []byte // the client page (counters the shim keeps); guarded by srv.mu

	mu     sync.Mutex // guards events
	events map[uint32]*event

	// pub serialises this client's kernel reads, Stage calls, ring pumps and mirror
	// writes, and the closing of its events. It is the client's own: a client whose
	// Stage call is slow (a virtual PMU being built) stalls no other client.
	pub     sync.Mutex
	readBuf []byte // read(2) buffer, under pub
}

func newClient(s *Server, id int, conn *net.UnixConn, credPid int32, foreign bool) *client {
	return &client{id: id, srv: s, conn: conn, credPid: credPid, foreign: foreign, events: map[uint32]*event{},
		readBuf: make([]byte, perfabi.ReadSize(perfabi.FormatGroup|perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning|perfabi.FormatID|perfabi.FormatLost, shim.MirrorMaxValues))}
}

// event is one registered perf event.
type event struct {
	info   Event
	fd     int // the sidecar's copy of the tool's fd
	format uint64
	mem    []byte
	mirror *shim.Mirror
	closed atomic.Bool
	// ring is the sampling mirror while the tool has the fd mapped; an event the tool
	// closed while its ring stays mapped lives on (unregistered) until UNMAP, as the
	// kernel keeps an event alive while its ring is mapped. Both under client.pub.
	ring         *mirrorRing
	unregistered bool
}

// close releases everything; the caller holds its client's pub.
func (e *event) close() {
	if e.closed.Swap(true) {
		return
	}
	if e.ring != nil {
		e.ring.close()
		e.ring = nil
	}
	unix.Close(e.fd)
	unix.Munmap(e.mem)
}

// readKernel reads the event's counts; a failed or empty read yields MirrorKernel so the
// shim asks the kernel itself and gets the kernel's own answer (error or EOF).
func (e *event) readKernel(buf []byte) (shim.Values, uint32) {
	n, err := unix.Read(e.fd, buf)
	if err != nil || n <= 0 {
		return shim.Values{}, shim.MirrorKernel
	}
	v, err := shim.ParseRead(e.format, buf[:n])
	if err != nil {
		return shim.Values{}, shim.MirrorKernel
	}
	return v, shim.MirrorOK
}

func (c *client) serve() {
	buf := make([]byte, 1024)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, flags, _, err := c.conn.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		fds := parseFds(oob[:oobn])
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 {
			closeAll(fds)
			c.srv.cfg.Logf("client %d: truncated message; closing", c.id)
			return
		}
		reply, replyFd, err := c.handle(buf[:n], fds)
		if err != nil {
			c.srv.cfg.Logf("client %d: %v; closing", c.id, err)
			return
		}
		var roob []byte
		if replyFd >= 0 {
			roob = unix.UnixRights(replyFd)
		}
		_, _, err = c.conn.WriteMsgUnix(reply, roob, nil)
		if replyFd >= 0 {
			unix.Close(replyFd)
		}
		if err != nil {
			return
		}
	}
}

func parseFds(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, f := range fds {
		unix.Close(f)
	}
}

// errno encodes err as the -errno status of the ABI.
func errno(err error) int32 {
	var e unix.Errno
	if errors.As(err, &e) {
		return -int32(e)
	}
	return -int32(unix.EINVAL)
}

// handle processes one message with the fds that came with it (it owns them) and returns
// the reply (nil for none) and an fd to attach (-1 for none; handle's caller closes it
// after sending). An error means the client broke the protocol and must be dropped.
func (c *client) handle(b []byte, fds []int) ([]byte, int, error) {
	h, body, err := shim.Decode(b)
	if err != nil {
		closeAll(fds)
		return nil, -1, fmt.Errorf("decode message: %w", err)
	}
	if h.Type != shim.MsgRegister {
		closeAll(fds)
		fds = nil
	}
	if h.Type != shim.MsgHello && c.page == nil {
		closeAll(fds)
		return nil, -1, fmt.Errorf("message type %#x before HELLO", h.Type)
	}
	switch m := body.(type) {
	case shim.Hello:
		return c.hello(h, m)
	case shim.Register:
		return c.register(h, m, fds)
	case shim.Map:
		st, fd := c.mapRing(m)
		out, err := shim.Encode(shim.MsgMap|shim.MsgReply, h.Seq, shim.Status{Status: st, Handle: m.Handle})
		if err != nil && fd >= 0 {
			unix.Close(fd)
			fd = -1
		}
		return out, fd, err
	case shim.Handle:
		var st int32
		switch h.Type {
		case shim.MsgUnregister:
			st = c.unregister(m.Handle)
		case shim.MsgRefresh:
			st = c.refresh(m.Handle)
		case shim.MsgUnmap:
			st = c.unmapRing(m.Handle)
		case shim.MsgFlush:
			st = c.flush(m.Handle, m.Flags&shim.FlushPaused != 0)
		}
		out, err := shim.Encode(h.Type|shim.MsgReply, h.Seq, shim.Status{Status: st, Handle: m.Handle})
		return out, -1, err
	}
	return nil, -1, fmt.Errorf("unexpected message type %#x from a client", h.Type)
}

func (c *client) hello(h shim.MsgHdr, m shim.Hello) ([]byte, int, error) {
	if c.page != nil {
		return nil, -1, errors.New("second HELLO")
	}
	if c.credPid != 0 && m.Pid != c.credPid {
		return nil, -1, fmt.Errorf("HELLO says pid %d but the socket peer is pid %d", m.Pid, c.credPid)
	}
	fd, mem, err := newSharedPage("bayesperf-client", unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL)
	if err != nil {
		return nil, -1, fmt.Errorf("create client page: %w", err)
	}
	if err := shim.InitClientPage(mem); err != nil {
		unix.Close(fd)
		unix.Munmap(mem)
		return nil, -1, err
	}
	c.srv.mu.Lock()
	c.page = mem
	c.srv.mu.Unlock()
	c.pid = m.Pid
	out, err := shim.Encode(shim.MsgHello|shim.MsgReply, h.Seq, shim.HelloReply{
		SidecarPid: int32(os.Getpid()),
		StaleNs:    uint64(c.srv.cfg.StaleBound.Nanoseconds()),
		PageSize:   shim.PageSize,
		Flags:      c.srv.helloFlags(),
	})
	if err != nil {
		unix.Close(fd)
		return nil, -1, err
	}
	c.srv.cfg.Logf("client %d: pid %d connected", c.id, m.Pid)
	return out, fd, nil
}

// newSharedPage creates a one-page memfd, maps it read-write here and seals it.
func newSharedPage(name string, seals int) (int, []byte, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return -1, nil, fmt.Errorf("create memfd: %w", err)
	}
	if err := unix.Ftruncate(fd, shim.PageSize); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("size memfd: %w", err)
	}
	mem, err := unix.Mmap(fd, 0, shim.PageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("map memfd: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		unix.Munmap(mem)
		unix.Close(fd)
		return -1, nil, fmt.Errorf("seal memfd: %w", err)
	}
	return fd, mem, nil
}

// isPerfFd reports whether fd (in this process) is a perf event.
func isPerfFd(fd int) bool {
	target, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	return err == nil && target == "anon_inode:[perf_event]"
}

func (c *client) register(h shim.MsgHdr, m shim.Register, fds []int) ([]byte, int, error) {
	decline := func(st int32, why string) ([]byte, int, error) {
		closeAll(fds)
		c.srv.declined.Add(1)
		c.srv.cfg.Logf("client %d: decline handle %d: %s", c.id, m.Handle, why)
		out, err := shim.Encode(shim.MsgRegister|shim.MsgReply, h.Seq, shim.RegisterReply{Status: st, Handle: m.Handle})
		return out, -1, err
	}
	if len(fds) != 1 {
		return decline(-int32(unix.EBADF), fmt.Sprintf("%d fds attached, want 1", len(fds)))
	}
	if !isPerfFd(fds[0]) {
		return decline(-int32(unix.EBADF), "the fd is not a perf event")
	}
	attr, err := shim.ParseAttr(m.Attr[:m.AttrSize])
	if err != nil {
		return decline(-int32(unix.EINVAL), err.Error())
	}
	c.mu.Lock()
	_, dup := c.events[m.Handle]
	live := len(c.events)
	c.mu.Unlock()
	if dup {
		return decline(-int32(unix.EEXIST), "handle already registered")
	}
	if st := c.foreignPolicy(shim.MsgRegister, live); st != 0 {
		return decline(st, "another user's client keeps as many events registered as its RLIMIT_NOFILE allows")
	}
	mfd, mem, err := newSharedPage("bayesperf-mirror", unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_FUTURE_WRITE|unix.F_SEAL_SEAL)
	if err != nil {
		return decline(errno(err), err.Error())
	}
	mirror, err := shim.NewMirror(mem)
	if err != nil {
		unix.Munmap(mem)
		unix.Close(mfd)
		return decline(-int32(unix.EINVAL), err.Error())
	}
	mirror.Init(attr.ReadFormat)
	e := &event{
		info: Event{
			Client: c.id, ClientPid: c.pid, Handle: m.Handle, GroupHandle: m.GroupHandle,
			Pid: m.Pid, CPU: m.CPU, Attr: attr,
		},
		fd:     fds[0],
		format: attr.ReadFormat,
		mem:    mem,
		mirror: mirror,
	}
	// Publish once before the shim can see the page, so its first read is served.
	c.publish([]*event{e}, CallRegister)
	c.mu.Lock()
	c.events[m.Handle] = e
	c.mu.Unlock()
	// Only now may the publisher's round find the event (and ask a Pacer about it).
	c.srv.registered()
	c.srv.events.Add(1)
	out, err := shim.Encode(shim.MsgRegister|shim.MsgReply, h.Seq, shim.RegisterReply{Handle: m.Handle})
	if err != nil {
		unix.Close(mfd)
		return nil, -1, err
	}
	c.srv.cfg.Logf("client %d: handle %d type %d config %#x read_format %#x pid %d cpu %d group %d",
		c.id, m.Handle, attr.Type, attr.Config, attr.ReadFormat, m.Pid, m.CPU, m.GroupHandle)
	return out, mfd, nil
}

// unregister closes the sidecar's copy of the fd before the shim's close() returns, and
// tells an Unregisterer stage that the event left the client's rounds.
func (c *client) unregister(handle uint32) int32 {
	c.mu.Lock()
	e := c.events[handle]
	delete(c.events, handle)
	c.mu.Unlock()
	if e == nil {
		return -int32(unix.ENOENT)
	}
	c.pub.Lock()
	defer c.pub.Unlock()
	if u, ok := c.srv.cfg.Stage.(Unregisterer); ok {
		c.srv.guard(func() { u.Unregistered(e.info) })
	}
	if e.ring != nil {
		e.unregistered = true
		c.mu.Lock()
		c.events[handle] = e // kept for UNMAP; counting rounds skip it
		c.mu.Unlock()
		return 0
	}
	e.close()
	return 0
}

// event returns the client's event of handle, nil if it has none.
func (c *client) event(handle uint32) *event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.events[handle]
}

// mapRing creates the sampling mirror of a registered event.
func (c *client) mapRing(m shim.Map) (int32, int) {
	e := c.event(m.Handle)
	if e == nil {
		return -int32(unix.ENOENT), -1
	}
	c.pub.Lock()
	defer c.pub.Unlock()
	if e.ring != nil || e.unregistered {
		return -int32(unix.EBUSY), -1
	}
	if st := c.foreignPolicy(shim.MsgMap, 0); st != 0 {
		c.srv.cfg.Logf("client %d: handle %d: another user's ring is left to the kernel (its locked-memory limit)", c.id, m.Handle)
		return st, -1
	}
	r, fd, err := newMirrorRing(e, m)
	if err != nil {
		c.srv.cfg.Logf("client %d: no mirror ring for handle %d: %v", c.id, m.Handle, err)
		return errno(err), -1
	}
	e.ring = r
	c.srv.rings.Add(1)
	c.srv.cfg.Logf("client %d: handle %d ring of %d bytes mirrored (writable %v)", c.id, m.Handle, m.Length, !r.overwrite)
	return 0, fd
}

func (c *client) unmapRing(handle uint32) int32 {
	e := c.event(handle)
	if e == nil {
		return -int32(unix.ENOENT)
	}
	c.pub.Lock()
	defer c.pub.Unlock()
	if e.ring == nil {
		return -int32(unix.EINVAL)
	}
	c.srv.pumpLocked(e, false)
	e.ring.close()
	e.ring = nil
	if e.unregistered {
		c.mu.Lock()
		delete(c.events, handle)
		c.mu.Unlock()
		e.close()
	}
	return 0
}

// flush pumps every forward ring of the client, and the ring of handle when the tool
// has just paused it (paused), backward rings included.
func (c *client) flush(handle uint32, paused bool) int32 {
	c.mu.Lock()
	evs := make([]*event, 0, len(c.events))
	for _, e := range c.events {
		evs = append(evs, e)
	}
	c.mu.Unlock()
	c.pub.Lock()
	for _, e := range evs {
		c.srv.pumpLocked(e, paused && e.info.Handle == handle)
	}
	c.pub.Unlock()
	c.srv.active()
	return 0
}

func (c *client) refresh(handle uint32) int32 {
	e := c.event(handle)
	if e == nil {
		return -int32(unix.ENOENT)
	}
	c.publish([]*event{e}, CallRead)
	c.srv.active()
	return 0
}
