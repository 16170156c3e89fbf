package model

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPerEventDiag is a diagnostic, skipped unless BAYESPERF_PEREVENT names traces (comma
// separated, or "all"): per real-program trace and event, the run's truth, the WAPE of
// linux, linear, bayesperf-rr and bayesperf (as TestRealTraces scores them), bayesperf's
// error reduction on the event and the event's coefficient of variation over the
// reporting intervals; then per trace the share of the summed |error| (each event's
// normalised by its total) in the first, the last and the other intervals: on cg-gzip,
// cg-sqlite, xz, sqlite and tar-gzip the first interval (a program's start-up, when most
// sparse events happen at once) carries 0.6 to 0.8 of bayesperf's (measured 2026-11-22).
//
//	BAYESPERF_PEREVENT=xz,go-vet go test -count=1 -run TestPerEventDiag -v ./inference/model/
func TestPerEventDiag(t *testing.T) {
	want := os.Getenv("BAYESPERF_PEREVENT")
	if want == "" {
		t.Skip("diagnostic: make model-diag-per-event (BAYESPERF_PEREVENT=traces)")
	}
	files, _ := filepath.Glob("../replay/testdata/*.csv")
	mine, _ := filepath.Glob("testdata/*.csv")
	var b strings.Builder
	ests := []string{"linux", "linear", "bayesperf-rr", "bayesperf"}
	for _, f := range append(files, mine...) {
		name := strings.TrimSuffix(filepath.Base(f), ".csv")
		if want != "all" && !strings.Contains(","+want+",", ","+name+",") {
			continue
		}
		res := realScore(t, f)
		fmt.Fprintf(&b, "\n== %s (%d slices, %d intervals): bayesperf %.2fx, bayesperf-rr %.2fx\n", name,
			res.Slices, res.Intervals, res.ErrorReduction["bayesperf"], res.ErrorReduction["bayesperf-rr"])
		fmt.Fprintf(&b, "%-34s %12s %7s %7s %7s %7s %7s %6s\n", "event", "truth", "linux", "linear", "bp-rr", "bp", "ratio", "cv")
		share := map[string][3]float64{}
		for e, ev := range res.EventNames {
			tot, sq := 0.0, 0.0
			for _, row := range res.Truth {
				tot += row[e]
				sq += row[e] * row[e]
			}
			n := float64(len(res.Truth))
			m := tot / n
			cv := math.Sqrt(math.Max(sq/n-m*m, 0)) / math.Max(m, 1e-9)
			fmt.Fprintf(&b, "%-34.34s %12.0f", ev, tot)
			for _, est := range ests {
				fmt.Fprintf(&b, " %7.3f", res.PerEvent[e].Metrics[est].WAPE)
			}
			fmt.Fprintf(&b, " %7.2f %6.2f\n", res.PerEvent[e].Metrics["linux"].WAPE/res.PerEvent[e].Metrics["bayesperf"].WAPE, cv)
			if tot == 0 {
				continue
			}
			for _, est := range []string{"linux", "bayesperf"} {
				s := share[est]
				for i := range res.Bounds {
					d := math.Abs(res.Estimates[est][i][e].Value-res.Truth[i][e]) / tot
					switch i {
					case 0:
						s[0] += d
					case len(res.Bounds) - 1:
						s[1] += d
					default:
						s[2] += d
					}
				}
				share[est] = s
			}
		}
		for _, est := range []string{"linux", "bayesperf"} {
			s := share[est]
			all := s[0] + s[1] + s[2]
			fmt.Fprintf(&b, "%s: share of the summed |error| in the first interval %.2f, the last %.2f, the others %.2f\n",
				est, s[0]/all, s[1]/all, s[2]/all)
		}
	}
	t.Log(b.String())
}
