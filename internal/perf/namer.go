package perf

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/bayesperf/bayesperf/perfabi"
)

// Namer turns the (type, config) of an opened event back into perf's event name, the
// name relations are written in (the sidecar's stages see attrs, not the names a tool
// was given). Tracepoint ids are read from tracefs once, the first time a
// client has a tracepoint (thousands of files: hundreds of milliseconds on a busy
// machine).
type Namer struct {
	genOnce, tpOnce sync.Once
	// tpLoaded is set once tp and tpNames are complete: Universe, which does not wait
	// for tracefs, reads them only then (Preload may be filling them in another
	// goroutine).
	tpLoaded atomic.Bool
	generic  map[[2]uint64]string
	tp       map[uint64]string
	genNames []string
	tpNames  []string
}

func (n *Namer) loadGeneric() {
	n.generic = map[[2]uint64]string{}
	for _, name := range SymbolNames() {
		evs, err := ParseEvents(name)
		if err != nil || len(evs) != 1 {
			continue
		}
		k := [2]uint64{uint64(evs[0].Attr.Type), evs[0].Attr.Config}
		// Of perf's aliases keep the longest (page-faults, not faults; context-switches,
		// not cs): the spelling relations use.
		if old, ok := n.generic[k]; !ok || len(name) > len(old) {
			n.generic[k] = name
		}
		n.genNames = append(n.genNames, name)
	}
	n.loadCore()
}

func (n *Namer) loadTracepoints() {
	defer n.tpLoaded.Store(true)
	n.tp = map[uint64]string{}
	dir, err := FindTracefs(false)
	if err != nil {
		return
	}
	ids, _ := filepath.Glob(filepath.Join(dir, "events", "*", "*", "id"))
	for _, m := range ids {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			continue
		}
		name := filepath.Base(filepath.Dir(filepath.Dir(m))) + ":" + filepath.Base(filepath.Dir(m))
		n.tp[id] = name
		n.tpNames = append(n.tpNames, name)
	}
}

// Preload loads everything Names may need (tracefs: hundreds of milliseconds on a busy
// machine), ahead of the first use.
func (n *Namer) Preload() {
	n.genOnce.Do(n.loadGeneric)
	n.tpOnce.Do(n.loadTracepoints)
}

// Universe is every event name known so far, for relation.BindUniverse: perf's generic
// names, and the tracepoints once loaded (Names loads them for attrs with a tracepoint,
// so relations over a run's tracepoints always see them all).
func (n *Namer) Universe() []string {
	n.genOnce.Do(n.loadGeneric)
	out := append([]string(nil), n.genNames...)
	if n.tpLoaded.Load() {
		out = append(out, n.tpNames...)
	}
	return out
}

// Names returns one distinct name per attr: perf's name, else type:config, with perf's
// privilege modifier when the attr excludes some levels (instructions:u, cycles:k); a
// repeated name gets a #k suffix (the model needs distinct names; relation.BindUniverse
// binds x#2 = x).
func (n *Namer) Names(attrs []Attr) []string {
	n.genOnce.Do(n.loadGeneric)
	for _, a := range attrs {
		if a.Type == TypeTracepoint {
			n.tpOnce.Do(n.loadTracepoints)
			break
		}
	}
	out := make([]string, len(attrs))
	for i, a := range attrs {
		name, ok := "", false
		if a.Type == TypeTracepoint {
			name, ok = n.tp[a.Config]
		} else {
			name, ok = n.generic[[2]uint64{uint64(a.Type), a.Config}]
		}
		if !ok {
			name = fmt.Sprintf("%d:%#x", a.Type, a.Config)
		}
		out[i] = name + PrivilegeSuffix(a)
	}
	return Distinct(out)
}

// Distinct returns names with each repeat suffixed #k (x, x#2, x#3), as Names does: the
// model needs distinct names, and relation.BindUniverse binds x#2 = x. Without it a
// repeated event's copies are separate unknowns that no relation ties together.
func Distinct(names []string) []string {
	out := make([]string, len(names))
	seen := map[string]int{}
	for i, name := range names {
		seen[name]++
		if k := seen[name]; k > 1 {
			name = fmt.Sprintf("%s#%d", name, k)
		}
		out[i] = name
	}
	return out
}

// PrivilegeSuffix is perf's modifier for the privilege levels a counts (":u", ":k",
// ":uk", ...), "" when it counts all of them (or, meaninglessly, none).
func PrivilegeSuffix(a Attr) string {
	var lv []byte
	if a.Flags&perfabi.FlagExcludeUser == 0 {
		lv = append(lv, 'u')
	}
	if a.Flags&perfabi.FlagExcludeKern == 0 {
		lv = append(lv, 'k')
	}
	if a.Flags&perfabi.FlagExcludeHV == 0 {
		lv = append(lv, 'h')
	}
	if len(lv) == 0 || len(lv) == 3 {
		return ""
	}
	return ":" + string(lv)
}

// LevelParts returns attrs that count the privilege levels a counts one level each, user
// then kernel, and are otherwise a (their counts add up to a's, the hypervisor level
// taken as empty: see relation.BindUniverse); just a when it counts one level or none.
func LevelParts(a Attr) []Attr {
	const priv = perfabi.FlagExcludeUser | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV
	user, kern := a.Flags&perfabi.FlagExcludeUser == 0, a.Flags&perfabi.FlagExcludeKern == 0
	if !user || !kern {
		return []Attr{a}
	}
	u, k := a, a
	u.Flags = a.Flags&^priv | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV
	k.Flags = a.Flags&^priv | perfabi.FlagExcludeUser | perfabi.FlagExcludeHV
	return []Attr{u, k}
}

// CountKey is the part of a that decides what a counting copy of it counts: the event, its
// PMU's config words, the privilege levels and exclude_idle. Sampling, the read format,
// the inherit, enable and pinned bits and the guest bits do not (guest time is taken as
// absent: perf sets exclude_guest on some variants of an event and not on others).
func CountKey(a Attr) Attr {
	const keep = perfabi.FlagExcludeUser | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV | perfabi.FlagExcludeIdle
	return Attr{Type: a.Type, Size: perfabi.AttrSize, Config: a.Config, Config1: a.Config1, Config2: a.Config2,
		Config3: a.Config3, BPType: a.BPType, Flags: a.Flags & keep}
}
