// Package model is the BayesPerf estimator: it infers, from multiplexed counter readings,
// the count of every event in every slice as a Gaussian posterior, and reports per
// reporting interval a posterior mean with a 95% interval.
//
// The state is the per-slice rate (count per unit of slice duration) of every event.
// Exact linear identities between events (page-faults = minor-faults + major-faults) are
// built into the state space: the state holds the rates of a subset of "free" events and
// every other rate is a fixed linear combination of them, so the identities hold in every
// posterior mean by construction, not approximately. Approximate identities (a relation
// with a tolerance) are soft linear factors applied every slice.
//
// Time: a random walk links consecutive slices. Its innovation covariance is learned
// online from slices in which events were counted in two consecutive slices: per event a
// volatility relative to its current level (so that a busy phase is allowed to move more
// than a quiet one, as a log-space walk would, while the state stays linear so that sums
// stay exact), and between events a correlation, shrunk towards zero while few pairs have
// been seen. A Student-t scale mixture on the predicted state (the variational Student-t
// filter) absorbs bursts that the Gaussian walk would call impossible, which is what keeps
// the intervals honest on real programs.
//
// Measurements: an event counted for its whole slice gives its exact rate (only count
// quantisation noise); one counted for part of a slice gives count/running with a noise
// that grows with the uncounted share. Inequalities (counts are non-negative; misses <=
// accesses) are imposed by assumed-density filtering, the one-pass form of Expectation
// Propagation: when a constraint is at risk under the Gaussian posterior, the posterior
// is replaced by the Gaussian with the moments of its truncation. Non-linear relations
// are linearised at the current mean each slice (a Gaussian site, as in EP with a
// first-order approximation). Everything else is the exact Kalman filter (Observe, live
// values) and Rauch-Tung-Striebel smoother (Estimate, final values after Finish).
//
// An event counted for the whole of a reporting interval is reported exactly as counted
// (StatusExact). Intervals use a Student-t quantile.
//
// Errors: New reports malformed relations; Observe reports readings for unknown events
// and numerical failures (a non-finite state), after which the model keeps its previous
// state, so one bad slice never poisons the rest. Nothing here panics on input data.
// A Model is not safe for concurrent use.
package model
