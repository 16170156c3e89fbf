package model

import "testing"

// TestDormantEventUnderActivityLevel replays a compressor whose data reads are 0 for
// its first slices and then follow its instructions (the corpus's cg-zstd, tuning
// half): in Finish's second pass the activity ratio, learned from the readings around
// each slice, predicts reads where the readings say none. A change of the deviation
// from that level was measured against the readings' scale (zero) instead of the
// level's, taught a walk a thousand times too wide, and the 95% interval of the data
// reads came out at ±1.8e10 on a count of 1.6e8. The intervals of every event that
// occurs stay within a few times its count.
func TestDormantEventUnderActivityLevel(t *testing.T) {
	tr, ivs, ans := corpusReplay(t, "cg-zstd.csv")
	for e, name := range tr.Events {
		m := eventScores(tr, ivs, ans, e)
		if name == "Dr" {
			t.Logf("Dr: sharpness %.3f", m.Sharpness)
		}
		if m.HasSharpness && m.Sharpness > 5 && tr.Truth(0, tr.Slices())[e] > 1e6 {
			t.Errorf("%s: 95%% half-widths sum to %.1f times its count", name, m.Sharpness)
		}
	}
}
