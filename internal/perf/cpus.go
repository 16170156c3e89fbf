package perf

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ParseCPUList parses a CPU list as sysfs writes it and perf's -C takes it: "0-3,5,7-8".
// The CPUs come back in the order given, each once.
func ParseCPUList(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var cpus []int
	seen := map[int]bool{}
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		a, err := strconv.ParseUint(lo, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("parse cpu list %q: %q is not a CPU number", s, lo)
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 16); err != nil {
				return nil, fmt.Errorf("parse cpu list %q: %q is not a CPU number", s, hi)
			}
		}
		if b < a || b-a > 4096 {
			return nil, fmt.Errorf("parse cpu list %q: bad range %s", s, item)
		}
		for c := int(a); c <= int(b); c++ {
			if !seen[c] {
				seen[c] = true
				cpus = append(cpus, c)
			}
		}
	}
	return cpus, nil
}

// OnlineCPUs lists the CPUs the kernel has online (/sys/devices/system/cpu/online).
func OnlineCPUs() ([]int, error) {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return nil, fmt.Errorf("read online cpus: %w", err)
	}
	return ParseCPUList(string(b))
}
