package pmuevents

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// HostEnv reads the #literals of metric formulas from a Linux system tree rooted at root
// ("/" for this machine; tests pass a fake tree), as perf's expr__get_literal does:
//
//	#smt_on            /sys/devices/system/cpu/smt/active
//	#num_cpus_online   /sys/devices/system/cpu/online
//	#num_packages      distinct topology/physical_package_id
//	#num_dies          distinct (package, die_id)
//	#num_cores         distinct (package, die, core_id)
//	#core_wide         1 without SMT (a per-task run then counts whole cores), else 0
//	#slots             /sys/bus/event_source/devices/{cpu,cpu_core}/caps/slots
//	#system_tsc_freq   the "@ 2.10GHz" of /proc/cpuinfo's model name (x86)
//	#has_pmem          /sys/firmware/acpi/tables/NFIT exists
//
// A literal whose source is missing is left out, so formulas needing it are skipped
// rather than computed with a made-up value.
func HostEnv(root string) Env {
	lit := map[string]float64{}
	cpu := filepath.Join(root, "sys/devices/system/cpu")
	if b, err := os.ReadFile(filepath.Join(cpu, "smt/active")); err == nil {
		if v, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			lit["#smt_on"] = float64(min(v, 1))
			lit["#core_wide"] = float64(1 - min(v, 1))
		}
	}
	online := -1
	if b, err := os.ReadFile(filepath.Join(cpu, "online")); err == nil {
		if cpus, ok := parseCPUList(strings.TrimSpace(string(b))); ok {
			online = len(cpus)
			lit["#num_cpus_online"] = float64(online)
			pkgs, dies, cores := map[string]bool{}, map[string]bool{}, map[string]bool{}
			complete := true
			for _, c := range cpus {
				topo := filepath.Join(cpu, "cpu"+strconv.Itoa(c), "topology")
				p, err1 := os.ReadFile(filepath.Join(topo, "physical_package_id"))
				k, err2 := os.ReadFile(filepath.Join(topo, "core_id"))
				if err1 != nil || err2 != nil {
					complete = false
					break
				}
				d, err := os.ReadFile(filepath.Join(topo, "die_id"))
				if err != nil {
					d = []byte("0") // kernels without dies: one per package
				}
				pk, dk := strings.TrimSpace(string(p)), strings.TrimSpace(string(d))
				pkgs[pk] = true
				dies[pk+"/"+dk] = true
				cores[pk+"/"+dk+"/"+strings.TrimSpace(string(k))] = true
			}
			if complete && len(cpus) > 0 {
				lit["#num_packages"] = float64(len(pkgs))
				lit["#num_dies"] = float64(len(dies))
				lit["#num_cores"] = float64(len(cores))
			}
		}
	}
	for _, pmu := range []string{"cpu", "cpu_core"} {
		if b, err := os.ReadFile(filepath.Join(root, "sys/bus/event_source/devices", pmu, "caps/slots")); err == nil {
			if v, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil && v > 0 {
				lit["#slots"] = v
				break
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(root, "proc/cpuinfo")); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if !strings.HasPrefix(line, "model name") {
				continue
			}
			if i := strings.LastIndex(line, "@ "); i >= 0 {
				f := strings.TrimSpace(line[i+2:])
				if g, ok := strings.CutSuffix(f, "GHz"); ok {
					if v, err := strconv.ParseFloat(g, 64); err == nil && v > 0 {
						lit["#system_tsc_freq"] = v * 1e9
					}
				}
			}
			break
		}
	}
	if _, err := os.Stat(filepath.Join(root, "sys/firmware/acpi/tables/NFIT")); err == nil {
		lit["#has_pmem"] = 1
	} else if _, err := os.Stat(filepath.Join(root, "sys/firmware/acpi/tables")); err == nil {
		lit["#has_pmem"] = 0
	}
	return Env{Literals: lit}
}

// parseCPUList parses a kernel CPU list such as "0-3,8,10-11".
func parseCPUList(s string) ([]int, bool) {
	var out []int
	if s == "" {
		return nil, false
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, false
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a || b-a > 1<<16 {
				return nil, false
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out, true
}
