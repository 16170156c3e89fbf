package relation

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Bind specialises relations to the events of one run: every sum(GLOB) is expanded to
// the run's events that match GLOB, and only relations whose events are all in events
// are kept. A relation with a sum that matches none of the run's events is dropped (an
// empty sum would assert that the left side is zero, which is not what anyone meant).
//
// Exhaustive sums (see Sum) are only exact over all the host's matching events; Bind
// does not know them, so it weakens such relations to the inequality that still holds
// when the missing terms are any non-negative counts (raw_syscalls:sys_enter >=
// syscalls:sys_enter_read + syscalls:sys_enter_write), or drops them when no such
// inequality follows. Use BindUniverse when the host's event list is known.
func Bind(rels []Relation, events []string) []Relation {
	return BindUniverse(rels, events, nil)
}

// BindUniverse is Bind with the list of all events the host has (for example every
// tracepoint under /sys/kernel/tracing/events): an exhaustive sum whose glob matches
// only events of the run stays exact. A nil universe means "unknown".
//
// Events with a perf modifier suffix (":u", ":k", ":ppp", ...) are matched too: a
// relation written for page-faults also binds to page-faults:u, minor-faults:u and
// major-faults:u when every event it names carries the same suffix (both sides are then
// counted in the same privilege levels, so the relation still holds).
//
// Event names match as perf matches them: vendor names without regard to case, and
// PMU-qualified names without options (cpu/inst_retired.any/) as the bare name; bound
// relations use the run's spelling.
//
// Relations that follow from how the run's events were opened are added whatever rels
// holds (see runRelations): privilege splits (instructions = instructions:u +
// instructions:k) and repeats (x#2 = x, as perf.Namer names an event opened twice).
//
// The result has no duplicates: relations that state the same thing (see sameKey: the
// same comparison of the same linear form, whatever the order of terms or sides) are
// kept once, in the place of the first, and the one kept is the strictest: an exact one
// (Tol 0) over a soft one, else the smallest Tol; between equal tolerances the first.
// So a relation is never replaced by a weaker statement of itself: a user's exact
// page-faults = minor-faults + major-faults stays exact next to the soft built-in, and a
// weakened identity that equals an exact inequality yields to it.
func BindUniverse(rels []Relation, events, universe []string) []Relation {
	have := make(map[string]bool, len(events))
	sorted := append([]string(nil), events...)
	sort.Strings(sorted)
	suffixes := map[string]bool{}
	spell := map[string]string{}
	for _, e := range events {
		k := canonical(e)
		if old, dup := spell[k]; dup && old != e {
			spell[k] = "" // two spellings of one event: ambiguous, match exactly only
		} else {
			spell[k] = e
		}
	}
	for _, e := range events {
		have[e] = true
		if s := modifierSuffix(e); s != "" {
			suffixes[s] = true
		}
	}
	var sfx []string
	for s := range suffixes {
		sfx = append(sfx, s)
	}
	sort.Strings(sfx)
	var out []Relation
	at := map[string]int{} // sameKey → index in out
	keep := func(b Relation) {
		key := sameKey(b)
		i, dup := at[key]
		if !dup {
			at[key] = len(out)
			out = append(out, b)
			return
		}
		if b.Tol < out[i].Tol {
			out[i] = b // stricter statement of the same relation
		}
	}
	for _, r := range runRelations(events) {
		keep(r)
	}
	for _, r := range rels {
		if b, ok := bindOne(r, sorted, have, spell, universe); ok {
			keep(b)
		}
		for _, s := range sfx {
			rr := withSuffix(r, s)
			var univ []string
			if universe != nil {
				univ = make([]string, len(universe))
				for i, u := range universe {
					univ[i] = u + s
				}
			}
			if b, ok := bindOne(rr, sorted, have, spell, univ); ok {
				keep(b)
			}
		}
	}
	return out
}

// sameKey is the identity of a bound relation for de-duplication, independent of how
// it is written: for a linear relation, its linear form Σ c·e + k (op) 0 with the terms
// sorted by event and the sign fixed so that the first coefficient is positive (an
// inequality flips with it), so "a = b + c", "a = c + b", "b + c = a" and "a - b - c = 0"
// share a key, as do "a <= b" and "b >= a". Scale is kept: 2·a = 2·b is another factor
// to the model. For a non-linear relation, the rendered text (which never depends on
// whitespace) with the sides in a fixed order. Tol, Source, Text and Note are not part
// of it.
func sameKey(r Relation) string {
	lin, ok := r.Linearize()
	if !ok {
		a := r.LHS.String() + " " + r.Op.String() + " " + r.RHS.String()
		b := r.RHS.String() + " " + r.Op.flip().String() + " " + r.LHS.String()
		return "N:" + min(a, b)
	}
	evs := make([]string, 0, len(lin.Coef))
	for e := range lin.Coef {
		evs = append(evs, e)
	}
	sort.Strings(evs)
	sign := 1.0
	switch {
	case len(evs) > 0 && lin.Coef[evs[0]] < 0, len(evs) == 0 && lin.Const < 0:
		sign = -1
	}
	op := lin.Op
	if sign < 0 {
		op = op.flip()
	}
	var k strings.Builder
	k.WriteString("L:")
	k.WriteString(op.String())
	for _, e := range evs {
		fmt.Fprintf(&k, " %s*%q", strconv.FormatFloat(sign*lin.Coef[e], 'g', -1, 64), e)
	}
	c := sign * lin.Const
	if c == 0 {
		c = 0 // no "-0"
	}
	fmt.Fprintf(&k, " %s", strconv.FormatFloat(c, 'g', -1, 64))
	return k.String()
}

// modifierSuffix returns the ":mods" suffix of a perf event name ("" if none): the part
// after the last ':' when it is made of perf's modifier letters only. Tracepoint names
// ("sched:sched_switch") end in a name, not modifiers.
func modifierSuffix(name string) string {
	i := strings.LastIndexByte(name, ':')
	if i <= 0 || i == len(name)-1 {
		return ""
	}
	for _, c := range name[i+1:] {
		if !strings.ContainsRune("ukhIGHpPSDWeb", c) {
			return ""
		}
	}
	return name[i:]
}

// withSuffix renames every event and glob of r by appending the modifier suffix.
func withSuffix(r Relation, s string) Relation {
	var ren func(e Expr) Expr
	ren = func(e Expr) Expr {
		switch e := e.(type) {
		case Event:
			return Event{Name: e.Name + s}
		case Sum:
			return Sum{Glob: e.Glob + s, Exhaustive: e.Exhaustive}
		case Neg:
			return Neg{X: ren(e.X)}
		case Binary:
			return Binary{Op: e.Op, L: ren(e.L), R: ren(e.R)}
		case Call:
			args := make([]Expr, len(e.Args))
			for i, a := range e.Args {
				args[i] = ren(a)
			}
			return Call{Fn: e.Fn, Args: args}
		case Cond:
			return Cond{If: ren(e.If), Then: ren(e.Then), Else: ren(e.Else)}
		}
		return e
	}
	out := r
	out.LHS, out.RHS = ren(r.LHS), ren(r.RHS)
	return out
}

// missingPrefix names the placeholder events that stand for the terms of an exhaustive
// sum that the run lacks; no perf event name starts with a NUL byte.
const missingPrefix = "\x00missing"

// canonical is the spelling-independent key of an event name: perf matches vendor
// event names without regard to case, and cpu/inst_retired.any/ is inst_retired.any.
func canonical(name string) string {
	n := strings.ToLower(name)
	if i := strings.IndexByte(n, '/'); i > 0 && strings.HasSuffix(n, "/") && strings.Count(n, "/") == 2 {
		inner := n[i+1 : len(n)-1]
		if !strings.ContainsAny(inner, "=,") {
			n = inner
		}
	}
	return n
}

func bindOne(r Relation, events []string, have map[string]bool, spell map[string]string, universe []string) (Relation, bool) {
	empty := false
	incomplete := 0
	// withMissing is the relation with a placeholder term added to each incomplete sum,
	// used only to find the sign with which the missing counts enter.
	var bindExpr func(e Expr, placeholder bool) Expr
	bindExpr = func(e Expr, placeholder bool) Expr {
		switch e := e.(type) {
		case Event:
			if !have[e.Name] {
				if run := spell[canonical(e.Name)]; run != "" {
					return Event{Name: run} // the run's spelling of the same event
				}
			}
			return e
		case Sum:
			terms := []string{}
			for _, ev := range events {
				if Match(e.Glob, ev) {
					terms = append(terms, ev)
				}
			}
			if len(terms) == 0 {
				empty = true
			}
			if e.Exhaustive && !covers(e.Glob, have, universe) {
				if placeholder {
					terms = append(terms, fmt.Sprintf("%s%d", missingPrefix, incomplete))
				}
				incomplete++
			}
			return Sum{Glob: e.Glob, Terms: terms, Exhaustive: e.Exhaustive}
		case Neg:
			return Neg{X: bindExpr(e.X, placeholder)}
		case Binary:
			return Binary{Op: e.Op, L: bindExpr(e.L, placeholder), R: bindExpr(e.R, placeholder)}
		case Call:
			args := make([]Expr, len(e.Args))
			for i, a := range e.Args {
				args[i] = bindExpr(a, placeholder)
			}
			return Call{Fn: e.Fn, Args: args}
		case Cond:
			return Cond{If: bindExpr(e.If, placeholder), Then: bindExpr(e.Then, placeholder), Else: bindExpr(e.Else, placeholder)}
		}
		return e
	}
	out := r
	out.LHS = bindExpr(r.LHS, false)
	out.RHS = bindExpr(r.RHS, false)
	if empty {
		return Relation{}, false
	}
	for _, ev := range out.Events() {
		if !have[ev] {
			return Relation{}, false
		}
	}
	if incomplete == 0 {
		return out, true
	}
	// Weaken: with m_i >= 0 the missing terms, L − R = base + Σ c_i m_i (op) 0.
	incomplete = 0
	probe := r
	probe.LHS = bindExpr(r.LHS, true)
	probe.RHS = bindExpr(r.RHS, true)
	lin, ok := probe.Linearize()
	if !ok {
		return Relation{}, false
	}
	pos, neg := 0, 0
	for ev, c := range lin.Coef {
		if len(ev) > 0 && ev[0] == 0 {
			if c > 0 {
				pos++
			} else {
				neg++
			}
		}
	}
	switch {
	case (r.Op == Eq || r.Op == Le) && neg == 0 && pos > 0:
		out.Op = Le // base = −Σ c_i m_i <= 0
	case (r.Op == Eq || r.Op == Ge) && pos == 0 && neg > 0:
		out.Op = Ge
	default:
		return Relation{}, false
	}
	out.Note = "weakened to an inequality: the run lacks some events of an exhaustive sum"
	if r.Note != "" {
		out.Note = r.Note + "; " + out.Note
	}
	return out, true
}

// covers reports whether the run has every event of universe that matches glob. With
// an unknown universe it cannot tell and says no.
func covers(glob string, have map[string]bool, universe []string) bool {
	if universe == nil {
		return false
	}
	for _, ev := range universe {
		if Match(glob, ev) && !have[ev] {
			return false
		}
	}
	return true
}

// Match reports whether name matches the shell-style glob: * matches any run of
// characters (including / and :, which event names contain), ? one character, [abc],
// [a-z] and [!a-z] a character class. A malformed class matches nothing.
func Match(glob, name string) bool {
	// Iterative matcher with single-star backtracking: linear in practice, and never
	// exponential on hostile globs such as "*a*a*a*a*b".
	g, n := 0, 0
	starG, starN := -1, 0
	for n < len(name) {
		if g < len(glob) {
			switch glob[g] {
			case '*':
				starG, starN = g, n
				g++
				continue
			case '?':
				g++
				n++
				continue
			case '[':
				if end, ok := matchClass(glob[g:], name[n]); end > 0 {
					if ok {
						g += end
						n++
						continue
					}
				} else {
					return false
				}
			default:
				if glob[g] == name[n] {
					g++
					n++
					continue
				}
			}
		}
		if starG < 0 {
			return false
		}
		starN++
		g, n = starG+1, starN
	}
	for g < len(glob) && glob[g] == '*' {
		g++
	}
	return g == len(glob)
}

// matchClass matches c against the class at the start of glob ("[...]"). It returns the
// length of the class (0 when malformed) and whether c is in it.
func matchClass(glob string, c byte) (int, bool) {
	i := 1
	negate := false
	if i < len(glob) && (glob[i] == '!' || glob[i] == '^') {
		negate = true
		i++
	}
	in := false
	first := true
	for i < len(glob) && (glob[i] != ']' || first) {
		first = false
		lo := glob[i]
		hi := lo
		if i+2 < len(glob) && glob[i+1] == '-' && glob[i+2] != ']' {
			hi = glob[i+2]
			i += 2
		}
		if lo <= c && c <= hi {
			in = true
		}
		i++
	}
	if i >= len(glob) {
		return 0, false
	}
	return i + 1, in != negate
}
