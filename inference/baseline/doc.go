// Package baseline holds the estimators bayesperf is measured against, all implementing
// inference.Estimator over the same raw (count, enabled, running) observations:
//
//   - linux: what perf prints. Over a reporting interval, with C, E, R the sums of an
//     event's count, enabled and running time over the interval's slices, the estimate
//     is C·E/R; with R = 0 it is 0 with status StatusNotCounted (perf's <not counted>).
//     Status is StatusExact when R = E, StatusScaled otherwise.
//   - fixed: PAPI's fixed interpolation (source 001: Counted_i = Sampled_i × Interval).
//     Slice by slice, a slice in which the event ran contributes its own count scaled to
//     the slice (count·enabled/running); a slice in which it did not run gets the rate
//     (count/running) of the most recent earlier slice in which it ran, times the slice's
//     enabled time. Slices before the first slice in which it ran take the rate of that
//     first slice (the only information there is). An event that never ran is 0 with
//     StatusNotCounted.
//   - linear: linear interpolation of the rate (Mathur et al., source 001 fig. 1b). Each
//     slice in which the event ran gives a rate point at the slice's midpoint in time;
//     an unobserved slice gets the rate interpolated linearly, at its own midpoint,
//     between the nearest observed points before and after it; before the first point
//     and after the last one the rate is held constant (in online use, "after the last
//     point" is where the run currently ends, so the tail is a hold until the next
//     observation arrives and revises it). Counted slices contribute their own scaled
//     count, as in fixed.
//
// A slice that lacks a reading for an event means the event was enabled for the whole
// slice (Duration) but did not run. Times are in the units of the readings (ns, or 1 per
// slice for unit-time traces); a slice's midpoint is measured in its Duration units.
// Estimates for fixed and linear have status StatusExact when every slice of the
// interval was fully counted, StatusScaled otherwise; no baseline gives an interval
// (HasInterval is false).
//
// Estimators keep every observation (memory grows with the run: fine for eval, not for an
// unbounded live session). Observe rejects readings of events outside the run and slices
// out of order with an error; nothing panics on data from the kernel. Estimators are not
// safe for concurrent use.
package baseline
