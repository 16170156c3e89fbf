package pmuevents

import (
	"sort"
	"strings"

	"github.com/bayesperf/bayesperf/inference/relation"
)

// armGeneric is the kernel's map of perf's generic hardware events onto Arm's
// architectural event numbers (armv8_pmuv3_perf_map in drivers/perf/arm_pmuv3.c, the
// same for every Armv8 core): `instructions` opens INST_RETIRED, `cpu-cycles` opens
// CPU_CYCLES, and so on. Names are perf.Namer's (the longest alias).
var armGeneric = []struct {
	generic string
	code    uint64
}{
	{"cpu-cycles", 0x11},
	{"instructions", 0x08},
	{"cache-references", 0x04},
	{"cache-misses", 0x03},
	{"branch-misses", 0x10},
	{"bus-cycles", 0x1d},
	{"stalled-cycles-frontend", 0x23},
	{"stalled-cycles-backend", 0x24},
}

// genericRelations equates, on an arm64 core, each of perf's generic hardware events
// with the vendor event of the same architectural number (instructions =
// inst_retired): the kernel opens the one as the other, so they count the same thing.
// Only events the table defines with that number are named.
func (t *Table) genericRelations() []relation.Relation {
	if !strings.HasPrefix(t.Dir, "arm64/") {
		return nil
	}
	byCode := t.CoreNames()
	var out []relation.Relation
	for _, g := range armGeneric {
		name, ok := byCode[g.code]
		if !ok {
			continue
		}
		out = append(out, mkRel(relation.Eq, ev(g.generic), ev(name), "generic@"+t.Dir,
			"the kernel opens the generic event as this Arm architectural event (armv8_pmuv3_perf_map)", 0))
	}
	return out
}

// CoreNames returns, for an arm64 table, the name of the core PMU's event for each
// event number (the config of a raw or armv8_pmuv3 event), so that events a tool opens
// by number are named as relations name them. Where several names share a number (an
// alias), the shortest, then the first in alphabetical order, stands for them all
// (aliasRelations ties the others to it). Other architectures encode more than a
// number in the config: nil.
func (t *Table) CoreNames() map[uint64]string {
	if !strings.HasPrefix(t.Dir, "arm64/") {
		return nil
	}
	evs := make([]*Event, 0, len(t.Events))
	for _, e := range t.Events {
		if e.HasCode && e.Unit == "" && e.UMask == 0 && e.Modifiers == "" {
			evs = append(evs, e)
		}
	}
	sort.Slice(evs, func(i, j int) bool {
		if len(evs[i].Name) != len(evs[j].Name) {
			return len(evs[i].Name) < len(evs[j].Name)
		}
		return evs[i].Name < evs[j].Name
	})
	out := map[uint64]string{}
	for _, e := range evs {
		if _, ok := out[e.Code]; !ok {
			out[e.Code] = e.Name
		}
	}
	return out
}
