package vstage

import (
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// TestNames: the attrs perf opens for perf's names come back as those names (the longest
// alias, the spelling relations use), a repeated event gets a suffix, an unknown one its
// type:config.
func TestNames(t *testing.T) {
	list := "faults,cs,minor-faults,task-clock"
	if _, err := perf.FindTracefs(false); err == nil {
		list += ",raw_syscalls:sys_enter,syscalls:sys_enter_getpid"
	}
	descs, err := perf.ParseEvents(list)
	if err != nil {
		t.Fatal(err)
	}
	attrs := []perf.Attr{}
	for _, d := range descs {
		attrs = append(attrs, d.Attr)
	}
	attrs = append(attrs, descs[0].Attr, perf.Attr{Type: perf.TypeSoftware, Config: 999})
	var n namer
	got := n.names(attrs)
	want := []string{"page-faults", "context-switches", "minor-faults", "task-clock"}
	if len(descs) > 4 {
		want = append(want, "raw_syscalls:sys_enter", "syscalls:sys_enter_getpid")
	}
	want = append(want, "page-faults#2", "1:0x3e7")
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if len(descs) > 4 && !slices.Contains(n.universe(), "raw_syscalls:sys_exit") {
		t.Errorf("the universe lacks raw_syscalls:sys_exit")
	}
}

// TestClockEvents: task-clock as perf stat opens it (exclude_guest set) counts its
// target's running time, the virtual PMU's enabled time; one that excludes user or
// kernel time does not, nor does any other event.
func TestClockEvents(t *testing.T) {
	tc := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock, Flags: perf.FlagExcludeGuest}
	ku := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWTaskClock, Flags: perf.FlagExcludeKern}
	pf := perf.Attr{Type: perf.TypeSoftware, Config: perf.SWPageFaults}
	descs := []perf.EventDesc{{Attr: pf}, {Attr: tc}, {Attr: ku}, {Attr: tc}}
	got := clockEvents(descs, []string{"page-faults", "task-clock", "task-clock:u", "task-clock#2"})
	if want := []string{"task-clock", "task-clock#2"}; !slices.Equal(got, want) {
		t.Errorf("clock events %q, want %q", got, want)
	}
}
