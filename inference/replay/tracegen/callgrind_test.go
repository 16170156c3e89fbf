package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// cgEvents are the 17 events callgrind collects with tracegen's settings, in its order.
var cgEvents = []string{"Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw",
	"Bc", "Bcm", "Bi", "Bim", "Ge", "sysCount", "sysTime", "sysCpuTime"}

// checkDerived fails t unless every row of tr holds the six derived identities, spelled
// out here independently of cgDerived, and the misses <= accesses inequalities.
func checkDerived(t *testing.T, tr *replay.Trace) {
	t.Helper()
	at := func(row []uint64, n string) uint64 {
		i := tr.EventIndex(n)
		if i < 0 {
			t.Fatalf("no event %s in %v", n, tr.Events)
		}
		return row[i]
	}
	for r, row := range tr.Counts {
		v := func(n string) uint64 { return at(row, n) }
		for _, c := range []struct {
			name      string
			got, want uint64
		}{
			{"L1_misses", v("L1_misses"), v("I1mr") + v("D1mr") + v("D1mw")},
			{"LL_misses", v("LL_misses"), v("ILmr") + v("DLmr") + v("DLmw")},
			{"D1_misses", v("D1_misses"), v("D1mr") + v("D1mw")},
			{"D_accesses", v("D_accesses"), v("Dr") + v("Dw")},
			{"Br_total", v("Br_total"), v("Bc") + v("Bi")},
			{"Br_misses", v("Br_misses"), v("Bcm") + v("Bim")},
		} {
			if c.got != c.want {
				t.Errorf("row %d: %s = %d, sum of its terms %d", r, c.name, c.got, c.want)
			}
		}
		for _, q := range cgInequalities {
			if v(q[0]) > v(q[1]) {
				t.Errorf("row %d: %s %d > %s %d", r, q[0], v(q[0]), q[1], v(q[1]))
			}
		}
	}
}

func TestAddDerived(t *testing.T) {
	tr := &replay.Trace{Events: slices.Clone(cgEvents)}
	for r := 0; r < 3; r++ {
		row := make([]uint64, len(cgEvents))
		for i := range row {
			row[i] = uint64(1000*(r+1) - 37*i) // accesses exceed misses, as in callgrind
		}
		tr.Counts = append(tr.Counts, row)
	}
	if err := addDerived(tr); err != nil {
		t.Fatal(err)
	}
	want := append(slices.Clone(cgEvents), "L1_misses", "LL_misses", "D1_misses", "D_accesses", "Br_total", "Br_misses")
	if !slices.Equal(tr.Events, want) {
		t.Fatalf("events %v, want %v", tr.Events, want)
	}
	checkDerived(t, tr)
	for name, n := range identitiesOff(tr) {
		if n != 0 {
			t.Errorf("identitiesOff: %s off in %d rows", name, n)
		}
	}
	tr.Counts[1][tr.EventIndex("Br_total")]++
	if off := identitiesOff(tr); off["Br_total"] != 1 || off["L1_misses"] != 0 {
		t.Errorf("identitiesOff after breaking row 1's Br_total: %v", off)
	}
	if err := addDerived(tr); err == nil {
		t.Error("derived twice: accepted")
	}
	if err := addDerived(&replay.Trace{Events: []string{"Ir", "Dr"}, Counts: [][]uint64{{1, 2}}}); err == nil {
		t.Error("derived without the cache events: accepted")
	}
}

// Recording a real program under callgrind with -derived gives a trace with the 17
// events and the six totals, whose identities and inequalities hold in every row.
func TestRecordCallgrindDerived(t *testing.T) {
	if _, err := exec.LookPath("valgrind"); err != nil {
		t.Skip("needs valgrind: not found")
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("needs sh")
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "t.csv")
	// A shell loop runs in one process (builtins only), so callgrind sees all of it.
	cmd := []string{sh, "-c", "i=0; s=0; while [ $i -lt 3000 ]; do s=$((s + i * i % 7)); i=$((i + 1)); done; echo $s"}
	if err := runCallgrind(out, 20000, true, false, cmd); err != nil {
		t.Fatal(err)
	}
	tr, err := replay.ReadFile(out, replay.ReadOptions{TimeColumn: "basic_blocks"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Events) != 17+6 || !slices.Equal(tr.Events[:17], cgEvents) {
		t.Fatalf("events %v: want callgrind's 17 and the 6 totals", tr.Events)
	}
	if tr.Slices() < 5 {
		t.Fatalf("%d rows: want several parts", tr.Slices())
	}
	checkDerived(t, tr)
	whole := tr.Truth(0, tr.Slices())
	if whole[tr.EventIndex("Br_total")] == 0 || whole[tr.EventIndex("L1_misses")] == 0 {
		t.Errorf("totals %v: a shell loop has branches and cold misses", whole)
	}

	// Without -derived the trace keeps the 17 events of the committed cg-*.csv traces.
	plain := filepath.Join(dir, "plain.csv")
	if err := runCallgrind(plain, 20000, false, false, cmd); err != nil {
		t.Fatal(err)
	}
	tr, err = replay.ReadFile(plain, replay.ReadOptions{TimeColumn: "basic_blocks"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tr.Events, cgEvents) {
		t.Errorf("without -derived: events %v, want %v", tr.Events, cgEvents)
	}
}
