package learned

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/baseline"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/replay"
)

const corpus = "../replay/testdata/corpus/"

// part is the kernel's round robin over slices [from, to) of a corpus trace, replayed
// as its family is (8 counters, task-clock fixed, for sys-*).
func part(t *testing.T, file string, from, to float64) Run {
	t.Helper()
	tr, err := replay.ReadFile(corpus+file, replay.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	S := len(tr.Counts)
	a, b := int(from*float64(S)), int(to*float64(S))
	sub := &replay.Trace{Events: tr.Events, Counts: tr.Counts[a:b], Durations: tr.Durations[a:b]}
	ks, err := replay.KernelSchedule(sub, 8, []string{"task-clock"})
	if err != nil {
		t.Fatal(err)
	}
	return Run{Name: file, Events: len(tr.Events), Slices: replay.Simulate(sub, ks), Truth: sub.Counts}
}

// quick is a small configuration for tests: a few seconds at most.
func quick(seed uint64) Config {
	c := DefaultConfig()
	c.Seed, c.MLPEpochs, c.MLPSamples, c.GRUEpochs, c.GRUChunks = seed, 8, 4000, 8, 200
	return c
}

// meanWAPE feeds est the run and returns its mean WAPE over events over intervals of
// 25 slices.
func meanWAPE(t *testing.T, est inference.Estimator, r Run) float64 {
	t.Helper()
	ivs := replay.Intervals(len(r.Slices), 25)
	got, err := replay.Feed(est, r.Slices, ivs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, n := 0.0, 0
	for e := range r.Events {
		truth, vals := make([]float64, len(ivs)), make([]float64, len(ivs))
		for k, iv := range ivs {
			for s := iv[0]; s < iv[1]; s++ {
				truth[k] += float64(r.Truth[s][e])
			}
			vals[k] = got[k][e].Value
		}
		if w, ok := metrics.WAPE(truth, vals); ok {
			sum += w
			n++
		}
	}
	return sum / float64(n)
}

// TestBeatsFixedOnHeldBackRun is the paper's claim on its own terms: a model trained on
// one program corrects a later run of that program better than PAPI's fixed
// interpolation. The "later run" is the last 40% of the trace, held back in time from
// training (the corpus has one recorded run per program). The claim does not hold for
// every program: on sys-sort.csv, whose last 40% is another phase (writing the output),
// both networks lose to fixed; docs/learned.md reports every trace.
func TestBeatsFixedOnHeldBackRun(t *testing.T) {
	for _, file := range []string{"sys-perl.csv"} {
		train, test := part(t, file, 0, 0.6), part(t, file, 0.6, 1)
		m, err := Train([]Run{train}, quick(1), nil)
		if err != nil {
			t.Fatal(err)
		}
		fixed := meanWAPE(t, baseline.New(baseline.Fixed, test.Events), test)
		for _, name := range []string{NameMLP, NameBiGRU} {
			est, err := NewEstimator(m, name, test.Events)
			if err != nil {
				t.Fatal(err)
			}
			got := meanWAPE(t, est, test)
			t.Logf("%s held-back 40%%: mean WAPE %s %.3f, fixed %.3f", file, name, got, fixed)
			if !(got < fixed) {
				t.Errorf("%s: %s mean WAPE %.3f does not beat fixed's %.3f on the held-back run", file, name, got, fixed)
			}
		}
	}
}

func TestTrainDeterministic(t *testing.T) {
	runs := []Run{part(t, "sys-gcc.csv", 0, 1)}
	write := func(seed uint64) ([]byte, []inference.Estimate) {
		m, err := Train(runs, quick(seed), nil)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := m.Write(&b); err != nil {
			t.Fatal(err)
		}
		est, _ := NewEstimator(m, NameBiGRU, runs[0].Events)
		for _, s := range runs[0].Slices {
			if err := est.Observe(s); err != nil {
				t.Fatal(err)
			}
		}
		return b.Bytes(), est.Estimate(0, len(runs[0].Slices))
	}
	a, ea := write(7)
	b, eb := write(7)
	if !bytes.Equal(a, b) || !slices.Equal(ea, eb) {
		t.Fatal("two trainings with seed 7 differ")
	}
	c, _ := write(8)
	if bytes.Equal(a, c) {
		t.Fatal("seeds 7 and 8 gave the same model: the seed is not used")
	}
	// The file round-trips exactly.
	m, err := Load(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	m.Write(&again)
	if !bytes.Equal(a, again.Bytes()) {
		t.Fatal("model file does not round-trip")
	}
}

func TestEstimatorContract(t *testing.T) {
	r := part(t, "sys-gcc.csv", 0, 0.3)
	m, err := Train([]Run{r}, Config{Seed: 1, MLPEpochs: 1, MLPSamples: 64, GRUEpochs: 1, GRUChunks: 8}, nil)
	if err != nil {
		t.Fatal(err)
	}
	est, _ := NewEstimator(m, NameMLP, r.Events+1) // one event never counted
	for _, s := range r.Slices {
		if err := est.Observe(s); err != nil {
			t.Fatal(err)
		}
	}
	got := est.Estimate(0, len(r.Slices))
	tc := slices.Index(runEvents(t, "sys-gcc.csv"), "task-clock")
	for e, g := range got {
		switch {
		case g.HasInterval || g.Value < 0 || math.IsNaN(g.Value):
			t.Errorf("event %d: %+v: want a non-negative point estimate", e, g)
		case e == r.Events && g.Status != inference.StatusNotCounted:
			t.Errorf("never-counted event: status %v", g.Status)
		case e == tc && (g.Status != inference.StatusExact || g.Value != sumTruth(r, e)):
			t.Errorf("task-clock, always counted: %+v, want exact %v", g, sumTruth(r, e))
		}
	}
	if err := est.Observe(inference.Slice{Index: 0}); err == nil {
		t.Error("out-of-order slice accepted")
	}
	if _, err := NewEstimator(m, "cnn", 3); err == nil {
		t.Error("unknown network accepted")
	}
}

func runEvents(t *testing.T, file string) []string {
	tr, err := replay.ReadFile(corpus+file, replay.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Events
}

func sumTruth(r Run, e int) float64 {
	s := 0.0
	for _, row := range r.Truth {
		s += float64(row[e])
	}
	return s
}

func TestLoadErrors(t *testing.T) {
	r := part(t, "sys-gcc.csv", 0, 0.2)
	m, err := Train([]Run{r}, Config{Seed: 1, MLPEpochs: 1, MLPSamples: 32, GRUEpochs: 1, GRUChunks: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	m.Write(&b)
	good := b.String()
	for _, c := range []struct{ name, from, to, want string }{
		{"version", `"version": 1`, `"version": 2`, "version 2"},
		{"format", `"format": "bayesperf-learned"`, `"format": "x"`, "format"},
		{"inputs", `"rate"`, `"speed"`, "inputs"},
		{"weights", `"params": [`, `"params": [1,`, "weights"},
		{"window", `"window": 8`, `"window": 7`, "mlp sizes"},
		{"truncated", good[len(good)/2:], "", "want a JSON file"},
	} {
		_, err := Load(strings.NewReader(strings.Replace(good, c.from, c.to, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"format":"bayesperf-learned","version":1}`))
	f.Add([]byte(`{"format":"bayesperf-learned","version":1,"inputs":["rate","counted","fixed","always","duration"],"window":0,` +
		`"mlp":{"sizes":[5,1],"params":[0,0,0,0,0,0]},"bigru":{"in":5,"hidden":1,"params":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		// A model that loads must estimate without panicking.
		for _, name := range []string{NameMLP, NameBiGRU} {
			est, err := NewEstimator(m, name, 2)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				s := inference.Slice{Index: i, Duration: 1, Readings: []inference.Reading{{Event: 0, Count: 5, Enabled: 10, Running: 10}, {Event: 1, Count: uint64(i), Enabled: 10, Running: uint64(5 * (i % 2))}}}
				if err := est.Observe(s); err != nil {
					t.Fatal(err)
				}
			}
			est.Estimate(0, 3)
		}
	})
}
