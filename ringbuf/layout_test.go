package ringbuf

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

// TestPageLayoutMatchesC compiles a C program over <linux/perf_event.h> and compares
// the compiler's offsetof/sizeof and capability bit positions with the Go constants.
// Requires gcc and the kernel UAPI headers (make deps installs gcc and linux-libc-dev).
func TestPageLayoutMatchesC(t *testing.T) {
	fields := []struct {
		c   string
		off int
	}{
		{"version", OffVersion}, {"compat_version", OffCompatVersion}, {"lock", OffLock},
		{"index", OffIndex}, {"offset", OffOffset}, {"time_enabled", OffTimeEnabled},
		{"time_running", OffTimeRunning}, {"capabilities", OffCapabilities},
		{"pmc_width", OffPMCWidth}, {"time_shift", OffTimeShift}, {"time_mult", OffTimeMult},
		{"time_offset", OffTimeOffset}, {"time_zero", OffTimeZero}, {"size", OffSize},
		{"__reserved_1", OffReserved1}, {"time_cycles", OffTimeCycles},
		{"time_mask", OffTimeMask}, {"__reserved", OffReserved}, {"data_head", OffDataHead},
		{"data_tail", OffDataTail}, {"data_offset", OffDataOffset}, {"data_size", OffDataSize},
		{"aux_head", OffAuxHead}, {"aux_tail", OffAuxTail}, {"aux_offset", OffAuxOffset},
		{"aux_size", OffAuxSize},
	}
	caps := []struct {
		c   string
		bit uint64
	}{
		{"cap_bit0", CapBit0}, {"cap_bit0_is_deprecated", CapBit0IsDeprecated},
		{"cap_user_rdpmc", CapUserRdpmc}, {"cap_user_time", CapUserTime},
		{"cap_user_time_zero", CapUserTimeZero}, {"cap_user_time_short", CapUserTimeShort},
	}
	var src strings.Builder
	src.WriteString("#include <stdio.h>\n#include <stddef.h>\n#include <linux/perf_event.h>\n")
	src.WriteString("int main(void) {\n\tstruct perf_event_mmap_page p;\n")
	src.WriteString("\tprintf(\"sizeof %zu\\n\", sizeof(struct perf_event_mmap_page));\n")
	src.WriteString("\tprintf(\"sizeof.header %zu\\n\", sizeof(struct perf_event_header));\n")
	for _, f := range fields {
		src.WriteString("\tprintf(\"" + f.c + " %zu\\n\", offsetof(struct perf_event_mmap_page, " + f.c + "));\n")
	}
	for _, c := range caps {
		src.WriteString("\tp.capabilities = 0; p." + c.c + " = 1; printf(\"cap." + c.c + " %llu\\n\", (unsigned long long)p.capabilities);\n")
	}
	src.WriteString("\treturn 0;\n}\n")

	out := testutil.RunC(t, "layout", src.String())
	got := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("parse probe line %q: %v", sc.Text(), err)
		}
		got[k] = n
	}
	check := func(name string, want uint64) {
		t.Helper()
		c, ok := got[name]
		if !ok {
			t.Errorf("%s: missing from the C probe output", name)
		} else if c != want {
			t.Errorf("%s: C says %d, Go says %d", name, c, want)
		}
	}
	check("sizeof", MetaPageSize)
	check("sizeof.header", HeaderSize)
	for _, f := range fields {
		check(f.c, uint64(f.off))
	}
	for _, c := range caps {
		check("cap."+c.c, c.bit)
	}
}

// TestMetaPageRoundTrip checks that WriteMetaPage and ReadMetaPage agree on every field,
// with distinct values so that a swapped or overlapping offset shows.
func TestMetaPageRoundTrip(t *testing.T) {
	p := MetaPage{
		Version: 1, CompatVersion: 2, Lock: 3, Index: 4, Offset: -5, TimeEnabled: 6,
		TimeRunning: 7, Capabilities: 8, PMCWidth: 9, TimeShift: 10, TimeMult: 11,
		TimeOffset: 12, TimeZero: 13, Size: 14, Reserved1: 15, TimeCycles: 16, TimeMask: 17,
		DataHead: 18, DataTail: 19, DataOffset: 20, DataSize: 21, AuxHead: 22, AuxTail: 23,
		AuxOffset: 24, AuxSize: 25,
	}
	mem := make([]byte, MetaPageSize)
	for i := range mem {
		mem[i] = 0xff // WriteMetaPage must clear the reserved bytes
	}
	if err := WriteMetaPage(mem, p); err != nil {
		t.Fatal(err)
	}
	q, err := ReadMetaPage(mem)
	if err != nil {
		t.Fatal(err)
	}
	if p != q {
		t.Fatalf("round trip changed the page:\n got %+v\nwant %+v", q, p)
	}
	for i := OffReserved; i < OffDataHead; i++ {
		if mem[i] != 0 {
			t.Fatalf("reserved byte %d = %#x, want 0", i, mem[i])
		}
	}
	if _, err := ReadMetaPage(mem[:MetaPageSize-1]); err == nil {
		t.Fatal("ReadMetaPage accepted a short page")
	}
}
