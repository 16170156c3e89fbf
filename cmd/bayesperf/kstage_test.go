package main

import "testing"

// TestResolveCorrectAndInferFrom: the defaults the help promises (--correct bayesperf
// with --virtual-counters, auto without; --infer-from slices with it, values without),
// the combinations refused, and which correction the virtual PMU itself then makes.
func TestResolveCorrectAndInferFrom(t *testing.T) {
	for _, c := range []struct {
		correct, from string
		vc            int
		wantC, wantF  string
		wantVstage    string
	}{
		{"", "", 0, "auto", "values", "none"},
		{"none", "", 0, "none", "values", "none"},
		{"", "", 4, "bayesperf", "slices", "bayesperf"},
		{"bayesperf", "", 0, "bayesperf", "values", "none"},
		{"", "values", 4, "bayesperf", "values", "none"},
		{"none", "slices", 4, "none", "slices", "none"},
	} {
		gc, err := resolveCorrect(c.correct, c.vc)
		if err != nil || gc != c.wantC {
			t.Errorf("--correct %q with %d virtual counters: %q, %v; want %q", c.correct, c.vc, gc, err, c.wantC)
		}
		gf, err := resolveInferFrom(c.from, c.vc)
		if err != nil || gf != c.wantF {
			t.Errorf("--infer-from %q with %d virtual counters: %q, %v; want %q", c.from, c.vc, gf, err, c.wantF)
		}
		if v := vstageCorrect(gc, gf); v != c.wantVstage {
			t.Errorf("--correct %s --infer-from %s: the virtual PMU corrects %q, want %q", gc, gf, v, c.wantVstage)
		}
	}
	if _, err := resolveCorrect("linear", 4); err == nil {
		t.Errorf("--correct linear accepted")
	}
	if _, err := resolveCorrect("auto", 4); err == nil {
		t.Errorf("--correct auto with --virtual-counters accepted")
	}
	if _, err := resolveInferFrom("slices", 0); err == nil {
		t.Errorf("--infer-from slices without --virtual-counters accepted")
	}
	if _, err := resolveInferFrom("counts", 4); err == nil {
		t.Errorf("--infer-from counts accepted")
	}
}
