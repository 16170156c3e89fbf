package schedule

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bayesperf/bayesperf/inference"
)

// EventID is the run-local index of an event (see inference.EventID).
type EventID = inference.EventID

// Spec describes the events of a run and the counters they compete for.
type Spec struct {
	// Events is the number of events in the run; they are EventIDs 0..Events-1, in the
	// order they were created (perf's command-line order, a trace's column order).
	Events int
	// Counters is the number of programmable counters (the budget N).
	Counters int
	// Fixed lists the events that sit on fixed counters: they count in every slice and
	// use no programmable counter.
	Fixed []EventID
	// Allowed restricts an event to some programmable counters: bit i set means counter i
	// may hold it. Events absent from the map may use any counter.
	Allowed map[EventID]uint64
	// Groups lists user groups ({a,b} in perf syntax) that must be counted together or
	// not at all. Events in no group are singleton groups. A group's leader is its
	// first member; groups are ordered by their leader's EventID, as the kernel orders
	// flexible groups by creation.
	Groups [][]EventID
	// Valid, when set, is asked whether a configuration (programmable events only) can
	// be programmed, e.g. by trying it on the kernel. It must be consistent: asking twice
	// about the same set gives the same answer.
	Valid func(config []EventID) bool
	// KeepUnfit keeps a group that can never be counted (more programmable members than
	// Counters, or no valid assignment) instead of failing: it is never counted, as on a
	// real PMU, where the kernel tries it in its turn, fails, and schedules no further
	// group in that slice (Kernel reproduces that); the overlap schedule leaves it out.
	// Such groups' events appear in no configuration (see Never).
	KeepUnfit bool
}

// Never returns the events that are neither fixed nor in any configuration of the
// schedule: counted in no slice (with Spec.KeepUnfit, the members of unfit groups).
func (s *Schedule) Never(events int) []EventID {
	seen := make([]bool, events)
	for _, e := range s.Fixed {
		if int(e) >= 0 && int(e) < events {
			seen[e] = true
		}
	}
	for _, c := range s.Configs {
		for _, e := range c {
			if int(e) >= 0 && int(e) < events {
				seen[e] = true
			}
		}
	}
	var out []EventID
	for e, ok := range seen {
		if !ok {
			out = append(out, EventID(e))
		}
	}
	return out
}

// Schedule is a cyclic list of configurations.
type Schedule struct {
	// Fixed events count in every slice.
	Fixed []EventID
	// Configs holds, per configuration, the events on programmable counters, in the
	// order they were placed.
	Configs [][]EventID
}

// Len is the number of configurations in one cycle.
func (s *Schedule) Len() int { return len(s.Configs) }

// At returns the programmable events counted in slice t (t >= 0). An empty schedule
// counts nothing.
func (s *Schedule) At(t int) []EventID {
	if len(s.Configs) == 0 || t < 0 {
		return nil
	}
	return s.Configs[t%len(s.Configs)]
}

// Rotated returns the schedule started k configurations into its cycle: its slice t
// counts what s counts in slice t+k. Where a run starts in the cycle is arbitrary;
// replaying every start shows how much a figure owes to that choice.
func (s *Schedule) Rotated(k int) *Schedule {
	r := &Schedule{Fixed: s.Fixed}
	if n := len(s.Configs); n > 0 {
		k = ((k % n) + n) % n
		r.Configs = append(slices.Clone(s.Configs[k:]), s.Configs[:k]...)
	}
	return r
}

// Counted returns every event counted in slice t: the fixed events and At(t).
func (s *Schedule) Counted(t int) []EventID {
	out := make([]EventID, 0, len(s.Fixed)+len(s.At(t)))
	out = append(out, s.Fixed...)
	return append(out, s.At(t)...)
}

// Share returns, per event, the fraction of the configurations of one cycle in which
// it is counted (1 for fixed events).
func (s *Schedule) Share(events int) []float64 {
	share := make([]float64, events)
	if len(s.Configs) == 0 {
		return share
	}
	for _, c := range s.Configs {
		for _, e := range c {
			if int(e) >= 0 && int(e) < events {
				share[e]++
			}
		}
	}
	for i := range share {
		share[i] /= float64(len(s.Configs))
	}
	for _, e := range s.Fixed {
		if int(e) >= 0 && int(e) < events {
			share[e] = 1
		}
	}
	return share
}

func (s *Schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fixed %v;", s.Fixed)
	for i, c := range s.Configs {
		fmt.Fprintf(&b, " C%d=%v", i, c)
	}
	return b.String()
}

// group is a unit of scheduling: a user group or a singleton, split into the members
// that need a programmable counter and those that sit on fixed counters.
type group struct {
	leader  EventID
	members []EventID // programmable members, in order
	fixed   bool      // every member is fixed: the group always counts
	unfit   bool      // can never be counted (kept with Spec.KeepUnfit)
}

// groups validates the spec and returns its flexible groups ordered by leader.
func (sp *Spec) groups() ([]group, error) {
	if sp.Events < 0 {
		return nil, fmt.Errorf("check spec: negative event count %d", sp.Events)
	}
	if sp.Counters < 0 {
		return nil, fmt.Errorf("check spec: negative counter budget %d", sp.Counters)
	}
	fixed := make([]bool, sp.Events)
	for _, e := range sp.Fixed {
		if int(e) < 0 || int(e) >= sp.Events {
			return nil, fmt.Errorf("check spec: fixed event %d out of range [0,%d)", e, sp.Events)
		}
		fixed[e] = true
	}
	owner := make([]int, sp.Events)
	for i := range owner {
		owner[i] = -1
	}
	var gs []group
	for gi, g := range sp.Groups {
		if len(g) == 0 {
			continue
		}
		gr := group{leader: g[0]}
		for _, e := range g {
			if int(e) < 0 || int(e) >= sp.Events {
				return nil, fmt.Errorf("check spec: group %d: event %d out of range [0,%d)", gi, e, sp.Events)
			}
			if owner[e] >= 0 {
				return nil, fmt.Errorf("check spec: event %d is in groups %d and %d", e, owner[e], gi)
			}
			owner[e] = gi
			if !fixed[e] {
				gr.members = append(gr.members, e)
			}
		}
		gs = append(gs, gr)
	}
	for e := range sp.Events {
		if owner[e] < 0 {
			g := group{leader: EventID(e)}
			if !fixed[e] {
				g.members = []EventID{EventID(e)}
			}
			gs = append(gs, g)
		}
	}
	for i := range gs {
		gs[i].fixed = len(gs[i].members) == 0
	}
	slices.SortStableFunc(gs, func(a, b group) int { return int(a.leader) - int(b.leader) })
	for i, g := range gs {
		var err error
		if len(g.members) > sp.Counters {
			err = fmt.Errorf("check spec: group led by event %d needs %d counters, only %d exist", g.leader, len(g.members), sp.Counters)
		} else if !sp.fits(nil, g.members) {
			err = fmt.Errorf("check spec: group led by event %d %v can never be counted: no valid counter assignment", g.leader, g.members)
		}
		if err != nil && !sp.KeepUnfit {
			return nil, err
		}
		gs[i].unfit = err != nil
	}
	return gs, nil
}

// fits reports whether the events placed plus add can be programmed together: at most
// Counters of them, a counter for each allowed by its mask (a bipartite matching, as the
// kernel's x86 event scheduler finds one), and the validity hook agrees.
func (sp *Spec) fits(placed, add []EventID) bool {
	all := make([]EventID, 0, len(placed)+len(add))
	all = append(append(all, placed...), add...)
	if len(all) > sp.Counters {
		return false
	}
	if !sp.assignable(all) {
		return false
	}
	if sp.Valid != nil && !sp.Valid(slices.Clone(all)) {
		return false
	}
	return true
}

func (sp *Spec) mask(e EventID) uint64 {
	all := uint64(1)<<uint(min(sp.Counters, 64)) - 1
	if sp.Counters >= 64 {
		all = ^uint64(0)
	}
	if m, ok := sp.Allowed[e]; ok {
		return m & all
	}
	return all
}

// assignable finds a matching of events to counters respecting the masks (Kuhn's
// augmenting paths; configurations are tiny).
func (sp *Spec) assignable(evs []EventID) bool {
	if len(sp.Allowed) == 0 {
		return len(evs) <= sp.Counters
	}
	n := min(sp.Counters, 64)
	holder := make([]int, n) // counter -> index in evs, -1 if free
	for i := range holder {
		holder[i] = -1
	}
	var try func(i int, seen []bool) bool
	try = func(i int, seen []bool) bool {
		m := sp.mask(evs[i])
		for c := range n {
			if m&(1<<uint(c)) == 0 || seen[c] {
				continue
			}
			seen[c] = true
			if holder[c] < 0 || try(holder[c], seen) {
				holder[c] = i
				return true
			}
		}
		return false
	}
	for i := range evs {
		if !try(i, make([]bool, n)) {
			return false
		}
	}
	return true
}

func (sp *Spec) fixedEvents() []EventID {
	out := slices.Clone(sp.Fixed)
	slices.Sort(out)
	return slices.Compact(out)
}
