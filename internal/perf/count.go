package perf

import "time"

// Count is the raw triple the kernel reports for a counting event: the counter value and
// the times (ns) the event was enabled and actually running. Collectors hand these over
// unscaled; scaling is an estimator's business, and deltas are internal/pipeline's
// (never wrapped when a counter appears to go back).
type Count struct {
	Value   uint64
	Enabled uint64
	Running uint64
}

// Sub returns the delta c - prev, field by field (wrapping: for counts known not to go
// back; pipeline.Sub saturates).
func (c Count) Sub(prev Count) Count {
	return Count{Value: c.Value - prev.Value, Enabled: c.Enabled - prev.Enabled, Running: c.Running - prev.Running}
}

// Snapshot is the cumulative counts of a set of events taken at one instant, in the
// order the collector was given the events.
type Snapshot struct {
	TimeNs int64   // CLOCK_MONOTONIC time of the snapshot
	Counts []Count // cumulative, one per event
}

// Collector is the one contract of a collector: it delivers snapshots of a fixed set of
// events, one per slice, and switches events on and off. The read(2) collector
// (ReadCollector) and package bpf's implement it, so the virtual PMU, stat and eval use
// either and say which.
//
// An event's count advances only while it is enabled. With read(2) SetEnabled switches
// the kernel event at once (an ioctl); a snapshotting collector may instead record the
// state and apply it to the slice that began at the last snapshot Next returned
// (bpf.Options.SwitchAtSnapshots). A caller that wants one behaviour from both calls
// SetEnabled right after Next, for the slice that has just begun.
type Collector interface {
	Name() string // "bpf" or "read"
	// Next blocks until the next slice boundary and returns every event's cumulative
	// triple there. A collector that follows a task returns io.EOF once the task has
	// exited and its final snapshot was returned.
	Next() (Snapshot, error)
	// Wait blocks until Next would return at once, without consuming anything, so that
	// a caller can wait without holding its own lock and then call Next under it.
	Wait() error
	// Peek returns what Next would report for the events listed (indices into the
	// collector's events) if the slice ended now, without ending it; the next snapshot
	// reports at least what Peek did.
	Peek(events []int, out []Count) error
	// SetEnabled switches event i on or off (see above for when it applies).
	SetEnabled(i int, on bool) error
	Close() error
}

// SnapshotRequest asks for a snapshotting collector that follows one task by itself
// (its threads, and with Inherit its children), as the virtual PMU needs one
// (vpmu.Config.Snapshots; package bpf's Snapshots serves it).
type SnapshotRequest struct {
	// Attrs are the events, in the order the collector reports them (view copies carry
	// the disabled bit until switched on); no inherit, no enable_on_exec bits (Inherit
	// and EnableOnExec say those).
	Attrs []Attr
	Pid   int           // the target task
	Slice time.Duration // snapshot period
	// Inherit: count the threads and processes the target creates, as inherited events
	// do.
	Inherit bool
	// EnableOnExec: the events of the target's present threads start counting at its
	// next execve.
	EnableOnExec bool
}
