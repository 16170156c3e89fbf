package relation

import (
	"strings"
	"testing"
)

// TestBindUniverseKeepsUserExactIdentity: a user's exact page-faults = minor-faults +
// major-faults, loaded after the built-ins (as loadRelations does), must survive binding
// with its zero tolerance, not be replaced by the built-in soft identity of the same text.
func TestBindUniverseKeepsUserExactIdentity(t *testing.T) {
	user, err := ParseFile("user.rel", strings.NewReader("page-faults = minor-faults + major-faults\n"))
	if err != nil {
		t.Fatal(err)
	}
	events := []string{"page-faults", "minor-faults", "major-faults"}
	for _, order := range []string{"builtins first", "user first"} {
		rels := append(Builtins(), user...)
		if order == "user first" {
			rels = append(append([]Relation(nil), user...), Builtins()...)
		}
		got := BindUniverse(rels, events, events)
		var ids []Relation
		for _, r := range got {
			if r.Op == Eq {
				ids = append(ids, r)
			}
		}
		if len(ids) != 1 {
			t.Fatalf("%s: bound identities %v, want exactly one", order, ids)
		}
		if ids[0].Tol != 0 || ids[0].Source != "file:user.rel:1" {
			t.Errorf("%s: kept %q tol %g from %s; want the user's exact one (tol 0, file:user.rel:1)",
				order, ids[0].String(), ids[0].Tol, ids[0].Source)
		}
		// The built-in inequality states something else and stays.
		if len(got) != 2 {
			t.Errorf("%s: bound %v, want the identity and the built-in inequality", order, got)
		}
	}
}

// TestBindKeepsStrictestOfSameRelation: relations that state the same thing, however
// their terms and sides are ordered or spaced, are bound once, and the one kept is the
// strictest, whichever comes first; relations that state different things all stay.
func TestBindKeepsStrictestOfSameRelation(t *testing.T) {
	rel := func(text string, tol float64, src string) Relation {
		r := mustParse(t, text)
		r.Tol, r.Source = tol, src
		return r
	}
	events := []string{"a", "b", "c", "d"}
	cases := []struct {
		name    string
		rels    []Relation
		wantSrc []string // Source of each bound relation, in order
	}{
		{"exact beats soft, soft first", []Relation{rel("a = b + c", 1e-2, "soft"), rel("a = b + c", 0, "exact")}, []string{"exact"}},
		{"exact beats soft, exact first", []Relation{rel("a = b + c", 0, "exact"), rel("a = b + c", 1e-2, "soft")}, []string{"exact"}},
		{"smaller of two soft", []Relation{rel("a = b + c", 1e-2, "loose"), rel("a = b + c", 1e-3, "tight"), rel("a = b + c", 5e-3, "mid")}, []string{"tight"}},
		{"equal tolerance keeps the first", []Relation{rel("a = b + c", 1e-3, "first"), rel("a = b + c", 1e-3, "second")}, []string{"first"}},
		{"term order", []Relation{rel("a = b + c", 1e-3, "soft"), rel("a = c + b", 0, "exact")}, []string{"exact"}},
		{"sides swapped", []Relation{rel("a = b + c", 1e-3, "soft"), rel("c + b = a", 0, "exact")}, []string{"exact"}},
		{"moved to one side", []Relation{rel("a = b + c", 1e-3, "soft"), rel("a - b - c = 0", 0, "exact")}, []string{"exact"}},
		{"whitespace", []Relation{rel("a = b + c", 1e-3, "soft"), rel("  a   =  ( b  +  c )  ", 0, "exact")}, []string{"exact"}},
		{"inequality mirrored", []Relation{rel("a <= b + c", 1e-3, "soft"), rel("c + b >= a", 0, "exact")}, []string{"exact"}},
		{"non-linear sides swapped", []Relation{rel("a * b = c", 1e-3, "soft"), rel("c = a * b", 0, "exact")}, []string{"exact"}},
		// Different statements are not merged, whatever their tolerances.
		{"identity and inequality", []Relation{rel("a = b + c", 1e-3, "id"), rel("a >= b + c", 0, "ge")}, []string{"id", "ge"}},
		{"opposite inequalities", []Relation{rel("a <= b", 0, "le"), rel("a >= b", 0, "ge")}, []string{"le", "ge"}},
		{"other constant", []Relation{rel("a = b + 1", 0, "k1"), rel("a = b + 2", 0, "k2")}, []string{"k1", "k2"}},
		{"other scale", []Relation{rel("a = b", 0, "x1"), rel("2 * a = 2 * b", 0, "x2")}, []string{"x1", "x2"}},
		{"other events", []Relation{rel("a = b + c", 0, "bc"), rel("a = b + d", 0, "bd")}, []string{"bc", "bd"}},
	}
	for _, c := range cases {
		got := BindUniverse(c.rels, events, events)
		var src []string
		for _, r := range got {
			src = append(src, r.Source)
		}
		if strings.Join(src, ",") != strings.Join(c.wantSrc, ",") {
			t.Errorf("%s: kept %v (%v), want %v", c.name, src, got, c.wantSrc)
		}
	}
}

// TestBindWeakenedIdentityYieldsToExactInequality: the soft built-in identity
// raw_syscalls:sys_enter = sum(syscalls:sys_enter_*), weakened to >= over a run that
// lacks some syscalls, says the same as the exact built-in inequality; the exact one is
// kept whichever comes first.
func TestBindWeakenedIdentityYieldsToExactInequality(t *testing.T) {
	var rels []Relation
	for _, r := range Builtins() {
		if strings.HasPrefix(r.Text, "raw_syscalls:sys_enter ") {
			rels = append(rels, r)
		}
	}
	if len(rels) != 2 || rels[0].Op != Ge || rels[1].Op != Eq {
		t.Fatalf("built-ins changed: %v", rels)
	}
	events := []string{"raw_syscalls:sys_enter", "syscalls:sys_enter_read"}
	for _, in := range [][]Relation{rels, {rels[1], rels[0]}} {
		got := Bind(in, events)
		if len(got) != 1 || got[0].Op != Ge || got[0].Tol != 0 {
			t.Errorf("bound %v (tol %v), want the exact inequality once", got, tolsOf(got))
		}
	}
}

// TestBindSuffixedKeepsStrictest: the same holds for the copies bound to events with a
// perf modifier suffix.
func TestBindSuffixedKeepsStrictest(t *testing.T) {
	user := mustParse(t, "page-faults = major-faults + minor-faults")
	rels := append(Builtins(), user)
	got := Bind(rels, []string{"page-faults:u", "minor-faults:u", "major-faults:u"})
	n := 0
	for _, r := range got {
		if r.Op == Eq {
			n++
			if r.Tol != 0 || r.Events()[0] != "major-faults:u" {
				t.Errorf("kept %q tol %g, want the user's exact identity", r.String(), r.Tol)
			}
		}
	}
	if n != 1 {
		t.Errorf("bound %v, want one identity", got)
	}
}

func tolsOf(rels []Relation) []float64 {
	out := make([]float64, len(rels))
	for i, r := range rels {
		out[i] = r.Tol
	}
	return out
}
