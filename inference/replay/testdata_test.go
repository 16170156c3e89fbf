package replay

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/relation"
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
		if strings.HasPrefix(filepath.Base(f), "cg-") {
			continue // callgrind traces: TestCommittedCallgrindTraces
		}
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

// The callgrind traces read with their basic_blocks time column, and the relations of
// testdata/callgrind.rel parse, bind to every event they name and hold in every row.
func TestCommittedCallgrindTraces(t *testing.T) {
	files, _ := filepath.Glob("testdata/cg-*.csv")
	if len(files) == 0 {
		t.Fatal("no callgrind traces in testdata")
	}
	f, err := os.Open("testdata/callgrind.rel")
	if err != nil {
		t.Fatal(err)
	}
	rels, err := relation.ParseFile("testdata/callgrind.rel", f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		tr, err := ReadFile(file, ReadOptions{TimeColumn: "basic_blocks"})
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Events) != 17 || tr.Slices() < 50 {
			t.Errorf("%s: %d events, %d slices", file, len(tr.Events), tr.Slices())
		}
		bound := relation.Bind(rels, tr.Events)
		if len(bound) != len(rels) {
			t.Fatalf("%s: %d of %d relations bind", file, len(bound), len(rels))
		}
		for i, row := range tr.Counts {
			val := func(name string) float64 { return float64(row[tr.EventIndex(name)]) }
			for _, r := range bound {
				ok, err := r.Holds(val, 0)
				if err != nil || !ok {
					t.Fatalf("%s row %d: %s does not hold (%v)", file, i, r, err)
				}
			}
		}
	}
}
