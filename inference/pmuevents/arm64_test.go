package pmuevents

import (
	"path/filepath"
	"testing"
)

// TestArmGeneric: an Arm core's table names its events by number (CoreNames: 0x8 is
// inst_retired) and relates perf's generic events to the vendor's of the same number
// (instructions = inst_retired), exactly; an x86 table does neither.
func TestArmGeneric(t *testing.T) {
	n1 := load(t, "arm64/arm/neoverse-n1")
	names := n1.CoreNames()
	for code, want := range map[uint64]string{0x8: "inst_retired", 0x11: "cpu_cycles", 0x23: "stall_frontend"} {
		if names[code] != want {
			t.Errorf("event %#x is %q, want %q", code, names[code], want)
		}
	}
	rels, _ := n1.Relations(hostEnv)
	for _, want := range []string{"instructions = inst_retired", "cpu-cycles = cpu_cycles", "stalled-cycles-frontend = stall_frontend"} {
		found := false
		for _, r := range rels {
			if r.Text == want {
				found = true
				if r.Tol != 0 {
					t.Errorf("%s: tolerance %g, want exact", want, r.Tol)
				}
			}
		}
		if !found {
			t.Errorf("neoverse-n1 lacks %q", want)
		}
	}
	sk := load(t, "x86/skylake")
	if sk.CoreNames() != nil || len(sk.genericRelations()) != 0 {
		t.Errorf("an x86 table names raw events by number or relates generic events")
	}
}

// TestOpen: Open takes a CPU directory at any depth below the arch root (x86/skylake,
// arm64/arm/neoverse-n1) as that CPU's table.
func TestOpen(t *testing.T) {
	root := archRoot(t)
	for _, dir := range []string{"x86/skylake", "arm64/arm/neoverse-n1"} {
		tb, err := Open(filepath.Join(root, dir))
		if err != nil {
			t.Errorf("open %s: %v", dir, err)
			continue
		}
		if tb.Dir != dir || len(tb.Events) == 0 {
			t.Errorf("open %s: table %s with %d events", dir, tb.Dir, len(tb.Events))
		}
	}
}
