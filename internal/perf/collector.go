package perf

import (
	"errors"
	"fmt"
	"time"

	"github.com/bayesperf/bayesperf/perfabi"
	"golang.org/x/sys/unix"
)

// ReadCollector is the read(2) Collector: at every slice it reads each event's raw triple,
// with one read per group when a leader was opened with FormatGroup and its members follow
// it in the list (then members report the leader's times, which is what the kernel keeps
// for a group scheduled as a unit). It is not safe for concurrent use.
type ReadCollector struct {
	events   []*Event
	interval time.Duration
	next     time.Time
	buf      []byte
	rd       Reading
	plan     []readStep
	stepOf   []int // per event: its read in plan
	seen     []int // scratch for Peek: the Peek in which a read was last made
	peeks    int
	closeEvs bool
}

var _ Collector = (*ReadCollector)(nil)

type readStep struct {
	ev    *Event
	first int // index in events of the first value
	n     int // values this read returns
}

// NewReadCollector reads events every interval (0: Next reads at once, the caller paces).
// With own set, Close closes the events too.
func NewReadCollector(events []*Event, interval time.Duration, own bool) (*ReadCollector, error) {
	c := &ReadCollector{events: events, interval: interval, closeEvs: own}
	maxN := 1
	for i := 0; i < len(events); {
		e := events[i]
		rf := e.Attr.ReadFormat
		if rf&(perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning) != perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning {
			return nil, fmt.Errorf("new read collector: event %d (%s) lacks the enabled/running read formats", i, e.Name)
		}
		n := 1
		if rf&perfabi.FormatGroup != 0 {
			if e.leader != nil {
				return nil, fmt.Errorf("new read collector: event %d (%s) has perfabi.FormatGroup but is not a group leader", i, e.Name)
			}
			n = 1 + len(e.members)
			for k, m := range e.members {
				if i+1+k >= len(events) || events[i+1+k] != m {
					return nil, fmt.Errorf("new read collector: members of group %s must follow their leader in the list", e.Name)
				}
			}
		}
		for range n {
			c.stepOf = append(c.stepOf, len(c.plan))
		}
		c.plan = append(c.plan, readStep{ev: e, first: i, n: n})
		maxN = max(maxN, n)
		i += n
	}
	c.buf = make([]byte, perfabi.ReadSize(perfabi.FormatTotalTimeEnabled|perfabi.FormatTotalTimeRunning|perfabi.FormatGroup|perfabi.FormatID|perfabi.FormatLost, maxN))
	c.rd.Values = make([]Value, 0, maxN)
	c.seen = make([]int, len(c.plan))
	return c, nil
}

// Name is "read".
func (c *ReadCollector) Name() string { return "read" }

// Next waits for the next slice boundary (when an interval was given) and reads every
// event. An event whose target has exited still reads its final values.
func (c *ReadCollector) Next() (Snapshot, error) {
	if c.interval > 0 {
		now := time.Now()
		c.next = c.boundary(now)
		if d := c.next.Sub(now); d > 0 {
			time.Sleep(d)
		} else if -d > c.interval {
			c.next = now // fell behind by a whole slice: do not burst to catch up
		}
	}
	s := Snapshot{Counts: make([]Count, len(c.events))}
	if err := c.ReadAll(s.Counts); err != nil {
		return Snapshot{}, err
	}
	s.TimeNs = MonotonicNs()
	return s, nil
}

// boundary is the end of the current slice.
func (c *ReadCollector) boundary(now time.Time) time.Time {
	if c.next.IsZero() {
		c.next = now
	}
	return c.next.Add(c.interval)
}

// Wait sleeps until the current slice ends (at once without an interval).
func (c *ReadCollector) Wait() error {
	if c.interval > 0 {
		now := time.Now()
		if d := c.boundary(now).Sub(now); d > 0 {
			time.Sleep(d)
		}
	}
	return nil
}

// Peek reads the events listed now, one read per group they belong to.
func (c *ReadCollector) Peek(events []int, out []Count) error {
	if len(out) < len(events) {
		return errors.New("peek: destination too short")
	}
	c.peeks++
	for k, i := range events {
		if i < 0 || i >= len(c.events) {
			return fmt.Errorf("peek: event %d out of range", i)
		}
		p := c.stepOf[i]
		if c.seen[p] == c.peeks {
			continue // filled in when its group was read
		}
		if err := c.read(c.plan[p]); err != nil {
			return err
		}
		c.seen[p] = c.peeks
		st := c.plan[p]
		for kk := k; kk < len(events); kk++ {
			if j := events[kk]; j >= 0 && j < len(c.events) && c.stepOf[j] == p {
				out[kk] = Count{Value: c.rd.Values[j-st.first].Value, Enabled: c.rd.Enabled, Running: c.rd.Running}
			}
		}
	}
	return nil
}

// SetEnabled enables or disables event i at once (PERF_EVENT_IOC_ENABLE/DISABLE).
func (c *ReadCollector) SetEnabled(i int, on bool) error {
	if i < 0 || i >= len(c.events) {
		return fmt.Errorf("set enabled: event %d out of range", i)
	}
	if on {
		return c.events[i].Enable(false)
	}
	return c.events[i].Disable(false)
}

// read reads one step of the plan into c.rd.
func (c *ReadCollector) read(st readStep) error {
	if err := st.ev.ReadInto(c.buf, &c.rd); err != nil {
		return err
	}
	if len(c.rd.Values) != st.n {
		return fmt.Errorf("read perf group %s: %d values, want %d", st.ev.Name, len(c.rd.Values), st.n)
	}
	return nil
}

// ReadAll reads every event's cumulative triple into dst (len(dst) == number of events)
// without allocating.
func (c *ReadCollector) ReadAll(dst []Count) error {
	if len(dst) != len(c.events) {
		return errors.New("read all: destination has the wrong length")
	}
	for _, st := range c.plan {
		if err := c.read(st); err != nil {
			return err
		}
		for k, v := range c.rd.Values {
			dst[st.first+k] = Count{Value: v.Value, Enabled: c.rd.Enabled, Running: c.rd.Running}
		}
	}
	return nil
}

// Close closes the events when the collector owns them.
func (c *ReadCollector) Close() error {
	if !c.closeEvs {
		return nil
	}
	var first error
	for _, e := range c.events {
		if e.fd >= 0 {
			if err := e.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// MonotonicNs is CLOCK_MONOTONIC in ns, the clock of Snapshot.TimeNs.
func MonotonicNs() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // cannot fail for CLOCK_MONOTONIC
	return ts.Nano()
}
