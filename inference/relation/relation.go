package relation

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Op is the comparison of a relation: LHS Op RHS.
type Op int

const (
	Eq Op = iota // LHS = RHS
	Le           // LHS <= RHS
	Ge           // LHS >= RHS
)

func (o Op) String() string {
	switch o {
	case Eq:
		return "="
	case Le:
		return "<="
	case Ge:
		return ">="
	}
	return "?"
}

// flip is the operator that holds when both sides are swapped (or negated).
func (o Op) flip() Op {
	switch o {
	case Le:
		return Ge
	case Ge:
		return Le
	}
	return o
}

// Expr is a node of a relation's expression tree. The concrete types are Num, Event,
// Neg, Binary, Call, Sum and Cond; String renders the node in relation-file syntax (with
// spaces around binary operators), so that String of a parsed relation parses again.
// Nodes a file cannot write (Call, Cond, and the metric operators % < > & | ^) render in
// MetricExpr style, for display only.
type Expr interface {
	String() string
	isExpr()
}

// Num is a constant.
type Num struct{ V float64 }

// Event is a reference to one event by its name as the run spells it (perf syntax:
// "page-faults", "syscalls:sys_enter_read", "cpu/event=0x3c/", "inst_retired.any").
type Event struct{ Name string }

// Neg is unary minus.
type Neg struct{ X Expr }

// Binary is L Op R. Relation files use + - * /; expressions compiled from vendor metric
// formulas may also use % (remainder), < and > (1 or 0), & | ^ (on values truncated to
// integers, as Linux's expr.y does).
type Binary struct {
	Op   string
	L, R Expr
}

// Call is a function of metric formulas: "min", "max" (two or more arguments) and
// "d_ratio" (a/b, 0 when b is 0).
type Call struct {
	Fn   string
	Args []Expr
}

// Sum is sum(GLOB): the sum of the events whose name matches Glob (see Match: * matches
// any run of characters, / and : included). Terms is nil until Bind fills it with the
// matching events of a run.
//
// Exhaustive says the relation holds only when the sum covers every event the host has
// that matches the glob (raw_syscalls:sys_enter = sum(syscalls:sys_enter_*)), not just
// the run's: Bind weakens such a relation to an inequality when it cannot tell that the
// run has them all.
type Sum struct {
	Glob       string
	Terms      []string
	Exhaustive bool
}

// Cond is "Then if If else Else": Then when If is non-zero, otherwise Else.
type Cond struct{ If, Then, Else Expr }

func (Num) isExpr()    {}
func (Event) isExpr()  {}
func (Neg) isExpr()    {}
func (Binary) isExpr() {}
func (Call) isExpr()   {}
func (Sum) isExpr()    {}
func (Cond) isExpr()   {}

func (n Num) String() string   { return strconv.FormatFloat(n.V, 'g', -1, 64) }
func (e Event) String() string { return e.Name }
func (n Neg) String() string {
	if _, ok := n.X.(Neg); ok {
		// "--(a + b)" would read as one word: the parser strips "-(" from a word's
		// front, not "--(".
		return "-(" + n.X.String() + ")"
	}
	return "-" + paren(n.X)
}
func (b Binary) String() string {
	return paren(b.L) + " " + b.Op + " " + paren(b.R)
}
func (c Call) String() string {
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = a.String()
	}
	return c.Fn + "(" + strings.Join(args, ", ") + ")"
}
func (s Sum) String() string { return "sum(" + s.Glob + ")" }
func (c Cond) String() string {
	return paren(c.Then) + " if " + paren(c.If) + " else " + paren(c.Else)
}

// paren wraps compound operands so that String never depends on precedence rules.
func paren(e Expr) string {
	switch e.(type) {
	case Binary, Cond:
		return "(" + e.String() + ")"
	}
	return e.String()
}

// Kind is the factor type a relation compiles to.
type Kind int

const (
	LinearIdentity   Kind = iota // Σ c·e + k = 0
	LinearInequality             // Σ c·e + k <= 0 or >= 0
	Nonlinear                    // anything else (min, max, products or ratios of events)
)

func (k Kind) String() string {
	switch k {
	case LinearIdentity:
		return "linear-identity"
	case LinearInequality:
		return "linear-inequality"
	}
	return "nonlinear"
}

// Relation is LHS Op RHS between event counts over the same interval.
type Relation struct {
	Op       Op
	LHS, RHS Expr
	// Source says where the relation came from: "builtin", "file:PATH:LINE",
	// "metric:NAME@ARCHDIR", "subevents:EVENT@ARCHDIR", ...
	Source string
	// Text is the relation as written, for `bayesperf list --relations`.
	Text string
	// Tol is the relative tolerance with which the relation holds: |LHS − RHS| is
	// expected within Tol·max(|LHS|, |RHS|) (for inequalities: the violation). 0 means
	// exact. The model turns it into the noise of the factor.
	Tol float64
	// Note says why the relation holds, or why only approximately (shown by list).
	Note string
}

// String renders the relation in relation-file syntax.
func (r Relation) String() string {
	return r.LHS.String() + " " + r.Op.String() + " " + r.RHS.String()
}

// Kind classifies the relation by the factor it compiles to.
func (r Relation) Kind() Kind {
	l, ok := r.Linearize()
	if !ok {
		return Nonlinear
	}
	if l.Op == Eq {
		return LinearIdentity
	}
	return LinearInequality
}

// Linear is Σ Coef[e]·e + Const (Op) 0: a relation with everything moved to the left
// side. Events whose coefficients cancel are absent from Coef.
type Linear struct {
	Coef  map[string]float64
	Const float64
	Op    Op
}

// Linearize returns the relation as a linear form, or false when it is not linear in the
// events (min, max, conditionals, products or ratios of events, unbound sums).
func (r Relation) Linearize() (Linear, bool) {
	d, ok := linearize(Binary{Op: "-", L: r.LHS, R: r.RHS})
	if !ok {
		return Linear{}, false
	}
	out := Linear{Coef: d.c, Const: d.k, Op: r.Op}
	for e, c := range out.Coef {
		if c == 0 {
			delete(out.Coef, e)
		}
	}
	return out, true
}

type linform struct {
	c map[string]float64
	k float64
}

func (l linform) scale(f float64) linform {
	out := linform{c: make(map[string]float64, len(l.c)), k: l.k * f}
	for e, c := range l.c {
		out.c[e] = c * f
	}
	return out
}

func (l linform) add(o linform, sign float64) linform {
	out := linform{c: make(map[string]float64, len(l.c)+len(o.c)), k: l.k + sign*o.k}
	for e, c := range l.c {
		out.c[e] += c
	}
	for e, c := range o.c {
		out.c[e] += sign * c
	}
	return out
}

func linearize(e Expr) (linform, bool) {
	switch e := e.(type) {
	case Num:
		return linform{k: e.V}, true
	case Event:
		return linform{c: map[string]float64{e.Name: 1}}, true
	case Neg:
		x, ok := linearize(e.X)
		return x.scale(-1), ok
	case Sum:
		if e.Terms == nil {
			return linform{}, false
		}
		out := linform{c: map[string]float64{}}
		for _, t := range e.Terms {
			out.c[t]++
		}
		return out, true
	case Binary:
		l, ok := linearize(e.L)
		if !ok {
			return linform{}, false
		}
		r, ok := linearize(e.R)
		if !ok {
			return linform{}, false
		}
		switch e.Op {
		case "+":
			return l.add(r, 1), true
		case "-":
			return l.add(r, -1), true
		case "*":
			if len(nonzero(l.c)) == 0 {
				return r.scale(l.k), true
			}
			if len(nonzero(r.c)) == 0 {
				return l.scale(r.k), true
			}
		case "/":
			if len(nonzero(r.c)) == 0 && r.k != 0 {
				return l.scale(1 / r.k), true
			}
		}
	}
	return linform{}, false
}

func nonzero(c map[string]float64) []string {
	var out []string
	for e, v := range c {
		if v != 0 {
			out = append(out, e)
		}
	}
	return out
}

// Events returns the sorted, de-duplicated names of the events the relation refers to.
// Sums contribute their bound Terms; an unbound sum contributes nothing.
func (r Relation) Events() []string {
	set := map[string]bool{}
	Walk(r.LHS, func(e Expr) { addEvents(e, set) })
	Walk(r.RHS, func(e Expr) { addEvents(e, set) })
	out := make([]string, 0, len(set))
	for e := range set {
		out = append(out, e)
	}
	sort.Strings(out)
	return out
}

func addEvents(e Expr, set map[string]bool) {
	switch e := e.(type) {
	case Event:
		set[e.Name] = true
	case Sum:
		for _, t := range e.Terms {
			set[t] = true
		}
	}
}

// Walk calls fn for e and every node below it, parents before children.
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
		for _, a := range e.Args {
			Walk(a, fn)
		}
	case Cond:
		Walk(e.If, fn)
		Walk(e.Then, fn)
		Walk(e.Else, fn)
	}
}

// ErrUnbound is returned by Eval for a sum(GLOB) that Bind has not expanded.
var ErrUnbound = errors.New("sum is not bound to a run's events")

// Eval evaluates both sides with the event values val returns. It returns an error for
// division by zero (except in d_ratio), unbound sums and unknown functions.
func (r Relation) Eval(val func(event string) float64) (lhs, rhs float64, err error) {
	lhs, err = EvalExpr(r.LHS, val)
	if err != nil {
		return 0, 0, fmt.Errorf("evaluate left side: %w", err)
	}
	rhs, err = EvalExpr(r.RHS, val)
	if err != nil {
		return 0, 0, fmt.Errorf("evaluate right side: %w", err)
	}
	return lhs, rhs, nil
}

// Holds reports whether the relation holds for the values val returns, within the
// relation's own tolerance plus the extra relative slack tol.
func (r Relation) Holds(val func(event string) float64, tol float64) (bool, error) {
	l, rr, err := r.Eval(val)
	if err != nil {
		return false, err
	}
	slack := (r.Tol + tol) * math.Max(math.Abs(l), math.Abs(rr))
	switch r.Op {
	case Le:
		return l <= rr+slack, nil
	case Ge:
		return l >= rr-slack, nil
	}
	return math.Abs(l-rr) <= slack, nil
}

// EvalExpr evaluates one expression; see Relation.Eval.
func EvalExpr(e Expr, val func(event string) float64) (float64, error) {
	switch e := e.(type) {
	case Num:
		return e.V, nil
	case Event:
		return val(e.Name), nil
	case Neg:
		x, err := EvalExpr(e.X, val)
		return -x, err
	case Sum:
		if e.Terms == nil {
			return 0, fmt.Errorf("evaluate sum(%s): %w", e.Glob, ErrUnbound)
		}
		s := 0.0
		for _, t := range e.Terms {
			s += val(t)
		}
		return s, nil
	case Cond:
		c, err := EvalExpr(e.If, val)
		if err != nil {
			return 0, err
		}
		if c != 0 {
			return EvalExpr(e.Then, val)
		}
		return EvalExpr(e.Else, val)
	case Call:
		args := make([]float64, len(e.Args))
		for i, a := range e.Args {
			v, err := EvalExpr(a, val)
			if err != nil {
				return 0, err
			}
			args[i] = v
		}
		return call(e.Fn, args)
	case Binary:
		l, err := EvalExpr(e.L, val)
		if err != nil {
			return 0, err
		}
		r, err := EvalExpr(e.R, val)
		if err != nil {
			return 0, err
		}
		return binary(e.Op, l, r)
	case nil:
		return 0, errors.New("evaluate empty expression")
	}
	return 0, fmt.Errorf("evaluate %T: unknown expression node", e)
}

func call(fn string, a []float64) (float64, error) {
	switch fn {
	case "min", "max":
		if len(a) == 0 {
			return 0, fmt.Errorf("evaluate %s(): no arguments", fn)
		}
		v := a[0]
		for _, x := range a[1:] {
			if fn == "min" {
				v = math.Min(v, x)
			} else {
				v = math.Max(v, x)
			}
		}
		return v, nil
	case "d_ratio":
		if len(a) != 2 {
			return 0, fmt.Errorf("evaluate d_ratio: want 2 arguments, have %d", len(a))
		}
		if a[1] == 0 {
			return 0, nil
		}
		return a[0] / a[1], nil
	}
	return 0, fmt.Errorf("evaluate %s(): unknown function", fn)
}

// ErrDivZero is returned by Eval when a divisor (or % operand) is zero.
var ErrDivZero = errors.New("division by zero")

func binary(op string, l, r float64) (float64, error) {
	switch op {
	case "+":
		return l + r, nil
	case "-":
		return l - r, nil
	case "*":
		return l * r, nil
	case "/":
		if r == 0 {
			return 0, ErrDivZero
		}
		return l / r, nil
	case "%":
		if int64(r) == 0 {
			return 0, ErrDivZero
		}
		return float64(int64(l) % int64(r)), nil
	case "<":
		return b2f(l < r), nil
	case ">":
		return b2f(l > r), nil
	case "&":
		return float64(int64(l) & int64(r)), nil
	case "|":
		return float64(int64(l) | int64(r)), nil
	case "^":
		return float64(int64(l) ^ int64(r)), nil
	}
	return 0, fmt.Errorf("evaluate operator %q: unknown", op)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
