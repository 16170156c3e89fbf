package metricexpr

import (
	"reflect"
	"testing"
)

// FuzzParse feeds arbitrary formulas to the MetricExpr parser: it must never panic, an
// accepted formula must render to text that parses back to the same tree, and evaluation
// must be total.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"tma_info_thread_slots / (cpu_core@CPU_CLK_UNHALTED.THREAD@ if #SMT_on else 1)",
		"min(a, b) + max(1e9, .5) - d_ratio(x\\-y, 0) % 3",
		"has_event(cycles\\-t) | 1 ^ 2 & 3 < 4 > -5",
		"source_count(UNC_CHA_CLOCKTICKS) * #num_packages",
		"strcmp_cpuid_str(0x410fd0c0) if a else b if c else d",
		"cpu@INST_RETIRED.ANY\\,cmask\\=1@:k",
		"((((((((((1))))))))))",
	} {
		f.Add(s)
	}
	env := Env{
		Value:   func(string) (float64, bool) { return 3, true },
		Literal: func(string) (float64, bool) { return 2, true },
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(e.String())
		if err != nil {
			t.Fatalf("%q renders as %q, which does not parse: %v", s, e.String(), err)
		}
		if !reflect.DeepEqual(again, e) {
			t.Fatalf("%q renders as %q, which parses to a different tree", s, e.String())
		}
		if _, err := Eval(e, env); err != nil {
			t.Fatalf("eval %q with every name resolved: %v", s, err)
		}
		IDs(e)
		Literals(e)
	})
}
