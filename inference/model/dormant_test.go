package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/graph"
	"github.com/bayesperf/bayesperf/inference/metrics"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/replay"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// TestDormantEventUnderActivityLevel replays a compressor whose data reads are 0 for
// its first slices and then follow its instructions (the corpus's cg-zstd, tuning
// half): in Finish's second pass the activity ratio, learned from the readings around
// each slice, predicts reads where the readings say none. A change of the deviation
// from that level was measured against the readings' scale (zero) instead of the
// level's, taught a walk a thousand times too wide, and the 95% interval of the data
// reads came out at ±1.8e10 on a count of 1.6e8. The intervals of every event that
// occurs stay within a few times its count.
func TestDormantEventUnderActivityLevel(t *testing.T) {
	dir := "../replay/testdata/corpus"
	tr, err := replay.ReadFile(filepath.Join(dir, "cg-zstd.csv"), replay.ReadOptions{TimeColumn: "basic_blocks"})
	if err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(filepath.Join(dir, "callgrind.rel"))
	if err != nil {
		t.Fatal(err)
	}
	more, err := relation.ParseFile("callgrind.rel", fh)
	fh.Close()
	if err != nil {
		t.Fatal(err)
	}
	rels := relation.Bind(append(relation.Builtins(), more...), tr.Events)
	sp, err := replay.KernelSpec(tr, 4, []string{"Ir"})
	if err != nil {
		t.Fatal(err)
	}
	own, err := schedule.Overlap(sp, graph.FromRelations(tr.Events, rels), schedule.OverlapOptions{})
	if err != nil {
		t.Fatal(err)
	}
	md, err := New(tr.Events, rels, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ivs := replay.Intervals(tr.Slices(), replay.DefaultWindow)
	ans, err := replay.Feed(md, replay.Simulate(tr, own), ivs, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for e, name := range tr.Events {
		truth := make([]float64, len(ivs))
		var est []inference.Estimate
		for k, iv := range ivs {
			truth[k] = tr.Truth(iv[0], iv[1])[e]
			est = append(est, ans[k][e])
		}
		s, ok := metrics.Sharpness(truth, est)
		if name == "Dr" {
			t.Logf("Dr: sharpness %.3f", s)
		}
		if ok && s > 5 && tr.Truth(0, tr.Slices())[e] > 1e6 {
			t.Errorf("%s: 95%% half-widths sum to %.1f times its count", name, s)
		}
	}
}
