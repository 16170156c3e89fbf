// Package statfmt prints counter values the way `perf stat` (Linux 6.1) prints them,
// with bayesperf's uncertainty added: the normal layout (header, one line per event,
// footer), interval lines (-I) with perf's timestamp column, CSV (-x SEP) in perf's field
// order with the interval bounds in extra trailing fields, and JSON (-j) with one object
// per line and the extra fields "lo", "hi", "status", "linux", the raw "count",
// "enabled" and "running" and, on interval lines when the start is known, "end-unix-ns".
// An interval's lines go out in one write, flushed at once: the JSON-lines stream a
// controller reads (docs/consumers.md).
//
// A Counter is what one event's line shows: bayesperf's estimate with its 95% interval,
// the kernel-style scaled value, and the time the event was enabled and running in the
// reported span. Where perf adds a derived metric (CPUs utilized for task-clock and
// cpu-clock, a rate per second of task time for every other event when a clock event is
// in the list), so does this package, computed from the estimates.
//
// In the normal layout the ± column sits where perf puts the spread of repeated runs
// (`perf stat -r`): "( ± x.xx% )" is the half-width of the 95% interval relative to the
// value, and the multiplexing percentage follows in parentheses only when the event was
// not running all the time it was enabled, as perf prints it.
//
// Deliberate differences from perf: the JSON "metric-unit" of an event without a metric
// is "" where perf 6.1 prints "(null)"; JSON numbers that are not finite are null.
//
// Printing returns the writer's errors; nothing panics on any Counter value (NaN and
// infinite bounds print as perf prints them: "nan", "inf"). A Printer is not safe for
// concurrent use.
package statfmt
