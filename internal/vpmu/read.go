package vpmu

import (
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
)

// Virtual returns what a client reading event i through view v sees now: the copy's
// cumulative count, the virtual clock's enabled time, and as running time the enabled
// time of the slices in which the event was scheduled (including the current one so far).
func (p *PMU) Virtual(v, i int) (perf.Count, error) {
	if v < 0 || v >= len(p.views) || i < 0 || i >= len(p.cfg.Events) {
		return perf.Count{}, fmt.Errorf("read virtual count: view %d event %d out of range", v, i)
	}
	var c perf.Count
	var clk perf.Count
	if p.bc != nil {
		// The copy and the clock now, as the collector would report them if the slice
		// ended here: a tool reading between snapshots sees values of the instant it
		// reads, as with read(2). Never below what the last step reported.
		if err := p.bc.Peek([]int{0, p.bpfIndex(v, i)}, p.peekTwo[:]); err != nil {
			return perf.Count{}, fmt.Errorf("read virtual count: %w", err)
		}
		c, clk = p.peekTwo[1], p.peekTwo[0]
		if c.Value < p.prevView[v][i].Value {
			c = p.prevView[v][i]
		}
	} else if p.derived[i] {
		// The view's count at the last step, plus what the always-on copy has counted
		// since if the view schedules the event now.
		c = p.prevView[v][i]
		if p.on[v][i] {
			k := p.copyOf[i]
			tc, err := p.readOne(p.copies[k])
			if err != nil {
				return perf.Count{}, err
			}
			c.Value += pipeline.Sub(tc.Value, p.prevCopy[k])
		}
	} else {
		var err error
		if c, err = p.views[v][i].ReadCount(); err != nil {
			return perf.Count{}, err
		}
	}
	if p.bc == nil {
		var err error
		if clk, err = p.readOne(p.clock); err != nil {
			return perf.Count{}, err
		}
	}
	c.Enabled = max(clk.Enabled, p.prevClock)
	c.Running = p.running[v][i]
	if p.on[v][i] && clk.Enabled > p.prevClock {
		c.Running += clk.Enabled - p.prevClock
	}
	return c, nil
}

// TruthNow returns the truth copy of event i's cumulative count now (Truth must be set),
// for a reader that wants the truth at the instant it read Virtual.
func (p *PMU) TruthNow(i int) (uint64, error) {
	if p.bc != nil && p.cfg.Truth && i >= 0 && i < len(p.cfg.Events) {
		if err := p.bc.Peek([]int{1 + i}, p.peekTwo[:1]); err != nil {
			return 0, fmt.Errorf("read truth of event %d: %w", i, err)
		}
		return max(p.peekTwo[0].Value, p.prevTruth[i]), nil
	}
	if !p.cfg.Truth || p.bc != nil || i < 0 || i >= len(p.truthOf) || len(p.truthOf[i]) == 0 {
		return 0, fmt.Errorf("read truth of event %d: no truth copy (Truth unset or out of range)", i)
	}
	var v uint64
	for _, k := range p.truthOf[i] {
		c, err := p.readOne(p.copies[k])
		if err != nil {
			return 0, err
		}
		v += c.Value
	}
	return v, nil
}

// readOne reads one non-group event without allocating.
func (p *PMU) readOne(e *perf.Event) (perf.Count, error) {
	if err := e.ReadInto(p.sbuf[:], &p.srd); err != nil {
		return perf.Count{}, err
	}
	if len(p.srd.Values) != 1 {
		return perf.Count{}, fmt.Errorf("read %s: %d values, want 1", e.Name, len(p.srd.Values))
	}
	return perf.Count{Value: p.srd.Values[0].Value, Enabled: p.srd.Enabled, Running: p.srd.Running}, nil
}
