package pmuevents

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/bayesperf/bayesperf/inference/metricexpr"
)

// Event is one event of a vendor table.
type Event struct {
	Name string // lower case, as perf list prints it
	Unit string // PMU unit as the JSON says ("" for the core PMU)
	// Code and UMask are the event select and unit mask; HasCode is false for events
	// that only exist on a fixed counter (the JSON gives them no EventCode).
	Code    uint64
	UMask   uint64
	HasCode bool
	// Modifiers holds the other encoding fields (CounterMask, Invert, EdgeDetect,
	// AnyThread, MSRIndex, MSRValue, ...) as "Key=value" pairs, sorted: two events with
	// equal Unit, Code, UMask and Modifiers count the same thing.
	Modifiers string
	// Fixed is the fixed counter the event lives on, or -1.
	Fixed int
	// Counters is the set of programmable counters allowed (bit i: counter i), 0 when
	// the JSON does not restrict it.
	Counters uint64
	Brief    string
	File     string // JSON file it came from, relative to the arch root
}

// Metric is one MetricExpr formula.
type Metric struct {
	Name      string // lower case
	Formula   string // as written
	Expr      metricexpr.Expr
	Groups    []string // MetricGroup, split at ';'
	ScaleUnit string
	File      string
}

// PMU is one line of counter.json.
type PMU struct {
	Unit           string
	Fixed, Generic int
}

// Table is one CPU's events, metrics and counters.
type Table struct {
	Root    string // the arch directory
	Dir     string // the CPU's directory relative to Root, e.g. "x86/skylake"
	Events  []*Event
	Metrics []*Metric
	PMUs    []PMU
	// Problems lists what could not be used (a formula that does not parse, a field
	// that is not a number), each naming the file; loading goes on without them.
	Problems []string

	byName   map[string]*Event
	byMetric map[string]*Metric
}

// Event returns the event with the given name (any case).
func (t *Table) Event(name string) (*Event, bool) {
	e, ok := t.byName[Canonical(name)]
	return e, ok
}

// Metric returns the metric with the given name (any case).
func (t *Table) Metric(name string) (*Metric, bool) {
	m, ok := t.byMetric[Canonical(name)]
	return m, ok
}

// Canonical is the spelling of an event or metric name used in relations: lower case
// (perf matches vendor event names without regard to case).
func Canonical(name string) string { return strings.ToLower(name) }

// fields that describe an event but do not change what it counts.
var descriptive = map[string]bool{
	"EventName": true, "BriefDescription": true, "PublicDescription": true, "Counter": true,
	"SampleAfterValue": true, "PEBS": true, "Data_LA": true, "Errata": true,
	"Experimental": true, "Deprecated": true, "ArchStdEvent": true, "EventCode": true,
	"UMask": true, "Unit": true, "PerPkg": true, "BriefDescript6ion": true,
	"CounterHTOff": true, "PRECISE_STORE": true, "L1_Hit_Indication": true,
	"TakenAlone": true, "Offcore": true, "Compat": true,
}

// maxFile bounds one JSON file; the largest vendor file is a few MB.
const maxFile = 64 << 20

// Load reads the CPU directory dir (relative to the arch root, e.g. "x86/skylake").
// For arm64, ArchStdEvent entries are completed from the architecture's
// common-and-microarch.json and recommended.json, and arm64/sbsa.json metrics are added.
// A hybrid table (alderlake: cpu_core and cpu_atom entries, often with the same names)
// is loaded for its big cores, cpu_core; use LoadUnit for the other.
func Load(root, dir string) (*Table, error) { return LoadUnit(root, dir, "") }

// hybridUnits are the core PMUs of hybrid tables; entries of the one not chosen are left
// out so that names stay unique.
var hybridUnits = map[string]bool{"cpu_core": true, "cpu_atom": true}

// LoadUnit is Load for one core PMU of a hybrid table ("cpu_core" or "cpu_atom"); ""
// means cpu_core where the table is hybrid. Uncore entries are always kept.
func LoadUnit(root, dir, unit string) (*Table, error) {
	t, err := LoadFS(os.DirFS(root), dir, unit)
	if t != nil {
		t.Root = root
	}
	if err != nil {
		return nil, fmt.Errorf("%w (arch root %s)", err, root)
	}
	return t, nil
}

// LoadFS is LoadUnit over a file system whose root is the arch directory.
func LoadFS(fsys fs.FS, dir, unit string) (*Table, error) {
	if unit == "" {
		unit = "cpu_core"
	}
	dir = path.Clean(filepath.ToSlash(dir))
	t := &Table{Dir: dir, byName: map[string]*Event{}, byMetric: map[string]*Metric{}}
	files, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("load pmu-events %s: no JSON files there", dir)
	}
	sort.Strings(files)
	var std map[string]map[string]any
	if strings.HasPrefix(t.Dir, "arm64/") {
		std = map[string]map[string]any{}
		for _, f := range []string{"common-and-microarch.json", "recommended.json"} {
			entries, err := readEntries(fsys, path.Join("arm64", f))
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					continue
				}
				return nil, err
			}
			for _, e := range entries {
				if n := str(e["EventName"]); n != "" {
					std[n] = e
				}
			}
		}
		if _, err := fs.Stat(fsys, "arm64/sbsa.json"); err == nil {
			files = append(files, "arm64/sbsa.json")
		}
	}
	for _, f := range files {
		rel := f
		if path.Base(f) == "counter.json" {
			if err := t.loadCounters(fsys, f, rel); err != nil {
				return nil, err
			}
			continue
		}
		entries, err := readEntries(fsys, f)
		if err != nil {
			if _, ok := err.(*notList); ok {
				continue // metricgroups.json: a dict of group descriptions
			}
			return nil, err
		}
		for _, e := range entries {
			if u := strings.ToLower(str(e["Unit"])); hybridUnits[u] && u != unit {
				continue
			}
			if a := str(e["ArchStdEvent"]); a != "" && std != nil {
				base, ok := std[a]
				if !ok {
					t.Problems = append(t.Problems, fmt.Sprintf("%s: ArchStdEvent %s is not a standard event", rel, a))
					continue
				}
				merged := map[string]any{}
				for k, v := range base {
					merged[k] = v
				}
				for k, v := range e {
					merged[k] = v
				}
				e = merged
			}
			if x := str(e["MetricExpr"]); x != "" {
				t.addMetric(e, x, rel)
				continue
			}
			if str(e["EventName"]) != "" {
				t.addEvent(e, rel)
			}
		}
	}
	return t, nil
}

type notList struct{ file string }

func (e *notList) Error() string { return e.file + ": not a JSON list" }

func readEntries(fsys fs.FS, name string) ([]map[string]any, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(b) > maxFile {
		return nil, fmt.Errorf("read %s: larger than %d bytes, too large for a pmu-events file", name, maxFile)
	}
	path := name
	var raw any
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, &notList{path}
	}
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// str renders a JSON value as the string the vendor meant (numbers appear both quoted
// and unquoted in the files).
func str(v any) string {
	switch v := v.(type) {
	case string:
		return strings.TrimSpace(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	return ""
}

func parseUint(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	return strconv.ParseUint(s, 0, 64)
}

func (t *Table) addEvent(e map[string]any, file string) {
	name := Canonical(str(e["EventName"]))
	ev := &Event{Name: name, Unit: str(e["Unit"]), Fixed: -1, Brief: str(e["BriefDescription"]), File: file}
	if c := str(e["EventCode"]); c != "" {
		// Some Intel events list two codes ("0xB7,0xBB") for the two offcore MSRs: the
		// first selects the encoding.
		c = strings.SplitN(c, ",", 2)[0]
		v, err := parseUint(c)
		if err != nil {
			t.Problems = append(t.Problems, fmt.Sprintf("%s: %s: EventCode %q: %v", file, name, c, err))
			return
		}
		ev.Code, ev.HasCode = v, true
	}
	if u := str(e["UMask"]); u != "" {
		v, err := parseUint(u)
		if err != nil {
			t.Problems = append(t.Problems, fmt.Sprintf("%s: %s: UMask %q: %v", file, name, u, err))
			return
		}
		ev.UMask = v
	}
	var mods []string
	for k, v := range e {
		if descriptive[k] {
			continue
		}
		s := str(v)
		if s == "" || s == "0" || s == "0x0" || s == "0x00" {
			continue // absent and zero mean the same
		}
		mods = append(mods, k+"="+strings.ToLower(s))
	}
	sort.Strings(mods)
	ev.Modifiers = strings.Join(mods, ",")
	c := strings.TrimSpace(str(e["Counter"]))
	switch {
	case c == "":
	case strings.HasPrefix(strings.ToLower(c), "fixed counter"):
		n, err := strconv.Atoi(strings.TrimSpace(c[len("fixed counter"):]))
		if err == nil {
			ev.Fixed = n
		}
	case strings.EqualFold(c, "fixed"):
		ev.Fixed = 0
	default:
		for _, p := range strings.Split(c, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || n < 0 || n > 63 {
				t.Problems = append(t.Problems, fmt.Sprintf("%s: %s: Counter %q is not a counter list", file, name, c))
				ev.Counters = 0
				break
			}
			ev.Counters |= 1 << uint(n)
		}
	}
	if old, dup := t.byName[name]; dup {
		// The same event listed twice (some files repeat an event in two topics): keep
		// the first, note a disagreement.
		if old.Code != ev.Code || old.UMask != ev.UMask || old.Modifiers != ev.Modifiers {
			t.Problems = append(t.Problems, fmt.Sprintf("%s: %s: listed again with another encoding (first in %s)", file, name, old.File))
		}
		return
	}
	t.byName[name] = ev
	t.Events = append(t.Events, ev)
}

func (t *Table) addMetric(e map[string]any, formula, file string) {
	name := Canonical(str(e["MetricName"]))
	x, err := metricexpr.Parse(formula)
	if err != nil {
		t.Problems = append(t.Problems, fmt.Sprintf("%s: metric %s: parse %q: %v", file, name, formula, err))
		return
	}
	m := &Metric{Name: name, Formula: formula, Expr: x, ScaleUnit: str(e["ScaleUnit"]), File: file}
	for _, g := range strings.Split(str(e["MetricGroup"]), ";") {
		if g = strings.TrimSpace(g); g != "" {
			m.Groups = append(m.Groups, g)
		}
	}
	if old, dup := t.byMetric[name]; dup {
		same := "another formula"
		if old.Formula == formula {
			same = "the same formula"
		}
		t.Problems = append(t.Problems, fmt.Sprintf("%s: metric %s defined twice (%s): keeping the first", file, name, same))
		return
	}
	t.byMetric[name] = m
	t.Metrics = append(t.Metrics, m)
}

func (t *Table) loadCounters(fsys fs.FS, path, rel string) error {
	entries, err := readEntries(fsys, path)
	if err != nil {
		return fmt.Errorf("load counters: %w", err)
	}
	for _, e := range entries {
		f, err1 := strconv.Atoi(str(e["CountersNumFixed"]))
		g, err2 := strconv.Atoi(str(e["CountersNumGeneric"]))
		if err1 != nil || err2 != nil || f < 0 || g < 0 {
			t.Problems = append(t.Problems, fmt.Sprintf("%s: unit %q: counter numbers are not numbers", rel, str(e["Unit"])))
			continue
		}
		t.PMUs = append(t.PMUs, PMU{Unit: str(e["Unit"]), Fixed: f, Generic: g})
	}
	return nil
}

// Counters returns the fixed and generic counters of a PMU unit ("" or "core" for the
// core PMU) from counter.json; ok is false when the table does not say.
func (t *Table) Counters(unit string) (fixed, generic int, ok bool) {
	if unit == "" {
		unit = "core"
	}
	for _, p := range t.PMUs {
		if strings.EqualFold(p.Unit, unit) {
			return p.Fixed, p.Generic, true
		}
	}
	return 0, 0, false
}

// Constraint is where an event may be counted.
type Constraint struct {
	Event string
	Unit  string
	// Fixed is the fixed counter the event lives on, or -1. An event on a fixed
	// counter needs no programmable counter and counts in every slice.
	Fixed int
	// Mask is the set of programmable counters allowed (bit i: counter i); 0 means any
	// (the JSON does not restrict it) unless Fixed >= 0, when it means none.
	Mask uint64
	// Generic is the number of programmable counters of the unit (counter.json), 0 when
	// unknown.
	Generic int
}

// Constraint returns the counter constraint of an event (any case).
func (t *Table) Constraint(event string) (Constraint, bool) {
	e, ok := t.Event(event)
	if !ok {
		return Constraint{}, false
	}
	c := Constraint{Event: e.Name, Unit: e.Unit, Fixed: e.Fixed, Mask: e.Counters}
	_, c.Generic, _ = t.Counters(e.Unit)
	if c.Generic > 0 && c.Generic < 64 && c.Mask != 0 {
		// counter.json is the truth about what exists; a Counter list naming counters
		// beyond it (8 with Hyper-Threading off) is cut to the counters that exist.
		c.Mask &= 1<<uint(c.Generic) - 1
	}
	return c, true
}

// CounterSpec describes a run's events for a scheduler: which of them (by position in
// events) sit on fixed counters, which programmable counters each of the others may use
// (absent: any), and the number of programmable counters of the core PMU (0 when
// counter.json does not say). Events the table does not know are unconstrained.
func (t *Table) CounterSpec(events []string) (fixed []int, allowed map[int]uint64, generic int) {
	allowed = map[int]uint64{}
	_, generic, _ = t.Counters("")
	for i, name := range events {
		c, ok := t.Constraint(name)
		switch {
		case !ok:
		case c.Fixed >= 0:
			fixed = append(fixed, i)
		case c.Mask != 0:
			allowed[i] = c.Mask
		}
	}
	return fixed, allowed, generic
}
