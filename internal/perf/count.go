package perf

// Count is the raw triple the kernel reports for a counting event: the counter value and
// the times (ns) the event was enabled and actually running. Collectors hand these over
// unscaled; scaling is an estimator's business.
type Count struct {
	Value   uint64
	Enabled uint64
	Running uint64
}

// Sub returns the delta c - prev, field by field.
func (c Count) Sub(prev Count) Count {
	return Count{Value: c.Value - prev.Value, Enabled: c.Enabled - prev.Enabled, Running: c.Running - prev.Running}
}

// Snapshot is the cumulative counts of a set of events taken at one instant, in the
// order the collector was given the events.
type Snapshot struct {
	TimeNs int64   // CLOCK_MONOTONIC time of the snapshot
	Counts []Count // cumulative, one per event
}

// Collector delivers snapshots of a fixed set of events, one per multiplexing slice. The
// BPF collector (package bpf) and the read() collector both implement it, so the sidecar
// and eval can use either and say which.
type Collector interface {
	Name() string            // "bpf" or "read"
	Next() (Snapshot, error) // blocks until the next slice boundary
	Close() error
}
