package relation

import (
	"sort"
	"strings"
)

// Relations that follow from how the events of a run were opened rather than from what
// they count: they hold on every PMU, so BindUniverse adds them for any run.
//
//   - Privilege splits. perf's u, k and h modifiers restrict an event to user, kernel or
//     hypervisor mode (naming any of them excludes the others). Events that differ only
//     in those levels count disjoint parts of one count, so an event counting several
//     levels is the sum of events counting one level each: instructions =
//     instructions:u + instructions:k. The hypervisor level is taken as empty unless the
//     run names it (an event whose modifiers include h): the kernel ignores exclude_hv on
//     x86, an arm64 kernel running at EL2 (VHE) filters EL2 with exclude_kernel, and a
//     guest's PMU does not see its host. Only a non-VHE arm64 host running KVM guests
//     counts its hypervisor in an unmodified event and not in :u or :k; there the
//     identity is off by the hypervisor's share, unless the run also counts :h.
//   - Repeats. An event opened twice (perf stat -e x,x) is named x and x#2 by the
//     sidecar's stages (perf.Namer): both count the same, x#2 = x.

// privilegeLevels are perf's privilege modifiers, in the order their names are written.
const privilegeLevels = "ukh"

// splitModifiers cuts an event name into its base, the privilege levels it counts
// ("" when it names none, that is all of them) and its other modifier letters (sorted),
// as perf reads "name:mods". ok is false for a name without modifiers of perf's.
func splitModifiers(name string) (base, levels, other string, ok bool) {
	s := modifierSuffix(name)
	if s == "" {
		return name, "", "", true
	}
	var lv, ot []byte
	for i := 1; i < len(s); i++ {
		c := s[i]
		if strings.IndexByte(privilegeLevels, c) >= 0 {
			if strings.IndexByte(string(lv), c) < 0 {
				lv = append(lv, c)
			}
		} else {
			ot = append(ot, c)
		}
	}
	sort.Slice(ot, func(i, j int) bool { return ot[i] < ot[j] })
	// Write the levels in perf's order so that :ku and :uk are one set.
	var lvs []byte
	for _, c := range []byte(privilegeLevels) {
		if strings.IndexByte(string(lv), c) >= 0 {
			lvs = append(lvs, c)
		}
	}
	return name[:len(name)-len(s)], string(lvs), string(ot), true
}

// runRelations returns the privilege splits and repeats among events (see above), each
// exact. Events are the run's names, in the run's spelling.
func runRelations(events []string) []Relation {
	type member struct {
		name   string
		levels string // the levels it counts, all of them spelled out
	}
	groups := map[string][]member{} // base + other modifiers → members
	hv := map[string]bool{}         // the group names the hypervisor level
	var keys []string
	var out []Relation
	have := make(map[string]bool, len(events))
	for _, e := range events {
		have[e] = true
	}
	for _, e := range events {
		if i := strings.LastIndexByte(e, '#'); i > 0 && have[e[:i]] && isDigits(e[i+1:]) {
			out = append(out, Relation{Op: Eq, LHS: Event{Name: e}, RHS: Event{Name: e[:i]},
				Source: "builtin", Text: e + " = " + e[:i], Note: "the same event opened twice"})
			continue
		}
		base, levels, other, _ := splitModifiers(e)
		k := base + "\x00" + other
		if _, seen := groups[k]; !seen {
			keys = append(keys, k)
		}
		if strings.Contains(levels, "h") {
			hv[k] = true
		}
		groups[k] = append(groups[k], member{name: e, levels: levels})
	}
	for _, k := range keys {
		all := "uk"
		if hv[k] {
			all = privilegeLevels
		}
		single := map[byte]string{}
		var ms []member
		for _, m := range groups[k] {
			lv := m.levels
			if lv == "" {
				lv = all
			}
			lv = strings.Map(func(r rune) rune {
				if strings.ContainsRune(all, r) {
					return r
				}
				return -1
			}, lv)
			if lv == "" {
				continue // counts only a level taken as empty
			}
			if len(lv) == 1 {
				if _, dup := single[lv[0]]; !dup {
					single[lv[0]] = m.name
				}
			}
			ms = append(ms, member{name: m.name, levels: lv})
		}
		first := map[string]string{} // level set → first event counting exactly it
		for _, m := range ms {
			if f, dup := first[m.levels]; dup {
				if f != m.name {
					out = append(out, Relation{Op: Eq, LHS: Event{Name: m.name}, RHS: Event{Name: f},
						Source: "builtin", Text: m.name + " = " + f, Note: "the same privilege levels"})
				}
				continue
			}
			first[m.levels] = m.name
			if len(m.levels) < 2 {
				continue
			}
			var terms []string
			for i := 0; i < len(m.levels); i++ {
				if s, ok := single[m.levels[i]]; ok {
					terms = append(terms, s)
				}
			}
			if len(terms) != len(m.levels) {
				continue
			}
			var rhs Expr = Event{Name: terms[0]}
			for _, s := range terms[1:] {
				rhs = Binary{Op: "+", L: rhs, R: Event{Name: s}}
			}
			out = append(out, Relation{Op: Eq, LHS: Event{Name: m.name}, RHS: rhs,
				Source: "builtin", Text: m.name + " = " + strings.Join(terms, " + "),
				Note: "privilege split: the levels are disjoint parts of one count"})
		}
	}
	return out
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
