package schedule

import (
	"fmt"
	"slices"

	"github.com/bayesperf/bayesperf/inference/graph"
)

// OverlapOptions tune Overlap.
type OverlapOptions struct {
	// Carry is how many groups each configuration keeps from the previous one (the
	// design notes' overlapSize): consecutive configurations then share counted events.
	// 0 (the default) or a negative value means none: the schedule is a partition of
	// the events into configurations, each event counted once per cycle (plus the
	// counters of the last configuration that no new event needs), its readings spread
	// evenly over time, and the cycle as short as the budget allows. Consecutive
	// configurations are still linked where the relations link them (their Markov
	// blankets intersect: the fill below spreads each configuration over the graph), and
	// fixed events, counted in every slice, link them all.
	//
	// A carried group takes a counter from the events waiting their turn: with 4
	// counters the cycle is a third longer. Measured with the model, no carry was
	// better or level at 2, 4 and 6 counters and carry 1 ahead only at 8, mostly by
	// making raw_syscalls:sys_enter exact (docs/model.md has the figures).
	// TestOverlapDefaultAccuracy checks the live traces at 4 counters.
	Carry int
	// Related, when set, fills a configuration preferably with events inside the
	// current configuration's Markov blanket (co-counting the members of a relation, so
	// that an identity can be solved for its missing member). By default the greedy of
	// the design notes prefers events outside the blanket, which maximises the number
	// of events each configuration informs, and counts the two sides of an identity
	// (page-faults and minor-faults, context-switches and sched:sched_switch) in
	// different slices, so that together they are read twice per cycle. Measured as
	// for Carry, Related is lower or level everywhere (docs/model.md).
	Related bool
}

// Overlap returns BayesPerf's overlap-aware schedule (paper section 4.1), built with the
// greedy grouping of the design notes (002):
//
//  1. The first configuration is filled with groups whose events are not yet in its
//     Markov blanket (ties: the group with the most neighbours, then the lowest leader).
//  2. Each next configuration keeps Carry groups of the previous one (none by default;
//     those counted least so far, so the carried event rotates rather than one hub
//     holding a counter for good; ties: the most neighbours in the graph), then is
//     filled the same way with groups not yet scheduled; once every group has been
//     scheduled, leftover counters take the groups counted least so far, so that no
//     counter idles.
//  3. This repeats until every group has been scheduled once. With Carry > 0 the cycle
//     is closed by making the last configuration share a group with the first (adding
//     or swapping one in, or appending one bridge configuration); if the counter
//     constraints allow none of these, the chain is broken there and restarts, as the
//     paper allows.
//
// With Carry > 0, consecutive configurations share at least one group whenever the
// budget and constraints leave room for it. By default they share none: they are
// linked through the relations (the paper's condition, intersecting Markov blankets)
// and through the fixed events, and each event is counted once per cycle (see Carry).
// User groups stay whole, fixed events are in Schedule.Fixed, every configuration
// satisfies the counter masks and the validity hook. A nil graph means no relations:
// the overlap is then only by carried events. When all groups fit at once, the schedule
// is that single configuration.
func Overlap(sp Spec, g *graph.Graph, opt OverlapOptions) (*Schedule, error) {
	gs, err := sp.groups()
	if err != nil {
		return nil, err
	}
	if g != nil && g.Events() != sp.Events {
		return nil, fmt.Errorf("build overlap schedule: graph has %d events, spec %d", g.Events(), sp.Events)
	}
	s := &Schedule{Fixed: sp.fixedEvents()}
	carry := max(opt.Carry, 0)
	var units []group
	for _, gr := range gs {
		if !gr.fixed && !gr.unfit {
			units = append(units, gr)
		}
	}
	if len(units) == 0 {
		return s, nil
	}
	// Everything at once, if it fits: no multiplexing needed.
	var all []EventID
	for _, u := range units {
		all = append(all, u.members...)
	}
	if sp.fits(nil, all) {
		s.Configs = [][]EventID{all}
		return s, nil
	}
	o := &overlapper{sp: &sp, g: g, units: units, count: make([]int, len(units)), opt: opt}
	covered := make([]bool, len(units))
	left := len(units)
	// cover fills cfg with groups not yet covered and marks the ones it holds covered.
	cover := func(cfg []int) []int {
		cfg = o.fill(cfg, func(u int) bool { return !covered[u] })
		for _, u := range cfg {
			if !covered[u] {
				covered[u] = true
				left--
			}
		}
		return cfg
	}
	var prev []int
	for left > 0 {
		var cfg []int
		if prev != nil {
			cfg = o.carryFrom(prev, carry, covered)
		}
		before := left
		cfg = cover(cfg)
		if left == before {
			// The carried groups leave no room for any new group: start over without carry.
			cfg = cover(nil)
			if left == before {
				return nil, fmt.Errorf("build overlap schedule: no valid configuration holds group %v", o.firstUncovered(covered))
			}
		}
		if left == 0 && carry > 0 {
			cfg = o.closeCycle(cfg, prev, o.cfgs)
		}
		cfg = o.fill(cfg, func(int) bool { return true })
		o.add(cfg)
		prev = cfg
	}
	if n := len(o.cfgs); carry > 0 && n > 1 && !o.shares(o.cfgs[n-1], o.cfgs[0]) {
		if b := o.bridge(o.cfgs[n-1], o.cfgs[0]); b != nil {
			o.add(b)
		}
	}
	for _, c := range o.cfgs {
		var evs []EventID
		for _, u := range c {
			evs = append(evs, units[u].members...)
		}
		s.Configs = append(s.Configs, evs)
	}
	return s, nil
}

type overlapper struct {
	sp    *Spec
	g     *graph.Graph
	units []group
	count []int // appearances of each unit so far
	cfgs  [][]int
	opt   OverlapOptions
}

func (o *overlapper) add(cfg []int) {
	for _, u := range cfg {
		o.count[u]++
	}
	o.cfgs = append(o.cfgs, cfg)
}

func (o *overlapper) events(cfg []int) []EventID {
	var evs []EventID
	for _, u := range cfg {
		evs = append(evs, o.units[u].members...)
	}
	return evs
}

func (o *overlapper) fitsWith(cfg []int, u int) bool {
	if slices.Contains(cfg, u) {
		return false
	}
	return o.sp.fits(o.events(cfg), o.units[u].members)
}

// degree of a unit: the neighbours of its members in the graph.
func (o *overlapper) degree(u int) int {
	if o.g == nil {
		return 0
	}
	return len(o.g.Blanket(o.units[u].members))
}

// inBlanket reports whether any member of unit u is in the Markov blanket of cfg.
func (o *overlapper) inBlanket(cfg []int, u int) bool {
	if o.g == nil || len(cfg) == 0 {
		return false
	}
	b := o.g.Blanket(o.events(cfg))
	for _, e := range o.units[u].members {
		if _, ok := slices.BinarySearch(b, e); ok {
			return true
		}
	}
	return false
}

// fill adds eligible units to cfg while any fits, choosing each time by the greedy rule.
func (o *overlapper) fill(cfg []int, eligible func(int) bool) []int {
	for {
		best := -1
		var bestKey [4]int
		for u := range o.units {
			if !eligible(u) || !o.fitsWith(cfg, u) {
				continue
			}
			in := 0
			if o.inBlanket(cfg, u) != o.opt.Related {
				in = 1 // the less preferred side of the blanket
			}
			key := [4]int{in, o.count[u], -o.degree(u), u}
			if best < 0 || less(key, bestKey) {
				best, bestKey = u, key
			}
		}
		if best < 0 {
			return cfg
		}
		cfg = append(cfg, best)
	}
}

func less(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// carryFrom picks up to n units of prev to keep: the least counted first (so that the
// carried event rotates instead of one hub occupying a counter for good), then the
// best connected, and only as long as a not yet covered unit can still join them.
func (o *overlapper) carryFrom(prev []int, n int, covered []bool) []int {
	order := slices.Clone(prev)
	slices.SortStableFunc(order, func(a, b int) int {
		if d := o.count[a] - o.count[b]; d != 0 {
			return d
		}
		return o.degree(b) - o.degree(a)
	})
	var cfg []int
	for _, u := range order {
		if len(cfg) == n {
			break
		}
		if !o.fitsWith(cfg, u) {
			continue
		}
		try := append(slices.Clone(cfg), u)
		room := false
		for v := range o.units {
			if !covered[v] && o.fitsWith(try, v) {
				room = true
				break
			}
		}
		if room {
			cfg = try
		}
	}
	return cfg
}

func (o *overlapper) shares(a, b []int) bool {
	for _, u := range a {
		if slices.Contains(b, u) {
			return true
		}
	}
	return false
}

// closeCycle makes the last configuration share a unit with the first, by adding one of
// the first's units if one fits, else by swapping out a unit that is neither the only
// appearance of a group nor a link to the previous configuration. It returns cfg
// unchanged when neither works (a bridge configuration is then appended).
func (o *overlapper) closeCycle(cfg, prev []int, cfgs [][]int) []int {
	if len(cfgs) == 0 || o.shares(cfg, cfgs[0]) {
		return cfg
	}
	first := cfgs[0]
	for _, u := range first {
		if o.fitsWith(cfg, u) {
			return append(cfg, u)
		}
	}
	for i := len(cfg) - 1; i >= 0; i-- {
		if o.count[cfg[i]] == 0 || slices.Contains(prev, cfg[i]) {
			continue // the group's only appearance, or the link to the previous config
		}
		rest := slices.Delete(slices.Clone(cfg), i, i+1)
		for _, u := range first {
			if o.fitsWith(rest, u) {
				return append(rest, u)
			}
		}
	}
	return cfg
}

// bridge returns a configuration sharing a unit with both a and b, or nil; from a it
// takes the least counted unit that can be paired.
func (o *overlapper) bridge(a, b []int) []int {
	a = slices.Clone(a)
	slices.SortStableFunc(a, func(x, y int) int { return o.count[x] - o.count[y] })
	for _, x := range a {
		for _, y := range b {
			if x != y && o.fitsWith([]int{x}, y) {
				return o.fill([]int{x, y}, func(int) bool { return true })
			}
		}
	}
	return nil
}

func (o *overlapper) firstUncovered(covered []bool) []EventID {
	for u, c := range covered {
		if !c {
			return o.units[u].members
		}
	}
	return nil
}
