package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/metrics"
)

// captureStdout runs f with os.Stdout redirected and returns what it wrote.
func captureStdout(t *testing.T, f func() int) (string, int) {
	t.Helper()
	return capture(t, &os.Stdout, f)
}

// capture runs f with *file (os.Stdout or os.Stderr) redirected to a pipe and returns
// what it wrote there.
func capture(t *testing.T, file **os.File, f func() int) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := *file
	*file = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	code := f()
	*file = old
	w.Close()
	return string(<-done), code
}

func TestEvalReplayJSONIsOneObject(t *testing.T) {
	trace := filepath.Join("..", "..", "inference", "replay", "testdata", "make.csv")
	out, code := captureStdout(t, func() int {
		return runEval([]string{"--trace", trace, "--counters", "4", "--fixed", "task-clock", "--window", "10", "--json"})
	})
	if code != 0 {
		t.Fatalf("exit %d, output %q", code, out)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatal("more than one JSON value on stdout")
	}
	for _, k := range []string{"counters", "events", "slices", "intervals", "estimators", "error_reduction", "per_event"} {
		if _, ok := m[k]; !ok {
			t.Errorf("missing %q", k)
		}
	}
	if _, ok := m["estimators"].(map[string]any)["bayesperf"]; !ok {
		t.Error("bayesperf (own schedule) missing from a replay")
	}
}

// --linux-own adds linux-own, the kernel's scaling of bayesperf's own readings: exact on
// the fixed event, as every scaling is, and not Linux's figures, which scale the
// kernel's rotation's readings.
func TestEvalLinuxOwn(t *testing.T) {
	trace := filepath.Join("..", "..", "inference", "replay", "testdata", "make.csv")
	score := func(extra ...string) (res struct {
		Estimators map[string]json.RawMessage   `json:"estimators"`
		PerEvent   []map[string]json.RawMessage `json:"per_event"`
	}) {
		args := append([]string{"--trace", trace, "--counters", "4", "--fixed", "task-clock", "--json"}, extra...)
		out, code := captureStdout(t, func() int { return runEval(args) })
		if code != 0 {
			t.Fatalf("eval %v: exit %d, output %q", args, code, out)
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, out)
		}
		return res
	}
	if _, ok := score().Estimators["linux-own"]; ok {
		t.Error("linux-own scored without --linux-own")
	}
	res := score("--linux-own")
	if _, ok := res.Estimators["linux-own"]; !ok {
		t.Fatal("no linux-own with --linux-own")
	}
	wape := func(pe map[string]json.RawMessage, name string) float64 {
		var m struct{ WAPE *float64 }
		if err := json.Unmarshal(pe[name], &m); err != nil || m.WAPE == nil {
			return math.NaN()
		}
		return *m.WAPE
	}
	differs := 0
	for _, pe := range res.PerEvent {
		var ev string
		json.Unmarshal(pe["event"], &ev)
		own, lin := wape(pe, "linux-own"), wape(pe, "linux")
		if ev == "task-clock" && own != 0 {
			t.Errorf("linux-own's WAPE on the fixed task-clock %v, want 0", own)
		}
		if own != lin && !math.IsNaN(own) {
			differs++
		}
	}
	if differs == 0 {
		t.Error("linux-own equals linux on every event: not scored on bayesperf's own readings")
	}
}

func TestEvalBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"--trace", "/nonexistent.csv"},
		{"-e", "no-such-event", "--", "true"},
		{"--counters", "0", "--trace", "x.csv"},
		{"--trace", "x.csv", "-e", "task-clock"},
		{"-e", "task-clock", "--collector", "magic", "--", "true"},
	} {
		_, code := captureStdout(t, func() int { return runEval(args) })
		if code == 0 {
			t.Errorf("eval %v succeeded", args)
		}
	}
}

// TestEvalJSONHarmFigures checks eval --json's do-no-harm and sharpness figures against
// the per-event figures of the same JSON: linux's worst ratio against itself is exactly
// 1, and every estimator's worst_ratio, worst_event, harmed and sharpness follow from its
// per_event WAPEs (and linux's) and sharpnesses as the brief defines them.
func TestEvalJSONHarmFigures(t *testing.T) {
	trace := filepath.Join("..", "..", "inference", "replay", "testdata", "find.csv")
	out, code := captureStdout(t, func() int {
		return runEval([]string{"--trace", trace, "--counters", "4", "--json"})
	})
	if code != 0 {
		t.Fatalf("exit %d, output %q", code, out)
	}
	var res struct {
		Estimators map[string]struct {
			WorstRatio *float64 `json:"worst_ratio"`
			WorstEvent *string  `json:"worst_event"`
			Harmed     *int     `json:"harmed"`
			Sharpness  *float64 `json:"sharpness"`
		} `json:"estimators"`
		PerEvent []map[string]json.RawMessage `json:"per_event"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	type scores struct {
		WAPE      *float64 `json:"wape"`
		Sharpness *float64 `json:"sharpness"`
	}
	per := func(e int, name string) (s scores) {
		if err := json.Unmarshal(res.PerEvent[e][name], &s); err != nil {
			t.Fatalf("per_event %d %s: %v", e, name, err)
		}
		return s
	}
	event := func(e int) (n string) {
		json.Unmarshal(res.PerEvent[e]["event"], &n)
		return n
	}
	if lin := res.Estimators["linux"]; lin.WorstRatio == nil || *lin.WorstRatio != 1 || lin.Harmed == nil || *lin.Harmed != 0 {
		t.Errorf("linux against itself: worst ratio %v, harmed %v; want exactly 1 and 0", lin.WorstRatio, lin.Harmed)
	}
	if len(res.Estimators) < 5 {
		t.Fatalf("%d estimators, want linux, fixed, linear, bayesperf-rr and bayesperf", len(res.Estimators))
	}
	for name, got := range res.Estimators {
		worst, worstEvent, harmed := 0.0, "", 0
		var sharp []float64
		for e := range res.PerEvent {
			x, lin := per(e, name), per(e, "linux")
			if x.Sharpness != nil {
				sharp = append(sharp, *x.Sharpness)
			}
			if x.WAPE == nil || lin.WAPE == nil {
				continue
			}
			if *x.WAPE > 1.5**lin.WAPE+0.01 {
				harmed++
			}
			if r := *x.WAPE / *lin.WAPE; *lin.WAPE >= 0.01 && (worstEvent == "" || r > worst) {
				worst, worstEvent = r, event(e)
			}
		}
		if got.Harmed == nil || got.WorstRatio == nil || got.WorstEvent == nil {
			t.Fatalf("%s: harm figures missing: %+v", name, got)
		}
		if *got.Harmed != harmed {
			t.Errorf("%s: harmed %d, per_event says %d", name, *got.Harmed, harmed)
		}
		if math.Abs(*got.WorstRatio-worst) > 1e-12*worst || *got.WorstEvent != worstEvent {
			t.Errorf("%s: worst ratio %v at %s, per_event says %v at %s", name, *got.WorstRatio, *got.WorstEvent, worst, worstEvent)
		}
		switch {
		case len(sharp) == 0 && got.Sharpness != nil:
			t.Errorf("%s: sharpness %v without per-event sharpness", name, *got.Sharpness)
		case len(sharp) > 0 && (got.Sharpness == nil || math.Abs(*got.Sharpness-metrics.Median(sharp)) > 1e-12):
			t.Errorf("%s: sharpness %v, median of per_event %v", name, got.Sharpness, metrics.Median(sharp))
		}
		if strings.HasPrefix(name, "bayesperf") && got.Sharpness == nil {
			t.Errorf("%s gives intervals but no sharpness", name)
		}
	}
}

// TestTrainThenEvalModel trains a model with `bayesperf train` and checks that `eval
// --model --json` scores mlp and bigru with every metric, like every other estimator.
func TestTrainThenEvalModel(t *testing.T) {
	trace := filepath.Join("..", "..", "inference", "replay", "testdata", "make.csv")
	model := filepath.Join(t.TempDir(), "model.json")
	if code := runTrain([]string{"--trace", trace, "--counters", "4", "--fixed", "task-clock", "--epochs", "2", "-q", "-o", model}); code != 0 {
		t.Fatalf("train: exit %d", code)
	}
	out, code := captureStdout(t, func() int {
		return runEval([]string{"--trace", trace, "--counters", "4", "--fixed", "task-clock", "--window", "10", "--model", model, "--json"})
	})
	if code != 0 {
		t.Fatalf("eval: exit %d, output %q", code, out)
	}
	var m struct {
		Estimators     map[string]map[string]any `json:"estimators"`
		ErrorReduction map[string]float64        `json:"error_reduction"`
		PerEvent       []map[string]any          `json:"per_event"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	for _, name := range []string{"mlp", "bigru"} {
		got, want := m.Estimators[name], m.Estimators["linux"]
		if got == nil {
			t.Fatalf("%s missing from estimators", name)
		}
		for k := range want {
			if _, ok := got[k]; !ok {
				t.Errorf("%s: metric %q missing", name, k)
			}
		}
		for _, k := range []string{"wape", "ra", "dtw", "worst_ratio"} {
			if _, ok := got[k].(float64); !ok {
				t.Errorf("%s: %s = %v, want a number", name, k, got[k])
			}
		}
		if _, ok := m.ErrorReduction[name]; !ok {
			t.Errorf("%s: no error reduction", name)
		}
		if _, ok := m.PerEvent[0][name]; !ok {
			t.Errorf("%s: no per-event metrics", name)
		}
	}
	// A corrupt model is a usage error, with the file named.
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"format":"bayesperf-learned","version":9}`), 0o644)
	if code := runEval([]string{"--trace", trace, "--counters", "4", "--model", bad, "--json"}); code != 2 {
		t.Errorf("corrupt model: exit %d, want 2", code)
	}
}

// TestEvalWarnsOfBrokenRelations replays a trace whose counts break an exact relation
// of the relation file given: eval still scores it, and says on stderr which relation
// and where.
func TestEvalWarnsOfBrokenRelations(t *testing.T) {
	dir := t.TempDir()
	var csv strings.Builder
	csv.WriteString("interval,total,x,y\n")
	for i := range 30 {
		x, y := 1000+10*i, 300+i
		total := x + y
		if i >= 20 {
			total += 500 // the trace's total counts something the relation leaves out
		}
		fmt.Fprintf(&csv, "%d,%d,%d,%d\n", i, total, x, y)
	}
	trace := filepath.Join(dir, "t.csv")
	rels := filepath.Join(dir, "t.rel")
	if err := os.WriteFile(trace, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rels, []byte("total = x + y\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	stderr, code := capture(t, &os.Stderr, func() int {
		var code int
		out, code = captureStdout(t, func() int {
			return runEval([]string{"--trace", trace, "--counters", "2", "--relations", rels})
		})
		return code
	})
	if code != 0 {
		t.Fatalf("exit %d; stdout %q, stderr %q", code, out, stderr)
	}
	if !strings.Contains(out, "bayesperf") {
		t.Errorf("the trace was not scored: %q", out)
	}
	want := `exact relation "total = x + y" does not hold in 10 of 30 rows (row 20: LHS - RHS = 500`
	if !strings.Contains(stderr, want) {
		t.Errorf("stderr %q does not say %q", stderr, want)
	}
}
