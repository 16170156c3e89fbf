package metricexpr

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

// archDir is the pmu-events tree tests read (testutil.PMUEvents), and whether it is
// the shared copy beside the repository.
func archDir(t testing.TB) (dir string, shared bool) {
	t.Helper()
	return testutil.PMUEvents(t)
}

type vendorFormula struct {
	file, metric, expr string
	threshold          bool // a MetricThreshold (same grammar), not a MetricExpr
}

// vendorFormulas returns every MetricExpr of every JSON array in the tree.
func vendorFormulas(t testing.TB, dir string) []vendorFormula {
	var out []vendorFormula
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var entries []map[string]any
		if json.Unmarshal(b, &entries) != nil {
			return nil // metricgroups.json is a dict of descriptions, not a list
		}
		for _, e := range entries {
			name, _ := e["MetricName"].(string)
			if x, ok := e["MetricExpr"].(string); ok {
				out = append(out, vendorFormula{path, name, x, false})
			}
			if x, ok := e["MetricThreshold"].(string); ok {
				out = append(out, vendorFormula{path, name, x, true})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return out
}

// TestAllVendorFormulasParse parses every MetricExpr in the pmu-events tree (1762 in the
// shared copy of Linux 6.12.117's 9 CPUs; 6093 in the full tree of `make pmu-events`)
// and every MetricThreshold (703; 2291), and checks that each renders back to text that
// parses to the same tree.
func TestAllVendorFormulasParse(t *testing.T) {
	dir, shared := archDir(t)
	formulas := vendorFormulas(t, dir)
	failed, exprs := 0, 0
	for _, f := range formulas {
		if !f.threshold {
			exprs++
		}
		e, err := Parse(f.expr)
		if err != nil {
			failed++
			if failed <= 10 {
				t.Errorf("%s: %s: %q: %v", f.file, f.metric, f.expr, err)
			}
			continue
		}
		again, err := Parse(e.String())
		if err != nil || !reflect.DeepEqual(again, e) {
			t.Errorf("%s: %s renders as %q, which does not parse back the same: %v", f.file, f.metric, e.String(), err)
		}
	}
	t.Logf("%d MetricExpr and %d MetricThreshold formulas, %d failed to parse", exprs, len(formulas)-exprs, failed)
	if shared && exprs != 1762 {
		t.Errorf("the shared pmu-events tree has %d MetricExpr formulas, want 1762", exprs)
	}
}

func TestEvalSemantics(t *testing.T) {
	vals := map[string]float64{"a": 2, "b": 0, "c": 5, "cpu/INST_RETIRED.ANY,cmask=1/": 7, "topdown-fe-bound": 3}
	env := Env{
		Value: func(n string) (float64, bool) { v, ok := vals[n]; return v, ok },
		Literal: func(n string) (float64, bool) {
			if LiteralIs(n, "#smt_on") {
				return 1, true
			}
			return 0, false
		},
		HasEvent: func(n string) bool { return n == "cycles-t" },
	}
	for _, c := range []struct {
		f    string
		want float64
	}{
		{"1 + 2 * 3", 7},
		{"(1 + 2) * 3", 9},
		{"10 - 4 - 3", 3},    // left-associative
		{"2 * 3 / 4", 1.5},   // left-associative
		{"-a * 3", -6},       // unary minus binds tighter than *
		{"- - a", 2},         // nested unary minus
		{"7 % 4 + 1", 4},     // % with * precedence
		{"6 | 1 ^ 3 & 2", 7}, // | loosest, then ^, then &: 6 | (1 ^ (3 & 2))
		{"1 < 2 + 0", 1},     // + binds tighter than <
		{"3 > 2 & 1", 1},     // (3 > 2) & 1: < > bind tighter than &
		{"7.9 & 3", 3},       // bitwise ops truncate
		{"1e9 / 1e3", 1e6},   // exponents
		{"1e-3 * 1000", 1},   // negative exponent
		{".5 + 0.25", 0.75},  // fractions
		{"a if b else c", 5}, // b == 0
		{"a if c else b", 2}, // c != 0
		{"1 if b else 2 if b else 3", 3},
		{"a + 1 if c > 4 else 0", 3}, // the condition and branches are whole exprs
		{"min(a, c) + max(a, c)", 7},
		{"d_ratio(a, b)", 0}, // d_ratio of zero denominator is 0
		{"d_ratio(c, a)", 2.5},
		{"cpu@INST_RETIRED.ANY\\,cmask\\=1@ + topdown\\-fe\\-bound", 10},
		{"#SMT_on * 4", 4},
		{"has_event(cycles\\-t) + 2 * has_event(el\\-start)", 1},
		{"source_count(a)", 1},
		{"max(a, min(b, c) if a else c)", 2},
	} {
		e, err := Parse(c.f)
		if err != nil {
			t.Errorf("parse %q: %v", c.f, err)
			continue
		}
		got, err := Eval(e, env)
		if err != nil || math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%q = %v, %v; want %v", c.f, got, err, c.want)
		}
	}
	for _, f := range []string{"a / b", "a % b"} {
		e, _ := Parse(f)
		if got, err := Eval(e, env); err != nil || !math.IsNaN(got) {
			t.Errorf("%q = %v, %v; want NaN as perf prints", f, got, err)
		}
	}
	e, _ := Parse("a + unknown_event")
	if _, err := Eval(e, env); !errors.Is(err, ErrUnresolved) {
		t.Errorf("unknown ID: got %v, want ErrUnresolved", err)
	}
}

func TestLexing(t *testing.T) {
	e, err := Parse("cpu_core@UOPS_RETIRED.SLOTS@ / (5 * msr@tsc@) + tma_info_thread_slots:k + 1e9")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"cpu_core/UOPS_RETIRED.SLOTS/", "msr/tsc/", "tma_info_thread_slots:k"}
	if got := IDs(e); !reflect.DeepEqual(got, want) {
		t.Errorf("IDs = %v, want %v", got, want)
	}
	// Keywords are whole words: "minor", "iff" and "max_x" are names.
	e, err = Parse("minor + iff + max_x + elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	if got := IDs(e); len(got) != 4 {
		t.Errorf("keywords leaked into names: %v", got)
	}
	// Longest match: "2_PORTS" is a name, "1e9" a number, "1e9x" a name.
	e, _ = Parse("EXE.2_PORTS + 2_PORTS + 1e9x")
	if got := IDs(e); len(got) != 3 {
		t.Errorf("IDs = %v, want 3 names", got)
	}
	if got := Literals(mustParse(t, "#slots * #SMT_on + #num_cpus_online")); !reflect.DeepEqual(got, []string{"#SMT_on", "#num_cpus_online", "#slots"}) {
		t.Errorf("Literals = %v", got)
	}
	if q := QuoteID("cpu/INST_RETIRED.ANY,cmask=1/"); q != `cpu@INST_RETIRED.ANY\,cmask\=1@` {
		t.Errorf("QuoteID = %q", q)
	}
}

func mustParse(t *testing.T, f string) Expr {
	t.Helper()
	e, err := Parse(f)
	if err != nil {
		t.Fatalf("parse %q: %v", f, err)
	}
	return e
}

func TestSyntaxErrors(t *testing.T) {
	for f, off := range map[string]int{
		"1 +":              3,
		"(1 + 2":           6,
		"min(1)":           5,
		"has_event(1 + 2)": 10,
		"1 $ 2":            2,
		"# + 1":            0,
		"a if b":           6,
		"a b":              2,
		"":                 0,
		"d_ratio(a, b, c)": 12,
		"1e999":            0,
		"a * )":            4,
	} {
		_, err := Parse(f)
		var se *SyntaxError
		if !errors.As(err, &se) {
			t.Errorf("Parse(%q): got %v, want a *SyntaxError", f, err)
			continue
		}
		if se.Offset != off {
			t.Errorf("Parse(%q): error at offset %d (%v), want %d", f, se.Offset, se, off)
		}
	}
}

func BenchmarkParseVendorFormulas(b *testing.B) {
	dir, _ := archDir(b)
	var formulas []string
	bytes := 0
	for _, f := range vendorFormulas(b, dir) {
		if !f.threshold {
			formulas = append(formulas, f.expr)
			bytes += len(f.expr)
		}
	}
	b.ReportAllocs()
	b.SetBytes(int64(bytes))
	for b.Loop() {
		for _, f := range formulas {
			if _, err := Parse(f); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(formulas)), "ns/formula")
}
