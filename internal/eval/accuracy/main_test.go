package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/internal/eval"
)

// The accuracy tables carry every estimator's sharpness, worst ratio and harmed count
// under their headers, as eval scored them on a real-program trace.
func TestTableColumns(t *testing.T) {
	tr, err := replay.ReadFile("../../../inference/replay/testdata/find.csv", replay.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rels := relation.Bind(relation.Builtins(), tr.Events)
	obs, err := eval.FromTrace(tr, 4, []string{"task-clock"}, rels)
	if err != nil {
		t.Fatal(err)
	}
	res, err := eval.Score(obs, eval.Options{Counters: 4, Relations: rels, Window: 10})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	table(&b, []row{{"find.csv", len(tr.Events), res}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2+len(res.Names) {
		t.Fatalf("%d table lines for %d estimators:\n%s", len(lines), len(res.Names), b.String())
	}
	header := split(lines[0])
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, h := range []string{"sharpness", "worst ratio (event)", "harmed"} {
		if _, ok := col[h]; !ok {
			t.Fatalf("no %q column in %q", h, lines[0])
		}
	}
	for i, name := range res.Names {
		c := split(lines[2+i])
		if len(c) != len(header) || c[col["estimator"]] != name {
			t.Fatalf("row %q: %d cells under %d headers", lines[2+i], len(c), len(header))
		}
		s := res.Estimators[name]
		if s.Harmed == nil || s.WorstRatio == nil || s.WorstEvent == nil {
			t.Fatalf("%s: harm figures missing: %+v", name, s)
		}
		want := fmt.Sprintf("%.2fx (%s)", *s.WorstRatio, *s.WorstEvent)
		if got := c[col["worst ratio (event)"]]; got != want {
			t.Errorf("%s worst ratio cell %q, want %q", name, got, want)
		}
		if got := c[col["harmed"]]; got != fmt.Sprint(*s.Harmed) {
			t.Errorf("%s harmed cell %q, want %d", name, got, *s.Harmed)
		}
		sharp := "–" // baselines give no intervals
		if s.Sharpness != nil {
			sharp = fmt.Sprintf("%.3f", *s.Sharpness)
		}
		if got := c[col["sharpness"]]; got != sharp {
			t.Errorf("%s sharpness cell %q, want %q", name, got, sharp)
		}
	}
	if c := split(lines[2])[col["worst ratio (event)"]]; !strings.HasPrefix(c, "1.00x") {
		t.Errorf("linux's worst ratio against itself %q, want 1.00x", c)
	}
}

// split returns a markdown table row's cells, trimmed.
func split(line string) []string {
	parts := strings.Split(strings.Trim(line, "|"), "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
