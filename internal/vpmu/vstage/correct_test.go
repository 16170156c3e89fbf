package vstage

import (
	"math"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/shim"
)

// TestCorrectedClient plays the sidecar for a perf-stat-like client under Infer on 2
// counters: every 20 ms the client reads each of its 6 events once (a round, each read
// a refresh of one event). What it reads never decreases, is presented as counted all the
// time (running = enabled), and after the command has exited is the report's final total
// of each event; the report has one interval per round and the truth of every event.
func TestCorrectedClient(t *testing.T) {
	testutil.RequireRoot(t, "opens tracepoints on another process")
	cmd, in, descs, evs := heldWorker(t, "page-faults,minor-faults,context-switches,raw_syscalls:sys_enter,syscalls:sys_enter_getppid,syscalls:sys_enter_mmap", false)
	st := &Stage{Counters: 2, Infer: true, Truth: true, Intervals: true, Schedule: "kernel", Relations: relation.Builtins(), Logf: t.Logf}
	defer st.Close()
	all := make([]shim.Values, len(evs))
	for i := range all {
		all[i].Members = []shim.MirrorValue{{}}
	}
	st.Correct(0, evs, all) // registration: builds the client's virtual PMU
	in.Write([]byte("go\n"))
	in.Close()
	last := make([]shim.Values, len(evs))
	for i := range last {
		last[i].Members = []shim.MirrorValue{{}}
	}
	rounds := 0
	readRound := func() {
		rounds++
		for i, e := range evs {
			v := []shim.Values{{Members: []shim.MirrorValue{{Value: 1 << 40}}}}
			st.Correct(0, []sidecar.Event{e}, v)
			got := v[0]
			if got.Members[0].Value < last[i].Members[0].Value || got.Enabled < last[i].Enabled {
				t.Errorf("round %d, %s: read %d (enabled %d) after %d (enabled %d): went back",
					rounds, descs[i].Name, got.Members[0].Value, got.Enabled, last[i].Members[0].Value, last[i].Enabled)
			}
			last[i] = got
		}
	}
	if err := readUntilExit(cmd, 20*time.Millisecond, readRound); err != nil {
		t.Fatal(err)
	}
	readRound() // after the exit: the final totals
	rep := st.Report()
	if len(rep.Clients) != 1 {
		t.Fatalf("report of %d clients, want 1: %+v", len(rep.Clients), rep)
	}
	c := rep.Clients[0]
	if c.Correct != "bayesperf" || c.Slices == 0 || len(c.Intervals) != rounds {
		t.Fatalf("report: correct %s, %d slices, %d intervals for %d rounds", c.Correct, c.Slices, len(c.Intervals), rounds)
	}
	inferred := 0
	for i, e := range c.Totals {
		v := last[i]
		t.Logf("%-28s read %8d (enabled %d, running %d) total %.0f [%v, %v] linux %.0f truth %v %s",
			e.Event, v.Members[0].Value, v.Enabled, v.Running, e.Value, fmtp(e.Lo), fmtp(e.Hi), e.Linux, fmtu(e.Truth), e.Status)
		if e.Event != descs[i].Name {
			t.Errorf("total %d is %q, want %q", i, e.Event, descs[i].Name)
		}
		if e.Truth == nil {
			t.Errorf("%s: no truth", e.Event)
		}
		if e.Status == "not-counted" {
			continue
		}
		if e.Status == "inferred" {
			inferred++
		}
		if v.Running != v.Enabled || v.Enabled == 0 {
			t.Errorf("%s: running %d, enabled %d: want a corrected value counted all the time", e.Event, v.Running, v.Enabled)
		}
		// Published values never decrease, so the final read is the final total unless
		// an earlier live estimate was higher.
		if got := float64(v.Members[0].Value); got < math.Round(e.Value) || (got > math.Round(e.Value) && got != float64(last[i].Members[0].Value)) {
			t.Errorf("%s: final read %v, final total %v", e.Event, got, e.Value)
		}
	}
	if inferred == 0 {
		t.Errorf("no event inferred on 2 counters")
	}
}

func fmtp(p *float64) any {
	if p == nil {
		return nil
	}
	return math.Round(*p)
}

func fmtu(p *uint64) any {
	if p == nil {
		return nil
	}
	return *p
}
