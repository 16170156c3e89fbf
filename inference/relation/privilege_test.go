package relation

import (
	"slices"
	"testing"
)

// TestRunRelations: privilege splits and repeats are bound for any run, exact, over the
// run's own spelling; levels a run does not split, or splits only partly, give nothing.
func TestRunRelations(t *testing.T) {
	cases := []struct {
		events []string
		want   []string
	}{
		{[]string{"instructions:u", "instructions:k", "instructions"},
			[]string{"instructions = instructions:u + instructions:k"}},
		// :uk counts the same levels as the unmodified event; :ku is :uk.
		{[]string{"cycles", "cycles:ku", "cycles:u"}, []string{"cycles:ku = cycles"}},
		// With :h named, the hypervisor is a level of its own.
		{[]string{"cycles:u", "cycles:k", "cycles:h", "cycles", "cycles:uk"},
			[]string{"cycles = cycles:u + cycles:k + cycles:h", "cycles:uk = cycles:u + cycles:k"}},
		// Other modifiers must agree: :upp and :k are not parts of one count with :pp.
		{[]string{"cycles:upp", "cycles:kpp", "cycles:pp", "cycles:k"},
			[]string{"cycles:pp = cycles:upp + cycles:kpp"}},
		// Only one level of two: no identity (the other part is unknown).
		{[]string{"instructions:u", "instructions"}, nil},
		// Repeats, as perf.Namer names them; tracepoints are not modifiers.
		{[]string{"page-faults", "page-faults#2", "sched:sched_switch", "sched:sched_switch#2"},
			[]string{"page-faults#2 = page-faults", "sched:sched_switch#2 = sched:sched_switch"}},
	}
	for _, c := range cases {
		var got []string
		for _, r := range BindUniverse(nil, c.events, nil) {
			if r.Tol != 0 || r.Op != Eq {
				t.Errorf("%q: %s is not an exact identity", c.events, r.Text)
			}
			got = append(got, r.Text)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: bound %q, want %q", c.events, got, c.want)
		}
	}
}

// TestRunRelationsHold: a bound privilege split evaluates to zero difference on counts
// that split exactly, and Linearize gives the model its form.
func TestRunRelationsHold(t *testing.T) {
	rels := BindUniverse(Builtins(), []string{"instructions:u", "instructions:k", "instructions"}, nil)
	if len(rels) != 1 {
		t.Fatalf("bound %d relations, want the split only", len(rels))
	}
	lin, ok := rels[0].Linearize()
	if !ok {
		t.Fatalf("%s does not linearize", rels[0].Text)
	}
	counts := map[string]float64{"instructions:u": 7339285, "instructions:k": 190637570, "instructions": 197976855}
	sum := lin.Const
	for e, c := range lin.Coef {
		sum += c * counts[e]
	}
	if sum != 0 {
		t.Errorf("%s: residual %g on counts that split exactly", rels[0].Text, sum)
	}
}
