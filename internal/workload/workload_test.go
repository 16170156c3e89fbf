package workload

import (
	"context"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestPlanDeterministic(t *testing.T) {
	for _, n := range Names() {
		w, _ := Lookup(n)
		p1 := w.Plan(rand.New(rand.NewPCG(7, 7^0x9e3779b97f4a7c15)), 2*time.Second)
		p2 := w.Plan(rand.New(rand.NewPCG(7, 7^0x9e3779b97f4a7c15)), 2*time.Second)
		p3 := w.Plan(rand.New(rand.NewPCG(8, 8^0x9e3779b97f4a7c15)), 2*time.Second)
		if !reflect.DeepEqual(p1, p2) {
			t.Errorf("%s: same seed, different plans", n)
		}
		if reflect.DeepEqual(p1, p3) {
			t.Errorf("%s: different seeds, same plan", n)
		}
		var sum time.Duration
		for _, p := range p1 {
			sum += p.Duration
		}
		if sum != 2*time.Second {
			t.Errorf("%s: phases add up to %v", n, sum)
		}
	}
	if _, err := Lookup("nope"); err == nil {
		t.Error("unknown workload found")
	}
}

func TestMemoryPhaseFaults(t *testing.T) {
	// A memory burst of 512 pages must cost at least 512 minor faults of this process.
	var r0, r1 unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &r0)
	if err := memoryBurst(512, 0); err != nil {
		t.Fatal(err)
	}
	unix.Getrusage(unix.RUSAGE_SELF, &r1)
	if d := r1.Minflt - r0.Minflt; d < 512 {
		t.Fatalf("512-page burst caused %d minor faults", d)
	}
}

func TestEveryWorkloadRuns(t *testing.T) {
	for _, n := range Names() {
		w, _ := Lookup(n)
		start := time.Now()
		if err := w.Run(context.Background(), 150*time.Millisecond, 1); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if el := time.Since(start); el < 150*time.Millisecond || el > 2*time.Second {
			t.Errorf("%s ran %v for 150ms", n, el)
		}
	}
}
