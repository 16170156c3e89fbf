package relation

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// ParseError is a bad relation-file line.
type ParseError struct {
	File      string
	Line, Col int // 1-based; Col counts bytes
	Msg       string
}

func (e *ParseError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("column %d: %s", e.Col, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// maxLine bounds one line of a relation file; longer lines are an error, not a reason to
// buffer without limit.
const maxLine = 1 << 20

// maxErrors bounds the errors ParseFile reports for one file.
const maxErrors = 20

// ParseFile reads a relation file: one relation per line, `LHS = RHS`, `LHS <= RHS` or
// `LHS >= RHS`, blank lines and `#` comments (from a # that starts a word to the end of
// the line) ignored. Each side is an expression of event names, numbers, + - * /,
// parentheses, unary minus and sum(GLOB). Binary operators and the comparison must have
// spaces around them, because event names contain - : . / @ = and ,; parentheses need
// none. name is used in errors ("name:line:col: ...") and in each relation's Source.
//
// ParseFile returns the relations of the good lines and, if any line was bad, an error
// joining one *ParseError per bad line (at most 20).
func ParseFile(name string, r io.Reader) ([]Relation, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	var rels []Relation
	var errs []error
	line := 0
	for sc.Scan() {
		line++
		rel, err := ParseLine(sc.Text())
		if err != nil {
			var pe *ParseError
			if errors.As(err, &pe) {
				pe.File, pe.Line = name, line
			}
			errs = append(errs, err)
			if len(errs) >= maxErrors {
				errs = append(errs, fmt.Errorf("%s: too many errors, stopped at line %d", name, line))
				break
			}
			continue
		}
		if rel == nil {
			continue
		}
		rel.Source = fmt.Sprintf("file:%s:%d", name, line)
		rels = append(rels, *rel)
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, fmt.Errorf("read relation file %s after line %d: %w", name, line, err))
	}
	return rels, errors.Join(errs...)
}

// ParseLine parses one relation-file line. It returns nil, nil for a blank or comment
// line. Errors are *ParseError with Col set (File and Line are left for the caller).
func ParseLine(text string) (*Relation, error) {
	toks, err := tokenize(text)
	if err != nil {
		return nil, err
	}
	if len(toks) == 0 {
		return nil, nil
	}
	p := &parser{toks: toks}
	lhs, err := p.expr()
	if err != nil {
		return nil, err
	}
	t := p.peek()
	var op Op
	switch t.kind {
	case tokRel:
		op = map[string]Op{"=": Eq, "<=": Le, ">=": Ge}[t.text]
		p.pos++
	case tokEOF:
		return nil, p.errAt(t, "expected = <= or >= (with spaces around it)")
	default:
		return nil, p.errAt(t, fmt.Sprintf("unexpected %q: expected an operator with spaces around it", t.text))
	}
	rhs, err := p.expr()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errAt(t, fmt.Sprintf("unexpected %q after the relation", t.text))
	}
	rel := &Relation{Op: op, LHS: lhs, RHS: rhs, Text: strings.TrimSpace(stripComment(text))}
	hasEvent := false
	for _, side := range []Expr{lhs, rhs} {
		Walk(side, func(e Expr) {
			switch e.(type) {
			case Event, Sum:
				hasEvent = true
			}
		})
	}
	if !hasEvent {
		return nil, &ParseError{Col: toks[0].col, Msg: "relation mentions no event"}
	}
	return rel, nil
}

type tokKind int

const (
	tokEOF    tokKind = iota
	tokName           // event name or number
	tokOp             // + - * /
	tokRel            // = <= >=
	tokLParen         // (
	tokRParen         // )
	tokSum            // sum(
)

type token struct {
	kind tokKind
	text string
	col  int
}

func stripComment(text string) string {
	for i := 0; i < len(text); i++ {
		if text[i] == '#' && (i == 0 || text[i-1] == ' ' || text[i-1] == '\t') {
			return text[:i]
		}
	}
	return text
}

// tokenize splits a line into words at blanks, then peels parentheses off the ends of
// each word: event names never start with ( nor end with ).
func tokenize(text string) ([]token, error) {
	text = stripComment(text)
	var toks []token
	i := 0
	for i < len(text) {
		if text[i] == ' ' || text[i] == '\t' || text[i] == '\r' {
			i++
			continue
		}
		start := i
		for i < len(text) && text[i] != ' ' && text[i] != '\t' && text[i] != '\r' {
			i++
		}
		word, col := text[start:i], start+1
		for {
			if strings.HasPrefix(word, "(") {
				toks = append(toks, token{tokLParen, "(", col})
				word, col = word[1:], col+1
				continue
			}
			if strings.HasPrefix(word, "-(") {
				toks = append(toks, token{tokOp, "-", col})
				word, col = word[1:], col+1
				continue
			}
			if strings.HasPrefix(word, "sum(") {
				toks = append(toks, token{tokSum, "sum(", col})
				word, col = word[4:], col+4
				continue
			}
			break
		}
		closing := 0
		for strings.HasSuffix(word, ")") {
			word = word[:len(word)-1]
			closing++
		}
		switch word {
		case "":
		case "+", "-", "*", "/":
			toks = append(toks, token{tokOp, word, col})
		case "=", "<=", ">=":
			toks = append(toks, token{tokRel, word, col})
		case "==":
			return nil, &ParseError{Col: col, Msg: `"==" is not a comparison here: write "="`}
		case "<", ">":
			return nil, &ParseError{Col: col, Msg: fmt.Sprintf("strict %q is not supported: write %q", word, word+"=")}
		default:
			toks = append(toks, token{tokName, word, col})
		}
		for k := 0; k < closing; k++ {
			toks = append(toks, token{tokRParen, ")", col + len(word) + k})
		}
	}
	return toks, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	end := 1
	if n := len(p.toks); n > 0 {
		end = p.toks[n-1].col + len(p.toks[n-1].text)
	}
	return token{kind: tokEOF, col: end}
}

func (p *parser) errAt(t token, msg string) error {
	return &ParseError{Col: t.col, Msg: msg}
}

// maxDepth bounds nesting so that a hostile file cannot exhaust the stack.
const maxDepth = 200

func (p *parser) expr() (Expr, error) { return p.binary(0, 0) }

// levels lists the binary operators by precedence, loosest first.
var levels = [][]string{{"+", "-"}, {"*", "/"}}

// binary parses a left-associative chain of levels[level]'s operators over operands of
// the tighter levels (a unary expression past the last).
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
		if t.kind != tokOp || !slices.Contains(levels[level], t.text) {
			return l, nil
		}
		p.pos++
		r, err := p.binary(level+1, depth)
		if err != nil {
			return nil, err
		}
		l = Binary{Op: t.text, L: l, R: r}
	}
}

func (p *parser) unary(depth int) (Expr, error) {
	if depth > maxDepth {
		return nil, p.errAt(p.peek(), "expression nested too deeply")
	}
	t := p.peek()
	switch t.kind {
	case tokOp:
		if t.text == "-" {
			p.pos++
			x, err := p.unary(depth + 1)
			if err != nil {
				return nil, err
			}
			return Neg{X: x}, nil
		}
		return nil, p.errAt(t, fmt.Sprintf("unexpected %q: expected an event, a number or (", t.text))
	case tokLParen:
		p.pos++
		x, err := p.binary(0, depth+1)
		if err != nil {
			return nil, err
		}
		if c := p.peek(); c.kind != tokRParen {
			return nil, p.errAt(c, "expected ) to close the ( at column "+strconv.Itoa(t.col))
		}
		p.pos++
		return x, nil
	case tokSum:
		p.pos++
		g := p.peek()
		if g.kind != tokName {
			return nil, p.errAt(g, "expected a glob after sum(")
		}
		p.pos++
		if c := p.peek(); c.kind != tokRParen {
			return nil, p.errAt(c, "expected ) to close sum(")
		}
		p.pos++
		if _, ok := matchable(g.text); !ok {
			return nil, p.errAt(g, fmt.Sprintf("bad glob %q: unclosed [", g.text))
		}
		return Sum{Glob: g.text}, nil
	case tokName:
		p.pos++
		return operand(t)
	case tokEOF:
		return nil, p.errAt(t, "unexpected end of line: expected an event, a number or (")
	}
	return nil, p.errAt(t, fmt.Sprintf("unexpected %q: expected an event, a number or (", t.text))
}

// matchable checks that every [ of a glob is closed.
func matchable(glob string) (string, bool) {
	for i := 0; i < len(glob); i++ {
		if glob[i] == '[' {
			end, _ := matchClass(glob[i:], 0)
			if end == 0 {
				return glob, false
			}
			i += end - 1
		}
	}
	return glob, true
}

func operand(t token) (Expr, error) {
	w := t.text
	if w == "" {
		return nil, &ParseError{Col: t.col, Msg: "expected an event or a number after -"}
	}
	if strings.HasPrefix(w, "-") {
		// "-2" or "-x": unary minus written against its operand.
		x, err := operand(token{tokName, w[1:], t.col + 1})
		if err != nil {
			return nil, err
		}
		return Neg{X: x}, nil
	}
	if w[0] == '#' {
		// "(#x)" would read as an event #x, but written out with a space before it the
		// # begins a comment: no event name starts with #.
		return nil, &ParseError{Col: t.col, Msg: fmt.Sprintf("%q: an event name cannot start with # (a # that starts a word begins a comment)", w)}
	}
	if c := w[0]; (c >= '0' && c <= '9') || (c == '.' && len(w) > 1 && w[1] >= '0' && w[1] <= '9') {
		v, err := strconv.ParseFloat(w, 64)
		if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, &ParseError{Col: t.col, Msg: fmt.Sprintf("bad number %q (binary operators need spaces around them)", w)}
		}
		return Num{V: v}, nil
	}
	if i := strings.IndexAny(w, "*?["); i >= 0 {
		return nil, &ParseError{Col: t.col + i, Msg: fmt.Sprintf("glob character %q in event %q outside sum(): write sum(%s), or put spaces around *", w[i], w, w)}
	}
	if i := strings.IndexAny(w, "()"); i >= 0 {
		return nil, &ParseError{Col: t.col + i, Msg: fmt.Sprintf("parenthesis inside %q: put a space before (", w)}
	}
	return Event{Name: w}, nil
}
