package pmuevents

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/bayesperf/bayesperf/inference/metricexpr"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// Env gives the host facts a formula may ask for.
type Env struct {
	// Literals maps #constants, lower case with the '#' ("#smt_on", "#slots",
	// "#num_packages", ...), to their values on the host. A formula using one that is
	// absent cannot be expanded.
	Literals map[string]float64
	// HasEvent answers has_event(); nil means "the table lists it".
	HasEvent func(name string) bool
	// SourceCount answers source_count(); nil means 1.
	SourceCount func(name string) float64
	// CPUID answers strcmp_cpuid_str(); nil means false.
	CPUID func(pattern string) bool
}

// ErrUnknownLiteral is wrapped when a formula uses a #constant Env does not give.
var ErrUnknownLiteral = errors.New("unknown #literal")

// maxExpand bounds the size of an expanded metric: inlining shared sub-metrics can
// grow a tree exponentially in a hostile table.
const maxExpand = 1 << 16

// Expand returns the metric's formula with every metric reference inlined and every
// #literal and has_event/source_count/strcmp_cpuid_str replaced by its value, as a
// relation expression over raw events (lower-case names), constants folded.
func (t *Table) Expand(metric string, env Env) (relation.Expr, error) {
	m, ok := t.Metric(metric)
	if !ok {
		return nil, fmt.Errorf("expand metric %s: not in %s", metric, t.Dir)
	}
	x := &expander{t: t, env: env, active: map[string]bool{}}
	out, err := x.expand(m)
	if err != nil {
		return nil, fmt.Errorf("expand metric %s@%s: %w", m.Name, t.Dir, err)
	}
	return out, nil
}

type expander struct {
	t      *Table
	env    Env
	active map[string]bool // metrics being expanded: a reference back is a cycle
	nodes  int
}

func (x *expander) expand(m *Metric) (relation.Expr, error) {
	if x.active[m.Name] {
		return nil, fmt.Errorf("metric %s refers to itself", m.Name)
	}
	x.active[m.Name] = true
	defer delete(x.active, m.Name)
	return x.conv(m.Expr)
}

func (x *expander) conv(e metricexpr.Expr) (relation.Expr, error) {
	x.nodes++
	if x.nodes > maxExpand {
		return nil, errors.New("expansion too large")
	}
	switch e := e.(type) {
	case metricexpr.Num:
		return relation.Num{V: e.V}, nil
	case metricexpr.ID:
		if m, ok := x.t.Metric(e.Name); ok {
			return x.expand(m)
		}
		return relation.Event{Name: Canonical(e.Name)}, nil
	case metricexpr.Literal:
		v, ok := x.env.Literals[strings.ToLower(e.Name)]
		if !ok {
			return nil, fmt.Errorf("%s: %w", e.Name, ErrUnknownLiteral)
		}
		return relation.Num{V: v}, nil
	case metricexpr.Special:
		switch e.Fn {
		case "has_event":
			if x.env.HasEvent != nil {
				return relation.Num{V: b2f(x.env.HasEvent(e.Arg.Name))}, nil
			}
			_, ok := x.t.Event(e.Arg.Name)
			return relation.Num{V: b2f(ok)}, nil
		case "source_count":
			if x.env.SourceCount != nil {
				return relation.Num{V: x.env.SourceCount(e.Arg.Name)}, nil
			}
			return relation.Num{V: 1}, nil
		case "strcmp_cpuid_str":
			return relation.Num{V: b2f(x.env.CPUID != nil && x.env.CPUID(e.Arg.Name))}, nil
		}
		return nil, fmt.Errorf("unknown function %s", e.Fn)
	case metricexpr.Neg:
		v, err := x.conv(e.X)
		if err != nil {
			return nil, err
		}
		if n, ok := v.(relation.Num); ok {
			return relation.Num{V: -n.V}, nil
		}
		return relation.Neg{X: v}, nil
	case metricexpr.Binary:
		l, r, err := x.convBoth(e.L, e.R)
		if err != nil {
			return nil, err
		}
		return fold(relation.Binary{Op: string(e.Op), L: l, R: r}), nil
	case metricexpr.Call:
		a, b, err := x.convBoth(e.A, e.B)
		if err != nil {
			return nil, err
		}
		return fold(relation.Call{Fn: e.Fn, Args: []relation.Expr{a, b}}), nil
	case metricexpr.If:
		c, err := x.conv(e.Cond)
		if err != nil {
			return nil, err
		}
		if n, ok := c.(relation.Num); ok {
			// A host fact (#SMT_on, has_event) decides the branch: expand only that one.
			if n.V != 0 {
				return x.conv(e.Then)
			}
			return x.conv(e.Else)
		}
		th, el, err := x.convBoth(e.Then, e.Else)
		if err != nil {
			return nil, err
		}
		return relation.Cond{If: c, Then: th, Else: el}, nil
	}
	return nil, fmt.Errorf("unknown formula node %T", e)
}

// convBoth converts the operands a and b, a first: the first error stops it.
func (x *expander) convBoth(a, b metricexpr.Expr) (relation.Expr, relation.Expr, error) {
	ca, err := x.conv(a)
	if err != nil {
		return nil, nil, err
	}
	cb, err := x.conv(b)
	if err != nil {
		return nil, nil, err
	}
	return ca, cb, nil
}

// fold evaluates a node whose operands are all constants, and drops the identities
// x*1, x/1, x+0, x-0 and 0*x that vendor formulas use as padding ("+ 0 * slots").
func fold(e relation.Expr) relation.Expr {
	switch b := e.(type) {
	case relation.Binary:
		ln, lok := b.L.(relation.Num)
		rn, rok := b.R.(relation.Num)
		if lok && rok {
			v, err := relation.EvalExpr(b, nil)
			if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				return relation.Num{V: v}
			}
			return e
		}
		switch {
		case b.Op == "*" && ((lok && ln.V == 0) || (rok && rn.V == 0)):
			return relation.Num{V: 0}
		case (b.Op == "*" && rok && rn.V == 1) || (b.Op == "/" && rok && rn.V == 1) ||
			((b.Op == "+" || b.Op == "-") && rok && rn.V == 0):
			return b.L
		case (b.Op == "*" && lok && ln.V == 1) || (b.Op == "+" && lok && ln.V == 0):
			return b.R
		}
	case relation.Call:
		for _, a := range b.Args {
			if _, ok := a.(relation.Num); !ok {
				return e
			}
		}
		if v, err := relation.EvalExpr(b, nil); err == nil {
			return relation.Num{V: v}
		}
	}
	return e
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
