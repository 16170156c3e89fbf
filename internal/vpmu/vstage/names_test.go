package vstage

import (
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// TestClockEvents: task-clock as perf stat opens it (exclude_guest set) counts its
// target's running time, the virtual PMU's enabled time; one that excludes user or
// kernel time does not, nor does any other event.
func TestClockEvents(t *testing.T) {
	tc := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock, Flags: perfabi.FlagExcludeGuest}
	ku := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock, Flags: perfabi.FlagExcludeKern}
	pf := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWPageFaults}
	descs := []perf.EventDesc{{Attr: pf}, {Attr: tc}, {Attr: ku}, {Attr: tc}}
	got := clockEvents(descs, []string{"page-faults", "task-clock", "task-clock:u", "task-clock#2"})
	if want := []string{"task-clock", "task-clock#2"}; !slices.Equal(got, want) {
		t.Errorf("clock events %q, want %q", got, want)
	}
}
