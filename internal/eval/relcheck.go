package eval

import (
	"fmt"
	"math"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
)

// Broken is an exact relation that a trace's exact counts break.
type Broken struct {
	Relation relation.Relation
	Rows     int // rows that break it
	Of       int // rows checked
	// Worst is the row where it is farthest off (relative to its terms' size), or -1
	// when no row breaks it but the run's totals do; Residual is LHS − RHS there and
	// Scale the sum of its terms' sizes there (|coefficient · count|).
	Worst           int
	Residual, Scale float64
}

func (b Broken) String() string {
	if b.Worst < 0 {
		return fmt.Sprintf("%q does not hold over the run (totals: LHS - RHS = %.6g, terms of size %.6g)",
			b.Relation.String(), b.Residual, b.Scale)
	}
	return fmt.Sprintf("%q does not hold in %d of %d rows (row %d: LHS - RHS = %.6g, terms of size %.6g)",
		b.Relation.String(), b.Rows, b.Of, b.Worst, b.Residual, b.Scale)
}

// BrokenRelations returns the exact linear relations (no tolerance) among rels, bound to
// the trace's events, that the trace's exact counts break in some row or over the whole
// run. The model takes an exact relation as a fact about every slice: one the program
// does not keep (a mistyped relation file, events counted in other domains) gives
// estimates far outside what the readings allow, so a replay warns about it.
//
// Events read one after the other at a slice's end disagree by the few counts that
// happen between the reads (page-faults against minor-faults + major-faults, off by one
// in a few rows of most kernel traces), which the model absorbs: a row breaks a relation
// when it is off by more than slack(scale), 2 counts plus a thousandth of its terms'
// size. Those counts land in the next row, so over the run they cancel: the totals are
// held to 2 counts plus a millionth (not for a relation with a constant term, which does
// not add up over rows). With rows false only the totals are checked: a live run's truth
// copies are read one after another while the target runs on, so its rows disagree by
// whatever it counts between the reads, while its totals end at the same final reads.
// Non-linear relations are not checked.
func BrokenRelations(tr *replay.Trace, rels []relation.Relation, rows bool) []Broken {
	var out []Broken
	for _, r := range rels {
		if r.Tol != 0 {
			continue
		}
		lin, ok := r.Linearize()
		if !ok || len(lin.Coef) == 0 {
			continue
		}
		cols := make([]int, 0, len(lin.Coef))
		coefs := make([]float64, 0, len(lin.Coef))
		for e, c := range lin.Coef {
			if j := tr.EventIndex(e); j >= 0 {
				cols = append(cols, j)
				coefs = append(coefs, c)
			}
		}
		if len(cols) < len(lin.Coef) {
			continue // an event the trace lacks: nothing to check it on
		}
		b := Broken{Relation: r, Of: tr.Slices(), Worst: -1}
		worst := 0.0
		var total, totalScale float64
		for t, row := range tr.Counts {
			v, scale := lin.Const, math.Abs(lin.Const)
			for i, j := range cols {
				x := coefs[i] * float64(row[j])
				v += x
				scale += math.Abs(x)
			}
			total += v
			totalScale += scale
			off := violation(lin.Op, v)
			if !rows || off <= slack(scale) {
				continue
			}
			b.Rows++
			if rel := off / math.Max(scale, 1); b.Worst < 0 || rel > worst {
				worst, b.Worst, b.Residual, b.Scale = rel, t, v, scale
			}
		}
		totalsOff := lin.Const == 0 && violation(lin.Op, total) > 2+1e-6*totalScale
		if b.Rows == 0 && totalsOff {
			b.Residual, b.Scale = total, totalScale
		}
		if b.Rows > 0 || totalsOff {
			out = append(out, b)
		}
	}
	return out
}

// violation is how far v = LHS − RHS is from satisfying op.
func violation(op relation.Op, v float64) float64 {
	switch op {
	case relation.Le:
		return math.Max(v, 0)
	case relation.Ge:
		return math.Max(-v, 0)
	}
	return math.Abs(v)
}

// slack is how far a relation over terms of the given size may be off before it is
// broken (see BrokenRelations).
func slack(scale float64) float64 { return 2 + 1e-3*scale }
