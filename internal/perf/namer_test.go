package perf

import (
	"slices"
	"testing"
)

// TestNames: the attrs perf opens for perf's names come back as those names (the longest
// alias, the spelling relations use), a repeated event gets a suffix, an unknown one its
// type:config, and privilege levels are named as perf's modifiers.
func TestNames(t *testing.T) {
	list := "faults,cs,minor-faults,task-clock"
	if _, err := FindTracefs(false); err == nil {
		list += ",raw_syscalls:sys_enter,syscalls:sys_enter_getpid"
	}
	descs, err := ParseEvents(list)
	if err != nil {
		t.Fatal(err)
	}
	attrs := []Attr{}
	for _, d := range descs {
		attrs = append(attrs, d.Attr)
	}
	attrs = append(attrs, descs[0].Attr, Attr{Type: TypeSoftware, Config: 999})
	priv, err := ParseEvents("instructions:u,instructions:k,instructions,cycles:uk,cycles:u")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range priv {
		attrs = append(attrs, d.Attr)
	}
	var n Namer
	got := n.Names(attrs)
	want := []string{"page-faults", "context-switches", "minor-faults", "task-clock"}
	if len(descs) > 4 {
		want = append(want, "raw_syscalls:sys_enter", "syscalls:sys_enter_getpid")
	}
	want = append(want, "page-faults#2", "1:0x3e7",
		"instructions:u", "instructions:k", "instructions", "cpu-cycles:uk", "cpu-cycles:u")
	if !slices.Equal(got, want) {
		t.Errorf("names %q, want %q", got, want)
	}
	if len(descs) > 4 && !slices.Contains(n.Universe(), "raw_syscalls:sys_exit") {
		t.Errorf("the universe lacks raw_syscalls:sys_exit")
	}
}

// TestNamerPreloadConcurrent: Preload in a goroutine (as the sidecar starts it) while a
// stage names a run without tracepoints and asks for the universe; run with -race. The
// universe always has the generic names, and the tracepoints once they are loaded.
func TestNamerPreloadConcurrent(t *testing.T) {
	descs, err := ParseEvents("page-faults,minor-faults")
	if err != nil {
		t.Fatal(err)
	}
	attrs := []Attr{descs[0].Attr, descs[1].Attr}
	var n Namer
	done := make(chan struct{})
	go func() { n.Preload(); close(done) }()
	n.Names(attrs)
	if u := n.Universe(); !slices.Contains(u, "page-faults") {
		t.Errorf("the universe lacks page-faults: %d names", len(u))
	}
	<-done
	if _, err := FindTracefs(false); err == nil && !slices.Contains(n.Universe(), "raw_syscalls:sys_enter") {
		t.Errorf("after Preload the universe lacks raw_syscalls:sys_enter")
	}
}
