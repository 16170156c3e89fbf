package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

// output builds a readbench transcript from per-method batches, the way the C program
// prints it (interleaved rounds).
func output(batchReads int, batches map[string][]float64, ages []float64, rdpmcReason string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "readbench 1\nbatch_reads %d\n", batchReads)
	if rdpmcReason != "" {
		fmt.Fprintf(&b, "rdpmc_unavailable %s\n", rdpmcReason)
	}
	for i := range len(batches[Shim]) {
		for _, m := range methods {
			if i < len(batches[m]) {
				fmt.Fprintf(&b, "%s %.2f\n", m, batches[m][i])
			}
		}
	}
	for _, a := range ages {
		fmt.Fprintf(&b, "age_us %.3f\n", a)
	}
	fmt.Fprintf(&b, "age_ambiguous 2\nchecks 0\n")
	return b.String()
}

func TestParseRawRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	batches := map[string][]float64{}
	for _, m := range []string{Native, Shim, Floor, Clock} {
		for range 37 {
			batches[m] = append(batches[m], math.Round((1+rng.Float64()*1000)*100)/100)
		}
	}
	ages := []float64{12.5, 900.25, 3.125}
	raw, err := ParseRaw(strings.NewReader(output(500, batches, ages, "no PMU here")))
	if err != nil {
		t.Fatal(err)
	}
	if raw.BatchReads != 500 || raw.RdpmcReason != "no PMU here" || raw.AgeAmbiguous != 2 || raw.Checks != 0 {
		t.Errorf("header fields %+v", raw)
	}
	for m, want := range batches {
		if !slices.Equal(raw.Batches[m], want) {
			t.Errorf("%s batches: got %v, want %v", m, raw.Batches[m], want)
		}
	}
	if !slices.Equal(raw.AgeUs, ages) {
		t.Errorf("ages %v, want %v", raw.AgeUs, ages)
	}
	if len(raw.Batches[Rdpmc]) != 0 {
		t.Errorf("rdpmc batches from nowhere: %v", raw.Batches[Rdpmc])
	}
}

func TestParseRawRejects(t *testing.T) {
	good := "readbench 1\nbatch_reads 10\nrdpmc_unavailable x\nnative 100\nshim 5\nfloor 1\nchecks 0\n"
	if _, err := ParseRaw(strings.NewReader(good)); err != nil {
		t.Fatalf("the minimal transcript is rejected: %v", err)
	}
	for name, in := range map[string]string{
		"no version":      strings.Replace(good, "readbench 1\n", "", 1),
		"version 2":       strings.Replace(good, "readbench 1", "readbench 2", 1),
		"unknown key":     good + "bogus 1\n",
		"zero ns":         strings.Replace(good, "shim 5", "shim 0", 1),
		"negative ns":     strings.Replace(good, "shim 5", "shim -5", 1),
		"NaN ns":          strings.Replace(good, "shim 5", "shim NaN", 1),
		"Inf age":         good + "age_us +Inf\n",
		"no checks":       strings.Replace(good, "checks 0\n", "", 1),
		"no floor":        strings.Replace(good, "floor 1\n", "", 1),
		"no rdpmc reason": strings.Replace(good, "rdpmc_unavailable x\n", "", 1),
		"batch_reads 0":   strings.Replace(good, "batch_reads 10", "batch_reads 0", 1),
		"bad checks":      strings.Replace(good, "checks 0", "checks -1", 1),
	} {
		if _, err := ParseRaw(strings.NewReader(in)); err == nil {
			t.Errorf("%s: accepted %q", name, in)
		}
	}
}

func TestQuantile(t *testing.T) {
	xs := []float64{11, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6} // 1..11 shuffled
	orig := slices.Clone(xs)
	for _, c := range []struct{ q, want float64 }{{0, 1}, {0.1, 2}, {0.5, 6}, {0.9, 10}, {1, 11}, {0.25, 3.5}} {
		if got := Quantile(xs, c.q); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("Quantile(1..11, %v) = %v, want %v", c.q, got, c.want)
		}
	}
	if !slices.Equal(xs, orig) {
		t.Errorf("Quantile reordered its input")
	}
	if got := Quantile([]float64{1, 2}, 0.5); got != 1.5 {
		t.Errorf("median of {1,2} = %v", got)
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Errorf("quantile of nothing is a number")
	}
	// Monotone in q on random data.
	rng := rand.New(rand.NewPCG(1, 2))
	ys := make([]float64, 101)
	for i := range ys {
		ys[i] = rng.NormFloat64()
	}
	prev := math.Inf(-1)
	for q := 0.0; q <= 1; q += 0.01 {
		v := Quantile(ys, q)
		if v < prev {
			t.Fatalf("Quantile decreases at q=%v: %v < %v", q, v, prev)
		}
		prev = v
	}
}

func TestSummarize(t *testing.T) {
	batches := map[string][]float64{
		Native: {1000, 1200, 1100, 5000, 900},
		Shim:   {40, 30, 35, 200, 36},
		Floor:  {2, 1, 1.5, 3, 1.2},
		Clock:  {20, 21, 22, 23, 24},
	}
	var ages []float64
	for i := range 1000 {
		ages = append(ages, float64(i)) // 0..999 us
	}
	raw, err := ParseRaw(strings.NewReader(output(100, batches, ages, "no PMU")))
	if err != nil {
		t.Fatal(err)
	}
	r := Summarize(raw, Stats{MirrorReads: 600, SyncRefreshes: 3})
	if r.NativeReadNs != 1100 || r.ShimReadNs != 36 || r.FloorNs != 1.5 || r.ClockNs != 22 {
		t.Errorf("medians native %v shim %v floor %v clock %v", r.NativeReadNs, r.ShimReadNs, r.FloorNs, r.ClockNs)
	}
	if math.Abs(r.NativeOverShim-1100.0/36) > 1e-12 || math.Abs(r.ShimOverFloor-24) > 1e-12 {
		t.Errorf("ratios %v %v", r.NativeOverShim, r.ShimOverFloor)
	}
	if r.RdpmcNs != nil || r.RdpmcReason != "no PMU" {
		t.Errorf("rdpmc %v %q", r.RdpmcNs, r.RdpmcReason)
	}
	if r.AgeP50Us == nil || math.Abs(*r.AgeP50Us-499.5) > 1e-9 || math.Abs(*r.AgeP99Us-989.01) > 1e-9 || *r.AgeMaxUs != 999 {
		t.Errorf("ages p50 %v p99 %v max %v", *r.AgeP50Us, *r.AgeP99Us, *r.AgeMaxUs)
	}
	if r.Native.P10 > r.Native.P50 || r.Native.P50 > r.Native.P90 || r.Native.N != 5 {
		t.Errorf("native spread %+v", r.Native)
	}
	if r.Batches != 5 || r.BatchReads != 100 || r.MirrorReads != 600 || r.SyncRefreshes != 3 || r.AgeAmbiguous != 2 {
		t.Errorf("counts %+v", r)
	}

	// The JSON a user scripts against: the field names, rdpmc_ns null here.
	m, b := testutil.JSONObject(t, r)
	for _, k := range []string{"native_read_ns", "shim_read_ns", "floor_ns", "rdpmc_ns", "age_p50_us", "age_p99_us"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %s: %s", k, b)
		}
	}
	if m["rdpmc_ns"] != nil {
		t.Errorf("rdpmc_ns = %v, want null", m["rdpmc_ns"])
	}

	// Without age samples the age fields are null and a reason is given.
	raw.AgeUs, raw.AgeReason = nil, "not under bayesperf run"
	r = Summarize(raw, Stats{})
	if r.AgeP50Us != nil || r.AgeP99Us != nil || r.AgeReason != "not under bayesperf run" {
		t.Errorf("age without samples: %v %v %q", r.AgeP50Us, r.AgeP99Us, r.AgeReason)
	}
	var sb strings.Builder
	if err := r.WriteTable(&sb); err != nil || !strings.Contains(sb.String(), "does not hold") || !strings.Contains(sb.String(), "not under bayesperf run") {
		t.Errorf("table (err %v):\n%s", err, sb.String())
	}
}

// FuzzParseRaw: the C program's output is parsed without panicking, and what is
// accepted satisfies the invariants Summarize relies on.
func FuzzParseRaw(f *testing.F) {
	f.Add("readbench 1\nbatch_reads 10\nrdpmc_unavailable x\nnative 100\nshim 5\nfloor 1\nchecks 0\n")
	f.Add(output(3, map[string][]float64{Native: {1, 2}, Shim: {1, 2}, Floor: {1, 2}, Rdpmc: {3, 4}}, []float64{1, 2}, ""))
	f.Add("readbench 1\nage_us 1e400\n")
	f.Fuzz(func(t *testing.T, s string) {
		raw, err := ParseRaw(strings.NewReader(s))
		if err != nil {
			return
		}
		if raw.BatchReads <= 0 || raw.Checks < 0 || len(raw.Batches[Shim]) == 0 || len(raw.Batches[Floor]) == 0 || len(raw.Batches[Native]) == 0 {
			t.Fatalf("accepted an incomplete transcript: %+v", raw)
		}
		for m, xs := range raw.Batches {
			for _, x := range xs {
				if !(x > 0) || math.IsInf(x, 0) {
					t.Fatalf("%s batch %v accepted", m, x)
				}
			}
		}
		r := Summarize(raw, Stats{})
		if !(r.ShimOverFloor > 0) || !(r.NativeOverShim > 0) {
			t.Fatalf("ratios %v %v from positive figures", r.ShimOverFloor, r.NativeOverShim)
		}
		if len(raw.Batches[Rdpmc]) == 0 && r.RdpmcNs != nil {
			t.Fatalf("rdpmc figure without batches")
		}
	})
}
