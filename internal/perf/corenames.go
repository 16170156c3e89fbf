package perf

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// coreNames are the vendor's names of the core PMU's events (SetCoreEventNames).
var coreNames atomic.Pointer[coreEventNames]

type coreEventNames struct {
	types []uint32
	names map[uint64]string
}

// SetCoreEventNames makes Namers name the events of the CPU's core PMU (attrs of
// PERF_TYPE_RAW or of one of types, CorePMUTypes) by names[config]: the vendor's name
// of that event number, from the host's pmu-events table (pmuevents.Table.CoreNames),
// so that relations written in those names bind. perf opens `inst_retired` on arm64 as
// the armv8_pmuv3 PMU's type with config 0x8, which Names would otherwise call
// "8:0x8". Generic events keep their generic names (instructions, not inst_retired; the
// table relates the two). Call it before the first Namer names anything: a Namer
// reads the names once.
func SetCoreEventNames(types []uint32, names map[uint64]string) {
	if len(names) == 0 {
		coreNames.Store(nil)
		return
	}
	coreNames.Store(&coreEventNames{types: append([]uint32{TypeRaw}, types...), names: names})
}

// CorePMUTypes returns the perf types of this machine's CPU PMUs, as sysfs lists them:
// "cpu" (x86), "cpu_core" and "cpu_atom" (hybrid x86), and the Arm PMUs (armv8_pmuv3_0,
// armv8_cortex_a72, ...), which are the PMUs with a "cpus" file that are not uncore.
func CorePMUTypes() []uint32 {
	return corePMUTypes(sysfsPMUDir)
}

func corePMUTypes(dir string) []uint32 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []uint32
	for _, e := range ents {
		name := e.Name()
		core := name == "cpu" || name == "cpu_core" || name == "cpu_atom" || strings.HasPrefix(name, "armv8")
		if !core {
			if _, err := os.Stat(filepath.Join(dir, name, "cpus")); err == nil && !strings.Contains(name, "uncore") {
				core = true
			}
		}
		if !core {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name, "type"))
		if err != nil {
			continue
		}
		t, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 32)
		if err != nil {
			continue
		}
		out = append(out, uint32(t))
	}
	return out
}

// loadCore adds the core PMU's vendor names (SetCoreEventNames) to the generic ones.
func (n *Namer) loadCore() {
	c := coreNames.Load()
	if c == nil {
		return
	}
	seen := map[string]bool{}
	for _, t := range c.types {
		for config, name := range c.names {
			k := [2]uint64{uint64(t), config}
			if _, ok := n.generic[k]; ok {
				continue
			}
			n.generic[k] = name
			if !seen[name] {
				seen[name] = true
				n.genNames = append(n.genNames, name)
			}
		}
	}
}
