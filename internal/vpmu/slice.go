package vpmu

import (
	"errors"
	"fmt"
	"io"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
)

// apply switches every view to configuration t: disable leaving events, enable entering.
func (p *PMU) apply(t int) error {
	for v, view := range p.cfg.Views {
		want := make([]bool, len(p.cfg.Events))
		for _, e := range view.Schedule.Counted(t) {
			if int(e) >= 0 && int(e) < len(want) {
				want[e] = true
			}
		}
		for i := range p.cfg.Events {
			if p.on[v][i] && !want[i] {
				if err := p.toggle(v, i, false); err != nil {
					return err
				}
				p.on[v][i] = false
			}
		}
		for i := range p.cfg.Events {
			if !p.on[v][i] && want[i] {
				if err := p.toggle(v, i, true); err != nil {
					return err
				}
				p.on[v][i] = true
			}
		}
	}
	return nil
}

// toggle switches view v's copy of event i, from the collector's last snapshot on.
func (p *PMU) toggle(v, i int, on bool) error {
	return p.bc.SetEnabled(p.bpfIndex(v, i), on)
}

// Step ends the current slice: it reads what counted during it, returns the per-view
// observations and truth, and moves every view to its next configuration. Events of an
// exited target can still be read, so a final Step after the target ends is valid.
//
// The step is the collector's next snapshot. The read(2) collector takes it at once; a
// snapshotting one (Config.Snapshots) makes Step block until its next snapshot (a slice
// in which the target did not run gives none, as the kernel does not rotate an inactive
// task context either) and return io.EOF once the target has exited and its final
// snapshot was returned. A snapshot that finds nothing new since the last step or Split
// (one that came between the end of the collector's slice and this step) is idle.
func (p *PMU) Step() (Step, error) { return p.stepSlice(false, true) }

// Split ends the current slice now without rotating: the next slice keeps the current
// configuration until the next Step. A reader uses it to have a slice boundary at the
// instant it reads, without changing which events count when. The copies are read
// through the collector's Peek, and its next snapshot ends the rest of the slice.
func (p *PMU) Split() (Step, error) { return p.stepSlice(false, false) }

// Flush is Step for the last slice of a run: it ends the slice even if the target did
// not run in it, so that nothing counted is left out.
func (p *PMU) Flush() (Step, error) { return p.stepSlice(true, true) }

// reading is what a step read of every copy at the slice boundary: the virtual clock's
// enabled time, each event's truth and each view's copy, all cumulative.
type reading struct {
	now   int64
	clock uint64
	truth func(i int) uint64
	view  func(v, i int) perf.Count
}

// stepSlice ends the current slice: it reads every copy through the collector (its next
// snapshot, or with rotate unset or force set its Peek), and turns what they counted
// since the last step into one inference.Slice per view and the truth deltas.
func (p *PMU) stepSlice(force, rotate bool) (Step, error) {
	if !p.started {
		return Step{}, errors.New("step virtual PMU: not started")
	}
	var (
		rd   reading
		idle bool
		err  error
	)
	if rotate && !force {
		rd, idle, err = p.nextSnapshot()
	} else {
		// Split or Flush: nothing rotates (a Flush ends the run): the collector applies
		// a switch to the slice since its last snapshot, which this one has already
		// partly reported.
		rotate = false
		rd, idle, err = p.peekSnapshot(force)
	}
	if err != nil {
		return Step{}, err
	}
	if idle {
		return Step{Index: p.step, Idle: true}, nil
	}
	st := Step{Index: p.step, WallNs: rd.now - p.lastWall}
	p.lastWall = rd.now
	// Running totals never decrease (pipeline.Advance): a delta is only counted once the
	// totals pass what was already reported. read(2) never goes back, and package bpf's
	// collector makes its next snapshot at least what a Peek (a split) read; a collector
	// that did not would have the difference counted once, later, rather than twice.
	enabled := pipeline.Advance(&p.prevClock, rd.clock)
	if p.cfg.Truth {
		st.Truth = make([]uint64, len(p.cfg.Events))
		for i := range st.Truth {
			st.Truth[i] = pipeline.Advance(&p.prevTruth[i], rd.truth(i))
		}
	}
	// The slice lasts the time the target ran in it (its virtual enabled time), the
	// time base of the kernel's own scaling; idle stretches were merged into it above.
	dur := float64(max(enabled, 1))
	for v := range p.on {
		copy(p.wasOn[v], p.on[v])
	}
	for v := range p.on {
		sl := inference.Slice{Index: p.step, Duration: dur, Readings: make([]inference.Reading, len(p.cfg.Events))}
		for i := range p.cfg.Events {
			r := inference.Reading{Event: inference.EventID(i), Enabled: enabled}
			if p.wasOn[v][i] {
				c := rd.view(v, i)
				if c.Value >= p.prevView[v][i].Value {
					r.Count = c.Value - p.prevView[v][i].Value
					p.prevView[v][i] = c
				}
				// Scheduled for the whole slice: on a real PMU its running time is the
				// slice's enabled time. The copy's own running time falls short by the
				// instants spent switching, an artefact of emulation, not multiplexing.
				r.Running = enabled
				p.running[v][i] += enabled
			}
			sl.Readings[i] = r
		}
		st.Views = append(st.Views, sl)
	}
	p.step++
	if rotate {
		p.pos++
	}
	if err := p.apply(p.pos); err != nil {
		return Step{}, err
	}
	return st, nil
}

// nextSnapshot waits for the snapshotting collector's next snapshot, which ends the slice.
func (p *PMU) nextSnapshot() (reading, bool, error) {
	if p.eof {
		return reading{}, false, io.EOF
	}
	snap, err := p.bc.Next()
	if errors.Is(err, io.EOF) {
		p.eof = true
		return reading{}, false, io.EOF
	}
	if err != nil {
		return reading{}, false, fmt.Errorf("step virtual PMU: %w", err)
	}
	if snap.Counts[0].Enabled <= p.prevClock {
		// A split (a tool's read, which took the Runner's lock after this slice ended
		// and before the step) already reported the slice, and the target has not run
		// since: idle, as a read(2) step after no run, rather than a slice of no time.
		// The views keep their configuration for the next slice, which the collector
		// gates with the events enabled now.
		return reading{}, true, nil
	}
	return p.fromCounts(snap.Counts), false, nil
}

// peekSnapshot reads every copy as it is now, through the collector without ending its
// slice, so that the next snapshot covers the rest of it.
func (p *PMU) peekSnapshot(force bool) (reading, bool, error) {
	counts, err := p.peekAll()
	if err != nil {
		return reading{}, false, fmt.Errorf("step virtual PMU: %w", err)
	}
	if counts[0].Enabled <= p.prevClock && !force {
		return reading{}, true, nil
	}
	return p.fromCounts(counts), false, nil
}

// fromCounts is the reading of a collector's counts, in bpfIndex order.
func (p *PMU) fromCounts(counts []perf.Count) reading {
	return reading{now: perf.MonotonicNs(), clock: counts[0].Enabled,
		truth: func(i int) uint64 { return counts[1+i].Value },
		view:  func(v, i int) perf.Count { return counts[p.bpfIndex(v, i)] }}
}

// peekAll reads every copy now through the collector.
func (p *PMU) peekAll() ([]perf.Count, error) {
	if len(p.peekIdx) == 0 {
		n := p.bpfIndex(len(p.cfg.Views), 0)
		p.peekIdx, p.peekBuf = make([]int, n), make([]perf.Count, n)
		for k := range p.peekIdx {
			p.peekIdx[k] = k
		}
	}
	if err := p.bc.Peek(p.peekIdx, p.peekBuf); err != nil {
		return nil, err
	}
	return p.peekBuf, nil
}

// bpfIndex is the position of a copy in the collector's event list: the clock, the
// truth copies, then each view's copies.
func (p *PMU) bpfIndex(view, i int) int {
	base := 1
	if p.cfg.Truth {
		base += len(p.cfg.Events)
	}
	return base + view*len(p.cfg.Events) + i
}
