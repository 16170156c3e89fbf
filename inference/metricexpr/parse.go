package metricexpr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Expr is a node of a parsed formula: Num, ID, Literal, Neg, Binary, Call, Special or If.
// String renders it back in MetricExpr syntax (fully parenthesised), which parses to an
// equal tree.
type Expr interface {
	String() string
	isExpr()
}

// Num is a numeric constant.
type Num struct{ V float64 }

// ID is an event or metric name. Name is perf's normalised form (escapes removed, '@'
// turned into '/'); Raw is the text as written.
type ID struct{ Name, Raw string }

// Literal is a #constant such as #SMT_on or #slots; Name keeps the '#' and the case as
// written (compare with strings.EqualFold).
type Literal struct{ Name string }

// Neg is unary minus.
type Neg struct{ X Expr }

// Binary is L Op R with Op one of | ^ & < > + - * / %.
type Binary struct {
	Op   byte
	L, R Expr
}

// Call is min, max or d_ratio of two formulas.
type Call struct {
	Fn   string
	A, B Expr
}

// Special is source_count, has_event or strcmp_cpuid_str of an ID (the argument is not
// evaluated: it names an event, or a CPU id to compare with).
type Special struct {
	Fn  string
	Arg ID
}

// If is "Then if Cond else Else".
type If struct{ Then, Cond, Else Expr }

func (Num) isExpr()     {}
func (ID) isExpr()      {}
func (Literal) isExpr() {}
func (Neg) isExpr()     {}
func (Binary) isExpr()  {}
func (Call) isExpr()    {}
func (Special) isExpr() {}
func (If) isExpr()      {}

func (n Num) String() string {
	if math.IsInf(n.V, 0) || math.IsNaN(n.V) {
		// Only reachable through constructed trees: keep String total.
		return "(0 / 0)"
	}
	// expr.l's exponent has no '+': write 1e9, not 1e+09.
	return strings.Replace(strconv.FormatFloat(n.V, 'g', -1, 64), "e+", "e", 1)
}
func (i ID) String() string      { return i.Raw }
func (l Literal) String() string { return l.Name }
func (n Neg) String() string     { return "-(" + n.X.String() + ")" }
func (b Binary) String() string {
	return "(" + b.L.String() + " " + string(b.Op) + " " + b.R.String() + ")"
}
func (c Call) String() string    { return c.Fn + "(" + c.A.String() + ", " + c.B.String() + ")" }
func (s Special) String() string { return s.Fn + "(" + s.Arg.Raw + ")" }
func (f If) String() string {
	return "(" + f.Then.String() + " if " + f.Cond.String() + " else " + f.Else.String() + ")"
}

// SyntaxError is a formula perf would not accept.
type SyntaxError struct {
	Offset int // byte offset into the formula
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("offset %d: %s", e.Offset, e.Msg)
}

// maxDepth bounds nesting so that a hostile formula cannot exhaust the stack; the
// deepest vendor formula nests far less.
const maxDepth = 256

// Parse parses one MetricExpr formula.
func Parse(formula string) (Expr, error) {
	toks, err := lex(formula)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, src: formula}
	e, err := p.formula(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.errAt(t, "unexpected "+t.describe()+" after the formula")
	}
	return e, nil
}

type parser struct {
	toks []token
	pos  int
	src  string
}

func (p *parser) peek() token { return p.toks[p.pos] } // lex always ends with tEOF

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != tEOF {
		p.pos++
	}
	return t
}

func (p *parser) errAt(t token, msg string) error {
	return &SyntaxError{Offset: t.off, Msg: msg}
}

func (p *parser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, p.errAt(t, "expected "+what+", found "+t.describe())
	}
	return t, nil
}

// formula := expr "if" expr "else" formula | expr
func (p *parser) formula(depth int) (Expr, error) {
	if depth > maxDepth {
		return nil, p.errAt(p.peek(), "formula nested too deeply")
	}
	then, err := p.binary(0, depth)
	if err != nil {
		return nil, err
	}
	if p.peek().kind != tIf {
		return then, nil
	}
	p.next()
	cond, err := p.binary(0, depth)
	if err != nil {
		return nil, err
	}
	if _, err := p.expect(tElse, `"else"`); err != nil {
		return nil, err
	}
	els, err := p.formula(depth + 1)
	if err != nil {
		return nil, err
	}
	return If{Then: then, Cond: cond, Else: els}, nil
}

// levels lists the binary operators by precedence, loosest first (expr.y's %left lines).
var levels = []string{"|", "^", "&", "<>", "+-", "*/%"}

func (p *parser) binary(level, depth int) (Expr, error) {
	if level == len(levels) {
		return p.unary(depth)
	}
	l, err := p.binary(level+1, depth)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tOp || !strings.Contains(levels[level], t.text) {
			return l, nil
		}
		p.next()
		r, err := p.binary(level+1, depth)
		if err != nil {
			return nil, err
		}
		l = Binary{Op: t.text[0], L: l, R: r}
	}
}

func (p *parser) unary(depth int) (Expr, error) {
	if depth > maxDepth {
		return nil, p.errAt(p.peek(), "formula nested too deeply")
	}
	t := p.next()
	switch t.kind {
	case tOp:
		if t.text == "-" {
			x, err := p.unary(depth + 1)
			if err != nil {
				return nil, err
			}
			return Neg{X: x}, nil
		}
	case tNum:
		return Num{V: t.num}, nil
	case tID:
		return ID{Name: normalize(t.text), Raw: t.text}, nil
	case tLiteral:
		return Literal{Name: t.text}, nil
	case tLParen:
		x, err := p.formula(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, `")"`); err != nil {
			return nil, err
		}
		return x, nil
	case tFunc:
		if _, err := p.expect(tLParen, `"(" after `+t.text); err != nil {
			return nil, err
		}
		a, err := p.formula(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tComma, `"," in `+t.text+"()"); err != nil {
			return nil, err
		}
		b, err := p.formula(depth + 1)
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, `")" closing `+t.text+"()"); err != nil {
			return nil, err
		}
		return Call{Fn: t.text, A: a, B: b}, nil
	case tSpecial:
		if _, err := p.expect(tLParen, `"(" after `+t.text); err != nil {
			return nil, err
		}
		id, err := p.expect(tID, "an event name in "+t.text+"()")
		if err != nil {
			return nil, err
		}
		if _, err := p.expect(tRParen, `")" closing `+t.text+"()"); err != nil {
			return nil, err
		}
		return Special{Fn: t.text, Arg: ID{Name: normalize(id.text), Raw: id.text}}, nil
	}
	return nil, p.errAt(t, "expected a number, a name, a #literal, a function or \"(\", found "+t.describe())
}

// normalize is perf's normalize(): drop escaping backslashes and read '@' as '/'. The
// '?' runtime parameter is left in place; Env.Runtime substitutes it.
func normalize(raw string) string {
	if !strings.ContainsAny(raw, `@\`) {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		switch c := raw[i]; c {
		case '@':
			b.WriteByte('/')
		case '\\':
			if i+1 < len(raw) {
				i++
				b.WriteByte(raw[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
