// Package openmetrics serves bayesperf's corrected counters at /metrics in the
// OpenMetrics text format (Prometheus' format negotiated by Accept), with the Prometheus
// Go client library, for `bayesperf stat` and `bayesperf attach` with --listen.
//
// An Exporter holds the latest published interval of one target (a process, labelled
// pid; with NewCPUs each CPU of a system-wide run, labelled cpu): per event the corrected running total as a counter, the last interval's value,
// 95% bounds and kernel-scaled value as gauges, the status as a state set, the raw
// (count, enabled, running) as counters; and its own health (slices, intervals, numerical
// failures of the model, the end time of the last interval). docs/consumers.md lists the
// metrics, their labels and units, and the cardinality bound: every family has one
// series per event (the status family one per event and status), or per event and CPU
// with NewCPUs, so a target's series are bounded by the -e list (times the CPUs).
//
// Monotonicity: the corrected running total adds each interval's value clamped at 0
// (NaN adds nothing), so it never decreases, whatever the model said.
//
// A scrape sees one published interval whole: Publish and Collect hold the same lock.
// Publish may be called from any goroutine, concurrently with scrapes. The HTTP server's
// errors go to the function given to Serve; no value (NaN, infinities, negatives)
// makes anything panic.
package openmetrics
