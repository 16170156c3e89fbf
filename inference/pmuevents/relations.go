package pmuevents

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/bayesperf/bayesperf/inference/relation"
)

// Tolerances of derived relations (relative; see relation.Relation.Tol).
const (
	// TolSubEventSum: a parent whose unit mask is the disjoint union of its children's
	// counts the union of their events, which is their sum only when no event falls in
	// two children. Vendor JSON does not state that; for hit/miss, page-size, port and
	// request-type splits it holds, for loads+stores (a read-modify-write instruction is
	// both) it does not. The tolerance is a guess, not a measurement (no PMU here).
	TolSubEventSum = 0.02
	// TolFixedTwin: the fixed-counter event and its programmable twin count the same
	// thing; they differ by skid at enable/disable only.
	TolFixedTwin = 1e-3
	// TolMetricTree: Intel's top-down children partition their parent in the model's
	// intent, but the formulas are approximations below level 2. A guess, not measured.
	TolMetricTree = 0.05
)

// Relations derives every relation the table supports (see the package doc). env gives
// the host facts metric formulas need; metrics that need one env lacks are skipped and
// listed in skipped, with the reason.
func (t *Table) Relations(env Env) (rels []relation.Relation, skipped []string) {
	rels = append(rels, t.aliasRelations()...)
	rels = append(rels, t.subEventRelations()...)
	rels = append(rels, t.nameRelations()...)
	rels = append(rels, t.genericRelations()...)
	tree, sk := t.metricTreeRelations(env)
	rels = append(rels, tree...)
	return rels, sk
}

func mkRel(op relation.Op, lhs, rhs relation.Expr, source, note string, tol float64) relation.Relation {
	r := relation.Relation{Op: op, LHS: lhs, RHS: rhs, Source: source, Note: note, Tol: tol}
	r.Text = r.String()
	return r
}

func ev(name string) relation.Expr { return relation.Event{Name: name} }

func sumOf(xs []relation.Expr) relation.Expr {
	if len(xs) == 0 {
		return relation.Num{V: 0}
	}
	s := xs[0]
	for _, x := range xs[1:] {
		s = relation.Binary{Op: "+", L: s, R: x}
	}
	return s
}

// encKey is what makes two events count the same thing.
func encKey(e *Event) string {
	if !e.HasCode {
		if e.Fixed < 0 {
			return ""
		}
		return fmt.Sprintf("%s|fixed%d|%#x|%s", strings.ToLower(e.Unit), e.Fixed, e.UMask, e.Modifiers)
	}
	return fmt.Sprintf("%s|%#x|%#x|%s", strings.ToLower(e.Unit), e.Code, e.UMask, e.Modifiers)
}

// aliasRelations equates events with identical encodings (ICACHE_64B.IFTAG_STALL and
// ICACHE_TAG.STALLS): the hardware cannot tell them apart.
func (t *Table) aliasRelations() []relation.Relation {
	var out []relation.Relation
	for _, g := range groupBy(t.Events, encKey) {
		for _, e := range g[1:] {
			out = append(out, mkRel(relation.Eq, ev(g[0].Name), ev(e.Name), "alias@"+t.Dir,
				"same encoding: the hardware counts the same thing", 0))
		}
	}
	return out
}

// groupBy groups events by key, in the order each key first appears, events in their
// order; events whose key is "" are left out.
func groupBy(events []*Event, key func(*Event) string) [][]*Event {
	groups := map[string][]*Event{}
	var keys []string
	for _, e := range events {
		k := key(e)
		if k == "" {
			continue
		}
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], e)
	}
	out := make([][]*Event, len(keys))
	for i, k := range keys {
		out[i] = groups[k]
	}
	return out
}

// family groups events that differ only in their unit mask.
func family(e *Event) string {
	return fmt.Sprintf("%s|%#x|%s", strings.ToLower(e.Unit), e.Code, e.Modifiers)
}

// monotone reports whether adding unit-mask bits can only add events: not for inverted
// or edge-detected counting, where a wider filter changes what a "cycle" or "edge" is.
func monotone(e *Event) bool {
	return e.HasCode && e.Fixed < 0 && !strings.Contains(e.Modifiers, "Invert=") &&
		!strings.Contains(e.Modifiers, "EdgeDetect=")
}

// subEventRelations: within a family (same code and modifiers), an event whose unit
// mask is a proper subset of another's counts a subset of its events (unit-mask bits
// are filters that are OR-ed, or, in two-field masks such as L2_RQSTS, a product of
// filters: either way fewer bits select fewer events). Only the direct links of the
// subset order are emitted; the rest follow. And where a parent's mask is covered by
// children that share a common part and whose other bits are disjoint (L2_RQSTS.MISS
// 0x3f = DEMAND_DATA_RD_MISS 0x21 | RFO_MISS 0x22 | CODE_RD_MISS 0x24 | PF_MISS 0x38),
// or by single-bit children, the parent is the sum of the children.
func (t *Table) subEventRelations() []relation.Relation {
	seen := map[string]bool{}
	fams := groupBy(t.Events, func(e *Event) string {
		// One name per encoding: aliases are related separately.
		if !monotone(e) || e.UMask == 0 || seen[encKey(e)] {
			return ""
		}
		seen[encKey(e)] = true
		return family(e)
	})
	var out []relation.Relation
	for _, f := range fams {
		if enumerated(f) {
			continue
		}
		sort.Slice(f, func(i, j int) bool { return f[i].UMask < f[j].UMask })
		sub := func(a, b uint64) bool { return a != b && a&b == a }
		for _, p := range f {
			var children []*Event
			for _, c := range f {
				if sub(c.UMask, p.UMask) {
					children = append(children, c)
				}
			}
			// Direct links: no m with c ⊂ m ⊂ p.
			for _, c := range children {
				direct := true
				for _, m := range children {
					if sub(c.UMask, m.UMask) {
						direct = false
						break
					}
				}
				if direct {
					out = append(out, mkRel(relation.Le, ev(c.Name), ev(p.Name), "subevents:"+p.Name+"@"+t.Dir,
						fmt.Sprintf("unit mask %#x is a subset of %#x (same event code %#x)", c.UMask, p.UMask, p.Code), 0))
				}
			}
			// Sums only for events that count occurrences: with a counter mask the event
			// counts cycles in which the filtered occurrences reach the threshold, and the
			// cycles of two sub-filters can coincide.
			if strings.Contains(p.Modifiers, "CounterMask=") {
				continue
			}
			if overlapping[p.Name] {
				continue
			}
			if parts := decompose(p.UMask, atomsOf(children, f), f); parts != nil {
				terms := make([]relation.Expr, len(parts))
				masks := make([]string, len(parts))
				for i, c := range parts {
					terms[i] = ev(c.Name)
					masks[i] = fmt.Sprintf("%#x", c.UMask)
				}
				src := "subevents:" + p.Name + "@" + t.Dir
				out = append(out,
					mkRel(relation.Eq, ev(p.Name), sumOf(terms), src,
						fmt.Sprintf("unit mask %#x = %s with disjoint varying bits: the parent counts the union, equal to the sum when no event falls in two children", p.UMask, strings.Join(masks, " | ")),
						TolSubEventSum))
			}
		}
	}
	return out
}

// enumerated reports whether a family's unit mask holds enumerated values rather than
// filter bits: AMD's FpOpsRetiredByType numbers the operation types 1, 2, 3, ... in each
// 4-bit field (scalar_mul = 0x3 is not scalar_add 0x1 plus scalar_sub 0x2), and Zen 5's
// FpRetSseAvxOps numbers precisions in its high nibble (packed_single 0x60 is not
// bfloat16 0x20 plus scalar_single 0x40). The sign is two or more masks inside one
// nibble that are neither single bits nor the whole nibble; filter families have at most
// one union per nibble (FP_ARITH_INST_RETIRED.SCALAR 0x3, 8_FLOPS 0x60).
func enumerated(family []*Event) bool {
	perNibble := map[uint]int{}
	for _, e := range family {
		for shift := uint(0); shift < 64; shift += 4 {
			nib := uint64(0xf) << shift
			if e.UMask != 0 && e.UMask&^nib == 0 {
				v := e.UMask >> shift
				if bits.OnesCount64(v) > 1 && v != 0xf {
					perNibble[shift]++
				}
				break
			}
		}
	}
	for _, n := range perNibble {
		if n >= 2 {
			return true
		}
	}
	return false
}

// overlapping lists parents whose sub-events are known to share events, so that the
// parent is less than their sum: a read-modify-write instruction (add [mem], reg) is
// both a load and a store, counted once in MEM_INST_RETIRED.ANY and in both
// ALL_LOADS and ALL_STORES.
var overlapping = map[string]bool{"mem_inst_retired.any": true}

// atomsOf keeps the children whose mask is not the union of the masks of two or more
// other events of the family: L2_RQSTS.ALL_DEMAND_MISS (0x27 = 0x21|0x22|0x24) is not
// an atom. Decomposing only into atoms avoids parts that overlap (MISS 0x3f and
// ALL_DEMAND_REFERENCES 0xe7 both contain the demand misses, though their masks
// together make REFERENCES 0xff).
func atomsOf(children, family []*Event) []*Event {
	var out []*Event
	for _, c := range children {
		var u uint64
		n := 0
		for _, m := range family {
			if m.UMask != c.UMask && m.UMask&c.UMask == m.UMask {
				u |= m.UMask
				n++
			}
		}
		if n < 2 || u != c.UMask {
			out = append(out, c)
		}
	}
	return out
}

// decompose finds children of a parent mask that cover it as (common part) | (pairwise
// disjoint varying parts), preferring single-bit children when they cover the mask.
// It returns nil when no such cover exists.
func decompose(parent uint64, children, family []*Event) []*Event {
	if len(children) < 2 {
		return nil
	}
	// Flat masks: one single-bit child per bit of the parent.
	var flat []*Event
	var cover uint64
	for _, c := range children {
		if bits.OnesCount64(c.UMask) == 1 {
			flat = append(flat, c)
			cover |= c.UMask
		}
	}
	if cover == parent && len(flat) >= 2 {
		return flat
	}
	// Common part C shared by all parts, the rest disjoint. Candidates for C are the
	// pairwise intersections of children.
	cands := map[uint64]bool{}
	for i, a := range children {
		for _, b := range children[i+1:] {
			if c := a.UMask & b.UMask; c != 0 {
				cands[c] = true
			}
		}
	}
	var cs []uint64
	for c := range cands {
		cs = append(cs, c)
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i] < cs[j] })
	for _, common := range cs {
		var parts []*Event
		var vs []uint64
		for _, c := range children {
			if c.UMask&common == common && c.UMask != common {
				parts = append(parts, c)
				vs = append(vs, c.UMask&^common)
			}
		}
		// Keep the atomic parts: a varying part that is the union of others is a coarser
		// child, not a piece.
		var atoms []*Event
		var atomV []uint64
		for i, v := range vs {
			var u uint64
			for j, w := range vs {
				if j != i && w != v && w&v == w {
					u |= w
				}
			}
			if u != v {
				atoms = append(atoms, parts[i])
				atomV = append(atomV, v)
			}
		}
		if len(atoms) < 2 {
			continue
		}
		var all uint64
		ok := true
		for _, v := range atomV {
			if all&v != 0 {
				ok = false
				break
			}
			all |= v
		}
		if ok && all|common == parent && oneDimension(common, atomV, family) {
			return atoms
		}
	}
	return nil
}

// oneDimension guards the common-part decomposition against masks with two fields
// (L2_RQSTS: request type in bits 0-4, hit/miss in bits 5-7, counting their product).
// There, parts C|V_i tile the parent only when C is a value of one field and every V_i
// stays in the other. The field of C is estimated from the family: for each part, the
// events that keep its V_i and replace C by something else (DEMAND_DATA_RD_MISS 0x21
// and DEMAND_DATA_RD_HIT 0xc1 both keep 0x01) show which bits stand in C's place. A
// V_i using such a bit (ALL_HWPF 0xf0 = 0xc0 | 0x30, where 0x20 means "miss") spans
// both fields, and the sum would double count or miss cells.
func oneDimension(common uint64, vs []uint64, family []*Event) bool {
	field := common
	for i, v := range vs {
		for _, m := range family {
			if m.UMask&v != v {
				continue
			}
			alt := m.UMask &^ v
			// An event that adds whole other parts (ALL_DEMAND_MISS 0x27 over 0x01) is a
			// union along V's own field, not a replacement of C.
			union := false
			for j, w := range vs {
				if j != i && alt&w == w {
					union = true
					break
				}
			}
			if alt != 0 && !union {
				field |= alt
			}
		}
	}
	for _, v := range vs {
		if v&field != 0 {
			return false
		}
	}
	return true
}

// namePairs are misses <= accesses that the event names make certain: the miss event
// counts a subset of the events the access event counts, by the vendor's definition.
// Entries ending in '.' are prefixes (the same suffix on both sides); the others are
// whole names.
var namePairs = []struct{ sub, super, why string }{
	// AMD Zen: mispredicted retired branches of a kind are retired branches of that kind.
	{"ex_ret_brn_misp", "ex_ret_brn", "a mispredicted retired branch is a retired branch"},
	{"ex_ret_brn_tkn_misp", "ex_ret_brn_tkn", "a mispredicted taken branch is a taken branch"},
	{"ex_ret_near_ret_mispred", "ex_ret_near_ret", "a mispredicted near return is a near return"},
	{"ex_ret_brn_ind_misp", "ex_ret_ind_brch_instr", "a mispredicted indirect branch is an indirect branch"},
	{"ex_ret_uncond_brnch_instr_mispred", "ex_ret_uncond_brnch_instr", "a mispredicted unconditional branch is an unconditional branch"},
	{"ex_ret_brn_tkn", "ex_ret_brn", "a taken branch is a branch"},
	{"ex_ret_cond", "ex_ret_brn", "a conditional branch is a branch"},
	// POWER9.
	{"pm_br_mpred_cmpl", "pm_br_cmpl", "a mispredicted completed branch is a completed branch"},
	{"pm_ld_miss_l1", "pm_ld_ref_l1", "an L1 load miss is an L1 load reference"},
	{"pm_run_cyc", "pm_cyc", "run-latch cycles are cycles"},
	{"pm_run_inst_cmpl", "pm_inst_cmpl", "instructions completed with the run latch set are completed instructions"},
	{"pm_cmplu_stall", "pm_cyc", "completion stall cycles are cycles"},
	// Intel: a mispredicted branch of a kind is a branch of that kind.
	{"br_misp_retired.", "br_inst_retired.", "a mispredicted retired branch is a retired branch of the same kind"},
	{"br_misp_exec.", "br_inst_exec.", "a mispredicted executed branch is an executed branch of the same kind"},
}

// armSubsets are Arm architectural events A_S <= A (ARM ARM D11/D17: the refill,
// read and write variants count subsets of the accesses of A).
var armSuffixes = []string{"_refill", "_rd", "_wr", "_refill_rd", "_refill_wr", "_lmiss_rd", "_miss_rd"}

// fixedTwins: the fixed-counter event X and its programmable twin X_P (or X_P_ANY for
// X_ANY) count the same thing.
func (t *Table) nameRelations() []relation.Relation {
	var out []relation.Relation
	names := map[string]bool{}
	for _, e := range t.Events {
		names[e.Name] = true
	}
	add := func(op relation.Op, a, b, src, why string, tol float64) {
		out = append(out, mkRel(op, ev(a), ev(b), src+"@"+t.Dir, why, tol))
	}
	for _, e := range t.Events {
		for _, p := range namePairs {
			if !strings.HasSuffix(p.sub, ".") {
				if e.Name == p.sub && names[p.super] {
					add(relation.Le, p.sub, p.super, "names", p.why, 0)
				}
				continue
			}
			if strings.HasPrefix(e.Name, p.sub) {
				super := p.super + strings.TrimPrefix(e.Name, p.sub)
				if names[super] {
					add(relation.Le, e.Name, super, "names", p.why, 0)
				}
			}
		}
		if strings.HasPrefix(t.Dir, "arm64/") {
			for _, s := range armSuffixes {
				if base := strings.TrimSuffix(e.Name, s); base != e.Name && names[base] {
					add(relation.Le, e.Name, base, "names", "Arm architectural event "+strings.ToUpper(e.Name)+" counts a subset of "+strings.ToUpper(base), 0)
				}
			}
			for _, s := range []string{"_frontend", "_backend"} {
				if base := strings.TrimSuffix(e.Name, s); base != e.Name && strings.HasPrefix(base, "stall") && names[base] {
					add(relation.Le, e.Name, base, "names", "Arm: "+strings.ToUpper(e.Name)+" counts the "+s[1:]+"-caused part of "+strings.ToUpper(base), 0)
				}
			}
		}
		if e.Fixed >= 0 {
			twin := e.Name + "_p"
			if strings.HasSuffix(e.Name, "_any") {
				twin = strings.TrimSuffix(e.Name, "_any") + "_p_any"
			}
			if tw, ok := t.byName[twin]; ok && tw.Fixed < 0 {
				add(relation.Eq, e.Name, twin, "fixed-twin", "the fixed-counter event and its programmable twin count the same thing", TolFixedTwin)
			}
		}
	}
	if strings.HasPrefix(t.Dir, "arm64/") {
		for _, p := range [][2]string{{"br_mis_pred_retired", "br_retired"}, {"br_mis_pred", "br_pred"}, {"stall_frontend", "cpu_cycles"}, {"stall_backend", "cpu_cycles"}, {"stall", "cpu_cycles"}} {
			if names[p[0]] && names[p[1]] {
				add(relation.Le, p[0], p[1], "names", "Arm architectural definition", 0)
			}
		}
	}
	return out
}

// metricTreeRelations relates top-down metrics to their children: Intel's tma_X against
// the sum of the metrics in tma_X_group, and the TopdownL1 metrics against 100% (1 for
// formulas whose ScaleUnit is "100%", 100 for those already in percent). Each side is
// expanded to raw events; relations that hold for any event values (tautologies: the
// vendor defined a child as the parent minus its siblings) are dropped.
func (t *Table) metricTreeRelations(env Env) (rels []relation.Relation, skipped []string) {
	children := map[string][]*Metric{}
	var l1 []*Metric
	for _, m := range t.Metrics {
		for _, g := range m.Groups {
			if p, ok := strings.CutSuffix(g, "_group"); ok && p != "tma_L1" && p != "tma_L2" && !strings.HasPrefix(p, "tma_L") {
				children[strings.ToLower(p)] = append(children[strings.ToLower(p)], m)
			}
			if strings.EqualFold(g, "TopdownL1") {
				l1 = append(l1, m)
			}
		}
	}
	expandAll := func(ms []*Metric) ([]relation.Expr, error) {
		var out []relation.Expr
		for _, m := range ms {
			x, err := t.Expand(m.Name, env)
			if err != nil {
				return nil, err
			}
			out = append(out, x)
		}
		return out, nil
	}
	var parents []string
	for p := range children {
		parents = append(parents, p)
	}
	sort.Strings(parents)
	for _, p := range parents {
		pm, ok := t.Metric(p)
		if !ok || len(children[p]) < 2 {
			continue
		}
		lhs, err := t.Expand(pm.Name, env)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("metric tree %s: %v", p, err))
			continue
		}
		terms, err := expandAll(children[p])
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("metric tree %s: %v", p, err))
			continue
		}
		names := make([]string, len(children[p]))
		for i, c := range children[p] {
			names[i] = c.Name
		}
		r := mkRel(relation.Eq, lhs, sumOf(terms), "metric:"+pm.Name+"@"+t.Dir,
			"top-down tree: "+pm.Name+" = "+strings.Join(names, " + "), TolMetricTree)
		r.Text = pm.Name + " = " + strings.Join(names, " + ")
		if informative(r) {
			rels = append(rels, r)
		} else {
			skipped = append(skipped, fmt.Sprintf("metric tree %s: holds for any event values (a child is defined from the parent)", p))
		}
	}
	if len(l1) >= 2 {
		total := 0.0
		for _, m := range l1 {
			tot := 100 / scaleFactor(m.ScaleUnit)
			if total != 0 && tot != total {
				total = -1
				break
			}
			total = tot
		}
		terms, err := expandAll(l1)
		switch {
		case total <= 0 || math.IsNaN(total) || math.IsInf(total, 0):
			skipped = append(skipped, "TopdownL1: metrics do not share a percent scale")
		case err != nil:
			skipped = append(skipped, fmt.Sprintf("TopdownL1: %v", err))
		default:
			names := make([]string, len(l1))
			for i, m := range l1 {
				names[i] = m.Name
			}
			r := mkRel(relation.Eq, sumOf(terms), relation.Num{V: total}, "metric:TopdownL1@"+t.Dir,
				"top-down level 1: the slots split into these categories", TolMetricTree)
			r.Text = strings.Join(names, " + ") + fmt.Sprintf(" = %g", total)
			if informative(r) {
				rels = append(rels, r)
			} else {
				skipped = append(skipped, "TopdownL1: holds for any event values (one category is defined as the rest)")
			}
		}
	}
	return rels, skipped
}

// scaleFactor reads the number in front of a ScaleUnit ("100%" → 100, "1percent of
// slots" → 1); NaN when the unit is not a percentage.
func scaleFactor(unit string) float64 {
	if !strings.Contains(unit, "%") && !strings.Contains(unit, "percent") {
		return math.NaN()
	}
	i := 0
	for i < len(unit) && (unit[i] >= '0' && unit[i] <= '9' || unit[i] == '.' || unit[i] == 'e' || unit[i] == '-') {
		i++
	}
	var v float64
	if _, err := fmt.Sscanf(unit[:i], "%g", &v); err != nil || v == 0 {
		return math.NaN()
	}
	return v
}

// informative reports whether a relation constrains its events: it must fail to hold
// (beyond rounding) for some random event values. A relation that holds for every
// draw is an algebraic identity of its formulas and says nothing about the hardware.
// The draws use a fixed seed, so the answer is reproducible.
func informative(r relation.Relation) bool {
	rng := rand.New(rand.NewPCG(0x6a09e667, 0xbb67ae85))
	evs := r.Events()
	vals := make(map[string]float64, len(evs))
	evaluated := 0
	for range 8 {
		for _, e := range evs {
			vals[e] = 1e3 + rng.Float64()*1e6
		}
		l, rr, err := r.Eval(func(e string) float64 { return vals[e] })
		if err != nil || math.IsNaN(l) || math.IsNaN(rr) || math.IsInf(l, 0) || math.IsInf(rr, 0) {
			continue
		}
		evaluated++
		if math.Abs(l-rr) > 1e-9*math.Max(1, math.Max(math.Abs(l), math.Abs(rr))) {
			return true
		}
	}
	return false
}
