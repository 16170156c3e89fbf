package relation

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) Relation {
	t.Helper()
	r, err := ParseLine(text)
	if err != nil {
		t.Fatalf("parse %q: %v", text, err)
	}
	if r == nil {
		t.Fatalf("parse %q: no relation", text)
	}
	return *r
}

func TestParseLineShapes(t *testing.T) {
	cases := []struct {
		text  string
		op    Op
		lhs   Expr
		rhs   Expr
		event []string
	}{
		{"page-faults = minor-faults + major-faults", Eq,
			Event{"page-faults"}, Binary{"+", Event{"minor-faults"}, Event{"major-faults"}},
			[]string{"major-faults", "minor-faults", "page-faults"}},
		{"cpu/event=0x3c,umask=0x0/ >= 2 * cpu@inst_retired.any@", Ge,
			Event{"cpu/event=0x3c,umask=0x0/"}, Binary{"*", Num{2}, Event{"cpu@inst_retired.any@"}},
			[]string{"cpu/event=0x3c,umask=0x0/", "cpu@inst_retired.any@"}},
		// Precedence: * binds tighter than -, - is left-associative.
		{"a - b - c * d <= e", Le,
			Binary{"-", Binary{"-", Event{"a"}, Event{"b"}}, Binary{"*", Event{"c"}, Event{"d"}}}, Event{"e"},
			[]string{"a", "b", "c", "d", "e"}},
		{"(a + b) / 2 = -c", Eq,
			Binary{"/", Binary{"+", Event{"a"}, Event{"b"}}, Num{2}}, Neg{Event{"c"}},
			[]string{"a", "b", "c"}},
		{"( a + b ) = sum(x:y_*)   # trailing comment", Eq,
			Binary{"+", Event{"a"}, Event{"b"}}, Sum{Glob: "x:y_*"},
			[]string{"a", "b"}},
		{"r.e-x = 1.5e3 + ((q))", Eq, Event{"r.e-x"}, Binary{"+", Num{1500}, Event{"q"}}, []string{"q", "r.e-x"}},
	}
	for _, c := range cases {
		r := mustParse(t, c.text)
		if r.Op != c.op || !reflect.DeepEqual(r.LHS, c.lhs) || !reflect.DeepEqual(r.RHS, c.rhs) {
			t.Errorf("parse %q:\n got %v %v %v\nwant %v %v %v", c.text, r.LHS, r.Op, r.RHS, c.lhs, c.op, c.rhs)
		}
		if got := r.Events(); !reflect.DeepEqual(got, c.event) {
			t.Errorf("events of %q = %v, want %v", c.text, got, c.event)
		}
		// String renders relation-file syntax that parses back to the same tree.
		again := mustParse(t, r.String())
		if !reflect.DeepEqual(again.LHS, r.LHS) || !reflect.DeepEqual(again.RHS, r.RHS) || again.Op != r.Op {
			t.Errorf("round trip of %q through %q changed it", c.text, r.String())
		}
	}
}

func TestParseFileErrorsNameFileLineColumn(t *testing.T) {
	src := strings.Join([]string{
		"# relations of my app",
		"",
		"a = b + c",
		"a=b",              // 4: no spaces: one event "a=b", then end of line
		"a = b +",          // 5
		"x <= y*2",         // 6: glob char outside sum
		"x = (y + z",       // 7
		"2 = 2",            // 8
		"x = sum(y[)",      // 9
		"x == y",           // 10
		"p >= q # fine",    // 11
		"x = 1e999",        // 12
		"x = y z",          // 13
		"x = sum( )",       // 14
		"loads = y(1)",     // 15
		"a < b",            // 16
		"  good-one <= 3 ", // 17
	}, "\n")
	rels, err := ParseFile("app.rel", strings.NewReader(src))
	if len(rels) != 3 {
		t.Errorf("good relations: got %d (%v), want 3", len(rels), rels)
	}
	if len(rels) == 3 && (rels[0].Source != "file:app.rel:3" || rels[2].Source != "file:app.rel:17" || rels[1].Text != "p >= q") {
		t.Errorf("sources/texts: %q %q %q", rels[0].Source, rels[2].Source, rels[1].Text)
	}
	want := map[int]int{4: 4, 5: 8, 6: 7, 7: 11, 8: 1, 9: 9, 10: 3, 12: 5, 13: 7, 14: 10, 15: 10, 16: 3}
	var got []*ParseError
	for _, e := range flatten(err) {
		var pe *ParseError
		if !errors.As(e, &pe) {
			t.Errorf("error %v is not a *ParseError", e)
			continue
		}
		got = append(got, pe)
	}
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d: %v", len(got), len(want), err)
	}
	for _, pe := range got {
		col, ok := want[pe.Line]
		if !ok {
			t.Errorf("unexpected error %v", pe)
			continue
		}
		if pe.File != "app.rel" || pe.Col != col {
			t.Errorf("error %v: want app.rel:%d:%d", pe, pe.Line, col)
		}
		if !strings.HasPrefix(pe.Error(), "app.rel:") {
			t.Errorf("error text %q does not start with the file name", pe.Error())
		}
	}
}

func flatten(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []error{err}
}

// randomExpr builds a random expression over events e0..e4, linear or not.
func randomExpr(rng *rand.Rand, depth int) Expr {
	if depth <= 0 || rng.IntN(3) == 0 {
		if rng.IntN(2) == 0 {
			return Num{V: float64(rng.IntN(7) - 3)}
		}
		return Event{Name: "e" + string(rune('0'+rng.IntN(5)))}
	}
	switch rng.IntN(6) {
	case 0:
		return Neg{X: randomExpr(rng, depth-1)}
	case 1:
		return Call{Fn: "max", Args: []Expr{randomExpr(rng, depth-1), randomExpr(rng, depth-1)}}
	}
	return Binary{Op: []string{"+", "-", "*", "/"}[rng.IntN(4)], L: randomExpr(rng, depth-1), R: randomExpr(rng, depth-1)}
}

// TestLinearizeAgreesWithEval checks the linear form against direct evaluation: for a
// relation Linearize accepts, Σ c·e + k must equal LHS − RHS at random event values.
func TestLinearizeAgreesWithEval(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	linear, nonlinear := 0, 0
	for range 3000 {
		r := Relation{Op: Op(rng.IntN(3)), LHS: randomExpr(rng, 4), RHS: randomExpr(rng, 3)}
		l, ok := r.Linearize()
		if !ok {
			nonlinear++
			continue
		}
		linear++
		if l.Op != r.Op {
			t.Fatalf("%v: op %v, want %v", r, l.Op, r.Op)
		}
		for range 3 {
			vals := map[string]float64{}
			for i := range 5 {
				vals["e"+string(rune('0'+i))] = rng.Float64()*100 - 50
			}
			val := func(e string) float64 { return vals[e] }
			lhs, rhs, err := r.Eval(val)
			if err != nil {
				continue // division by a constant zero: Linearize refused those anyway
			}
			got := l.Const
			for e, c := range l.Coef {
				got += c * vals[e]
			}
			if want := lhs - rhs; math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("%v: linear form %v gives %g, eval gives %g", r, l, got, want)
			}
		}
	}
	if linear < 300 || nonlinear < 300 {
		t.Errorf("generator is lopsided: %d linear, %d non-linear", linear, nonlinear)
	}
}

func TestKinds(t *testing.T) {
	for text, want := range map[string]Kind{
		"a = b + 2 * c":       LinearIdentity,
		"a = (b + c) / 4":     LinearIdentity,
		"a - a + b >= 1":      LinearInequality,
		"a = b * c":           Nonlinear,
		"a = b / c":           Nonlinear,
		"a = b / (2 - 2)":     Nonlinear, // division by a constant zero is not a linear form
		"a = sum(x*)":         Nonlinear, // unbound
		"misses <= accesses":  LinearInequality,
		"-a = -(b - 3) * 1.5": LinearIdentity,
	} {
		if got := mustParse(t, text).Kind(); got != want {
			t.Errorf("kind of %q = %v, want %v", text, got, want)
		}
	}
	l, _ := mustParse(t, "a - a + b >= 1").Linearize()
	if _, ok := l.Coef["a"]; ok || l.Coef["b"] != 1 || l.Const != -1 {
		t.Errorf("cancelled coefficient kept or wrong: %+v", l)
	}
}

func TestEvalErrors(t *testing.T) {
	val := func(string) float64 { return 0 }
	if _, _, err := mustParse(t, "a = b / c").Eval(val); !errors.Is(err, ErrDivZero) {
		t.Errorf("b / 0: got %v, want ErrDivZero", err)
	}
	if _, _, err := mustParse(t, "a = sum(x*)").Eval(val); !errors.Is(err, ErrUnbound) {
		t.Errorf("unbound sum: got %v, want ErrUnbound", err)
	}
	r := Relation{Op: Eq, LHS: Call{Fn: "d_ratio", Args: []Expr{Event{"a"}, Event{"b"}}}, RHS: Num{0}}
	if l, _, err := r.Eval(val); err != nil || l != 0 {
		t.Errorf("d_ratio(x, 0) = %v, %v; want 0 (Linux's definition)", l, err)
	}
	r = Relation{Op: Eq, LHS: Call{Fn: "nope"}, RHS: Num{0}}
	if _, _, err := r.Eval(val); err == nil {
		t.Error("unknown function evaluated without error")
	}
}

func TestBind(t *testing.T) {
	rels := []Relation{
		mustParse(t, "all = sum(tp:enter_*)"),
		mustParse(t, "a = b"),        // b missing from the run: dropped
		mustParse(t, "a = sum(zz*)"), // matches nothing: dropped
		mustParse(t, "a <= 2 * all"),
	}
	events := []string{"all", "tp:enter_read", "tp:enter_write", "a", "other"}
	got := Bind(rels, events)
	if len(got) != 2 {
		t.Fatalf("bound %d relations, want 2: %v", len(got), got)
	}
	if want := []string{"all", "tp:enter_read", "tp:enter_write"}; !reflect.DeepEqual(got[0].Events(), want) {
		t.Errorf("events after bind: %v, want %v", got[0].Events(), want)
	}
	if rels[0].RHS.(Sum).Terms != nil {
		t.Error("Bind modified its input")
	}
	vals := map[string]float64{"all": 7, "tp:enter_read": 3, "tp:enter_write": 4, "a": 1}
	if ok, err := got[0].Holds(func(e string) float64 { return vals[e] }, 0); !ok || err != nil {
		t.Errorf("7 = 3 + 4 does not hold: %v", err)
	}
}

func TestBindExhaustiveSums(t *testing.T) {
	mk := func(text string) Relation {
		r := mustParse(t, text)
		markExhaustive(&r)
		return r
	}
	universe := []string{"raw", "sc:e_read", "sc:e_write", "sc:e_open"}
	cases := []struct {
		text   string
		events []string
		univ   []string
		keep   bool
		op     Op
	}{
		// All of the host's matching events are in the run: stays an identity.
		{"raw = sum(sc:e_*)", []string{"raw", "sc:e_read", "sc:e_write", "sc:e_open"}, universe, true, Eq},
		// Run lacks sc:e_open: raw = read + write + open >= read + write.
		{"raw = sum(sc:e_*)", []string{"raw", "sc:e_read", "sc:e_write"}, universe, true, Ge},
		{"sum(sc:e_*) = raw", []string{"raw", "sc:e_read"}, nil, true, Le},
		{"raw - sum(sc:e_*) = 0", []string{"raw", "sc:e_read"}, nil, true, Ge},
		// raw <= sum: with terms missing, nothing follows.
		{"raw <= sum(sc:e_*)", []string{"raw", "sc:e_read"}, nil, false, 0},
		{"raw >= sum(sc:e_*)", []string{"raw", "sc:e_read"}, nil, true, Ge},
		// Missing terms with both signs: nothing follows.
		{"sum(sc:e_*) = 2 * sum(sc:e_*)", []string{"sc:e_read"}, nil, false, 0},
		// Non-linear around an incomplete sum: dropped.
	}
	nonlin := Relation{Op: Eq, LHS: Event{"raw"}, RHS: Call{Fn: "max", Args: []Expr{Sum{Glob: "sc:e_*", Exhaustive: true}, Num{1}}}}
	if got := Bind([]Relation{nonlin}, []string{"raw", "sc:e_read"}); len(got) != 0 {
		t.Errorf("non-linear relation around an incomplete sum kept: %v", got)
	}
	for _, c := range cases {
		got := BindUniverse([]Relation{mk(c.text)}, c.events, c.univ)
		if (len(got) == 1) != c.keep {
			t.Errorf("%q over %v: kept %d, want keep=%v", c.text, c.events, len(got), c.keep)
			continue
		}
		if c.keep && got[0].Op != c.op {
			t.Errorf("%q over %v: op %v, want %v", c.text, c.events, got[0].Op, c.op)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		glob, name string
		want       bool
	}{
		{"syscalls:sys_enter_*", "syscalls:sys_enter_read", true},
		{"syscalls:sys_enter_*", "syscalls:sys_exit_read", false},
		{"*", "cpu/event=0x3c/", true},
		{"cpu/*/", "cpu/event=0x3c,umask=1/", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{"l[12]_*", "l2_rqsts", true},
		{"l[!12]_*", "l2_rqsts", false},
		{"l[0-9]*", "l7", true},
		{"x[", "x[", false},
		{"*a*a*a*a*a*b", strings.Repeat("a", 200), false},
		{"**", "", true},
		{"", "", true},
		{"", "a", false},
	} {
		if got := Match(c.glob, c.name); got != c.want {
			t.Errorf("Match(%q, %q) = %v, want %v", c.glob, c.name, got, c.want)
		}
	}
}

func TestBuiltinsWellFormed(t *testing.T) {
	rels := Builtins()
	seen := map[string]bool{}
	for _, r := range rels {
		if r.Source != "builtin" || r.Note == "" || r.Text == "" {
			t.Errorf("builtin %q lacks source, note or text", r.Text)
		}
		// Every built-in is linear (an identity or an inequality), so the model can use
		// it exactly once bound.
		b := BindUniverse([]Relation{r}, eventsOf(r), eventsOf(r))
		if len(b) != 1 || b[0].Kind() == Nonlinear {
			t.Errorf("builtin %q is not linear once bound", r.Text)
			continue
		}
		// Listed twice, in any spelling or with another tolerance, is a mistake: Bind
		// would keep only the stricter one.
		key := sameKey(b[0])
		if seen[key] {
			t.Errorf("builtin %q listed twice (key %s)", r.Text, key)
		}
		seen[key] = true
	}
	nn := NonNegative([]string{"x"})
	if ok, _ := nn[0].Holds(func(string) float64 { return -1 }, 0); ok {
		t.Error("x >= 0 holds for x = -1")
	}
}

// eventsOf returns the events of r with each sum's glob standing for one event.
func eventsOf(r Relation) []string {
	var out []string
	for _, side := range []Expr{r.LHS, r.RHS} {
		Walk(side, func(e Expr) {
			switch e := e.(type) {
			case Event:
				out = append(out, e.Name)
			case Sum:
				out = append(out, strings.ReplaceAll(e.Glob, "*", "x"))
			}
		})
	}
	return out
}

func TestBindModifierSuffixes(t *testing.T) {
	rels := []Relation{mustParse(t, "page-faults = minor-faults + major-faults"), mustParse(t, "a = sum(tp:x_*)")}
	got := Bind(rels, []string{"page-faults:u", "minor-faults:u", "major-faults:u", "a:k", "tp:x_1:k", "tp:x_2", "sched:sched_switch"})
	want := []string{"page-faults:u = minor-faults:u + major-faults:u", "a:k = sum(tp:x_*:k)"}
	if len(got) != len(want) {
		t.Fatalf("bound %v, want %v", got, want)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("bound %q, want %q", got[i].String(), want[i])
		}
	}
	if ev := got[1].Events(); !reflect.DeepEqual(ev, []string{"a:k", "tp:x_1:k"}) {
		t.Errorf("suffixed sum bound to %v", ev)
	}
	// Mixed suffixes do not bind: page-faults:u against minor-faults:k is no identity.
	if got := Bind(rels[:1], []string{"page-faults:u", "minor-faults:k", "major-faults:u"}); len(got) != 0 {
		t.Errorf("bound across different modifiers: %v", got)
	}
	if s := modifierSuffix("sched:sched_switch"); s != "" {
		t.Errorf("tracepoint name read as a modifier: %q", s)
	}
}

func TestBindDeduplicates(t *testing.T) {
	rels := Builtins()
	got := Bind(rels, []string{"raw_syscalls:sys_enter", "syscalls:sys_enter_read"})
	if len(got) != 1 || got[0].Op != Ge {
		t.Errorf("raw_syscalls with one syscall tracepoint: %v, want the single inequality", got)
	}
}

func TestBindSpellings(t *testing.T) {
	rels := []Relation{mustParse(t, "inst_retired.any = inst_retired.any_p"), mustParse(t, "l2_rqsts.miss <= l2_rqsts.references")}
	got := Bind(rels, []string{"INST_RETIRED.ANY", "cpu/inst_retired.any_p/", "cpu/l2_rqsts.miss,cmask=1/", "l2_rqsts.references"})
	if len(got) != 1 || got[0].String() != "INST_RETIRED.ANY = cpu/inst_retired.any_p/" {
		t.Errorf("bound %v, want the run's spellings of the first relation only", got)
	}
}

// TestExampleFile parses the example relation file shipped in testdata, which users
// copy from: every line must parse, and the kinds must be what the comments say.
func TestExampleFile(t *testing.T) {
	f, err := os.Open("testdata/example.rel")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rels, err := ParseFile("testdata/example.rel", f)
	if err != nil {
		t.Fatal(err)
	}
	kinds := []Kind{LinearIdentity, LinearInequality, LinearInequality, Nonlinear, LinearInequality, Nonlinear}
	if len(rels) != len(kinds) {
		t.Fatalf("parsed %d relations, want %d", len(rels), len(kinds))
	}
	for i, r := range rels {
		if r.Kind() != kinds[i] {
			t.Errorf("%s: kind %v, want %v", r.Text, r.Kind(), kinds[i])
		}
	}
	// Bound to a run with two sched_stat tracepoints, the glob sum becomes linear.
	b := Bind(rels[3:4], []string{"sched:sched_stat_runtime", "sched:sched_stat_wait"})
	if len(b) != 1 || b[0].Kind() != LinearInequality || len(b[0].Events()) != 2 {
		t.Errorf("bound glob sum: %v", b)
	}
}
