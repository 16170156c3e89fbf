package perf

import (
	"slices"
	"testing"
)

func TestParseCPUList(t *testing.T) {
	for in, want := range map[string][]int{
		"0": {0}, "0-3": {0, 1, 2, 3}, "0-1,5,7-8\n": {0, 1, 5, 7, 8}, "3,1,3": {3, 1}, "": nil,
		"3-3": {3}, "1,0": {1, 0}, "0-1,5-5\n ": {0, 1, 5},
	} {
		got, err := ParseCPUList(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseCPUList(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"a", "1-", "-1", "3-1", "0-9999", "1,,2"} {
		if got, err := ParseCPUList(bad); err == nil {
			t.Errorf("ParseCPUList(%q) = %v, want an error", bad, got)
		}
	}
	on, err := OnlineCPUs()
	if err != nil || len(on) == 0 {
		t.Fatalf("OnlineCPUs() = %v, %v", on, err)
	}
}

func FuzzParseCPUList(f *testing.F) {
	f.Add("0-3,5")
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := ParseCPUList(s)
		if err == nil && len(cpus) > 4097*len(s) {
			t.Fatalf("%d cpus from %q", len(cpus), s)
		}
	})
}
