package schedule

import (
	"slices"
	"testing"
)

// held returns how many of group g's events configuration c holds.
func held(c []EventID, g []EventID) int {
	n := 0
	for _, e := range g {
		if slices.Contains(c, e) {
			n++
		}
	}
	return n
}

func ids(xs ...int) []EventID {
	out := make([]EventID, len(xs))
	for i, x := range xs {
		out[i] = EventID(x)
	}
	return out
}

// With singleton groups and no constraints, slice t counts events t, t+1, ..., t+N-1
// (mod E): the rotation by one group per slice that perf users see as (N/E) running.
func TestKernelSingletonsRotate(t *testing.T) {
	s, err := Kernel(Spec{Events: 7, Counters: 3})
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 7 {
		t.Fatalf("cycle length %d, want 7 (one rotation per group)", s.Len())
	}
	for tt := range 20 {
		want := ids((tt)%7, (tt+1)%7, (tt+2)%7)
		if got := s.At(tt); !slices.Equal(got, want) {
			t.Fatalf("slice %d: %v, want %v", tt, got, want)
		}
	}
	// Fairness: every event runs exactly N/E of the time.
	for e, sh := range s.Share(7) {
		if sh != 3.0/7 {
			t.Errorf("event %d share %v, want 3/7", e, sh)
		}
	}
}

// Fixed events always count and take their turn in the rotation without using a
// programmable counter.
func TestKernelFixed(t *testing.T) {
	s, err := Kernel(Spec{Events: 5, Counters: 2, Fixed: ids(1)})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]EventID{ids(0, 2), ids(2, 3), ids(2, 3), ids(3, 4), ids(4, 0)}
	for tt, w := range want {
		if got := s.At(tt); !slices.Equal(got, w) {
			t.Errorf("slice %d: %v, want %v", tt, got, w)
		}
		if c := s.Counted(tt); !slices.Contains(c, 1) {
			t.Errorf("slice %d: fixed event 1 not counted: %v", tt, c)
		}
	}
}

// The kernel stops at the first group that does not fit, even if a later group would.
func TestKernelStopsAtFirstFailure(t *testing.T) {
	// Groups: {0,1}, {2}, {3,4,5}, {6}. 4 counters.
	sp := Spec{Events: 7, Counters: 4, Groups: [][]EventID{ids(0, 1), ids(3, 4, 5)}}
	s, err := Kernel(sp)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]EventID{
		ids(0, 1, 2),    // {0,1},{2} placed; {3,4,5} does not fit; {6} refused after it
		ids(2, 3, 4, 5), // {2},{3,4,5}; {6} does not fit
		ids(3, 4, 5, 6), // {3,4,5},{6}
		ids(6, 0, 1, 2), // {6},{0,1},{2}
	}
	if s.Len() != len(want) {
		t.Fatalf("cycle %d, want %d", s.Len(), len(want))
	}
	for i, w := range want {
		if got := s.At(i); !slices.Equal(got, w) {
			t.Errorf("config %d: %v, want %v", i, got, w)
		}
	}
}

// Groups stay intact in every configuration, and no configuration exceeds the budget or
// violates a counter mask.
func TestKernelGroupsAndMasks(t *testing.T) {
	sp := Spec{
		Events: 9, Counters: 4,
		Groups:  [][]EventID{ids(2, 5), ids(7, 8, 0)},
		Allowed: map[EventID]uint64{3: 0b0100, 4: 0b0100, 6: 0b0011},
	}
	s, err := Kernel(sp)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range s.Configs {
		if len(c) > sp.Counters {
			t.Errorf("config %d over budget: %v", i, c)
		}
		if !sp.assignable(c) {
			t.Errorf("config %d violates counter masks: %v", i, c)
		}
		if slices.Contains(c, 3) && slices.Contains(c, 4) {
			t.Errorf("config %d holds 3 and 4, which share the only counter 2: %v", i, c)
		}
		for _, g := range sp.Groups {
			if n := held(c, g); n != 0 && n != len(g) {
				t.Errorf("config %d splits group %v: %v", i, g, c)
			}
		}
	}
	for e, sh := range s.Share(9) {
		if sh == 0 {
			t.Errorf("event %d never counted", e)
		}
	}
}

func TestKernelValidityHook(t *testing.T) {
	// The hook forbids events 0 and 1 together.
	sp := Spec{Events: 4, Counters: 3, Valid: func(c []EventID) bool {
		return !(slices.Contains(c, 0) && slices.Contains(c, 1))
	}}
	s, err := Kernel(sp)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.At(0); !slices.Equal(got, ids(0)) {
		t.Errorf("slice 0: %v, want [0] (1 refused, rotation stops there)", got)
	}
}

func TestSpecErrors(t *testing.T) {
	bad := []Spec{
		{Events: 3, Counters: 1, Groups: [][]EventID{ids(0, 1)}},        // group too big
		{Events: 3, Counters: 2, Fixed: ids(5)},                         // out of range
		{Events: 3, Counters: 2, Groups: [][]EventID{ids(0), ids(0)}},   // twice
		{Events: 3, Counters: 2, Allowed: map[EventID]uint64{1: 0b100}}, // no counter
		{Events: -1, Counters: 2},
	}
	for i, sp := range bad {
		if _, err := Kernel(sp); err == nil {
			t.Errorf("spec %d: no error", i)
		}
	}
}

// TestKeepUnfit: {0,1,2} on 2 counters beside singleton 3 and fixed 4. Without KeepUnfit
// the spec is an error; with it the group is never counted and the kernel's round robin
// tries it in its turn and stops there, as Linux does (merge_sched_in: after a group that
// fails, no further group goes on), so a slice in which it comes before 3 counts only the
// fixed event: of the three rotations (the group, 3, and fixed 4 each lead once), only
// the one led by 3 counts 3.
// The overlap schedule leaves it out and counts 3 alone.
func TestKeepUnfit(t *testing.T) {
	sp := Spec{Events: 5, Counters: 2, Fixed: ids(4), Groups: [][]EventID{ids(0, 1, 2)}}
	if _, err := Kernel(sp); err == nil {
		t.Fatal("unfit group accepted without KeepUnfit")
	}
	sp.KeepUnfit = true
	k, err := Kernel(sp)
	if err != nil {
		t.Fatal(err)
	}
	if k.Len() != 3 || len(k.At(0)) != 0 || !slices.Equal(k.At(1), ids(3)) || len(k.At(2)) != 0 {
		t.Errorf("kernel: %v, want C0=[] (the group fails first) C1=[3] C2=[] (4 is fixed, then the group fails)", k)
	}
	if got := k.Never(5); !slices.Equal(got, ids(0, 1, 2)) {
		t.Errorf("kernel: never counted %v, want [0 1 2]", got)
	}
	o, err := Overlap(sp, nil, OverlapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Never(5); !slices.Equal(got, ids(0, 1, 2)) {
		t.Errorf("overlap %v: never counted %v, want [0 1 2]", o, got)
	}
	if sh := o.Share(5); sh[3] != 1 || sh[4] != 1 {
		t.Errorf("overlap %v: shares %v, want 3 and 4 always counted", o, sh)
	}
}
