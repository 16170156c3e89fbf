package eval

import (
	"math"
	"strings"
	"testing"
)

// TestScoreReads: per interval, linux is perf stat -I's scaling of the kernel's deltas
// and bayesperf-rr that of the served ones, against the truth's deltas; a wrong header
// or a non-number is an error naming the line.
func TestScoreReads(t *testing.T) {
	// One event read twice. Interval 1: the kernel counted 100 in 25 of 100 ns (linux
	// 400), the tool was served 300 at running = enabled, the truth is 320. Interval 2:
	// 50 more in 50 of 100 more ns (linux 100), served 500 - 300 = 200, truth 520 - 320
	// = 200.
	in := readsHeader + "\n" +
		"10,1,7,instructions:u,100,100,25,300,100,100,320\n" +
		"20,1,7,instructions:u,150,200,75,500,200,200,520\n"
	res, err := ScoreReads(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	pe := res.PerEvent[0]
	if res.Events != 1 || res.Intervals != 2 || pe.Event != "instructions:u" {
		t.Fatalf("%d events, %d intervals, event %q", res.Events, res.Intervals, pe.Event)
	}
	want := map[string][]float64{Linux: {400, 100}, BayesPerfRR: {300, 200}}
	for name, w := range want {
		for k := range w {
			if got := pe.Series[name][k]; got != w[k] {
				t.Errorf("%s interval %d: %g, want %g", name, k, got, w[k])
			}
		}
	}
	// WAPE: linux (80 + 100) / 520, bayesperf-rr (20 + 0) / 520.
	if got, w := res.Estimators[Linux].WAPE, 180.0/520; math.Abs(got-w) > 1e-12 {
		t.Errorf("linux WAPE %g, want %g", got, w)
	}
	if got, w := res.Estimators[BayesPerfRR].WAPE, 20.0/520; math.Abs(got-w) > 1e-12 {
		t.Errorf("bayesperf-rr WAPE %g, want %g", got, w)
	}
	for _, bad := range []string{
		"time,client\n1,2\n",
		readsHeader + "\n10,1,7,x,1,2,3,4,5,6\n",
		readsHeader + "\n10,1,7,x,1,2,3,4,5,6,-7\n",
		readsHeader + "\n",
	} {
		if _, err := ScoreReads(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzScoreReads: any bytes give a result or an error, never a panic.
func FuzzScoreReads(f *testing.F) {
	f.Add(readsHeader + "\n10,1,7,instructions:u,100,100,25,300,100,100,320\n20,1,7,instructions:u,150,200,75,500,200,200,520\n")
	f.Add(readsHeader + "\n10,1,7,a,0,0,0,0,0,0,0\n10,2,7,a,5,0,9,1,1,0,3\n")
	f.Fuzz(func(t *testing.T, s string) {
		ScoreReads(strings.NewReader(s))
	})
}
