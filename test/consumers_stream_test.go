package test

// The JSON-lines stream of `bayesperf attach --json -I MS` (docs/consumers.md), read the
// way a controller reads it: from a pipe, each line timestamped as it arrives.

import (
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each interval reaches a reader of the pipe within 20 ms of its end (the issue's
// figure), before the next interval ends, with every event once and the raw triple.
func TestStreamLatency(t *testing.T) {
	wl := startWorkload(t, "mixed", 30*time.Second)
	events := []string{"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches"}
	at := exec.Command(statBin(t), "attach", "-p", strconv.Itoa(wl.Process.Pid), "--json", "-I", "100",
		"--duration", "4", "--virtual-counters", "2", "-e", strings.Join(events, ","), "-o", "/dev/stdout")
	out, err := at.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var se strings.Builder
	at.Stderr = &se
	if err := at.Start(); err != nil {
		t.Fatal(err)
	}
	sr := readStream(out)
	if err := waitTimeout(at, 30*time.Second); err != nil {
		t.Fatalf("attach: %v\n%s", err, se.String())
	}
	lines, bad := sr.wait()
	if len(bad) > 0 {
		t.Errorf("%d lines are not JSON objects, first %q", len(bad), bad[0])
	}
	// Group by interval.
	type block struct {
		ts     float64
		end    time.Time
		events []string
		last   time.Time // arrival of its last line
	}
	var bs []block
	for _, l := range lines {
		if len(bs) == 0 || bs[len(bs)-1].ts != l.Interval {
			bs = append(bs, block{ts: l.Interval, end: time.Unix(0, l.EndUnixNs)})
		}
		b := &bs[len(bs)-1]
		b.events = append(b.events, l.Event)
		b.last = l.arrived
		if l.EndUnixNs == 0 {
			t.Fatalf("line without end-unix-ns: %+v", l)
		}
		if l.Status != "not-counted" && (l.Enabled == 0 || l.Running > l.Enabled || l.Lo == nil || l.Hi == nil) {
			t.Errorf("raw triple or bounds missing: %+v", l)
		}
	}
	if len(bs) < 30 {
		t.Fatalf("%d intervals of 100 ms in a 4 s run, want at least 30\n%s", len(bs), se.String())
	}
	var lat, late []time.Duration
	for i, b := range bs {
		if !slices.Equal(b.events, events) {
			t.Errorf("interval %d has events %v, want %v once each", i, b.events, events)
		}
		d := b.last.Sub(b.end)
		lat = append(lat, d)
		// How late the interval ended after its nominal end (a multiple of 100 ms); the
		// last one ends at the stop, anywhere.
		if i < len(bs)-1 {
			nominal := time.Duration(i+1) * 100 * time.Millisecond
			late = append(late, time.Duration(b.ts*1e9)-nominal)
		}
		if d > 20*time.Millisecond {
			t.Errorf("interval %d (%.3f s) arrived %v after its end, want within 20 ms", i, b.ts, d)
		}
		if i+1 < len(bs) && !b.last.Before(bs[i+1].end) {
			t.Errorf("interval %d arrived at or after the end of interval %d", i, i+1)
		}
	}
	slices.Sort(lat)
	slices.Sort(late)
	q := func(ds []time.Duration, p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	t.Logf("%d intervals; arrival after the interval's end: median %v, p90 %v, max %v; interval end after its nominal end: median %v, max %v",
		len(bs), q(lat, 0.5), q(lat, 0.9), lat[len(lat)-1], q(late, 0.5), late[len(late)-1])
}
