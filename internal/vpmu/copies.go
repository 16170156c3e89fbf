package vpmu

import (
	"errors"
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
)

// copies is the read(2) collector of a PMU opened without Config.Snapshots: a
// perf.Collector over the events Open opened, reporting them in bpfIndex order (the
// clock, with Truth each event's truth, then each view's copy of each event), as a
// snapshotting collector does, so that the PMU steps the same way over either.
//
// Next reads at once (the Runner paces it) and is the slice boundary; SetEnabled called
// right after it applies to the slice that has just begun, as the contract asks:
//
//   - a derived view copy (software events and tracepoints, see derivable) is no kernel
//     event: its count advances by what the event's always-on copy counts while the view
//     has it on, switched by bookkeeping alone, atomically at the boundary;
//   - a view copy of its own (hardware events) is switched by ioctl. One switched off is
//     read again once disabled, and what it counted since the boundary is left out of
//     its count (off), so that nothing it counts after the boundary lands in a slice in
//     which its view had it off.
//
// A truth is the sum of the event's always-on copies (see truthParts). Each copy is read
// once per Next or Peek, right before the view copies of its event, so that an event's
// truth and views share their boundary. A Next that finds the clock where the last one
// left it (the target has not run since) reads nothing else: nothing can have counted.
// Counts returned by Next are reused by the next call. Not safe for concurrent use.
type copies struct {
	clock   *perf.Event   // dummy, always on: virtual time_enabled
	events  []*perf.Event // the always-on copies, one per distinct derived event or truth part
	copyOf  []int         // per event: its always-on copy when derived, else -1
	truthOf [][]int       // per event: the copies its truth adds up (nil without Truth)
	derived []bool        // per event: its view copies are derived from copyOf
	views   [][]*perf.Event
	truth   bool

	on     [][]bool   // per view and event: switched on (SetEnabled)
	gated  [][]uint64 // derived view copies: count so far
	base   []uint64   // per always-on copy: its value at the last Next
	raw    [][]uint64 // own view copies: last value read
	atNext [][]uint64 // own view copies: value read at the last Next
	off    [][]uint64 // own view copies: counted while switched off, left out

	vals    []uint64 // per always-on copy: value in the current round
	readAt  []int    // per always-on copy: round of vals
	round   int
	lastClk perf.Count   // the clock at the last Next
	snap    []perf.Count // Next's counts, reused
	srd     perf.Reading
	sbuf    [24]byte
}

var _ perf.Collector = (*copies)(nil)

// newCopies returns an empty collector for nev events in nviews views; Open fills in
// the events as it opens them.
func newCopies(nev, nviews int, truth bool) *copies {
	c := &copies{truth: truth, copyOf: make([]int, nev), truthOf: make([][]int, nev), derived: make([]bool, nev)}
	for range nviews {
		c.views = append(c.views, make([]*perf.Event, nev))
		c.on = append(c.on, make([]bool, nev))
		c.gated = append(c.gated, make([]uint64, nev))
		c.raw = append(c.raw, make([]uint64, nev))
		c.atNext = append(c.atNext, make([]uint64, nev))
		c.off = append(c.off, make([]uint64, nev))
	}
	return c
}

// opened sizes the per-copy state once every event is open.
func (c *copies) opened() {
	c.base = make([]uint64, len(c.events))
	c.vals = make([]uint64, len(c.events))
	c.readAt = make([]int, len(c.events))
}

// Name is "read".
func (c *copies) Name() string { return "read" }

// size is the number of events the collector reports.
func (c *copies) size() int {
	n := 1 + len(c.views)*len(c.derived)
	if c.truth {
		n += len(c.derived)
	}
	return n
}

// index is the inverse of bpfIndex: -1 for the clock, the event of a truth (view -1),
// or the view and event of a view copy.
func (c *copies) index(k int) (view, i int, err error) {
	nev := len(c.derived)
	switch {
	case k == 0:
		return -1, -1, nil
	case k < 0 || k >= c.size():
		return 0, 0, fmt.Errorf("event %d out of range [0,%d)", k, c.size())
	case c.truth && k <= nev:
		return -1, k - 1, nil
	}
	k--
	if c.truth {
		k -= nev
	}
	return k / nev, k % nev, nil
}

// Next reads every copy now: the boundary of the slice.
func (c *copies) Next() (perf.Snapshot, error) {
	clk, err := c.readOne(c.clock)
	if err != nil {
		return perf.Snapshot{}, err
	}
	if c.snap == nil {
		c.snap = make([]perf.Count, c.size())
	} else if clk.Enabled == c.lastClk.Enabled {
		// The target has not run since the last Next: every count is where it was.
		return perf.Snapshot{TimeNs: perf.MonotonicNs(), Counts: c.snap}, nil
	}
	c.lastClk = clk
	c.snap[0] = clk
	c.round++
	nev := len(c.derived)
	for i := range nev {
		t, err := c.readTruth(i)
		if err != nil {
			return perf.Snapshot{}, err
		}
		if c.truth {
			c.snap[1+i] = perf.Count{Value: t}
		}
		for v := range c.views {
			if !c.derived[i] {
				if c.on[v][i] {
					if err := c.readView(v, i); err != nil {
						return perf.Snapshot{}, err
					}
					c.atNext[v][i] = c.raw[v][i]
				}
				c.snap[c.at(v, i)] = perf.Count{Value: c.raw[v][i] - c.off[v][i]}
				continue
			}
			if k := c.copyOf[i]; c.on[v][i] {
				c.gated[v][i] += pipeline.Sub(c.vals[k], c.base[k])
			}
			c.snap[c.at(v, i)] = perf.Count{Value: c.gated[v][i]}
		}
	}
	for k := range c.events {
		if c.readAt[k] == c.round {
			c.base[k] = c.vals[k]
		}
	}
	return perf.Snapshot{TimeNs: perf.MonotonicNs(), Counts: c.snap}, nil
}

// Wait returns at once: Next never blocks.
func (c *copies) Wait() error { return nil }

// Peek reads the listed copies now, without ending the slice.
func (c *copies) Peek(events []int, out []perf.Count) error {
	if len(out) < len(events) {
		return errors.New("peek: destination too short")
	}
	c.round++
	for n, k := range events {
		v, i, err := c.index(k)
		if err != nil {
			return fmt.Errorf("peek: %w", err)
		}
		switch {
		case i < 0:
			if out[n], err = c.readOne(c.clock); err != nil {
				return err
			}
		case v < 0:
			t, err := c.readTruth(i)
			if err != nil {
				return err
			}
			out[n] = perf.Count{Value: t}
		default:
			if c.derived[i] {
				if _, err := c.readTruth(i); err != nil {
					return err
				}
			} else if c.on[v][i] {
				if err := c.readView(v, i); err != nil {
					return err
				}
			}
			out[n] = c.view(v, i)
		}
	}
	return nil
}

// view is view v's count of event i as of Peek's reads: a derived copy's count includes
// what its always-on copy counted since the last Next while on.
func (c *copies) view(v, i int) perf.Count {
	if !c.derived[i] {
		return perf.Count{Value: c.raw[v][i] - c.off[v][i]}
	}
	g := c.gated[v][i]
	if k := c.copyOf[i]; c.on[v][i] && c.readAt[k] == c.round {
		g += pipeline.Sub(c.vals[k], c.base[k])
	}
	return perf.Count{Value: g}
}

// SetEnabled switches view copy k (a bpfIndex) on or off from the last Next on.
func (c *copies) SetEnabled(k int, on bool) error {
	v, i, err := c.index(k)
	if err == nil && v < 0 {
		err = fmt.Errorf("event %d is always on", k)
	}
	if err != nil {
		return fmt.Errorf("set enabled: %w", err)
	}
	if c.on[v][i] == on {
		return nil // the first configuration of copies opened with enable_on_exec
	}
	if !c.derived[i] {
		e := c.views[v][i]
		if on {
			if err := e.Enable(false); err != nil {
				return err
			}
			c.atNext[v][i] = c.raw[v][i] // off until now, so this is its count at the boundary
		} else {
			if err := e.Disable(false); err != nil {
				return err
			}
			// What it counted between the boundary and now belongs to no slice of this view.
			if err := c.readView(v, i); err != nil {
				return err
			}
			c.off[v][i] += pipeline.Sub(c.raw[v][i], c.atNext[v][i])
		}
	}
	c.on[v][i] = on
	return nil
}

// readTruth reads event i's always-on copies (each once per round) and returns the sum
// of its truth's (of its derived copy's without Truth; 0 for an event with neither).
func (c *copies) readTruth(i int) (uint64, error) {
	ks := c.truthOf[i]
	if len(ks) == 0 && c.copyOf[i] >= 0 {
		ks = c.copyOf[i : i+1]
	}
	var t uint64
	for _, k := range ks {
		if c.readAt[k] != c.round {
			tc, err := c.readOne(c.events[k])
			if err != nil {
				return 0, err
			}
			c.vals[k], c.readAt[k] = tc.Value, c.round
		}
		t += c.vals[k]
	}
	return t, nil
}

// readView reads view v's own copy of event i into raw, never below what it read before.
func (c *copies) readView(v, i int) error {
	vc, err := c.readOne(c.views[v][i])
	if err != nil {
		return err
	}
	c.raw[v][i] = max(c.raw[v][i], vc.Value)
	return nil
}

// at is bpfIndex for the collector's layout.
func (c *copies) at(v, i int) int {
	base := 1
	if c.truth {
		base += len(c.derived)
	}
	return base + v*len(c.derived) + i
}

// readOne reads one non-group event without allocating.
func (c *copies) readOne(e *perf.Event) (perf.Count, error) {
	if err := e.ReadInto(c.sbuf[:], &c.srd); err != nil {
		return perf.Count{}, err
	}
	if len(c.srd.Values) != 1 {
		return perf.Count{}, fmt.Errorf("read %s: %d values, want 1", e.Name, len(c.srd.Values))
	}
	return perf.Count{Value: c.srd.Values[0].Value, Enabled: c.srd.Enabled, Running: c.srd.Running}, nil
}

// pins says whether some copies are pinned (hardware events: views and truth).
func (c *copies) pins() bool {
	for _, d := range c.derived {
		if !d {
			return true
		}
	}
	return false
}

// Close closes every event opened so far.
func (c *copies) Close() error {
	var first error
	cl := func(e *perf.Event) {
		if e != nil && e.FD() >= 0 {
			if err := e.Close(); err != nil && first == nil {
				first = err
			}
		}
	}
	for _, vs := range c.views {
		for _, e := range vs {
			cl(e)
		}
	}
	for _, e := range c.events {
		cl(e)
	}
	cl(c.clock)
	return first
}
