package metricexpr

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
)

// Env supplies what a formula refers to. Nil functions resolve nothing.
type Env struct {
	// Value returns the value of an ID (an event count or another metric), by its
	// normalised name.
	Value func(name string) (float64, bool)
	// Literal returns a #constant (#SMT_on, #slots, ...); name keeps the '#'.
	Literal func(name string) (float64, bool)
	// HasEvent reports whether the host can count the event (has_event).
	HasEvent func(name string) bool
	// SourceCount is the number of counters aggregated into the event (source_count);
	// nil means 1.
	SourceCount func(name string) float64
	// CPUID is the host's CPU id string for strcmp_cpuid_str; perf's function returns
	// 1 when the id matches (a regular expression match against the host's cpuid).
	CPUID func(pattern string) bool
}

// ErrUnresolved is wrapped by Eval's error for an ID or literal Env does not know.
var ErrUnresolved = errors.New("unresolved name")

// Eval evaluates e in env with expr.y's semantics (see the package doc).
func Eval(e Expr, env Env) (float64, error) {
	switch e := e.(type) {
	case Num:
		return e.V, nil
	case ID:
		if env.Value != nil {
			if v, ok := env.Value(e.Name); ok {
				return v, nil
			}
		}
		return 0, fmt.Errorf("evaluate %s: %w", e.Name, ErrUnresolved)
	case Literal:
		if env.Literal != nil {
			if v, ok := env.Literal(e.Name); ok {
				return v, nil
			}
		}
		return 0, fmt.Errorf("evaluate %s: %w", e.Name, ErrUnresolved)
	case Neg:
		x, err := Eval(e.X, env)
		return -x, err
	case Special:
		return evalSpecial(e, env)
	case If:
		c, err := Eval(e.Cond, env)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return Eval(e.Then, env)
		}
		return Eval(e.Else, env)
	case Call:
		a, b, err := evalBoth(e.A, e.B, env)
		if err != nil {
			return 0, err
		}
		return evalCall(e.Fn, a, b)
	case Binary:
		l, r, err := evalBoth(e.L, e.R, env)
		if err != nil {
			return 0, err
		}
		return evalBinary(e.Op, l, r)
	case nil:
		return 0, errors.New("evaluate empty formula")
	}
	return 0, fmt.Errorf("evaluate %T: unknown node", e)
}

// evalSpecial is a perf special function of a name.
func evalSpecial(e Special, env Env) (float64, error) {
	switch e.Fn {
	case "has_event":
		return b2f(env.HasEvent != nil && env.HasEvent(e.Arg.Name)), nil
	case "source_count":
		if env.SourceCount == nil {
			return 1, nil
		}
		return env.SourceCount(e.Arg.Name), nil
	case "strcmp_cpuid_str":
		return b2f(env.CPUID != nil && env.CPUID(e.Arg.Name)), nil
	}
	return 0, fmt.Errorf("evaluate %s(): unknown function", e.Fn)
}

// evalCall is a function of two values.
func evalCall(fn string, a, b float64) (float64, error) {
	switch fn {
	case "min":
		return math.Min(a, b), nil
	case "max":
		return math.Max(a, b), nil
	case "d_ratio":
		if b == 0 {
			return 0, nil
		}
		return a / b, nil
	}
	return 0, fmt.Errorf("evaluate %s(): unknown function", fn)
}

// evalBinary is a binary operator, with C's semantics where perf's expr.y has them.
func evalBinary(op byte, l, r float64) (float64, error) {
	switch op {
	case '+':
		return l + r, nil
	case '-':
		return l - r, nil
	case '*':
		return l * r, nil
	case '/':
		if r == 0 {
			return math.NaN(), nil
		}
		return l / r, nil
	case '%':
		if toLong(r) == 0 {
			return math.NaN(), nil
		}
		return float64(toLong(l) % toLong(r)), nil
	case '<':
		return b2f(l < r), nil
	case '>':
		return b2f(l > r), nil
	case '&':
		return float64(toLong(l) & toLong(r)), nil
	case '|':
		return float64(toLong(l) | toLong(r)), nil
	case '^':
		return float64(toLong(l) ^ toLong(r)), nil
	}
	return 0, fmt.Errorf("evaluate operator %q: unknown", op)
}

// toLong is C's (long) cast of a double, made total: NaN and out-of-range values, which
// are undefined behaviour in C, give 0 here.
func toLong(v float64) int64 {
	if math.IsNaN(v) || v >= 9.2e18 || v <= -9.2e18 {
		return 0
	}
	return int64(v)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// evalBoth evaluates the operands a and b, a first: the first error stops it.
func evalBoth(a, b Expr, env Env) (float64, float64, error) {
	x, err := Eval(a, env)
	if err != nil {
		return 0, 0, err
	}
	y, err := Eval(b, env)
	return x, y, err
}

// IDs returns the sorted distinct normalised names the formula refers to, excluding the
// arguments of has_event, source_count and strcmp_cpuid_str (they are not values).
func IDs(e Expr) []string {
	return names(e, func(n Expr) (string, bool) {
		id, ok := n.(ID)
		return id.Name, ok
	})
}

// Literals returns the sorted distinct #literals of the formula, as written.
func Literals(e Expr) []string {
	return names(e, func(n Expr) (string, bool) {
		l, ok := n.(Literal)
		return l.Name, ok
	})
}

// names returns the sorted distinct names that name picks out of e's nodes.
func names(e Expr, name func(Expr) (string, bool)) []string {
	set := map[string]bool{}
	Walk(e, func(n Expr) {
		if s, ok := name(n); ok {
			set[s] = true
		}
	})
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Walk calls fn for e and every node below it, parents first. Special's argument is not
// visited (it is not a value).
func Walk(e Expr, fn func(Expr)) {
	if e == nil {
		return
	}
	fn(e)
	switch e := e.(type) {
	case Neg:
		Walk(e.X, fn)
	case Binary:
		Walk(e.L, fn)
		Walk(e.R, fn)
	case Call:
		Walk(e.A, fn)
		Walk(e.B, fn)
	case If:
		Walk(e.Then, fn)
		Walk(e.Cond, fn)
		Walk(e.Else, fn)
	}
}

// LiteralIs reports whether literal (with its '#') names the constant want, ignoring
// case as perf does (#SMT_on and #smt_on are the same).
func LiteralIs(literal, want string) bool { return strings.EqualFold(literal, want) }
