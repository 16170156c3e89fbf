package perf

import (
	"fmt"
	"strings"
)

// Kind says which of perf's event syntaxes a Spec was written in.
type Kind uint8

const (
	KindSymbol     Kind = iota // a generic hardware or software name: cycles, page-faults, cs
	KindCache                  // a generic cache event: L1-dcache-load-misses
	KindTracepoint             // subsys:name, globs allowed
	KindPMU                    // pmu/term=value,.../
	KindRaw                    // rNNNN (hex)
)

// Term is one pmu/.../ term: key=value, or a bare key (an event alias or a flag set to 1).
type Term struct {
	Key, Value string
	HasValue   bool
}

// Spec is one event as written in an event list, before it is resolved against the
// kernel: Text is the item as written (modifiers included), which is how perf labels it.
type Spec struct {
	Text  string
	Kind  Kind
	Name  string // symbol or cache name, "subsys:name" pattern, PMU name, or raw hex digits
	Terms []Term // KindPMU only
	Mods  string // modifier letters (u, k, h, G, H, I, p, P, S, D, e, W, b), group's included
	// Group numbers the groups of the list in order: a {a,b} group shares one number, a
	// standalone event gets its own. Grouped says the event was written inside braces.
	Group   int
	Grouped bool
}

// modifierChars are the letters perf accepts after ':' (tools/perf/util/parse-events.l).
const modifierChars = "ukhGHIpPSDeWb"

func isModifiers(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune(modifierChars, c) {
			return false
		}
	}
	return true
}

// ParseList splits an event list as perf's -e accepts it: comma-separated items, {a,b}
// groups with optional :modifiers after the brace, pmu/terms/ items whose terms contain
// commas, and -e given several times (join them with commas). It only checks syntax;
// Resolve finds the events. It never panics, whatever the input. An error says what is
// wrong and how events are written.
func ParseList(s string) ([]Spec, error) {
	specs, err := parseList(s)
	if err != nil {
		return nil, fmt.Errorf("%w; %s", err, syntaxHint)
	}
	return specs, nil
}

// syntaxHint ends every syntax error: how an event list is written.
const syntaxHint = "write events as perf does: name[:mods], {a,b} for a group, subsys:event, pmu/term=value/, rHEX"

func parseList(s string) ([]Spec, error) {
	var specs []Spec
	group := 0
	i := 0
	n := len(s)
	for i < n {
		switch c := s[i]; {
		case c == ',' || c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("parse event list: unclosed '{' at offset %d", i)
			}
			body := s[i+1 : i+end]
			if strings.ContainsAny(body, "{") {
				return nil, fmt.Errorf("parse event list: nested '{' at offset %d", i)
			}
			j := i + end + 1
			mods := ""
			if j < n && s[j] == ':' {
				k := j + 1
				for k < n && s[k] != ',' && s[k] != ' ' {
					k++
				}
				mods = s[j+1 : k]
				if !isModifiers(mods) {
					return nil, fmt.Errorf("parse event list: bad group modifier %q (allowed letters: %s)", mods, modifierChars)
				}
				j = k
			}
			items, err := splitItems(body)
			if err != nil {
				return nil, err
			}
			if len(items) == 0 {
				return nil, fmt.Errorf("parse event list: empty group at offset %d", i)
			}
			for _, it := range items {
				sp, err := parseItem(it)
				if err != nil {
					return nil, err
				}
				sp.Mods += mods
				sp.Group, sp.Grouped = group, true
				specs = append(specs, sp)
			}
			group++
			i = j
		case c == '}':
			return nil, fmt.Errorf("parse event list: unmatched '}' at offset %d", i)
		default:
			j := itemEnd(s, i)
			sp, err := parseItem(s[i:j])
			if err != nil {
				return nil, err
			}
			sp.Group = group
			group++
			specs = append(specs, sp)
			i = j
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("parse event list: no events in %q", s)
	}
	return specs, nil
}

// itemEnd finds the end of the item starting at i: the next top-level comma, where commas
// between the slashes of pmu/.../ do not count.
func itemEnd(s string, i int) int {
	inPMU := false
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '/':
			inPMU = !inPMU
		case ',', '{', '}', ' ', '\t', '\n':
			if !inPMU {
				return j
			}
		}
	}
	return len(s)
}

func splitItems(body string) ([]string, error) {
	var items []string
	i := 0
	for i < len(body) {
		switch body[i] {
		case ',', ' ', '\t', '\n':
			i++
			continue
		}
		j := itemEnd(body, i)
		if j < len(body) && (body[j] == '{' || body[j] == '}') {
			return nil, fmt.Errorf("parse event list: stray %q in group", body[j])
		}
		items = append(items, body[i:j])
		i = j
	}
	return items, nil
}

func parseItem(it string) (Spec, error) {
	sp := Spec{Text: it}
	if it == "" {
		return sp, fmt.Errorf("parse event list: empty event name")
	}
	if k := strings.IndexByte(it, '/'); k >= 0 {
		// pmu/terms/[:]mods
		rest := it[k+1:]
		end := strings.LastIndexByte(rest, '/')
		if end < 0 {
			return sp, fmt.Errorf("parse event %q: unclosed '/' after PMU name", it)
		}
		sp.Kind, sp.Name = KindPMU, it[:k]
		if sp.Name == "" {
			return sp, fmt.Errorf("parse event %q: missing PMU name before '/'", it)
		}
		mods := strings.TrimPrefix(rest[end+1:], ":")
		if mods != "" && !isModifiers(mods) {
			return sp, fmt.Errorf("parse event %q: bad modifier %q (allowed letters: %s)", it, mods, modifierChars)
		}
		sp.Mods = mods
		for _, t := range strings.Split(rest[:end], ",") {
			t = strings.TrimSpace(t)
			if t == "" {
				continue
			}
			key, val, has := strings.Cut(t, "=")
			if key == "" || (has && val == "") {
				return sp, fmt.Errorf("parse event %q: bad term %q", it, t)
			}
			sp.Terms = append(sp.Terms, Term{Key: key, Value: val, HasValue: has})
		}
		return sp, nil
	}
	parts := strings.Split(it, ":")
	for _, p := range parts {
		if p == "" {
			return sp, fmt.Errorf("parse event %q: empty part between ':'", it)
		}
	}
	base := parts[0]
	switch {
	case len(parts) == 1:
	case len(parts) == 2 && isModifiers(parts[1]) && !looksLikeTracepointSubsys(base):
		sp.Mods = parts[1]
	case len(parts) == 2:
		sp.Kind, sp.Name = KindTracepoint, parts[0]+":"+parts[1]
		return sp, nil
	case len(parts) == 3 && isModifiers(parts[2]):
		sp.Kind, sp.Name, sp.Mods = KindTracepoint, parts[0]+":"+parts[1], parts[2]
		return sp, nil
	default:
		return sp, fmt.Errorf("parse event %q: too many ':' (want name[:mods] or subsys:event[:mods])", it)
	}
	sp.Name = base
	switch {
	case isRaw(base):
		sp.Kind, sp.Name = KindRaw, strings.TrimPrefix(strings.TrimPrefix(base[1:], "0x"), "0X")
	case isCacheName(base):
		sp.Kind = KindCache
	default:
		sp.Kind = KindSymbol
	}
	return sp, nil
}

// looksLikeTracepointSubsys says a name before ':' cannot be a symbolic event, so that
// "sched:u" style names are not misread when a subsystem happens to be all modifier letters.
func looksLikeTracepointSubsys(base string) bool {
	_, sym := symbols[base]
	return !sym && !isRaw(base) && !isCacheName(base)
}

func isRaw(s string) bool {
	if len(s) < 2 || s[0] != 'r' {
		return false
	}
	h := strings.TrimPrefix(strings.TrimPrefix(s[1:], "0x"), "0X")
	if h == "" || len(h) > 16 {
		return false
	}
	for _, c := range h {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
