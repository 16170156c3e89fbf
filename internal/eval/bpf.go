package eval

import (
	"github.com/bayesperf/bayesperf/internal/collect"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

// BPFSnapshots lets the virtual PMU read its copies through package bpf's collector
// (collect.Snapshots: in-kernel snapshots at every slice, views switched at them).
func BPFSnapshots(req vpmu.SnapshotRequest) (vpmu.Switchable, error) {
	return collect.Snapshots(req)
}

// ResolveCollector returns the collector a live run uses for the name asked for: "read"
// and "bpf" as given, "auto" "bpf" when this process can load the BPF collector and
// "read" otherwise (collect.Resolve).
func ResolveCollector(name string) (string, error) {
	c, _, err := collect.Resolve(name)
	return c, err
}
