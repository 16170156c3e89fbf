package vpmu

import (
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Virtual returns what a client reading event i through view v sees now: the copy's
// cumulative count, the virtual clock's enabled time, and as running time the enabled
// time of the slices in which the event was scheduled (including the current one so far).
func (p *PMU) Virtual(v, i int) (perf.Count, error) {
	if v < 0 || v >= len(p.on) || i < 0 || i >= len(p.cfg.Events) {
		return perf.Count{}, fmt.Errorf("read virtual count: view %d event %d out of range", v, i)
	}
	// The copy and the clock now, as the collector would report them if the slice ended
	// here: a tool reading between snapshots sees values of the instant it reads, as
	// with read(2). Never below what the last step reported.
	p.peekAt = [2]int{0, p.bpfIndex(v, i)}
	if err := p.bc.Peek(p.peekAt[:], p.peekTwo[:]); err != nil {
		return perf.Count{}, fmt.Errorf("read virtual count: %w", err)
	}
	c, clk := p.peekTwo[1], p.peekTwo[0]
	if c.Value < p.prevView[v][i].Value {
		c = p.prevView[v][i]
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
	if !p.cfg.Truth || i < 0 || i >= len(p.cfg.Events) {
		return 0, fmt.Errorf("read truth of event %d: no truth copy (Truth unset or out of range)", i)
	}
	p.peekAt[0] = 1 + i
	if err := p.bc.Peek(p.peekAt[:1], p.peekTwo[:1]); err != nil {
		return 0, fmt.Errorf("read truth of event %d: %w", i, err)
	}
	return max(p.peekTwo[0].Value, p.prevTruth[i]), nil
}
