// Package replay turns recorded traces of exact per-slice event counts into multiplexed
// observations and scores estimators on them: it reads trace CSV files, simulates what
// the kernel (or any schedule) would have let each event count, and feeds every
// estimator identical observations before comparing its estimates with the truth.
//
// Trace format (see ReadCSV): a CSV file with a header; the column "interval" numbers
// the rows; "interval", "wall_ns", "basic_blocks", "time_ns" and the caller's time column
// are metadata; every other column is an event whose row values are its exact counts
// over that row. A row is one multiplexing slice, of duration 1 or the time column's
// value.
//
// Errors: malformed traces are reported with the line and column at fault and never
// panic (the reader is fuzzed). Values of this package are not safe for concurrent use;
// Trace is immutable after ReadCSV and may be shared by readers.
package replay
