package perf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bayesperf/bayesperf/perfabi"
	"golang.org/x/sys/unix"
)

// EventDesc is a resolved event: the attr to open and how to show it. Attrs come with
// Size = AttrSize, ReadFormat = enabled|running, and the modifiers applied; callers add
// Disabled, Inherit, EnableOnExec and the like.
type EventDesc struct {
	Name    string // as written, or subsys:event for a tracepoint glob's expansion
	Attr    Attr
	Group   int  // as in Spec: events sharing Group were written in one {..}
	Grouped bool // written inside braces
}

// Resolver resolves Specs against the kernel's sysfs and tracefs. The zero value uses the
// system's directories; tests point the fields at fixtures.
type Resolver struct {
	SysfsPMUDir string // default /sys/bus/event_source/devices
	TracefsDir  string // default: found by FindTracefs
	// NoMount forbids mounting tracefs when it is missing (perf mounts it when root).
	NoMount bool
}

// ParseEvents parses and resolves an event list with the system's sysfs and tracefs.
func ParseEvents(list string) ([]EventDesc, error) {
	var r Resolver
	return r.ParseEvents(list)
}

// ParseEvents parses and resolves an event list.
func (r *Resolver) ParseEvents(list string) ([]EventDesc, error) {
	specs, err := ParseList(list)
	if err != nil {
		return nil, err
	}
	return r.Resolve(specs)
}

// Resolve turns Specs into attrs. A tracepoint glob expands to every matching event, in
// name order, in the spec's group. An unknown name is an error naming close matches.
func (r *Resolver) Resolve(specs []Spec) ([]EventDesc, error) {
	var out []EventDesc
	for _, sp := range specs {
		ds, err := r.resolveOne(sp)
		if err != nil {
			return nil, err
		}
		for _, d := range ds {
			d.Group, d.Grouped = sp.Group, sp.Grouped
			if err := applyModifiers(&d.Attr, sp.Mods); err != nil {
				return nil, fmt.Errorf("resolve event %q: %w", sp.Text, err)
			}
			out = append(out, d)
		}
	}
	return out, nil
}

func baseAttr(typ uint32, config uint64) Attr {
	return Attr{Type: typ, Size: perfabi.AttrSize, Config: config, ReadFormat: perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning}
}

func (r *Resolver) resolveOne(sp Spec) ([]EventDesc, error) {
	switch sp.Kind {
	case KindSymbol:
		if s, ok := symbols[sp.Name]; ok {
			return []EventDesc{{Name: sp.Text, Attr: baseAttr(s.typ, s.config)}}, nil
		}
		// perf also accepts a PMU event alias by itself (e.g. "tsc" of msr); try sysfs.
		if d, ok := r.pmuAliasAnywhere(sp); ok {
			return []EventDesc{d}, nil
		}
		return nil, r.unknown(sp)
	case KindCache:
		c, _ := parseCache(sp.Name)
		return []EventDesc{{Name: sp.Text, Attr: baseAttr(TypeHWCache, c)}}, nil
	case KindRaw:
		v, err := strconv.ParseUint(sp.Name, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("resolve raw event %q: %w", sp.Text, err)
		}
		return []EventDesc{{Name: sp.Text, Attr: baseAttr(TypeRaw, v)}}, nil
	case KindTracepoint:
		return r.tracepoints(sp)
	case KindPMU:
		a, err := r.pmuEvent(sp.Name, sp.Terms)
		if err != nil {
			return nil, fmt.Errorf("resolve event %q: %w", sp.Text, err)
		}
		name := sp.Text
		for _, t := range sp.Terms {
			if t.Key == "name" && t.HasValue {
				name = t.Value // perf labels the event with its name= term
			}
		}
		return []EventDesc{{Name: name, Attr: a}}, nil
	}
	return nil, fmt.Errorf("resolve event %q: unknown kind %d", sp.Text, sp.Kind)
}

// applyModifiers sets the exclude bits and flags of perf's modifiers. As in perf, naming
// any of u, k, h excludes the privilege levels not named.
func applyModifiers(a *Attr, mods string) error {
	var u, k, h bool
	precise := 0
	for _, c := range mods {
		switch c {
		case 'u':
			u = true
		case 'k':
			k = true
		case 'h':
			h = true
		case 'G':
			a.Flags |= perfabi.FlagExcludeHost
		case 'H':
			a.Flags |= perfabi.FlagExcludeGuest
		case 'I':
			a.Flags |= perfabi.FlagExcludeIdle
		case 'p':
			precise++
		case 'P':
			precise = 3
		case 'D':
			a.Flags |= perfabi.FlagPinned
		case 'e':
			a.Flags |= perfabi.FlagExclusive
		case 'S', 'W', 'b':
			// S (sample read), W (weak group) and b (bpf counter) change how perf drives
			// the event, not the attr bits we need for counting.
		default:
			return fmt.Errorf("unknown modifier %q", c)
		}
	}
	if precise > 3 {
		return fmt.Errorf("precise modifier 'p' given %d times, at most 3", precise)
	}
	a.SetPreciseIP(uint8(precise))
	if u || k || h {
		if !u {
			a.Flags |= perfabi.FlagExcludeUser
		}
		if !k {
			a.Flags |= perfabi.FlagExcludeKern
		}
		if !h {
			a.Flags |= perfabi.FlagExcludeHV
		}
	}
	return nil
}

// FindTracefs returns the tracefs directory (the one holding events/): /sys/kernel/tracing,
// else /sys/kernel/debug/tracing. When neither is mounted and mount is true and we are
// root, it mounts tracefs on /sys/kernel/tracing as perf does; otherwise the error says
// what to run.
func FindTracefs(mount bool) (string, error) {
	var denied string
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		st, err := os.Stat(filepath.Join(d, "events"))
		if err == nil && st.IsDir() {
			return d, nil
		}
		if errors.Is(err, os.ErrPermission) && denied == "" {
			denied = d
		}
	}
	if denied != "" {
		// Mounted, but mode 0700 (the default): tracepoints are root's.
		return "", tracefsError{fmt.Sprintf("find tracefs: %s is readable by root only; run as root to count tracepoints", denied)}
	}
	const dir = "/sys/kernel/tracing"
	if mount && os.Geteuid() == 0 {
		if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
			return "", tracefsError{fmt.Sprintf("mount tracefs on %s: %v; mount it yourself: mount -t tracefs nodev %s", dir, err, dir)}
		}
		return dir, nil
	}
	return "", tracefsError{"find tracefs: not mounted; run as root (bayesperf mounts it then), or mount it: mount -t tracefs nodev " + dir}
}

// ErrTracefs matches (errors.Is) the errors of a tracefs that is not mounted, not
// readable or cannot be mounted: the state of the system, not a fault of the event list.
var ErrTracefs = errors.New("tracefs unavailable")

type tracefsError struct{ msg string }

func (e tracefsError) Error() string        { return e.msg }
func (e tracefsError) Is(target error) bool { return target == ErrTracefs }

func (r *Resolver) tracefs() (string, error) {
	if r.TracefsDir != "" {
		return r.TracefsDir, nil
	}
	d, err := FindTracefs(!r.NoMount)
	if err != nil {
		return "", err
	}
	r.TracefsDir = d
	return d, nil
}

func (r *Resolver) tracepoints(sp Spec) ([]EventDesc, error) {
	dir, err := r.tracefs()
	if err != nil {
		return nil, fmt.Errorf("resolve tracepoint %q: %w", sp.Text, err)
	}
	sub, name, _ := strings.Cut(sp.Name, ":")
	if _, err := filepath.Match(sub, ""); err != nil {
		return nil, fmt.Errorf("resolve tracepoint %q: bad glob: %w", sp.Text, err)
	}
	if _, err := filepath.Match(name, ""); err != nil {
		return nil, fmt.Errorf("resolve tracepoint %q: bad glob: %w", sp.Text, err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "events", sub, name, "id"))
	sort.Strings(matches)
	var out []EventDesc
	glob := strings.ContainsAny(sp.Name, "*?[")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, fmt.Errorf("resolve tracepoint %q: %w", sp.Text, err)
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("resolve tracepoint %q: parse %s: %w", sp.Text, m, err)
		}
		ev := filepath.Base(filepath.Dir(m))
		ss := filepath.Base(filepath.Dir(filepath.Dir(m)))
		n := sp.Text
		if glob {
			n = ss + ":" + ev
			if sp.Mods != "" {
				n += ":" + sp.Mods
			}
		}
		out = append(out, EventDesc{Name: n, Attr: baseAttr(TypeTracepoint, id)})
	}
	if len(out) == 0 {
		return nil, r.unknown(sp)
	}
	return out, nil
}

// pmuDir is the sysfs directory of dynamic PMUs.
func (r *Resolver) pmuDir() string {
	if r.SysfsPMUDir != "" {
		return r.SysfsPMUDir
	}
	return "/sys/bus/event_source/devices"
}

// pmuEvent resolves pmu/terms/: the type from PMU/type, each term through PMU/format/TERM
// (bit ranges of config, config1, config2, config3), an event alias through PMU/events/NAME
// (itself a term list), and the raw config*= terms.
func (r *Resolver) pmuEvent(pmu string, terms []Term) (Attr, error) {
	dir := filepath.Join(r.pmuDir(), pmu)
	if strings.ContainsAny(pmu, "/\x00") || pmu == "." || pmu == ".." {
		return Attr{}, fmt.Errorf("bad PMU name %q", pmu)
	}
	tb, err := os.ReadFile(filepath.Join(dir, "type"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return Attr{}, fmt.Errorf("unknown PMU %q%s: no %s here; 'bayesperf list' shows the PMUs of this machine", pmu, closeMatches(pmu, r.pmuNames()), dir)
		}
		return Attr{}, fmt.Errorf("unknown PMU %q%s: %w", pmu, closeMatches(pmu, r.pmuNames()), err)
	}
	typ, err := strconv.ParseUint(strings.TrimSpace(string(tb)), 10, 32)
	if err != nil {
		return Attr{}, fmt.Errorf("parse type of PMU %q: %w", pmu, err)
	}
	a := baseAttr(uint32(typ), 0)
	if err := r.applyTerms(&a, dir, terms, 0); err != nil {
		return Attr{}, err
	}
	return a, nil
}

func (r *Resolver) applyTerms(a *Attr, dir string, terms []Term, depth int) error {
	if depth > 2 {
		return errors.New("event alias refers to itself")
	}
	for _, t := range terms {
		if t.Key == "name" {
			continue // a label, not an encoding
		}
		var val uint64 = 1
		if t.HasValue {
			v, err := strconv.ParseUint(t.Value, 0, 64)
			if err != nil {
				return fmt.Errorf("term %s=%s: value is not a number: %w", t.Key, t.Value, err)
			}
			val = v
		}
		switch t.Key {
		case "config":
			a.Config = val
			continue
		case "config1":
			a.Config1 = val
			continue
		case "config2":
			a.Config2 = val
			continue
		case "config3":
			a.Config3 = val
			continue
		case "period":
			a.SamplePeriod = val
			continue
		case "freq":
			a.SamplePeriod, a.Flags = val, a.Flags|perfabi.FlagFreq
			continue
		case "name":
			continue
		}
		if strings.ContainsAny(t.Key, "/\x00") || t.Key == "." || t.Key == ".." {
			return fmt.Errorf("bad term %q", t.Key)
		}
		if fb, err := os.ReadFile(filepath.Join(dir, "format", t.Key)); err == nil {
			if err := setFormat(a, strings.TrimSpace(string(fb)), val); err != nil {
				return fmt.Errorf("term %s: %w", t.Key, err)
			}
			continue
		}
		if !t.HasValue {
			if eb, err := os.ReadFile(filepath.Join(dir, "events", t.Key)); err == nil {
				sp, err := parseItem("x/" + strings.TrimSpace(string(eb)) + "/")
				if err != nil {
					return fmt.Errorf("parse alias %s: %w", t.Key, err)
				}
				if err := r.applyTerms(a, dir, sp.Terms, depth+1); err != nil {
					return fmt.Errorf("alias %s: %w", t.Key, err)
				}
				continue
			}
		}
		var known []string
		for _, sub := range []string{"format", "events"} {
			ents, _ := os.ReadDir(filepath.Join(dir, sub))
			for _, e := range ents {
				known = append(known, e.Name())
			}
		}
		return fmt.Errorf("unknown term %q for PMU %s%s", t.Key, filepath.Base(dir), closeMatches(t.Key, known))
	}
	return nil
}

// setFormat stores val into the bit ranges a sysfs format spec names, e.g.
// "config:0-7,32-35" or "config1:0": the value's low bits fill the ranges in order.
func setFormat(a *Attr, spec string, val uint64) error {
	field, ranges, ok := strings.Cut(spec, ":")
	if !ok {
		return fmt.Errorf("bad format %q", spec)
	}
	var dst *uint64
	switch field {
	case "config":
		dst = &a.Config
	case "config1":
		dst = &a.Config1
	case "config2":
		dst = &a.Config2
	case "config3":
		dst = &a.Config3
	default:
		return fmt.Errorf("format field %q not supported", field)
	}
	shift := 0
	for _, rg := range strings.Split(ranges, ",") {
		lo, hi, isRange := strings.Cut(rg, "-")
		l, err := strconv.Atoi(lo)
		if err != nil {
			return fmt.Errorf("bad format range %q", rg)
		}
		h := l
		if isRange {
			if h, err = strconv.Atoi(hi); err != nil {
				return fmt.Errorf("bad format range %q", rg)
			}
		}
		if l < 0 || h > 63 || h < l {
			return fmt.Errorf("bad format range %q", rg)
		}
		for b := l; b <= h; b++ {
			bit := uint64(0)
			if shift < 64 {
				bit = (val >> shift) & 1
			}
			*dst = *dst&^(1<<b) | bit<<b
			shift++
		}
	}
	if shift < 64 && val>>shift != 0 {
		return fmt.Errorf("value %#x does not fit in %d bits", val, shift)
	}
	return nil
}

func (r *Resolver) pmuNames() []string {
	ents, _ := os.ReadDir(r.pmuDir())
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func (r *Resolver) pmuAliasAnywhere(sp Spec) (EventDesc, bool) {
	if strings.ContainsAny(sp.Name, "/\x00") || sp.Name == "." || sp.Name == ".." {
		return EventDesc{}, false
	}
	for _, p := range r.pmuNames() {
		if _, err := os.Stat(filepath.Join(r.pmuDir(), p, "events", sp.Name)); err == nil {
			a, err := r.pmuEvent(p, []Term{{Key: sp.Name}})
			if err == nil {
				return EventDesc{Name: sp.Text, Attr: a}, true
			}
		}
	}
	return EventDesc{}, false
}

// KnownNames lists every event name this resolver knows, for suggestions and `list`:
// generic names, cache names, PMU aliases as pmu/alias/, and every tracepoint.
func (r *Resolver) KnownNames() []string {
	out := SymbolNames()
	out = append(out, CacheEventNames()...)
	for _, p := range r.pmuNames() {
		ents, _ := os.ReadDir(filepath.Join(r.pmuDir(), p, "events"))
		for _, e := range ents {
			if !strings.Contains(e.Name(), ".") { // skip .scale/.unit companions
				out = append(out, p+"/"+e.Name()+"/")
			}
		}
	}
	out = append(out, r.Tracepoints()...)
	return out
}

// Tracepoints lists subsys:event for every tracepoint in tracefs (nil when unavailable).
func (r *Resolver) Tracepoints() []string {
	dir, err := r.tracefs()
	if err != nil {
		return nil
	}
	ids, _ := filepath.Glob(filepath.Join(dir, "events", "*", "*", "id"))
	out := make([]string, 0, len(ids))
	for _, m := range ids {
		out = append(out, filepath.Base(filepath.Dir(filepath.Dir(m)))+":"+filepath.Base(filepath.Dir(m)))
	}
	sort.Strings(out)
	return out
}

func (r *Resolver) unknown(sp Spec) error {
	var cands []string
	if sp.Kind == KindTracepoint {
		cands = r.Tracepoints()
	} else {
		cands = append(SymbolNames(), CacheEventNames()...)
		cands = append(cands, r.Tracepoints()...)
	}
	hint := ""
	if sub, mods, ok := strings.Cut(sp.Name, ":"); ok && sp.Kind == KindTracepoint && !looksLikeTracepointSubsys(sub) {
		// "task-clock:zz": not a tracepoint, and zz is not a modifier.
		hint = fmt.Sprintf(" (%q is not a modifier of %s: modifiers are letters of %s)", mods, sub, modifierChars)
	}
	return fmt.Errorf("unknown event %q%s%s; run 'bayesperf list' or 'perf list' for the names", sp.Text, hint, closeMatches(sp.Name, cands))
}

// closeMatches formats up to three candidates within a small edit distance of name.
func closeMatches(name string, cands []string) string {
	type sc struct {
		s string
		d int
	}
	var best []sc
	limit := max(2, len(name)/3)
	for _, c := range cands {
		d := editDistance(name, c)
		if d <= limit || (len(name) >= 4 && strings.Contains(c, name)) {
			best = append(best, sc{c, d})
		}
	}
	if len(best) == 0 {
		return ""
	}
	sort.SliceStable(best, func(i, j int) bool { return best[i].d < best[j].d })
	var names []string
	for i := 0; i < len(best) && i < 3; i++ {
		names = append(names, best[i].s)
	}
	return " (did you mean " + strings.Join(names, ", ") + "?)"
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
