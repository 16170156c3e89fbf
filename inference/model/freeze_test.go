package model

import (
	"testing"
)

// TestKeptLevelErrorEach: the one-sweep level errors freeze uses are, slice by slice,
// the same numbers as keptLevelError of each slice alone, with slices frozen before, and
// the table of powers they take gives math.Pow's.
func TestKeptLevelErrorEach(t *testing.T) {
	md, sl := benchSetup(&testing.B{}, 35)
	md.hist.limit = 120
	for i := range 500 {
		if err := md.Observe(sl[i%256]); err != nil {
			t.Fatal(err)
		}
	}
	h := &md.hist
	if h.lo == 0 {
		t.Fatal("nothing frozen: the test wants slices frozen before the kept ones")
	}
	from, to := h.lo, h.t
	out := make([]float64, to-from)
	nonzero := 0
	pw := md.levelPowers()
	for e := range md.n {
		md.keptLevelErrorEach(e, from, to, out, pw)
		for s := from; s < to; s++ {
			if want := md.keptLevelError(e, s, s+1, nil); out[s-from] != want {
				t.Fatalf("event %d slice %d: %g in one sweep, %g alone", e, s, out[s-from], want)
			}
			if out[s-from] != 0 {
				nonzero++
			}
		}
	}
	if nonzero == 0 {
		t.Fatal("every level error is 0: nothing compared")
	}
}
