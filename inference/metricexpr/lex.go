package metricexpr

import (
	"math"
	"strconv"
	"strings"
)

type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tID
	tLiteral
	tOp // | ^ & < > + - * / %
	tLParen
	tRParen
	tComma
	tIf
	tElse
	tFunc    // min max d_ratio
	tSpecial // source_count has_event strcmp_cpuid_str
)

type token struct {
	kind tokKind
	text string
	num  float64
	off  int
}

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of formula"
	case tNum:
		return "number " + t.text
	case tID:
		return "name " + strconv.Quote(t.text)
	}
	return strconv.Quote(t.text)
}

var keywords = map[string]tokKind{
	"if": tIf, "else": tElse,
	"min": tFunc, "max": tFunc, "d_ratio": tFunc,
	"source_count": tSpecial, "has_event": tSpecial, "strcmp_cpuid_str": tSpecial,
}

func isSym(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '_' || c == '.' || c == ':' || c == '@' || c == '?'
}

func isLitChar(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
		c == '_' || c == '.' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// symbolLen is the length of the ID at the start of s: symbol characters and escapes
// (a backslash and the byte after it).
func symbolLen(s string) int {
	i := 0
	for i < len(s) {
		if s[i] == '\\' && i+1 < len(s) && !isBlank(s[i+1]) {
			i += 2
			continue
		}
		if !isSym(s[i]) {
			break
		}
		i++
	}
	return i
}

// numberLen is the length of expr.l's number at the start of s:
// ([0-9]+\.?[0-9]*|[0-9]*\.?[0-9]+)(e-?[0-9]+)?
func numberLen(s string) int {
	i := 0
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intDigits := i
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if intDigits > 0 || j > i+1 {
			i = j
		}
	}
	if i == 0 {
		return 0
	}
	if i < len(s) && s[i] == 'e' {
		j := i + 1
		if j < len(s) && s[j] == '-' {
			j++
		}
		k := j
		for k < len(s) && isDigit(s[k]) {
			k++
		}
		if k > j {
			i = k
		}
	}
	return i
}

// punct returns the kind of the one-character token c, if it is one.
func punct(c byte) (tokKind, bool) {
	switch c {
	case '|', '^', '&', '<', '>', '+', '-', '*', '/', '%':
		return tOp, true
	case '(':
		return tLParen, true
	case ')':
		return tRParen, true
	case ',':
		return tComma, true
	}
	return 0, false
}

// lex splits a formula into tokens the way expr.l does: the longest match wins, and on
// a tie the earlier rule (keywords, then numbers, then symbols). Unlike expr.l, which
// silently skips characters it does not know, lex reports them.
func lex(s string) ([]token, error) {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		if isBlank(c) {
			i++
			continue
		}
		if k, ok := punct(c); ok {
			toks = append(toks, token{kind: k, text: s[i : i+1], off: i})
			i++
			continue
		}
		if c == '#' {
			j := i + 1
			for j < len(s) && isLitChar(s[j]) {
				j++
			}
			if j == i+1 {
				return nil, &SyntaxError{Offset: i, Msg: "'#' must start a literal such as #SMT_on"}
			}
			toks = append(toks, token{kind: tLiteral, text: s[i:j], off: i})
			i = j
			continue
		}
		n, m := numberLen(s[i:]), symbolLen(s[i:])
		switch {
		case n > 0 && n >= m:
			text := s[i : i+n]
			v, err := strconv.ParseFloat(text, 64)
			if err != nil || math.IsInf(v, 0) {
				return nil, &SyntaxError{Offset: i, Msg: "number " + text + " out of range"}
			}
			toks = append(toks, token{kind: tNum, text: text, num: v, off: i})
			i += n
		case m > 0:
			text := s[i : i+m]
			kind := tID
			if k, ok := keywords[text]; ok {
				kind = k
			}
			toks = append(toks, token{kind: kind, text: text, off: i})
			i += m
		default:
			return nil, &SyntaxError{Offset: i, Msg: "unexpected character " + strconv.QuoteRune(rune(c))}
		}
	}
	toks = append(toks, token{kind: tEOF, off: len(s)})
	return toks, nil
}

// QuoteID writes an event name as a MetricExpr ID: '/' as '@', and a backslash before
// every byte that is not a symbol character.
func QuoteID(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '/':
			b.WriteByte('@')
		case isSym(c) && c != '@':
			b.WriteByte(c)
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String()
}
