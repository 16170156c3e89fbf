package baseline

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

// feed gives an estimator unit-duration slices of one event with the given counts;
// observed[t] says whether the event ran in slice t.
func feed(t *testing.T, est inference.Estimator, counts []uint64, observed []bool) {
	t.Helper()
	for i, c := range counts {
		s := inference.Slice{Index: i, Duration: 1}
		r := inference.Reading{Event: 0, Enabled: 1}
		if observed[i] {
			r.Count, r.Running = c, 1
		}
		s.Readings = []inference.Reading{r}
		if err := est.Observe(s); err != nil {
			t.Fatal(err)
		}
	}
	est.Finish()
}

func perSlice(est inference.Estimator, n int) []float64 {
	out := make([]float64, n)
	for i := range n {
		out[i] = est.Estimate(i, i+1)[0].Value
	}
	return out
}

func TestHandComputed(t *testing.T) {
	counts := []uint64{7, 10, 99, 99, 40, 99, 99, 60}
	obs := []bool{false, true, false, false, true, false, false, true}
	want := map[Kind][]float64{
		// fixed: before the first observation the first rate; then hold the last rate.
		Fixed: {10, 10, 10, 10, 40, 40, 40, 60},
		// linear: hold at the front, interpolate between 10@1 and 40@4 and 40@4 and 60@7.
		Linear: {10, 10, 20, 30, 40, 40 + 20.0/3, 40 + 40.0/3, 60},
	}
	for k, w := range want {
		e := New(k, 1)
		feed(t, e, counts, obs)
		got := perSlice(e, len(counts))
		for i := range w {
			if math.Abs(got[i]-w[i]) > 1e-9 {
				t.Fatalf("%s: per-slice %v, want %v", k, got, w)
			}
		}
		if s := e.Estimate(1, 2)[0].Status; s != inference.StatusExact {
			t.Errorf("%s: observed slice status %v", k, s)
		}
		if s := e.Estimate(0, 3)[0].Status; s != inference.StatusScaled {
			t.Errorf("%s: interpolated status %v", k, s)
		}
		// An interval is the sum of its slices.
		if v := e.Estimate(2, 6)[0].Value; math.Abs(v-(w[2]+w[3]+w[4]+w[5])) > 1e-9 {
			t.Errorf("%s: interval value %v", k, v)
		}
	}
	// linux: count * enabled / running over the interval.
	l := New(Linux, 1)
	feed(t, l, counts, obs)
	if v := l.Estimate(0, 4)[0]; v.Value != 40 || v.Status != inference.StatusScaled {
		t.Errorf("linux [0,4): %+v, want 10*4/1 = 40 scaled", v)
	}
	if v := l.Estimate(2, 4)[0]; v.Value != 0 || v.Status != inference.StatusNotCounted {
		t.Errorf("linux [2,4): %+v, want 0 not counted", v)
	}
	if v := l.Estimate(4, 5)[0]; v.Value != 40 || v.Status != inference.StatusExact {
		t.Errorf("linux [4,5): %+v, want exact 40", v)
	}
}

// With a constant rate every baseline is exact whatever the schedule; with every slice
// counted every baseline returns the truth, status exact.
func TestProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 50 {
		n := 5 + r.IntN(60)
		obs := make([]bool, n)
		obs[r.IntN(n)] = true
		for i := range obs {
			if r.IntN(4) == 0 {
				obs[i] = true
			}
		}
		flat := make([]uint64, n)
		for i := range flat {
			flat[i] = 123
		}
		all := make([]bool, n)
		vary := make([]uint64, n)
		for i := range all {
			all[i] = true
			vary[i] = uint64(r.IntN(1000))
		}
		for _, k := range []Kind{Linux, Fixed, Linear} {
			e := New(k, 1)
			feed(t, e, flat, obs)
			for from := 0; from < n; from += 7 {
				to := min(from+7, n)
				got := e.Estimate(from, to)[0]
				if got.Status == inference.StatusNotCounted {
					continue // linux on an interval with no running time
				}
				if math.Abs(got.Value-123*float64(to-from)) > 1e-9 {
					t.Fatalf("%s: constant rate, [%d,%d) = %v", k, from, to, got.Value)
				}
			}
			e = New(k, 1)
			feed(t, e, vary, all)
			for i := range n {
				got := e.Estimate(i, i+1)[0]
				if got.Value != float64(vary[i]) || got.Status != inference.StatusExact {
					t.Fatalf("%s: fully counted slice %d = %+v, want %d exact", k, i, got, vary[i])
				}
			}
		}
	}
}

// Slices with real (ns) durations and partial running time scale within the slice.
func TestDurations(t *testing.T) {
	e := New(Linear, 2)
	// Event 0 runs half of slice 0 (count 50 over 5 of 10 ns: rate 10/ns), slice 1 is 20 ns
	// with no reading for event 0 (enabled, not running), slice 2 runs fully at 30/ns.
	slices := []inference.Slice{
		{Index: 0, Duration: 10, Readings: []inference.Reading{{Event: 0, Count: 50, Enabled: 10, Running: 5}, {Event: 1, Count: 1, Enabled: 10, Running: 10}}},
		{Index: 1, Duration: 20, Readings: []inference.Reading{{Event: 1, Count: 1, Enabled: 20, Running: 20}}},
		{Index: 2, Duration: 10, Readings: []inference.Reading{{Event: 0, Count: 300, Enabled: 10, Running: 10}}},
	}
	for _, s := range slices {
		if err := e.Observe(s); err != nil {
			t.Fatal(err)
		}
	}
	// Midpoints 5, 20, 35: rate at 20 = 10 + 20*(15/30) = 20/ns over 20 ns = 400.
	if v := e.Estimate(1, 2)[0].Value; math.Abs(v-400) > 1e-9 {
		t.Errorf("interpolated slice %v, want 400", v)
	}
	if v := e.Estimate(0, 1)[0].Value; v != 100 {
		t.Errorf("half-counted slice %v, want 50*10/5 = 100", v)
	}
	if v := e.Estimate(2, 3)[1]; v.Status != inference.StatusScaled || v.Value != 1.0/20*10 {
		t.Errorf("event 1 tail %+v, want the held rate 1/20 * 10", v)
	}
}

func TestObserveErrors(t *testing.T) {
	e := New(Linux, 2)
	bad := []inference.Slice{
		{Index: 1, Duration: 1},
		{Index: 0, Duration: 1, Readings: []inference.Reading{{Event: 2, Enabled: 1}}},
		{Index: 0, Duration: 1, Readings: []inference.Reading{{Event: 0, Enabled: 1, Running: 2}}},
		{Index: 0, Duration: math.NaN()},
	}
	for i, s := range bad {
		if err := e.Observe(s); err == nil {
			t.Errorf("bad slice %d accepted", i)
		}
	}
	if got := e.Estimate(0, 5); len(got) != 2 || got[0].Status != inference.StatusNotCounted {
		t.Errorf("estimate with nothing observed: %+v", got)
	}
	if _, err := ParseKind("papi"); err == nil {
		t.Error("unknown kind accepted")
	}
}
