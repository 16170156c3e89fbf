package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// captureStdout runs f with os.Stdout redirected and returns what it wrote.
func captureStdout(t *testing.T, f func() int) (string, int) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old := os.Stdout
	os.Stdout = w
	done := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		done <- b
	}()
	code := f()
	os.Stdout = old
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
