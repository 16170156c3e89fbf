// Package inference is the BayesPerf model: it turns multiplexed counter observations
// into corrected per-event counts with 95% intervals.
//
// It holds events and their relations (subpackage relation), the factor graph and Markov
// blankets, the overlap-aware scheduler, the estimators (Linux scaling, PAPI fixed
// interpolation, linear interpolation and the Bayesian model) behind one Estimator
// interface, and the accuracy metrics shared by eval, tests and reports.
//
// The package is pure computation: it depends on the standard library and gonum only,
// makes no syscalls, and never panics on data that came from the kernel or a user;
// numerical failure is reported as a status or an error. Randomness takes an explicit,
// seedable source. Values are not safe for concurrent use unless stated otherwise.
package inference
