package test

import (
	"strconv"
	"strings"
	"testing"
)

// epollBursts and epollPages are test/c/epoll_ring.c's workload: the child touches
// epollPages fresh pages per burst, epollBursts times.
const (
	epollBursts = 40
	epollPages  = 24
)

// TestDropinEpoll runs test/c/epoll_ring.c, a tool that waits for a sampling ring
// (page-faults of a child, period 1) with epoll_wait, epoll_pwait and epoll_pwait2 on a set
// that also holds unrelated pipes. Through bayesperf the ring is the sidecar's mirror,
// and the shim must bring it up to date before a wait on a set with a perf fd returns:
// every wakeup must find records (the program drains only on wakeups, so natively none
// is empty either), no sample may be lost (samples == the event's final count, and the
// sidecar reports every one mirrored, none lost), the unrelated pipe must be reported
// exactly once, and the sample count must agree with a native run. Needs root or
// perf_event_paranoid <= 1 for page-faults of a child; runs as root in CI.
func TestDropinEpoll(t *testing.T) {
	prog := dropinBin(t, "epoll_ring")
	for _, how := range []string{"wait", "pwait", "pwait2"} {
		t.Run(how, func(t *testing.T) {
			args := []string{prog, how, strconv.Itoa(epollBursts)}
			nr := run(t, nil, args...)
			if nr.status != 0 {
				t.Fatalf("epoll_ring %s fails natively (the program itself is wrong): status %d\n%s%s", how, nr.status, nr.stdout, nr.stderr)
			}
			native := parseFacts(t, nr.stdout)
			r, st := bayesperfRun(t, args...)
			got := parseFacts(t, r.stdout)
			if r.status != 0 {
				t.Errorf("epoll_ring %s through bayesperf: status %d\n%s%s", how, r.status, r.stdout, r.stderr)
			}
			if got["empty_wakeups"] != 0 {
				t.Errorf("%d of %d wakeups found the mirror ring empty", got["empty_wakeups"], got["wakeups"])
			}
			if got["pipe_events"] != 1 {
				t.Errorf("the unrelated pipe was reported %d times, want 1", got["pipe_events"])
			}
			if got["lost"] != 0 || got["samples"] != got["count"] {
				t.Errorf("samples %d, lost %d, count %d: want every counted fault sampled", got["samples"], got["lost"], got["count"])
			}
			// The ring really was the mirror: the sidecar moved every sample.
			if st.Events != 1 || st.RecordsMirrored < got["samples"] || st.RecordsLost != 0 {
				t.Errorf("stats %+v: want 1 event and its %d samples mirrored, none lost", st, got["samples"])
			}
			// Native and through bayesperf: the child faults epollPages pages per burst plus a
			// few copy-on-write and stack faults, which vary with the parent's memory layout
			// (bayesperf's library is mapped in the parent). Both runs must sample at least the
			// touched pages and at most 64 faults more.
			lo, hi := uint64(epollBursts*epollPages), uint64(epollBursts*epollPages+64)
			for _, c := range []struct {
				name string
				n    uint64
			}{{"native", native["samples"]}, {"bayesperf", got["samples"]}} {
				if c.n < lo || c.n > hi {
					t.Errorf("%s run: %d samples, want %d..%d", c.name, c.n, lo, hi)
				}
			}
			t.Logf("native: %d samples in %d wakeups; bayesperf: %d samples in %d wakeups, %d records mirrored",
				native["samples"], native["wakeups"], got["samples"], got["wakeups"], st.RecordsMirrored)
		})
	}
}

// parseFacts parses "name N" lines.
func parseFacts(t *testing.T, out string) map[string]uint64 {
	t.Helper()
	m := map[string]uint64{}
	for line := range strings.Lines(out) {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			t.Fatalf("bad line %q", line)
		}
		m[f[0]] = n
	}
	return m
}
