package relation

import (
	"reflect"
	"strings"
	"testing"
)

// FuzzParseFile feeds arbitrary bytes to the relation-file parser. It must never panic,
// every relation it accepts must render (String) to text that parses back to the same
// tree, and every error must carry a line and a column.
func FuzzParseFile(f *testing.F) {
	for _, b := range builtins {
		f.Add(b.text)
	}
	f.Add("a = b + c # comment\n\nx <= (y - 2) * sum(tp:*)\n")
	f.Add("cpu/event=0x3c,umask=0x0/ >= -(a / 1e3)\n")
	f.Add("a = sum(x[)\n((((a = b")
	f.Fuzz(func(t *testing.T, src string) {
		rels, err := ParseFile("f.rel", strings.NewReader(src))
		for _, e := range flatten(err) {
			if pe, ok := e.(*ParseError); ok && (pe.Line < 1 || pe.Col < 1) {
				t.Fatalf("error without a position: %v", pe)
			}
		}
		for _, r := range rels {
			again, err := ParseLine(r.String())
			if err != nil || again == nil {
				t.Fatalf("%q renders as %q, which does not parse: %v", r.Text, r.String(), err)
			}
			if again.Op != r.Op || !reflect.DeepEqual(again.LHS, r.LHS) || !reflect.DeepEqual(again.RHS, r.RHS) {
				t.Fatalf("%q renders as %q, which parses differently", r.Text, r.String())
			}
			r.Linearize()
			r.Eval(func(string) float64 { return 1 })
		}
	})
}
