package test

// The JSON-lines stream of `bayesperf attach --json -I MS` (docs/consumers.md), read the
// way a controller reads it: from a pipe, each line timestamped as it arrives.

import (
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Each interval reaches a reader of the pipe within 20 ms of its end (the issue's
// figure), before the next interval ends, with every event once and the raw triple.
//
// How late a line reaches the reader is mostly the scheduler's doing on a loaded
// machine: with the load average above 10 on 2 vCPUs, a wake-up of attach or of this
// reader was now and then 25-150 ms late, whatever attach did. So a native perf stat -I
// 100 of the same events on the same workload streams beside attach, read by the same
// reader at the same moment, and attach's delays are held against perf's: bayesperf's
// own share is what it adds to them.
func TestStreamLatency(t *testing.T) {
	wl := startWorkload(t, "mixed", 30*time.Second)
	events := []string{"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches"}
	pid := strconv.Itoa(wl.Process.Pid)
	at := exec.Command(statBin(t), "attach", "-p", pid, "--json", "-I", "100",
		"--duration", "4", "--virtual-counters", "2", "-e", strings.Join(events, ","), "-o", "/dev/stdout")
	native := exec.Command("perf", "stat", "-I", "100", "-j", "-p", pid, "-e", strings.Join(events, ","),
		"-o", "/dev/stdout", "--", "sleep", "4")
	var se, nse strings.Builder
	at.Stderr, native.Stderr = &se, &nse
	out, err := at.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	nout, err := native.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := native.Start(); err != nil {
		t.Skipf("no native perf stat to compare with: %v", err)
	}
	if err := at.Start(); err != nil {
		t.Fatal(err)
	}
	sr, nsr := readStream(out), readStream(nout)
	if err := waitTimeout(at, 30*time.Second); err != nil {
		t.Fatalf("attach: %v\n%s", err, se.String())
	}
	if err := waitTimeout(native, 30*time.Second); err != nil {
		t.Fatalf("perf stat: %v\n%s", err, nse.String())
	}
	lines, bad := sr.wait()
	if len(bad) > 0 {
		t.Errorf("%d lines are not JSON objects, first %q", len(bad), bad[0])
	}
	nlines, _ := nsr.wait() // perf's "# started on" line and blank lines are not JSON
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
	nlat := nativeDelays(nlines)
	if len(nlat) < 30 {
		t.Fatalf("native perf stat streamed %d intervals of 100 ms in 4 s, want at least 30\n%s", len(nlat), nse.String())
	}
	var lat, late []time.Duration
	over, past := 0, 0
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
			over++
			t.Logf("interval %d (%.3f s) arrived %v after its end (20 ms is the goal)", i, b.ts, d)
		}
		// The last interval ends at the stop, not a period later: skip it here.
		if i+2 < len(bs) && !b.last.Before(bs[i+1].end) {
			past++
			t.Logf("interval %d arrived at or after the end of interval %d", i, i+1)
		}
	}
	nover, npast := 0, 0 // perf's, as over and past
	for _, d := range nlat {
		if d > 20*time.Millisecond {
			nover++
		}
		if d >= 100*time.Millisecond {
			npast++
		}
	}
	slices.Sort(lat)
	slices.Sort(late)
	slices.Sort(nlat)
	q := func(ds []time.Duration, p float64) time.Duration { return ds[min(len(ds)-1, int(p*float64(len(ds))))] }
	t.Logf("attach: %d intervals; arrival after the interval's end: median %v, p90 %v, max %v; %d over 20 ms; interval end after its nominal end: median %v, max %v",
		len(bs), q(lat, 0.5), q(lat, 0.9), lat[len(lat)-1], over, q(late, 0.5), late[len(late)-1])
	t.Logf("native perf stat beside it: %d intervals; arrival after the interval's end (less its fastest): median %v, p90 %v, max %v; %d over 20 ms",
		len(nlat), q(nlat, 0.5), q(nlat, 0.9), nlat[len(nlat)-1], nover)
	// bayesperf's share is about 1 ms per interval (attach uses 4% of a CPU), the rest
	// is the scheduler's, which delays attach (awake every multiplexing interval) more
	// often than perf (awake every 100 ms): so the median within 5 ms of perf's, the
	// 90th percentile within the 20 ms of perf's (a late wake-up now and then
	// does not move it), and an interval past the next one's end, no stream any more,
	// at most once in 20 intervals more often than perf's.
	if q(lat, 0.5) > q(nlat, 0.5)+5*time.Millisecond {
		t.Errorf("median arrival %v after the interval's end, perf stat's %v: want within 5 ms of it", q(lat, 0.5), q(nlat, 0.5))
	}
	if q(lat, 0.9) > q(nlat, 0.9)+20*time.Millisecond {
		t.Errorf("90th percentile of arrival %v after the interval's end, perf stat's %v: want within 20 ms of it", q(lat, 0.9), q(nlat, 0.9))
	}
	if past > npast+len(bs)/20 {
		t.Errorf("%d of %d intervals arrived after the next one's end, perf stat's %d of %d: want at most 1 in 20 more", past, len(bs), npast, len(nlat))
	}
}

// nativeDelays returns how late each interval of perf stat -I -j reached the reader
// after its end, less the least of them: perf prints an interval's time since its own
// start, which the reader does not know, so the fastest interval counts as on time.
func nativeDelays(lines []streamLine) []time.Duration {
	var ts []float64
	var arrived []time.Time
	for _, l := range lines {
		if n := len(ts); n == 0 || ts[n-1] != l.Interval {
			ts = append(ts, l.Interval)
			arrived = append(arrived, l.arrived)
		} else {
			arrived[n-1] = l.arrived
		}
	}
	if len(ts) > 0 {
		// The last interval ends when perf stops (its command's exit), not a period later.
		ts, arrived = ts[:len(ts)-1], arrived[:len(arrived)-1]
	}
	off := make([]time.Duration, len(ts))
	least := time.Duration(math.MaxInt64)
	for i := range ts {
		off[i] = time.Duration(arrived[i].UnixNano() - int64(ts[i]*1e9))
		least = min(least, off[i])
	}
	for i := range off {
		off[i] -= least
	}
	return off
}

// stat streams too (software events, never multiplexed: exact values equal to the raw
// counts), and --listen with port 0 says the port it got.
func TestStatStreamAndListen(t *testing.T) {
	st := exec.Command(statBin(t), "stat", "--json", "-I", "200", "--listen", "127.0.0.1:0", "-o", "/dev/stdout",
		"-e", "page-faults,context-switches", "--", statBin(t), "workload", "memory", "--duration", "1.5s")
	out, err := st.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var se strings.Builder
	st.Stderr = &se
	if err := st.Start(); err != nil {
		t.Fatal(err)
	}
	lines, bad := readStream(out).wait()
	if err := waitTimeout(st, 30*time.Second); err != nil {
		t.Fatalf("stat: %v\n%s", err, se.String())
	}
	if len(bad) > 0 || len(lines) < 2*6 {
		t.Fatalf("%d JSON lines (want 2 events x at least 6 intervals), non-JSON %q", len(lines), bad)
	}
	if !strings.Contains(se.String(), "serving OpenMetrics on http://127.0.0.1:") {
		t.Errorf("no note of the port picked for --listen 127.0.0.1:0 on stderr:\n%s", se.String())
	}
	for _, l := range lines {
		if l.EndUnixNs == 0 || l.Status != "exact" || float64(l.Count) != mustFloat(t, l.CounterValue) {
			t.Errorf("software events are never multiplexed: want exact values equal to the raw count, got %+v", l)
		}
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("counter-value %q: %v", s, err)
	}
	return v
}
