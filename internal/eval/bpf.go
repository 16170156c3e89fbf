package eval

import (
	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// BPFSnapshots lets the virtual PMU read its copies through package bpf's collector
// (bpf.Snapshots: in-kernel snapshots at every slice, views switched at them).
func BPFSnapshots(req perf.SnapshotRequest) (perf.Collector, error) {
	return bpf.Snapshots(req)
}

// ResolveCollector returns the collector a live run uses for the name asked for: "read"
// and "bpf" as given, "auto" "bpf" when this process can load the BPF collector and
// "read" otherwise (bpf.Resolve).
func ResolveCollector(name string) (string, error) {
	c, _, err := bpf.Resolve(name)
	return c, err
}
