package pmuevents

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestHostEnvFakeTree(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("sys/devices/system/cpu/smt/active", "1\n")
	write("sys/devices/system/cpu/online", "0-3\n")
	// Two packages, one core with two threads each.
	for cpu, topo := range map[string][2]string{"0": {"0", "0"}, "1": {"0", "0"}, "2": {"1", "0"}, "3": {"1", "0"}} {
		write("sys/devices/system/cpu/cpu"+cpu+"/topology/physical_package_id", topo[0])
		write("sys/devices/system/cpu/cpu"+cpu+"/topology/core_id", topo[1])
	}
	write("sys/bus/event_source/devices/cpu_core/caps/slots", "6\n")
	write("proc/cpuinfo", "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6130 CPU @ 2.10GHz\n")
	write("sys/firmware/acpi/tables/DSDT", "")
	got := HostEnv(root).Literals
	want := map[string]float64{
		"#smt_on": 1, "#core_wide": 0, "#num_cpus_online": 4, "#num_packages": 2, "#num_dies": 2,
		"#num_cores": 2, "#slots": 6, "#system_tsc_freq": 2.1e9, "#has_pmem": 0,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HostEnv = %v\nwant %v", got, want)
	}
	if got := HostEnv(t.TempDir()).Literals; len(got) != 0 {
		t.Errorf("empty tree gave literals %v", got)
	}
}

func TestHostEnvThisMachine(t *testing.T) {
	lit := HostEnv("/").Literals
	if lit["#num_cpus_online"] < 1 || lit["#num_packages"] < 1 || lit["#num_cores"] < 1 {
		t.Errorf("this machine's topology not read: %v", lit)
	}
	if lit["#num_cores"] > lit["#num_cpus_online"] {
		t.Errorf("more cores than CPUs: %v", lit)
	}
	t.Logf("%v", lit)
}

func TestParseCPUList(t *testing.T) {
	for s, want := range map[string][]int{"0": {0}, "0-2,5": {0, 1, 2, 5}, "1,3-4": {1, 3, 4}} {
		if got, ok := parseCPUList(s); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("parseCPUList(%q) = %v %v", s, got, ok)
		}
	}
	for _, bad := range []string{"", "a", "3-1", "-1", "0-99999999"} {
		if _, ok := parseCPUList(bad); ok {
			t.Errorf("parseCPUList(%q) accepted", bad)
		}
	}
}
