package test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDropinRead compares, in one run of test/c/readbench.c under bayesperf run, a
// read() of a counting event served from the shim's mirror with the raw read system call
// on the same fd. It reports ns/read for both and their ratio (native/mirror).
func BenchmarkDropinRead(b *testing.B) {
	prog := filepath.Join(dropinBins(b), "readbench")
	var native, mirror float64
	for b.Loop() {
		r, st := bayesperfRun(b, prog, "100000")
		if r.status != 0 {
			b.Fatalf("readbench: status %d\n%s%s", r.status, r.stdout, r.stderr)
		}
		if st.MirrorReads < 200000 || st.PassthroughReads != 0 {
			b.Fatalf("stats %+v: the shim's reads were not served from the mirror", st)
		}
		for line := range strings.Lines(r.stdout) {
			f := strings.Fields(line)
			if len(f) != 2 {
				continue
			}
			v, _ := strconv.ParseFloat(f[1], 64)
			switch f[0] {
			case "native_ns":
				native = v
			case "shim_ns":
				mirror = v
			}
		}
	}
	b.ReportMetric(native, "native-ns/read")
	b.ReportMetric(mirror, "mirror-ns/read")
	if mirror > 0 {
		b.ReportMetric(native/mirror, "speedup")
	}
}
