package perf

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/perfabi"
)

// TestCoreEventNames: with the vendor's names of the core PMU's events set, a Namer
// names raw events and events of the core PMU's own type by them (with perf's privilege
// modifier), and generic events still by their generic names; without, type:config.
func TestCoreEventNames(t *testing.T) {
	defer SetCoreEventNames(nil, nil)
	attrs := []Attr{
		{Type: 8, Config: 0x8, Flags: perfabi.FlagExcludeKern | perfabi.FlagExcludeHV},
		{Type: TypeRaw, Config: 0x11},
		{Type: TypeHardware, Config: HWInstructions},
		{Type: 8, Config: 0x99},
	}
	var before Namer
	if got := before.Names(attrs); got[0] != "8:0x8:u" {
		t.Errorf("without vendor names: %q", got)
	}
	SetCoreEventNames([]uint32{8}, map[uint64]string{0x8: "inst_retired", 0x11: "cpu_cycles"})
	var n Namer
	want := []string{"inst_retired:u", "cpu_cycles", "instructions", "8:0x99"}
	if got := n.Names(attrs); !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if u := n.Universe(); !slices.Contains(u, "inst_retired") || !slices.Contains(u, "instructions") {
		t.Errorf("the universe lacks inst_retired or instructions")
	}
}

// TestCorePMUTypes reads the core PMUs' types from a sysfs tree: Arm's and x86's core
// PMUs, not the software PMU or an uncore one.
func TestCorePMUTypes(t *testing.T) {
	dir := t.TempDir()
	for name, typ := range map[string]string{"armv8_pmuv3_0": "8", "software": "1", "arm_cmn_0": "9", "cpu": "4"} {
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "type"), []byte(typ+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := corePMUTypes(dir)
	slices.Sort(got)
	if want := []uint32{4, 8}; !slices.Equal(got, want) {
		t.Errorf("core PMU types %v, want %v", got, want)
	}
}
