package bpf

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// TestResolve: read and bpf are taken as given, auto is bpf exactly when Probe succeeds
// (as root here: CI runs as root), and anything else is refused.
func TestResolve(t *testing.T) {
	for _, n := range []string{CollectorRead, CollectorBPF} {
		if c, why, err := Resolve(n); c != n || why != "" || err != nil {
			t.Errorf("Resolve(%q) = %q, %q, %v", n, c, why, err)
		}
	}
	c, why, err := Resolve(CollectorAuto)
	probe := Probe()
	switch {
	case err != nil:
		t.Errorf("Resolve(auto): %v", err)
	case probe == nil && (c != CollectorBPF || why != ""):
		t.Errorf("Resolve(auto) = %q (%q) where Probe succeeds", c, why)
	case probe != nil && (c != CollectorRead || why == ""):
		t.Errorf("Resolve(auto) = %q (%q) where Probe fails: %v", c, why, probe)
	}
	if os.Geteuid() == 0 && c != CollectorBPF {
		t.Errorf("Resolve(auto) as root = %q (%s), want bpf", c, why)
	}
	if _, _, err := Resolve("poll"); err == nil || !strings.Contains(err.Error(), "auto, read or bpf") {
		t.Errorf("Resolve(poll): %v, want a refusal naming the choices", err)
	}
}

// TestSnapshotsRefusesHardwareEvents: a hardware event's copies would all count at once
// with the bpf collector, which a real PMU would multiplex: Snapshots refuses it before
// loading anything, so the caller falls back to read(2).
func TestSnapshotsRefusesHardwareEvents(t *testing.T) {
	attrs := []perf.Attr{
		{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWDummy},
		{Type: perf.TypeHardware, Size: perfabi.AttrSize, Config: 0},
	}
	_, err := Snapshots(perf.SnapshotRequest{Attrs: attrs, Pid: os.Getpid(), Slice: 4 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "not a software event or tracepoint") {
		t.Fatalf("Snapshots with a hardware event: %v, want a refusal", err)
	}
}
