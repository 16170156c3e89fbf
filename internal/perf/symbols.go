package perf

import (
	"maps"
	"slices"
	"strings"
)

type symbol struct {
	typ    uint32
	config uint64
}

// symbols are perf's generic event names and aliases (tools/perf/util/parse-events.c,
// event_symbols_hw and event_symbols_sw).
var symbols = map[string]symbol{
	"cpu-cycles":              {TypeHardware, HWCPUCycles},
	"cycles":                  {TypeHardware, HWCPUCycles},
	"instructions":            {TypeHardware, HWInstructions},
	"cache-references":        {TypeHardware, HWCacheReferences},
	"cache-misses":            {TypeHardware, HWCacheMisses},
	"branch-instructions":     {TypeHardware, HWBranchInstructions},
	"branches":                {TypeHardware, HWBranchInstructions},
	"branch-misses":           {TypeHardware, HWBranchMisses},
	"bus-cycles":              {TypeHardware, HWBusCycles},
	"stalled-cycles-frontend": {TypeHardware, HWStalledCyclesFrontend},
	"idle-cycles-frontend":    {TypeHardware, HWStalledCyclesFrontend},
	"stalled-cycles-backend":  {TypeHardware, HWStalledCyclesBackend},
	"idle-cycles-backend":     {TypeHardware, HWStalledCyclesBackend},
	"ref-cycles":              {TypeHardware, HWRefCPUCycles},

	"cpu-clock":        {TypeSoftware, SWCPUClock},
	"task-clock":       {TypeSoftware, SWTaskClock},
	"page-faults":      {TypeSoftware, SWPageFaults},
	"faults":           {TypeSoftware, SWPageFaults},
	"context-switches": {TypeSoftware, SWContextSwitches},
	"cs":               {TypeSoftware, SWContextSwitches},
	"cpu-migrations":   {TypeSoftware, SWCPUMigrations},
	"migrations":       {TypeSoftware, SWCPUMigrations},
	"minor-faults":     {TypeSoftware, SWPageFaultsMin},
	"major-faults":     {TypeSoftware, SWPageFaultsMaj},
	"alignment-faults": {TypeSoftware, SWAlignmentFaults},
	"emulation-faults": {TypeSoftware, SWEmulationFaults},
	"dummy":            {TypeSoftware, SWDummy},
	"bpf-output":       {TypeSoftware, SWBPFOutput},
	"cgroup-switches":  {TypeSoftware, SWCgroupSwitches},
}

// Cache ids, ops and results of TypeHWCache configs (config = id | op<<8 | result<<16),
// with perf's spellings (tools/perf/util/evsel.c, evsel__hw_cache).
var (
	cacheNames = [][]string{
		{"L1-dcache", "l1-d", "l1d", "L1-data"},
		{"L1-icache", "l1-i", "l1i", "L1-instruction"},
		{"LLC", "L2"},
		{"dTLB", "d-tlb", "Data-TLB"},
		{"iTLB", "i-tlb", "Instruction-TLB"},
		{"branch", "branches", "bpu", "btb", "bpc"},
		{"node"},
	}
	cacheOps = [][]string{
		{"load", "loads", "read"},
		{"store", "stores", "write"},
		{"prefetch", "prefetches", "speculative-read", "speculative-load"},
	}
	cacheResults = [][]string{
		{"refs", "Reference", "ops", "access"},
		{"misses", "miss"},
	}
)

func lookupFold(tab [][]string, s string) int {
	for i, names := range tab {
		for _, n := range names {
			if strings.EqualFold(n, s) {
				return i
			}
		}
	}
	return -1
}

// parseCache resolves cache[-op][-result] into a TypeHWCache config; names contain '-'
// themselves, so every split point is tried.
func parseCache(s string) (uint64, bool) {
	for i := range cacheNames {
		for _, n := range cacheNames[i] {
			if len(s) < len(n) || !strings.EqualFold(s[:len(n)], n) {
				continue
			}
			rest := s[len(n):]
			if rest == "" {
				return 0, false // perf needs an op or result
			}
			if rest[0] != '-' {
				continue
			}
			op, res := 0, 0 // default: read access
			opSet, resSet := false, false
			for _, part := range splitCacheRest(rest[1:]) {
				if o := lookupFold(cacheOps, part); o >= 0 && !opSet && !resSet {
					op, opSet = o, true
				} else if r := lookupFold(cacheResults, part); r >= 0 && !resSet {
					res, resSet = r, true
				} else {
					op = -1
					break
				}
			}
			if op < 0 || !(opSet || resSet) {
				continue
			}
			return uint64(i) | uint64(op)<<8 | uint64(res)<<16, true
		}
	}
	return 0, false
}

// splitCacheRest splits "speculative-read-misses" into parts that are whole op or result
// names (op names contain '-').
func splitCacheRest(s string) []string {
	var out []string
	for s != "" {
		best := ""
		for _, tab := range [][][]string{cacheOps, cacheResults} {
			for _, names := range tab {
				for _, n := range names {
					if len(n) > len(best) && len(s) >= len(n) && strings.EqualFold(s[:len(n)], n) && (len(s) == len(n) || s[len(n)] == '-') {
						best = s[:len(n)]
					}
				}
			}
		}
		if best == "" {
			return []string{s}
		}
		out = append(out, best)
		s = strings.TrimPrefix(s[len(best):], "-")
	}
	return out
}

func isCacheName(s string) bool {
	_, ok := parseCache(s)
	return ok
}

// SymbolNames lists perf's generic hardware and software event names and aliases, sorted.
func SymbolNames() []string {
	return slices.Sorted(maps.Keys(symbols))
}

// CacheEventNames lists the canonical cache event names (cache-op-result).
func CacheEventNames() []string {
	var out []string
	for _, c := range cacheNames {
		for _, o := range cacheOps {
			for _, r := range cacheResults {
				if r[0] == "refs" {
					out = append(out, c[0]+"-"+o[1])
				} else {
					out = append(out, c[0]+"-"+o[0]+"-misses")
				}
			}
		}
	}
	return out
}
