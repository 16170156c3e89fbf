package test

// End-to-end test of `bayesperf bench read`: it runs the real benchmark (the C program
// under bayesperf run, with the sidecar) and checks that the figures exist and are sane.
// Needs what the drop-in tests need (perf_event_open for software events, gcc, make).
// Speed is never asserted beyond what holds by construction: a read served from shared
// memory costs more than the bare seqlock it contains and less than a system call.

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var readbenchOnce sync.Once

// readbenchBins returns the drop-in binaries' directory with bayesperf-readbench in it.
func readbenchBins(t *testing.T) string {
	t.Helper()
	dir := dropinBins(t)
	exe := filepath.Join(dir, "bayesperf-readbench")
	var err error
	readbenchOnce.Do(func() {
		if bin := os.Getenv("BAYESPERF_BIN"); bin != "" {
			if err = copyFile(filepath.Join(bin, "bayesperf-readbench"), exe); err == nil {
				return
			}
		}
		root, _ := filepath.Abs("..")
		var out []byte
		if out, err = exec.Command("make", "-s", "-C", root, "BIN="+dir, exe).CombinedOutput(); err != nil {
			t.Logf("make %s:\n%s", exe, out)
		}
	})
	if err != nil {
		t.Fatalf("build bayesperf-readbench: %v", err)
	}
	return dir
}

func TestBenchReadJSON(t *testing.T) {
	dir := readbenchBins(t)
	const batches, iters = 30, 500
	r := run(t, nil, filepath.Join(dir, "bayesperf"), "bench", "read", "--json",
		"--batches", "30", "--iterations", "15000", "--age-samples", "300", "--seed", "3")
	if r.status != 0 {
		t.Fatalf("bench read: status %d\n%s%s", r.status, r.stdout, r.stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("bench read --json printed no JSON object: %v\n%s", err, r.stdout)
	}
	num := func(k string) float64 {
		t.Helper()
		v, ok := m[k].(float64)
		if !ok {
			t.Fatalf("%s = %v (%T), want a number\n%s", k, m[k], m[k], r.stdout)
		}
		return v
	}
	native, shim, floor := num("native_read_ns"), num("shim_read_ns"), num("floor_ns")
	if !(floor > 0 && floor <= shim && shim < native) {
		t.Errorf("want 0 < floor <= shim < native: floor %v, shim %v, native %v ns", floor, shim, native)
	}
	if got := num("native_over_shim"); got != native/shim {
		t.Errorf("native_over_shim %v, want %v", got, native/shim)
	}
	// The share of reads that needed the precise clock: counted by the shim in the
	// client page, out of the mirror reads.
	if pr, mr, share := num("precise_clock_reads"), num("mirror_reads"), num("precise_clock_share"); pr > mr || mr == 0 || share != pr/mr {
		t.Errorf("precise_clock_reads %v of mirror_reads %v, share %v", pr, mr, share)
	}
	if num("clock_ns") <= 0 || num("precise_clock_ns") <= 0 {
		t.Errorf("clock_ns %v, precise_clock_ns %v: want both timed", m["clock_ns"], m["precise_clock_ns"])
	}
	for _, k := range []string{"native_spread", "shim_spread", "floor_spread"} {
		s, ok := m[k].(map[string]any)
		if !ok || !(s["p10"].(float64) <= s["p50"].(float64) && s["p50"].(float64) <= s["p90"].(float64)) || s["n"].(float64) != batches {
			t.Errorf("%s = %v, want p10 <= p50 <= p90 over %d batches", k, m[k], batches)
		}
	}
	// rdpmc: a figure where the kernel lets user space read the counter, else null with
	// the reason. Whether this machine has a PMU is the kernel's to say.
	switch v := m["rdpmc_ns"].(type) {
	case nil:
		if reason, _ := m["rdpmc_reason"].(string); reason == "" {
			t.Errorf("rdpmc_ns is null without an rdpmc_reason")
		}
	case float64:
		if v <= 0 {
			t.Errorf("rdpmc_ns = %v", v)
		}
	default:
		t.Errorf("rdpmc_ns = %v (%T)", v, v)
	}
	p50, p99, mx := num("age_p50_us"), num("age_p99_us"), num("age_max_us")
	if !(p50 >= 0 && p50 <= p99 && p99 <= mx) {
		t.Errorf("ages: want 0 <= p50 <= p99 <= max, got %v, %v, %v us", p50, p99, mx)
	}
	if num("batches") != batches || num("batch_reads") != iters {
		t.Errorf("batches %v of %v reads, want %d of %d", m["batches"], m["batch_reads"], batches, iters)
	}
	if num("age_samples") != 300 {
		t.Errorf("age_samples = %v, want 300", m["age_samples"])
	}
	// Every timed shim read came from the mirror (bench read fails otherwise; check the
	// figures it reports agree).
	if mr, pt := num("mirror_reads"), num("passthrough_reads"); mr < (batches+1)*iters || pt != 0 {
		t.Errorf("mirror_reads %v, passthrough_reads %v", mr, pt)
	}
}

func TestBenchReadTableAndUsage(t *testing.T) {
	dir := readbenchBins(t)
	bp := filepath.Join(dir, "bayesperf")
	r := run(t, nil, bp, "bench", "read", "--batches", "5", "--iterations", "1000", "--age-samples", "20")
	if r.status != 0 {
		t.Fatalf("bench read: status %d\n%s%s", r.status, r.stdout, r.stderr)
	}
	for _, want := range []string{"native read(2)", "shim mirror read()", "floor: raw seqlock", "native / shim =", "shim - floor  =", "read the precise clock", "data age of shim values"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := run(t, nil, bp, "bench", "--help"); r.status != 0 || !strings.Contains(r.stdout, "SYNOPSIS") {
		t.Errorf("bench --help: status %d\n%s", r.status, r.stdout)
	}
	for _, args := range [][]string{{"bench"}, {"bench", "write"}, {"bench", "read", "--iterations", "0"},
		{"bench", "read", "--age-samples", "-1"}, {"bench", "read", "--iterations", "10", "--batches", "20"}, {"bench", "read", "extra"}, {"bench", "read", "--bogus"}} {
		if r := run(t, nil, append([]string{bp}, args...)...); r.status != 2 || r.stderr == "" {
			t.Errorf("%q: status %d, stderr %q; want 2 with a message", args, r.status, r.stderr)
		}
	}
	// Without the C program next to the binary, a clear usage error, not a crash.
	if r := run(t, nil, bp, "bench", "read", "--readbench", filepath.Join(dir, "nonexistent")); r.status != 2 || !strings.Contains(r.stderr, "make build") {
		t.Errorf("missing readbench: status %d, stderr %q", r.status, r.stderr)
	}
}
