package vpmu

import (
	"math"
	"sort"
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/testutil"
)

// emulationNoise runs the mixed workload under one kernel view with truth and returns,
// per event, the truth counted in the slices the view scheduled the event in and the sum
// over those slices of |view count - truth count|: the error the emulation itself adds
// (a real PMU switches events atomically at the slice boundary).
func emulationNoise(t *testing.T) (evs []perf.EventDesc, tot, diff []float64) {
	t.Helper()
	evs, ks := kernelEvents(t, testEvents, 4, []int{0})
	res, err := RunCommand(Config{Events: evs, Views: []View{{"kernel", ks}}, Truth: true}, target("mixed", 600), 0)
	if err != nil {
		t.Fatal(err)
	}
	diff = make([]float64, len(evs))
	tot = make([]float64, len(evs))
	for _, st := range res.Steps {
		for i, r := range st.Views[0].Readings {
			if r.Running > 0 {
				diff[i] += math.Abs(float64(r.Count) - float64(st.Truth[i]))
				tot[i] += float64(st.Truth[i])
			} else if r.Count != 0 {
				t.Errorf("slice %d: %s not scheduled but counted %d", st.Index, evs[i].Name, r.Count)
			}
		}
	}
	for i := range evs {
		t.Logf("%-28s truth while scheduled %12.0f  Σ|view-truth| %10.0f", evs[i].Name, tot[i], diff[i])
	}
	return evs, tot, diff
}

// TestEmulationNoise: software events and tracepoints are never multiplexed by the
// kernel, so their views are derived from the always-on copies, and a view's count in a
// slice it scheduled the event in is the truth of that slice, exactly.
func TestEmulationNoise(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	evs, tot, diff := emulationNoise(t)
	counted := 0
	for i := range evs {
		if diff[i] != 0 {
			t.Errorf("%s: view counts differ from the truth by %.0f over its slices (truth %.0f)", evs[i].Name, diff[i], tot[i])
		}
		if tot[i] > 0 {
			counted++
		}
	}
	if counted < len(evs)/2 {
		t.Fatalf("only %d of %d events counted anything while scheduled", counted, len(evs))
	}
}

// TestEmulationNoiseViewCopies measures the path hardware events take (each view has its
// own copies, switched by ioctl after the truth read), forced on software events: copies
// are switched and read right after their truth, so the median over events of the
// difference must stay within 2% of the counts. What slips in between the two reads is
// whatever the machine does to this process there (preemption, interrupts), so a run
// is taken up to three times and the best judged: a CI run on a busy machine measured
// 2.2% once (minor-faults 4.5%, raw_syscalls:sys_exit 2.2%), while a change that reads
// the copies later is off in every run.
func TestEmulationNoiseViewCopies(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	viewCopies = true
	defer func() { viewCopies = false }()
	best := math.Inf(1)
	for try := 1; try <= 3 && best > 0.02; try++ {
		m, worst := viewCopiesError(t)
		t.Logf("run %d: median per-slice emulation error %.2f%%, worst event %.2f%%", try, 100*m, 100*worst)
		// A single event may suffer when this process is preempted between a truth
		// read and its copy's (syscall storms run at ~1 event/µs), hence the loose bound;
		// the median is what the design guarantees.
		if worst > 0.15 {
			t.Errorf("run %d: an event's view copies are %.1f%% off the truth per slice", try, 100*worst)
		}
		best = min(best, m)
	}
	if best > 0.02 {
		t.Errorf("median per-slice emulation error %.1f%% at best over three runs, want at most 2%%", 100*best)
	}
}

// viewCopiesError is one emulationNoise run's median and largest, over events that
// counted at least 500 while scheduled, of the relative per-slice error.
func viewCopiesError(t *testing.T) (median, worst float64) {
	t.Helper()
	evs, tot, diff := emulationNoise(t)
	var rel []float64
	for i := range evs {
		if tot[i] >= 500 {
			rel = append(rel, diff[i]/tot[i])
		}
	}
	if len(rel) == 0 {
		t.Fatal("no event counted enough to measure")
	}
	sort.Float64s(rel)
	return rel[len(rel)/2], rel[len(rel)-1]
}
