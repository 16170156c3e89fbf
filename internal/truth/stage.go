package truth

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// Header is the first line of the CSV the stage writes.
const Header = "time_ns,client,handle,event,raw_value,raw_enabled,raw_running,value,enabled,running,truth"

// Stage wraps Inner (nil: the kernel's values unchanged) and writes the truth rows.
type Stage struct {
	Inner sidecar.Stage
	Logf  func(format string, a ...any) // nil: silent

	names perf.Namer
	// mu guards the writer and the client map; it is never held across a system call
	// (the copies are opened and read under their client's own mu).
	mu      sync.Mutex
	w       *bufio.Writer
	closer  io.Closer
	clients map[int]*client
}

// client is the truth copies of one client's events.
type client struct {
	mu     sync.Mutex
	copies map[copyKey]*perf.Event
	events map[uint32]*watched // by handle
}

type copyKey struct {
	pid, cpu int32
	attr     perf.Attr
}

// watched is one event of a tool with truth copies.
type watched struct {
	name  string
	parts []*perf.Event
}

// New returns a stage writing its rows to w (closed by Close when it is an io.Closer).
func New(inner sidecar.Stage, w io.Writer, logf func(string, ...any)) *Stage {
	s := &Stage{Inner: inner, Logf: logf, w: bufio.NewWriter(w), clients: map[int]*client{}}
	if c, ok := w.(io.Closer); ok {
		s.closer = c
	}
	s.w.WriteString(Header + "\n")
	return s
}

var (
	_ sidecar.CallCorrector = (*Stage)(nil)
	_ sidecar.Forgetter     = (*Stage)(nil)
	_ sidecar.Unregisterer  = (*Stage)(nil)
	_ sidecar.Syncer        = (*Stage)(nil)
	_ sidecar.Pacer         = (*Stage)(nil)
)

// Name is the inner stage's, with "+truth".
func (s *Stage) Name() string {
	if s.Inner == nil {
		return "truth"
	}
	return s.Inner.Name() + "+truth"
}

// Correct is CorrectCall for a call the server did not qualify: never a read.
func (s *Stage) Correct(timeNs int64, events []sidecar.Event, values []shim.Values) {
	s.CorrectCall(timeNs, sidecar.CallRound, events, values)
}

// CorrectCall opens the truth copies of newly registered events, runs the inner stage,
// and for a tool's read writes a row.
func (s *Stage) CorrectCall(timeNs int64, call sidecar.Call, events []sidecar.Event, values []shim.Values) {
	if call == sidecar.CallRegister {
		for _, e := range events {
			c := s.client(e.Client, true)
			c.mu.Lock()
			s.watch(c, e)
			c.mu.Unlock()
		}
	}
	var raw shim.Values
	var rawValue uint64
	if call == sidecar.CallRead && len(values) == 1 && len(values[0].Members) == 1 {
		raw, rawValue = values[0], values[0].Members[0].Value
	}
	if s.Inner != nil {
		if cc, ok := s.Inner.(sidecar.CallCorrector); ok {
			cc.CorrectCall(timeNs, call, events, values)
		} else {
			s.Inner.Correct(timeNs, events, values)
		}
	}
	if call != sidecar.CallRead || len(events) != 1 || len(values) != 1 || len(values[0].Members) != 1 {
		return
	}
	e := events[0]
	name, truth, ok := s.truth(e)
	if !ok {
		return
	}
	v := values[0]
	row := []string{
		strconv.FormatInt(timeNs, 10), strconv.Itoa(e.Client), strconv.FormatUint(uint64(e.Handle), 10), name,
		strconv.FormatUint(rawValue, 10), strconv.FormatUint(raw.Enabled, 10), strconv.FormatUint(raw.Running, 10),
		strconv.FormatUint(v.Members[0].Value, 10), strconv.FormatUint(v.Enabled, 10), strconv.FormatUint(v.Running, 10),
		strconv.FormatUint(truth, 10),
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range row {
		if i > 0 {
			s.w.WriteByte(',')
		}
		s.w.WriteString(f)
	}
	s.w.WriteByte('\n')
}

// truth reads the copies of e (a read of one event): its name and the truth, or false
// when it has none or a copy could not count all along.
func (s *Stage) truth(e sidecar.Event) (string, uint64, bool) {
	c := s.client(e.Client, false)
	if c == nil {
		return "", 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.events[e.Handle]
	if w == nil {
		return "", 0, false
	}
	var truth uint64
	for _, p := range w.parts {
		n, err := p.ReadCount()
		if err != nil {
			s.logf("truth: %s (client %d handle %d): %v", w.name, e.Client, e.Handle, err)
			return "", 0, false
		}
		if n.Running != n.Enabled {
			s.logf("truth: %s (client %d handle %d): a pinned copy ran %d of %d ns: no counter for it",
				w.name, e.Client, e.Handle, n.Running, n.Enabled)
			return "", 0, false
		}
		truth += n.Value
	}
	return w.name, truth, true
}

// client returns the state of client id, created if new and asked to (else nil).
func (s *Stage) client(id int, create bool) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[id]
	if c == nil && create {
		c = &client{copies: map[copyKey]*perf.Event{}, events: map[uint32]*watched{}}
		s.clients[id] = c
	}
	return c
}

// hardware says whether the kernel may multiplex events of a's type.
func hardware(a shim.Attr) bool {
	switch a.Type {
	case perf.TypeSoftware, perf.TypeTracepoint, perf.TypeBreakpoint:
		return false
	}
	return true
}

// watch opens (or shares) the truth copies of one registered event of c; c.mu is held.
func (s *Stage) watch(c *client, e sidecar.Event) {
	if !hardware(e.Attr) || e.GroupHandle != 0 || e.Attr.ReadFormat&perfabi.FormatGroup != 0 {
		return
	}
	// The copies count what the tool's event counts (perf.CountKey: guest time taken
	// as absent, so that perf's variants of one event share them), from when it does.
	a := perf.CountKey(perf.Attr{Type: e.Attr.Type, Config: e.Attr.Config, Flags: e.Attr.Flags})
	w := &watched{name: s.names.Names([]perf.Attr{a})[0]}
	for _, p := range perf.LevelParts(a) {
		k := copyKey{e.Pid, e.CPU, p}
		cp := c.copies[k]
		if cp == nil {
			o := p
			o.Flags |= perfabi.FlagPinned | e.Attr.Flags&perfabi.FlagInherit
			if e.Attr.Flags&perfabi.FlagEnableOnExec != 0 {
				o.Flags |= perfabi.FlagDisabled | perfabi.FlagEnableOnExec
			}
			o.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
			var err error
			if cp, err = perf.Open(o, int(e.Pid), int(e.CPU), nil); err != nil {
				s.logf("truth: %s (client %d handle %d): open a pinned copy: %v", w.name, e.Client, e.Handle, err)
				return
			}
			c.copies[k] = cp
		}
		w.parts = append(w.parts, cp)
	}
	c.events[e.Handle] = w
	s.logf("truth: %s (client %d handle %d): %d pinned copies", w.name, e.Client, e.Handle, len(w.parts))
}

// Sync makes every read of an event with truth copies a synchronous refresh: a row per
// read.
func (s *Stage) Sync(e sidecar.Event) bool {
	if c := s.client(e.Client, false); c != nil {
		c.mu.Lock()
		w := c.events[e.Handle]
		c.mu.Unlock()
		if w != nil {
			return true
		}
	}
	if sy, ok := s.Inner.(sidecar.Syncer); ok {
		return sy.Sync(e)
	}
	return false
}

// Pace is the inner stage's.
func (s *Stage) Pace(client int) time.Duration {
	if p, ok := s.Inner.(sidecar.Pacer); ok {
		return p.Pace(client)
	}
	return 0
}

// Unregistered forgets the event (its copies stay open with the client's) and tells
// the inner stage.
func (s *Stage) Unregistered(e sidecar.Event) {
	if c := s.client(e.Client, false); c != nil {
		c.mu.Lock()
		delete(c.events, e.Handle)
		c.mu.Unlock()
	}
	if u, ok := s.Inner.(sidecar.Unregisterer); ok {
		u.Unregistered(e)
	}
}

// Forget closes the client's copies and tells the inner stage.
func (s *Stage) Forget(client int) {
	s.mu.Lock()
	c := s.clients[client]
	delete(s.clients, client)
	s.mu.Unlock()
	if c != nil {
		c.close()
	}
	if f, ok := s.Inner.(sidecar.Forgetter); ok {
		f.Forget(client)
	}
}

// Close flushes the rows, closes the writer and every copy.
func (s *Stage) Close() error {
	s.mu.Lock()
	all := s.clients
	s.clients = map[int]*client{}
	s.mu.Unlock()
	for _, c := range all {
		c.close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.w.Flush()
	if s.closer != nil {
		if cerr := s.closer.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("write truth rows: %w", err)
	}
	return nil
}

// close closes the client's copies.
func (c *client) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.copies {
		p.Close()
		delete(c.copies, k)
	}
	clear(c.events)
}

func (s *Stage) logf(format string, a ...any) {
	if s.Logf != nil {
		s.Logf(format, a...)
	}
}
