package replay

import (
	"path/filepath"
	"testing"
)

// The committed real-program traces read cleanly, are of the size the README promises,
// and obey the identities that hold exactly over a whole run (single rows may be off by
// one at a tick, see testdata/README.md).
func TestCommittedTraces(t *testing.T) {
	files, err := filepath.Glob("testdata/*.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("%d traces in testdata, want at least 3", len(files))
	}
	for _, f := range files {
		tr, err := ReadFile(f, ReadOptions{TimeColumn: "wall_ns"})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tr.Events); n < 28 || n > 35 {
			t.Errorf("%s: %d events, want 28-35", f, n)
		}
		if tr.Slices() < 50 {
			t.Errorf("%s: only %d slices", f, tr.Slices())
		}
		whole := tr.Truth(0, tr.Slices())
		get := func(n string) float64 {
			i := tr.EventIndex(n)
			if i < 0 {
				t.Fatalf("%s: no event %s", f, n)
			}
			return whole[i]
		}
		if pf, mm := get("page-faults"), get("minor-faults")+get("major-faults"); pf != mm || pf == 0 {
			t.Errorf("%s: page-faults %v != minor+major %v over the run", f, pf, mm)
		}
		if cs, sw := get("context-switches"), get("sched:sched_switch"); cs != sw {
			t.Errorf("%s: context-switches %v != sched:sched_switch %v", f, cs, sw)
		}
		if get("task-clock") == 0 || get("raw_syscalls:sys_enter") == 0 {
			t.Errorf("%s: a program that neither ran nor made syscalls", f)
		}
	}
}
