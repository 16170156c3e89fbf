package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/inference/graph"
)

// checkSchedule asserts the properties every schedule of the spec must have: budget,
// masks, validity, groups intact, fixed events apart, every event covered.
func checkSchedule(t *testing.T, sp Spec, s *Schedule) {
	t.Helper()
	fixed := map[EventID]bool{}
	for _, e := range sp.Fixed {
		fixed[e] = true
	}
	seen := map[EventID]bool{}
	for i, c := range s.Configs {
		if len(c) > sp.Counters || !sp.assignable(c) {
			t.Fatalf("config %d %v breaks the budget %d or the masks", i, c, sp.Counters)
		}
		if sp.Valid != nil && !sp.Valid(c) {
			t.Fatalf("config %d %v rejected by the validity hook", i, c)
		}
		if len(slices.Compact(slices.Sorted(slices.Values(c)))) != len(c) {
			t.Fatalf("config %d %v repeats an event", i, c)
		}
		for _, e := range c {
			if fixed[e] {
				t.Fatalf("config %d holds fixed event %d", i, e)
			}
			seen[e] = true
		}
		for _, g := range sp.Groups {
			if n := held(c, g); n != 0 && n != len(g) {
				progr := 0
				for _, e := range g {
					if !fixed[e] {
						progr++
					}
				}
				if n != progr {
					t.Fatalf("config %d %v splits group %v", i, c, g)
				}
			}
		}
	}
	for e := range sp.Events {
		if !fixed[EventID(e)] && !seen[EventID(e)] {
			t.Fatalf("event %d never counted in %v", e, s)
		}
	}
}

// linkedCycle asserts the overlap property: consecutive configurations, the last and the
// first included, share an event.
func linkedCycle(t *testing.T, s *Schedule) {
	t.Helper()
	n := s.Len()
	if n < 2 {
		return
	}
	for i := range n {
		a, b := s.Configs[i], s.Configs[(i+1)%n]
		shared := false
		for _, e := range a {
			if slices.Contains(b, e) {
				shared = true
			}
		}
		if !shared {
			t.Fatalf("configs %d %v and %d %v share no event: %v", i, a, (i+1)%n, b, s)
		}
	}
}

func TestOverlapNoRelations(t *testing.T) {
	for _, c := range []struct{ events, counters, carry int }{{12, 4, 1}, {35, 4, 1}, {35, 4, 2}, {9, 2, 1}, {5, 3, 1}, {64, 8, 3}} {
		sp := Spec{Events: c.events, Counters: c.counters}
		s, err := Overlap(sp, nil, OverlapOptions{Carry: c.carry})
		if err != nil {
			t.Fatal(err)
		}
		checkSchedule(t, sp, s)
		linkedCycle(t, s)
		// Each configuration adds counters-carry new events, plus at most one bridge.
		maxLen := (c.events-c.carry+(c.counters-c.carry)-1)/(c.counters-c.carry) + 1
		if s.Len() > maxLen {
			t.Errorf("%+v: cycle of %d configs, want at most %d: %v", c, s.Len(), maxLen, s)
		}
		for i, cfg := range s.Configs {
			if len(cfg) != c.counters {
				t.Errorf("%+v: config %d uses %d of %d counters", c, i, len(cfg), c.counters)
			}
		}
	}
}

// The carried event rotates: no event holds a counter in every configuration.
func TestOverlapRotatesCarry(t *testing.T) {
	sp := Spec{Events: 20, Counters: 4}
	s, err := Overlap(sp, nil, OverlapOptions{Carry: 1})
	if err != nil {
		t.Fatal(err)
	}
	for e, sh := range s.Share(20) {
		if sh == 1 {
			t.Errorf("event %d counted in every configuration: %v", e, s)
		}
	}
}

// With relations, the first configuration spreads over the graph (events outside each
// other's blankets), and the Related option co-counts relation members instead.
func TestOverlapUsesBlankets(t *testing.T) {
	// Two relation clusters {0,1,2} and {3,4,5}, plus loose events 6..9.
	g, err := graph.New(make([]string, 10), []graph.Factor{
		{Name: "a", Events: []EventID{0, 1, 2}},
		{Name: "b", Events: []EventID{3, 4, 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	sp := Spec{Events: 10, Counters: 3}
	s, err := Overlap(sp, g, OverlapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSchedule(t, sp, s)
	first := s.Configs[0]
	if len(g.Blanket(first)) < 4 {
		t.Errorf("first config %v informs only %v; spreading over both clusters informs 4", first, g.Blanket(first))
	}
	r, err := Overlap(sp, g, OverlapOptions{Related: true, Carry: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkSchedule(t, sp, r)
	linkedCycle(t, r)
	if got := slices.Sorted(slices.Values(r.Configs[0])); !slices.Equal(got, []EventID{0, 1, 2}) {
		t.Errorf("related first config %v, want the cluster [0 1 2]", got)
	}
	// Without carry, consecutive configurations share no event but are linked through
	// the relations: each spreads over both clusters.
	for i := range s.Len() {
		if !g.Linked(s.Configs[i], s.Configs[(i+1)%s.Len()]) {
			t.Errorf("configs %d and %d not linked in the graph: %v", i, i+1, s)
		}
	}
	c, err := Overlap(sp, g, OverlapOptions{Carry: 1})
	if err != nil {
		t.Fatal(err)
	}
	checkSchedule(t, sp, c)
	linkedCycle(t, c)
}

// Random specs with groups, fixed events, masks and a validity hook: the schedule is
// valid, covers everything, keeps groups and links consecutive configurations whenever
// the constraints leave room.
func TestOverlapRandomSpecs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for iter := range 300 {
		n := 3 + r.IntN(30)
		counters := 2 + r.IntN(5)
		sp := Spec{Events: n, Counters: counters, Allowed: map[EventID]uint64{}}
		perm := r.Perm(n)
		pos := 0
		for pos < n && r.IntN(3) == 0 {
			size := 2 + r.IntN(counters-1)
			if pos+size > n {
				break
			}
			var g []EventID
			for _, p := range perm[pos : pos+size] {
				g = append(g, EventID(p))
			}
			sp.Groups = append(sp.Groups, g)
			pos += size
		}
		for range r.IntN(3) {
			if pos < n {
				sp.Fixed = append(sp.Fixed, EventID(perm[pos]))
				pos++
			}
		}
		for e := range n {
			if r.IntN(6) == 0 {
				sp.Allowed[EventID(e)] = uint64(1+r.IntN(1<<counters-1)) | 1
			}
		}
		forbidden := [2]EventID{EventID(r.IntN(n)), EventID(r.IntN(n))}
		if forbidden[0] != forbidden[1] {
			sp.Valid = func(c []EventID) bool {
				return !(slices.Contains(c, forbidden[0]) && slices.Contains(c, forbidden[1]))
			}
		}
		var fs []graph.Factor
		for range r.IntN(5) {
			fs = append(fs, graph.Factor{Name: "f", Events: []EventID{EventID(r.IntN(n)), EventID(r.IntN(n)), EventID(r.IntN(n))}})
		}
		g, _ := graph.New(make([]string, n), fs)
		s, err := Overlap(sp, g, OverlapOptions{Carry: 1 + r.IntN(2)})
		if err != nil {
			// Only specs where some group can never be counted may fail, and Kernel
			// must agree.
			if _, kerr := Kernel(sp); kerr == nil {
				t.Fatalf("iter %d: overlap failed (%v) where the kernel schedules: %+v", iter, err, sp)
			}
			continue
		}
		checkSchedule(t, sp, s)
		if k, err := Kernel(sp); err != nil {
			t.Fatalf("iter %d: kernel failed where overlap did not: %v", iter, err)
		} else {
			checkSchedule(t, sp, k)
		}
	}
}

func ExampleOverlap() {
	sp := Spec{Events: 10, Counters: 4}
	s, _ := Overlap(sp, nil, OverlapOptions{})
	fmt.Println(s)
	c, _ := Overlap(sp, nil, OverlapOptions{Carry: 1})
	fmt.Println(c)
	// Output:
	// fixed []; C0=[0 1 2 3] C1=[4 5 6 7] C2=[8 9 0 1]
	// fixed []; C0=[0 1 2 3] C1=[0 4 5 6] C2=[4 7 8 9] C3=[7 0 1 2]
}

// With one counter no two configurations can share an event: the schedule degrades to
// one event per slice, each exactly once, like the kernel's.
func TestOverlapOneCounter(t *testing.T) {
	sp := Spec{Events: 5, Counters: 1}
	s, err := Overlap(sp, nil, OverlapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkSchedule(t, sp, s)
	if s.Len() != 5 {
		t.Fatalf("%d configurations, want 5: %v", s.Len(), s)
	}
	for e, sh := range s.Share(5) {
		if sh != 0.2 {
			t.Errorf("event %d share %v, want 1/5", e, sh)
		}
	}
	// Everything fits at once: one configuration, no multiplexing.
	all, err := Overlap(Spec{Events: 3, Counters: 4, Fixed: []EventID{1}}, nil, OverlapOptions{})
	if err != nil || all.Len() != 1 || len(all.Configs[0]) != 2 {
		t.Fatalf("no multiplexing needed: %v, %v", all, err)
	}
}
