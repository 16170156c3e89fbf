// Package metrics scores estimates against the truth with the accuracy measures of
// ../shared/BRIEF.md ("How we score accuracy"), so that eval, tests and reports compute
// them one way: WAPE, median WAPE, total error, RA, DTW-cost, coverage95, sharpness, and
// the error reduction and harm of an estimator relative to Linux scaling.
//
// For an event with truth c_i and estimate ĉ_i over reporting intervals i:
//
//	WAPE        = Σ|ĉ_i − c_i| / Σc_i
//	total error = |Σĉ_i − Σc_i| / Σc_i
//	RA          = max(0, 1 − mean over i with c_i > 0 of |ĉ_i − c_i| / c_i)
//	DTW-cost    = DTW(ĉ, c) with local cost |a − b|, divided by Σc_i
//	coverage95  = share of intervals whose truth lies in [Lo, Hi], over the estimates
//	              that have an interval
//	sharpness   = Σ(Hi_i − Lo_i)/2 / Σc_i, over the estimates that have an interval
//
// Every ratio over Σc_i is undefined for an event that never occurred (Σc_i = 0); such
// an event is reported as undefined and left out of the means, never as NaN. Across
// events, the headline WAPE is the mean over defined events, the median WAPE their
// median, and the error reduction of X the geometric mean of WAPE_linux / WAPE_X, each
// ratio clamped to [1/100, 100] (the upper cap is the brief's; the lower one keeps the
// mean finite when Linux is exact and X is not). Because a geometric mean hides an event
// estimated 500 times too high, Harms reports beside it the worst per-event ratio
// WAPE_X / WAPE_linux (over events where Linux errs by at least 1%) and the number of
// events X makes clearly worse; the sharpness of an estimator is the median over events.
//
// Functions are pure, allocate only their results, never panic on mismatched lengths
// (they score the common prefix) and are safe for concurrent use.
package metrics
