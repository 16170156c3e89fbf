// Package model is the BayesPerf estimator: it infers, from multiplexed counter readings,
// the count of every event in every slice as a Gaussian posterior, and reports per
// reporting interval a posterior mean with a 95% interval.
//
// State: the per-slice rate (count per unit of slice duration) of every event. Exact
// linear identities between events (a parent equal to the sum of its children) are
// built into the state space: the state holds the rates of a subset of "free" events
// and every other rate is a fixed linear combination of them (the sum side of each
// identity is the dependent one, never a term), so the identities hold in every posterior
// mean by construction (Posterior), not approximately; Estimate reconciles its reported
// values to them too (reconcile). A reading of a sum informs its terms only once they
// are determined, as a soft identity does, or, in Finish's second pass, once each has
// been read somewhere in the run. Approximate
// identities (a relation with a tolerance, such as page-faults = minor-faults +
// major-faults) are soft linear factors applied every slice, except that an identity
// with a term never counted yet waits until the others are counted in the same slice:
// before that, the never-counted term's diffuse prior would absorb the others' errors;
// and a term counted whole at zero in the slice is zero in it, taking no share.
//
// Time: each free rate follows an AR(1) walk around its level (a recent average of its
// counts), persistence 0.98 by default. The walk's steps are learned online, relative to
// each rate's level (a busy phase may move more than a quiet one, as in a log-space
// walk, while the state stays linear so that sums stay exact): per event a volatility
// from changes between its readings, and, with Options.Correlated, between events a
// correlation from pairs counted together in two consecutive slices, fitted with a
// common factor so that it is positive definite and extends to pairs the schedule
// never counts together (off by default: see Options.Correlated). A Student-t scale mixture on
// each counted rate's step (the variational Student-t filter) absorbs bursts that the
// Gaussian walk would call impossible; a burst's variance is sized by the step but never
// below the reading's noise, so that a rate asleep at zero, whose learned step is nil,
// still wakes on its first reading of a new phase; it widens the step out of the slice
// as well as the step into it, so that the next reading, not the walk, says whether the
// rate stays up. The step out of a rate's first sighting is widened too (to half the
// rate read), except for a term of an exact sum, which would then take all of the sum's
// readings. The run's first slice is its start-up (exec, the loader's mmaps): the step
// out of a rate read there is diffuse and the slice is no part of any level, so that a
// start-up burst is not carried into the slices after it.
//
// Activity: a rate's level need not be constant. Events that the schedule counts in
// (nearly) every slice, as fixed counters are, are known in every slice (so are
// Options.Clocks, task-clock of a task target, whose count is every slice's enabled
// time: the model takes it as counted whether a counter held it or not); per free rate
// the model learns whether it is better predicted as a ratio of one of them (the
// survey statistician's ratio estimator: page faults per unit of task-clock, data reads
// per instruction) than as a constant, and if so its level in a slice is that ratio
// times the always-counted event's rate in that slice (activity.go). The walk is then on
// the deviation from this moving level. The walk's volatility is learned from readings any number of slices apart (up to maxGap),
// each change rescaled to one slice's under the AR(1) walk, because a schedule that
// spreads an event's readings out never counts it in two consecutive slices.
//
// Measurements: an event counted for its whole slice gives its rate with a Poisson
// noise unless it is counted in nearly every slice (then exactly, as relations tie other
// events to it); the slices where an event was counted whole are still reported with
// their exact counts, and so are the events exact identities determine from them in
// that slice (a repeat, a sum of counted terms, a term of a counted sum), even where the
// slice was too short for its readings to inform the walk. The Poisson variance is that of the count the event's level
// expects in the slice (at least one count), not of the count read, which would trust
// low readings more than high ones and bias bursty events low; a slice shorter than
// usual adds, per missing share of a usual slice, one step of the walk. One counted for
// part of a slice gives count/running with a noise that grows with the uncounted
// share. Inequalities (misses <= accesses; counts >= 0) are imposed by assumed-density
// filtering, the one-pass form of Expectation Propagation: when the posterior mean
// clearly violates a constraint (by more than one standard deviation: applied at the
// bound, repeated truncation ratchets a count that sits at its bound upwards), the
// posterior is replaced by the Gaussian with the moments of its truncation (a count
// asleep at zero takes its mode, zero, as the mean; a bound with a rate asleep among its
// terms moves only the mean, so that it ties no such term to the bound: see
// applyInequalities); the
// reported values keep the exact ones (no tolerance) in every interval and over the
// whole run (reconcile: the nearest values that keep them, by an active-set method), as
// they keep the exact identities. Non-linear relations are linearised at the current
// mean every slice (a Gaussian site, first-order EP). The rest is the exact Kalman filter (Observe) and
// Rauch-Tung-Striebel smoother (Estimate: given everything observed so far, for live
// reads and final values alike), with cross-slice covariances carried into the
// variance of interval sums.
//
// Intervals: the smoothed standard deviation, widened by the error of the level that
// uncounted slices revert to (the same in every slice of a gap, so it adds up linearly
// over an interval) and by the scatter of an uncounted slice's count that the walk does
// not explain (learned per event as the excess of squared innovations over their
// predicted variance, per count of level: a sparse event's counts come in bursts that
// no rate walk predicts), times 1.96. The smoothed and level parts (not the scatter,
// which is learned from the same misses) are scaled per event by a factor calibrated
// online from how far counted rates fall from their prediction after a gap (the
// situation every inferred interval is in), against what the interval allows, scatter
// included (learner.calibrate); the factor may narrow as well as widen. A sum that exact
// identities make of other rates, never read as one rate, learns none of this: its
// interval is at least that of its terms taken as independent. An event
// counted for the whole of a reporting interval is reported exactly as counted
// (StatusExact); one that nothing observed bears on is StatusNotCounted.
//
// Final values: Finish filters the run a second time (refilter, hindsight.go) with the
// activity ratios learned from the readings around each slice instead of those before
// it: the ratio learner reads ahead of the filter by the median age of its forgetting
// window (in slices: about 11 readings times the usual gap between an event's
// readings), so that its window is centred on the slice. Online a ratio can only lag:
// the first slices of a run have none at all, and where the program's mix changes it
// trails behind; final values are conditioned on the whole run anyway. Its prior of a
// rate not yet read is sized by that rate's own readings over the run (their root mean
// square), where the first pass could only take the first slice's typical rate, of
// events in other units. A sparse rate (a few counts a slice over the run) has a prior
// one such rate wide (at least 0.3 counts a slice) and starts its level from its mean
// over the run rather than its first reading (seedLevels). Live values are the first
// pass's.
// The intervals keep the first pass's calibration and count scatter, learned from
// predictions that had not yet read the reading they predicted. The slices are kept
// for the second pass until the history first freezes (Options.History); a longer run
// keeps the first pass.
//
// Costs: Observe is O(k²) per reading for k free rates and allocates nothing in steady
// state (the slices kept for the second pass grow by doubling, until the history first
// freezes); Estimate smooths back to the start of the asked interval, O(k³) per slice,
// and caches the pass; Finish repeats the run's Observes once (the second pass).
// Covariances are kept for a bounded number of recent slices (Options.History); older
// slices keep per-event sums of means, deviations and counts, one set per slice, or
// with Options.Marked one per span between the boundaries a reader marks (Mark), so
// that a live reader's model of a run of any length takes bounded memory.
//
// Errors: New reports malformed relations; Observe reports bad slices (a non-positive
// duration, a reading for an unknown event) before touching the state, and numerical
// failures (a non-finite state, ErrNumerical), after which the model keeps its state from
// before the slice, so one bad slice never poisons the rest. Nothing here panics on
// input data. A Model is not safe for concurrent use.
package model
