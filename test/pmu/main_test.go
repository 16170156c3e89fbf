package pmu

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// report collects the figures of build/pmu/report.json; TestMain writes it.
var report = struct {
	sync.Mutex
	m map[string]any
}{m: map[string]any{}}

func record(key string, v any) {
	report.Lock()
	defer report.Unlock()
	report.m[key] = v
}

func TestMain(m *testing.M) {
	code := m.Run()
	if path := os.Getenv("BAYESPERF_PMU_REPORT"); path != "" {
		// make pmu-test boots the guest twice (the second time as a CPU that Linux's
		// pmu-events maps): the second run adds its figures to the first's.
		if b, err := os.ReadFile(path); err == nil {
			var old map[string]any
			if json.Unmarshal(b, &old) == nil {
				for k, v := range old {
					if _, ok := report.m[k]; !ok {
						report.m[k] = v
					}
				}
			}
		}
		b, err := json.MarshalIndent(report.m, "", "  ")
		if err == nil {
			err = os.WriteFile(path, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "write %s: %v\n", path, err)
			code = 1
		}
	}
	os.Exit(code)
}

// needPMU skips unless perf counts a hardware event here, and returns the PMU's name
// and its number of counters as its driver announced them.
func needPMU(t *testing.T) (name string, counters int) {
	t.Helper()
	if _, err := exec.LookPath("perf"); err != nil {
		t.Skip("needs the perf binary (linux-perf)")
	}
	out, err := exec.Command("perf", "stat", "-x,", "-e", "instructions:u", "--", "true").CombinedOutput()
	if err != nil || !countedLine(string(out), "instructions:u") {
		t.Skipf("needs a hardware PMU that counts instructions (perf says %q); run make pmu-test",
			strings.TrimSpace(string(out)))
	}
	dm, err := exec.Command("dmesg").Output()
	if err != nil {
		t.Fatalf("dmesg: %v", err)
	}
	for _, l := range strings.Split(string(dm), "\n") {
		// "hw perfevents: enabled with armv8_pmuv3 PMU driver, 7 counters available"
		if i := strings.Index(l, "enabled with "); i >= 0 && strings.Contains(l, "counters available") {
			f := strings.Fields(l[i+len("enabled with "):])
			if len(f) >= 4 {
				n, err := strconv.Atoi(f[3])
				if err == nil {
					return f[0], n
				}
			}
		}
	}
	t.Fatalf("the kernel log does not say how many counters the PMU has")
	return "", 0
}

// countedLine reports whether perf's -x, output has a counted line for event.
func countedLine(out, event string) bool {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, ",")
		if len(f) > 3 && f[2] == event {
			_, err := strconv.ParseUint(f[0], 10, 64)
			return err == nil
		}
	}
	return false
}

// bin is the path of an arm64 build in the tree's bin/ (make pmu-tree).
func bin(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not built: make pmu-tree builds it (%v)", name, err)
	}
	return p
}

// statLine is one counter line of perf stat -x, output.
type statLine struct {
	Value   string // as printed: a number, <not counted> or <not supported>
	Event   string
	Running uint64 // time_running, ns
	Percent float64
}

// parseStat returns perf stat -x, counter lines (not -I), in order.
func parseStat(t *testing.T, out string) []statLine {
	t.Helper()
	var ls []statLine
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(l, ",")
		if len(f) < 5 || strings.HasPrefix(l, "#") {
			continue
		}
		run, _ := strconv.ParseUint(f[3], 10, 64)
		pct, _ := strconv.ParseFloat(f[4], 64)
		ls = append(ls, statLine{Value: f[0], Event: f[2], Running: run, Percent: pct})
	}
	return ls
}
