package sidecar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
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
	// StaleBound: shims refresh a page older than this (default 2*CoarseTick() + Period:
	// the shim judges a page's age on CLOCK_MONOTONIC_COARSE, which lags by less than two
	// of its ticks, with that margin, so a page republished every Period is fresh on the
	// coarse clock alone).
	StaleBound time.Duration
	// ActiveWindow (default 10 ms): after a client's read, every mirror is republished
	// each Period for this long, and again for as long as reads keep coming within it, so
	// that a tool reading often finds its pages fresh; a tool that reads less often
	// (perf stat -I 1000) gets a synchronous refresh at its reads, and between them the
	// sidecar sleeps: republishing a page nobody reads before it is stale again spares
	// no refresh and costs wakeups that preempt the measured workload. With a
	// StaleBound at or below Period every read refreshes anyway, and reads start no
	// periodic republishing at all.
	ActiveWindow time.Duration
	// IdlePeriod (default 50 ms) is the period of rounds while no client reads but one
	// has a mirrored sampling ring: each round moves the records the kernel wrote since.
	IdlePeriod time.Duration
	Stage      Stage // correction stage (default Identity)
	Logf       func(format string, args ...any)
	// AllowUIDs lists users other than the sidecar's own (and root) whose tools may
	// connect: a sidecar run as root (for BPF) serving non-root tools. Such a "foreign"
	// client gets only what its own fds give it (see foreignPolicy): New refuses a
	// Stage that is not KernelExact (the virtual PMU opens copies of a client's events
	// on the pid the client names, with the sidecar's rights), MAP is declined so the
	// tool maps the kernel's ring under its own locked-memory limit, and the events it
	// keeps registered are capped at its own RLIMIT_NOFILE. With AllowUIDs the socket's
	// directory may be mode 0711 (others may reach the socket but not list or create
	// entries) and the socket is made connectable by all; SO_PEERCRED is the gate.
	AllowUIDs []int
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
	// PreciseClockReads are mirror reads whose freshness the coarse clock could not
	// decide, so that the shim read CLOCK_MONOTONIC.
	PreciseClockReads uint64 `json:"precise_clock_reads"`
	// SelfPauses are refreshes for reads of self-counting events that the shim made with
	// the reading thread's own events paused, so that they did not count the round trip.
	SelfPauses    uint64 `json:"self_pauses"`
	Publishes     uint64 `json:"publishes"` // mirror pages written
	Clients       uint64 `json:"clients"`   // connections accepted
	Rings         uint64 `json:"rings"`     // sampling rings mirrored
	Declined      uint64 `json:"declined"`  // registrations refused (bad fd or attr)
	Stage         string `json:"stage"`
	StagePanicked bool   `json:"stage_panicked,omitempty"` // the stage failed; values since were the kernel's
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

	wake     chan struct{} // a refresh happened: republish at Period again
	kick     chan struct{} // an event was registered: one round, to ask a Pacer
	stageOff atomic.Bool   // the Stage panicked: publish the kernel's values

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
		// test/c/readformat.c computes the same default to sleep past it.
		cfg.StaleBound = 2*CoarseTick() + cfg.Period
	}
	if cfg.IdlePeriod <= 0 {
		cfg.IdlePeriod = 50 * time.Millisecond
	}
	if cfg.IdlePeriod < cfg.Period {
		cfg.IdlePeriod = cfg.Period
	}
	if cfg.ActiveWindow <= 0 {
		cfg.ActiveWindow = 10 * time.Millisecond
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
	if len(cfg.AllowUIDs) > 0 {
		if ke, ok := cfg.Stage.(KernelExact); !ok || !ke.KernelExact() {
			return nil, fmt.Errorf("serve other users (uids %v) with the %s stage: it opens events with the sidecar's rights on the pids clients name; only a stage that publishes the kernel's values may serve other users", cfg.AllowUIDs, cfg.Stage.Name())
		}
	}
	switch perm := st.Mode().Perm(); {
	case !st.IsDir():
		return nil, fmt.Errorf("check socket directory %s: not a directory", dir)
	case perm == 0o711 && len(cfg.AllowUIDs) > 0:
	case perm != 0o700 && len(cfg.AllowUIDs) > 0:
		return nil, fmt.Errorf("check socket directory %s: mode %v, want 0700 or, to serve other users, 0711", dir, st.Mode())
	case perm != 0o700:
		return nil, fmt.Errorf("check socket directory %s: mode %v, want a directory with mode 0700", dir, st.Mode())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("check socket directory %s: owned by uid %d, not by us (%d)", dir, sys.Uid, os.Geteuid())
	}
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: cfg.SocketPath, Net: "unixpacket"})
	if err != nil {
		return nil, fmt.Errorf("listen on sidecar socket: %w", err)
	}
	if len(cfg.AllowUIDs) > 0 {
		// connect() needs write permission on the socket; who is served is decided by
		// the peer-credential check in accept.
		if err := os.Chmod(cfg.SocketPath, 0o666); err != nil {
			ln.Close()
			return nil, fmt.Errorf("open the sidecar socket to other users: %w", err)
		}
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
		kick:    make(chan struct{}, 1),
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
			sum.PreciseClockReads += cp.PreciseClockReads
			sum.SelfPauses += cp.SelfPauses
		}
	}
	s.mu.Unlock()
	return Stats{
		Events:            s.events.Load(),
		MirrorReads:       sum.MirrorReads,
		PassthroughReads:  sum.PassthroughReads,
		SyncRefreshes:     sum.SyncRefreshes,
		SelfReads:         sum.SelfReads,
		PreciseClockReads: sum.PreciseClockReads,
		SelfPauses:        sum.SelfPauses,
		SidecarPid:        os.Getpid(),
		Publishes:         s.publishes.Load(),
		RecordsMirrored:   s.recordsMirrored.Load(),
		RecordsLost:       s.recordsLost.Load(),
		Rings:             s.rings.Load(),
		Clients:           s.clientsSeen.Load(),
		Declined:          s.declined.Load(),
		Stage:             s.cfg.Stage.Name(),
		StagePanicked:     s.stageOff.Load(),
	}
}

func (s *Server) accept(conn *net.UnixConn) {
	cred, err := peerCred(conn)
	if err != nil {
		s.cfg.Logf("refuse client: %v", err)
		conn.Close()
		return
	}
	foreign := int(cred.Uid) != s.uid && cred.Uid != 0
	if foreign && !slices.Contains(s.cfg.AllowUIDs, int(cred.Uid)) {
		s.cfg.Logf("refuse client pid %d: uid %d is neither ours (%d) nor root nor allowed", cred.Pid, cred.Uid, s.uid)
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
	c := newClient(s, s.nextID, conn, cred.Pid, foreign)
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
	c.pub.Lock() // no publish may touch pages being unmapped
	c.mu.Lock()
	for _, e := range c.events {
		e.close()
	}
	c.events = map[uint32]*event{}
	c.mu.Unlock()
	c.pub.Unlock()
	s.mu.Lock()
	delete(s.clients, c.id)
	if cp, err := shim.ClientCounters(c.page); err == nil {
		s.retired.MirrorReads += cp.MirrorReads
		s.retired.PassthroughReads += cp.PassthroughReads
		s.retired.SyncRefreshes += cp.SyncRefreshes
		s.retired.SelfReads += cp.SelfReads
		s.retired.PreciseClockReads += cp.PreciseClockReads
		s.retired.SelfPauses += cp.SelfPauses
	}
	page := c.page
	c.page = nil
	s.mu.Unlock()
	if page != nil {
		unix.Munmap(page) // outside the lock every client's Stats and hello take
	}
	if f, ok := s.cfg.Stage.(Forgetter); ok {
		c.pub.Lock() // the Stage is called for a client by one goroutine at a time
		s.guard(func() { f.Forget(c.id) })
		c.pub.Unlock()
	}
	s.cfg.Logf("client %d (pid %d) gone", c.id, c.pid)
}

// foreignPolicy says whether a foreign client (a user other than the sidecar's, let in
// by Config.AllowUIDs) may do what it asks, and with which errno it is declined. The
// client opened every event it registers itself, so the kernel checked its rights
// (perf_event_paranoid, ptrace access to the target) when it did; the sidecar must add
// none of its own:
//   - MAP: the sidecar would map the kernel's ring from its copy of the fd, and the
//     kernel charges locked memory to the mapper: a root sidecar is exempt from
//     perf_event_mlock_kb and RLIMIT_MEMLOCK (CAP_IPC_LOCK), the client is not. Declined
//     with EOPNOTSUPP; the shim then maps the kernel's ring itself, under its own limits.
//   - REGISTER: the sidecar keeps a copy of each registered fd, so a client could close
//     its own and keep more events alive than its RLIMIT_NOFILE allows; a foreign
//     client's live events are capped at that limit (EMFILE), read from its process
//     (the pid the socket peer had at connect; a limit that cannot be read refuses).
//   - Stages: New refuses AllowUIDs with a stage that opens events of its own.
func (c *client) foreignPolicy(msg uint16, live int) int32 {
	if !c.foreign {
		return 0
	}
	switch msg {
	case shim.MsgMap:
		return -int32(unix.EOPNOTSUPP)
	case shim.MsgRegister:
		limit, err := openFilesLimit(int(c.credPid))
		if err != nil {
			c.srv.cfg.Logf("client %d: %v", c.id, err)
			return -int32(unix.EMFILE)
		}
		if uint64(live) >= limit {
			return -int32(unix.EMFILE)
		}
	}
	return 0
}

// openFilesLimit is pid's soft RLIMIT_NOFILE, from /proc/PID/limits (prlimit(2) on
// another user's process needs CAP_SYS_RESOURCE, which a root sidecar may lack).
func openFilesLimit(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, fmt.Errorf("read the client's open-file limit: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 && f[0] == "unlimited" {
				return math.MaxUint64, nil
			}
			if len(f) > 0 {
				if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
					return n, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("no open-file limit in /proc/%d/limits", pid)
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

// publishLoop republishes every live mirror each Period while clients read (when that
// can spare their reads a refresh: Period below StaleBound), each IdlePeriod while a
// client has a mirrored sampling ring (records to move), as often as a Pacer stage asks,
// and otherwise not at all: it sleeps until a client's refresh wakes it (see
// Config.ActiveWindow).
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
		case <-s.kick:
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
		var pace time.Duration // the shortest period a Pacer stage asks for
		rings, busy := false, false
		for _, c := range cs {
			c.mu.Lock()
			evs := make([]*event, 0, len(c.events))
			for _, e := range c.events {
				evs = append(evs, e)
			}
			c.mu.Unlock()
			slices.SortFunc(evs, func(a, b *event) int { return int(a.info.Handle) - int(b.info.Handle) })
			if !c.pub.TryLock() {
				// The client is in a registration or a read, which publish its
				// values anyway (a registration may take tens of milliseconds in
				// the Stage): the round leaves it rather than wait, so that no
				// other client's round waits either, and the next round comes soon.
				busy = true
			} else {
				if c.publishLocked(evs, CallRound) {
					rings = true
				}
				if p, ok := s.cfg.Stage.(Pacer); ok && len(evs) > 0 {
					s.guard(func() {
						if d := p.Pace(c.id); d > 0 && (pace == 0 || d < pace) {
							pace = d
						}
					})
				}
				c.pub.Unlock()
			}
			s.mu.Lock()
			if cp, err := shim.ClientCounters(c.page); err == nil {
				reads += cp.MirrorReads + cp.PassthroughReads + cp.RingFlushes + cp.SelfReads
			}
			s.mu.Unlock()
		}
		if reads != lastReads {
			lastReads, lastActive = reads, time.Now()
		}
		var next time.Duration // 0: no periodic round
		switch {
		case time.Since(lastActive) <= s.cfg.ActiveWindow && s.cfg.Period < s.cfg.StaleBound:
			next = s.cfg.Period
		case rings:
			next = s.cfg.IdlePeriod
		}
		if pace > 0 {
			if p := max(pace, s.cfg.Period); next == 0 || p < next {
				next = p
			}
		}
		if busy && (next == 0 || s.cfg.Period < next) {
			next = s.cfg.Period
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		if next > 0 {
			t.Reset(next)
		}
	}
}

// registered asks the publisher for one round: a Pacer stage says in a round whether the
// new event's client needs periodic ones.
func (s *Server) registered() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// active tells the publisher that a client is reading now.
func (s *Server) active() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// publish reads evs, events of c, from the kernel, runs the Stage on them as call and
// writes their mirrors. It holds c.pub throughout: another client's reads, Stage calls
// and mirror writes go on meanwhile. It reports whether an event has a mirrored ring.
func (c *client) publish(evs []*event, call Call) (rings bool) {
	c.pub.Lock()
	defer c.pub.Unlock()
	return c.publishLocked(evs, call)
}

// publishLocked is publish with c.pub held.
func (c *client) publishLocked(evs []*event, call Call) (rings bool) {
	if len(evs) == 0 {
		return false
	}
	s := c.srv
	infos := make([]Event, 0, len(evs))
	vals := make([]shim.Values, 0, len(evs))
	live := evs[:0:0]
	var states []uint32
	for _, e := range evs {
		if e.ring != nil {
			rings = true
			s.pumpLocked(e, false)
		}
		if e.closed.Load() || e.unregistered {
			continue
		}
		live = append(live, e)
		infos = append(infos, e.info)
	}
	if len(live) == 0 {
		return
	}
	if sp, ok := s.cfg.Stage.(Sampler); ok {
		s.guard(func() { sp.Sample(call, infos) })
	}
	for _, e := range live {
		v, state := e.readKernel(c.readBuf)
		// After the count: a reset between the two is then seen as one now and as
		// the count going down at the next call, never missed.
		v.Resets, v.Switches, v.Counted = shim.ClientIoctlCount(c.page, e.info.Handle)
		vals = append(vals, v)
		states = append(states, state)
	}
	now := s.now()
	sy, _ := s.cfg.Stage.(Syncer)
	if !s.correct(now, call, infos, vals) {
		// The stage is off (it panicked, now or before) and may have left vals half
		// rewritten: the kernel's values, read again.
		sy = nil
		for i, e := range live {
			vals[i], states[i] = e.readKernel(c.readBuf)
		}
	}
	var flags []uint32 // per live event; nil: none
	if sy != nil {
		flags = make([]uint32, len(live))
		s.guard(func() {
			for i := range live {
				if sy.Sync(infos[i]) {
					flags[i] = shim.MirrorSync
				}
			}
		})
	}
	for i, e := range live {
		var f uint32
		if flags != nil {
			f = flags[i]
		}
		e.mirror.Publish(states[i], f, uint64(now), vals[i])
	}
	s.publishes.Add(uint64(len(live)))
	return rings
}

// correct runs the Stage on vals, unless it has panicked before: a bug in a stage (the
// model, the virtual PMU) must not take the sidecar down with every client's mirrors.
// After a panic the stage is off for the rest of the run, so every mirror gets the
// kernel's values, which are exact; the panic is logged once with its stack. It reports
// whether the stage ran to the end. The pub lock of the client called for is held.
func (s *Server) correct(now int64, call Call, infos []Event, vals []shim.Values) bool {
	return s.guard(func() { correctStage(s.cfg.Stage, now, call, infos, vals) })
}

// guard runs f, a call into the Stage, unless the stage is off; a panic in f switches
// it off (see correct). It reports whether f ran to the end. The pub lock of the client
// called for is held.
func (s *Server) guard(f func()) (ok bool) {
	if s.stageOff.Load() {
		return false
	}
	defer func() {
		if r := recover(); r != nil {
			s.stageOff.Store(true)
			s.cfg.Logf("stage %s panicked; serving the kernel's values from now on: %v\n%s", s.cfg.Stage.Name(), r, debug.Stack())
			ok = false
		}
	}()
	f()
	return true
}

// pumpLocked moves the records of e's kernel ring into its mirror; the pub lock of e's
// client is held. A
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

// CoarseTick is the resolution of CLOCK_MONOTONIC_COARSE (the kernel's tick: 4 ms at
// HZ=250); the clock lags CLOCK_MONOTONIC by less than two of them. 10 ms if it cannot
// be read.
func CoarseTick() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGetres(unix.CLOCK_MONOTONIC_COARSE, &ts); err != nil || ts.Nano() <= 0 {
		return 10 * time.Millisecond
	}
	return time.Duration(ts.Nano())
}
