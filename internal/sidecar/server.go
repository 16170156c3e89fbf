package sidecar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/shim"
)

// Config configures a Server. Zero durations take the defaults.
type Config struct {
	SocketPath string        // listen here; the directory must be mode 0700 and ours
	Period     time.Duration // republish every live mirror this often while tools read (default 1 ms)
	StaleBound time.Duration // shims refresh a page older than this (default 2 ms)
	// IdlePeriod is the republish period when no client has read a mirror for
	// ActiveWindow (defaults 50 ms and 1 s). A tool that reads only at the end (perf stat
	// without -I) then costs the machine 20 wakeups a second instead of 1000, which
	// would otherwise preempt the measured workload on a busy machine; its reads stay
	// exact because a stale page is refreshed synchronously, and the refresh switches
	// the sidecar back to Period at once.
	IdlePeriod   time.Duration
	ActiveWindow time.Duration
	Stage        Stage // correction stage (default Identity)
	Logf         func(format string, args ...any)
}

// Stats are the server's counters, as `bayesperf run --stats` writes them.
type Stats struct {
	Events           uint64 `json:"events"`            // registrations accepted
	MirrorReads      uint64 `json:"mirror_reads"`      // read()s served from mirrors
	PassthroughReads uint64 `json:"passthrough_reads"` // read()s of registered fds sent to the kernel
	RecordsMirrored  uint64 `json:"records_mirrored"`  // sampling records copied to mirror rings
	RecordsLost      uint64 `json:"records_lost"`      // sampling records lost
	SidecarPid       int    `json:"sidecar_pid"`
	SyncRefreshes    uint64 `json:"sync_refreshes"` // mirror reads that first asked for a refresh
	SelfReads        uint64 `json:"self_reads"`     // reads of events counting the reader, from the kernel
	Publishes        uint64 `json:"publishes"`      // mirror pages written
	Clients          uint64 `json:"clients"`        // connections accepted
	Rings            uint64 `json:"rings"`          // sampling rings mirrored
	Declined         uint64 `json:"declined"`       // registrations refused (bad fd or attr)
	Stage            string `json:"stage"`
}

// Server is a running sidecar. Create it with New, run it with Serve, stop it with Close.
type Server struct {
	cfg   Config
	ln    *net.UnixListener
	uid   int
	start time.Time
	mono0 int64 // CLOCK_MONOTONIC at start, so now() matches the shim's clock_gettime

	mu      sync.Mutex // guards clients, nextID, retired, closed
	clients map[int]*client
	nextID  int
	retired shim.ClientPage // counters of clients that are gone
	closed  bool

	wake    chan struct{} // a refresh happened: republish at Period again
	pubMu   sync.Mutex    // serialises kernel reads, the Stage and mirror writes
	readBuf []byte

	events, clientsSeen, declined, publishes atomic.Uint64
	rings, recordsMirrored, recordsLost      atomic.Uint64
	wg                                       sync.WaitGroup
}

// New checks the socket directory and starts listening.
func New(cfg Config) (*Server, error) {
	if cfg.Period <= 0 {
		cfg.Period = time.Millisecond
	}
	if cfg.StaleBound <= 0 {
		cfg.StaleBound = 2 * time.Millisecond
	}
	if cfg.IdlePeriod <= 0 {
		cfg.IdlePeriod = 50 * time.Millisecond
	}
	if cfg.IdlePeriod < cfg.Period {
		cfg.IdlePeriod = cfg.Period
	}
	if cfg.ActiveWindow <= 0 {
		cfg.ActiveWindow = time.Second
	}
	if cfg.Stage == nil {
		cfg.Stage = Identity{}
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	dir := filepath.Dir(cfg.SocketPath)
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("check socket directory: %w", err)
	}
	if st.Mode().Perm() != 0o700 || !st.IsDir() {
		return nil, fmt.Errorf("check socket directory %s: mode %v, want a directory with mode 0700", dir, st.Mode())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("check socket directory %s: owned by uid %d, not by us (%d)", dir, sys.Uid, os.Geteuid())
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: cfg.SocketPath, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("listen on sidecar socket: %w", err)
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		ln.Close()
		return nil, fmt.Errorf("read CLOCK_MONOTONIC: %w", err)
	}
	return &Server{
		cfg:     cfg,
		ln:      ln,
		uid:     os.Geteuid(),
		start:   time.Now(),
		mono0:   ts.Nano(),
		clients: map[int]*client{},
		wake:    make(chan struct{}, 1),
		readBuf: make([]byte, shim.ReadSize(shim.FormatGroup|shim.FormatTotalTimeEnabled|shim.FormatTotalTimeRunning|shim.FormatID|shim.FormatLost, shim.MirrorMaxValues)),
	}, nil
}

func (s *Server) helloFlags() uint32 {
	if ke, ok := s.cfg.Stage.(KernelExact); ok && ke.KernelExact() {
		return shim.HelloKernelExact
	}
	return 0
}

// now is CLOCK_MONOTONIC in ns, from Go's monotonic clock (no system call).
func (s *Server) now() int64 { return s.mono0 + int64(time.Since(s.start)) }

// Serve accepts clients and republishes mirrors until ctx is done or Close is called.
func (s *Server) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.publishLoop(ctx)
	}()
	go func() {
		<-ctx.Done()
		s.Close()
	}()
	for {
		conn, err := s.ln.AcceptUnix()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				s.wg.Wait()
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
				s.cfg.Logf("accept: %v; retrying", err)
				time.Sleep(10 * time.Millisecond)
				continue
			}
			s.Close()
			s.wg.Wait()
			return fmt.Errorf("accept sidecar client: %w", err)
		}
		s.accept(conn)
	}
}

// Close stops accepting, drops every client (their tools fall back to the kernel) and
// removes the socket.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	cs := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	err := s.ln.Close()
	for _, c := range cs {
		c.conn.Close()
	}
	return err
}

// Stats returns the counters so far, including those of clients still connected.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	sum := s.retired
	for _, c := range s.clients {
		if cp, err := shim.ClientCounters(c.page); err == nil {
			sum.MirrorReads += cp.MirrorReads
			sum.PassthroughReads += cp.PassthroughReads
			sum.SyncRefreshes += cp.SyncRefreshes
			sum.SelfReads += cp.SelfReads
		}
	}
	s.mu.Unlock()
	return Stats{
		Events:           s.events.Load(),
		MirrorReads:      sum.MirrorReads,
		PassthroughReads: sum.PassthroughReads,
		SyncRefreshes:    sum.SyncRefreshes,
		SelfReads:        sum.SelfReads,
		SidecarPid:       os.Getpid(),
		Publishes:        s.publishes.Load(),
		RecordsMirrored:  s.recordsMirrored.Load(),
		RecordsLost:      s.recordsLost.Load(),
		Rings:            s.rings.Load(),
		Clients:          s.clientsSeen.Load(),
		Declined:         s.declined.Load(),
		Stage:            s.cfg.Stage.Name(),
	}
}

func (s *Server) accept(conn *net.UnixConn) {
	cred, err := peerCred(conn)
	if err != nil {
		s.cfg.Logf("refuse client: %v", err)
		conn.Close()
		return
	}
	if int(cred.Uid) != s.uid && cred.Uid != 0 {
		s.cfg.Logf("refuse client pid %d: uid %d is neither ours (%d) nor root", cred.Pid, cred.Uid, s.uid)
		conn.Close()
		return
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		conn.Close()
		return
	}
	s.nextID++
	c := &client{id: s.nextID, srv: s, conn: conn, credPid: cred.Pid, events: map[uint32]*event{}}
	s.clients[c.id] = c
	s.mu.Unlock()
	s.clientsSeen.Add(1)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		c.serve()
		s.drop(c)
	}()
}

func (s *Server) drop(c *client) {
	c.conn.Close()
	s.pubMu.Lock() // no publish may touch pages being unmapped
	c.mu.Lock()
	for _, e := range c.events {
		e.close()
	}
	c.events = map[uint32]*event{}
	c.mu.Unlock()
	s.pubMu.Unlock()
	s.mu.Lock()
	delete(s.clients, c.id)
	if cp, err := shim.ClientCounters(c.page); err == nil {
		s.retired.MirrorReads += cp.MirrorReads
		s.retired.PassthroughReads += cp.PassthroughReads
		s.retired.SyncRefreshes += cp.SyncRefreshes
		s.retired.SelfReads += cp.SelfReads
	}
	if c.page != nil {
		unix.Munmap(c.page)
		c.page = nil
	}
	s.mu.Unlock()
	if f, ok := s.cfg.Stage.(Forgetter); ok {
		s.pubMu.Lock() // the Stage is called by one goroutine at a time
		f.Forget(c.id)
		s.pubMu.Unlock()
	}
	s.cfg.Logf("client %d (pid %d) gone", c.id, c.pid)
}

func peerCred(conn *net.UnixConn) (*unix.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("get raw socket: %w", err)
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("read peer credentials: %w", err)
	}
	if cerr != nil {
		return nil, fmt.Errorf("read peer credentials: %w", cerr)
	}
	return cred, nil
}

// publishLoop republishes every live mirror each Period while clients read, each
// IdlePeriod otherwise (see Config.IdlePeriod).
func (s *Server) publishLoop(ctx context.Context) {
	t := time.NewTimer(s.cfg.Period)
	defer t.Stop()
	var lastReads uint64
	var lastActive time.Time // start idle: nothing has been read yet
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wake:
			lastActive = time.Now()
		}
		s.mu.Lock()
		cs := make([]*client, 0, len(s.clients))
		for _, c := range s.clients {
			cs = append(cs, c)
		}
		s.mu.Unlock()
		var reads uint64
		for _, c := range cs {
			c.mu.Lock()
			evs := make([]*event, 0, len(c.events))
			for _, e := range c.events {
				evs = append(evs, e)
			}
			c.mu.Unlock()
			slices.SortFunc(evs, func(a, b *event) int { return int(a.info.Handle) - int(b.info.Handle) })
			s.publish(evs)
			s.mu.Lock()
			if cp, err := shim.ClientCounters(c.page); err == nil {
				reads += cp.MirrorReads + cp.PassthroughReads + cp.RingFlushes + cp.SelfReads
			}
			s.mu.Unlock()
		}
		if reads != lastReads {
			lastReads, lastActive = reads, time.Now()
		}
		next := s.cfg.Period
		if time.Since(lastActive) > s.cfg.ActiveWindow {
			next = s.cfg.IdlePeriod
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// active tells the publisher that a client is reading now.
func (s *Server) active() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// publish reads evs from the kernel, runs the Stage and writes their mirrors.
func (s *Server) publish(evs []*event) {
	if len(evs) == 0 {
		return
	}
	s.pubMu.Lock()
	defer s.pubMu.Unlock()
	infos := make([]Event, 0, len(evs))
	vals := make([]shim.Values, 0, len(evs))
	live := evs[:0:0]
	var states []uint32
	for _, e := range evs {
		if e.ring != nil {
			s.pumpLocked(e, false)
		}
		if e.closed.Load() || e.unregistered {
			continue
		}
		v, state := e.readKernel(s.readBuf)
		live = append(live, e)
		infos = append(infos, e.info)
		vals = append(vals, v)
		states = append(states, state)
	}
	if len(live) == 0 {
		return
	}
	now := s.now()
	s.cfg.Stage.Correct(now, infos, vals)
	for i, e := range live {
		e.mirror.Publish(states[i], 0, uint64(now), vals[i])
	}
	s.publishes.Add(uint64(len(live)))
}

// pumpLocked moves the records of e's kernel ring into its mirror; pubMu is held. A
// backward ring is copied only when the tool has just paused it.
func (s *Server) pumpLocked(e *event, paused bool) {
	if e.ring == nil || e.closed.Load() {
		return
	}
	var moved, lost uint64
	switch {
	case !e.ring.backward:
		moved, lost = e.ring.pump()
	case paused:
		moved, lost = e.ring.pumpBackward()
	}
	s.recordsMirrored.Add(moved)
	s.recordsLost.Add(lost)
}
