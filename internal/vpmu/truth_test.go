package vpmu

import (
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// TestTruthParts: a hardware event's truth is its own pinned copy unless other events of
// the run split its privilege levels; then every event of that family is the sum of one
// user and one kernel copy, shared, so that three events take two counters.
func TestTruthParts(t *testing.T) {
	evs, err := perf.ParseEvents("instructions:u,instructions:k,instructions,cycles,cycles,task-clock,cycles:k")
	if err != nil {
		t.Fatal(err)
	}
	parts := truthParts(evs)
	user := func(a perf.Attr) bool { return a.Flags&perfabi.FlagExcludeUser == 0 }
	kern := func(a perf.Attr) bool { return a.Flags&perfabi.FlagExcludeKern == 0 }
	want := []string{"u", "k", "uk", "uk", "uk", "", "k"}
	for i, w := range want {
		got := ""
		for _, a := range parts[i] {
			switch {
			case user(a) && !kern(a):
				got += "u"
			case kern(a) && !user(a):
				got += "k"
			default:
				t.Errorf("%s: a truth part counts user %v kernel %v, want one level", evs[i].Name, user(a), kern(a))
			}
			if a.Config != evs[i].Attr.Config || a.Type != evs[i].Attr.Type {
				t.Errorf("%s: a truth part is %d:%#x", evs[i].Name, a.Type, a.Config)
			}
		}
		if got != w {
			t.Errorf("%s: truth parts %q, want %q", evs[i].Name, got, w)
		}
	}
	// Without a split, a hardware event is its own truth, modifiers and all.
	evs, err = perf.ParseEvents("instructions:u,cycles")
	if err != nil {
		t.Fatal(err)
	}
	const priv = perfabi.FlagExcludeUser | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV
	for i, p := range truthParts(evs) {
		a := evs[i].Attr
		if len(p) != 1 || p[0].Type != a.Type || p[0].Config != a.Config || p[0].Flags&priv != a.Flags&priv {
			t.Errorf("%s: truth parts %+v, want its own event and levels", evs[i].Name, p)
		}
	}
	// Bits that do not change the count (exclude_guest, which perf sets on some
	// variants only; sampling and read format) do not split a family.
	evs, err = perf.ParseEvents("cycles:u,cycles:k,cycles")
	if err != nil {
		t.Fatal(err)
	}
	evs[0].Attr.Flags |= perfabi.FlagExcludeGuest
	evs[1].Attr.ReadFormat = perfabi.FormatTotalTimeEnabled
	evs[2].Attr.SamplePeriod = 1000
	distinct := map[perf.Attr]bool{}
	for _, p := range truthParts(evs) {
		for _, a := range p {
			distinct[a] = true
		}
	}
	if len(distinct) != 2 {
		t.Errorf("cycles:u (exclude_guest), cycles:k and cycles take %d copies, want 2", len(distinct))
	}
}

// TestBudget: on a machine whose PMU does not count (these VMs) the budget is an error,
// not a number; where it counts, some but not all of more pinned copies than any PMU
// has fit. test/pmu checks the figure on the arm64 guest's PMU.
func TestBudget(t *testing.T) {
	evs, err := perf.ParseEvents("instructions:u,instructions:k,instructions")
	if err != nil {
		t.Fatal(err)
	}
	var attrs []perf.Attr
	for range 20 {
		for _, d := range evs {
			attrs = append(attrs, d.Attr)
		}
	}
	n, err := Budget(attrs, true)
	probe, perr := perf.Open(perf.CountKey(evs[0].Attr), perf.ThisPid, perf.AnyCPU, nil)
	if perr != nil {
		if err == nil {
			t.Errorf("no hardware PMU here (%v), yet a budget of %d counters", perr, n)
		}
		t.Skipf("no hardware PMU: %v (budget: %v)", perr, err)
	}
	probe.Close()
	if err != nil || n < 1 || n >= len(attrs) {
		t.Errorf("budget of %d copies after the truth of instructions: %d, %v", len(attrs), n, err)
	}
}
