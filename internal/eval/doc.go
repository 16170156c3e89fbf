// Package eval scores every estimator on the same multiplexed observations of the same
// run against exact truth, live (a command run under the virtual PMU, package vpmu) or
// from a trace (package inference/replay), and reports a table, one JSON object, or plots.
//
// Estimators: linux, fixed and linear (inference/baseline) and bayesperf-rr
// (inference/model) all see the kernel round robin's observations; bayesperf sees the
// observations of its own schedule when one is available (Observations.Own), and is
// absent from the result otherwise, never faked; linux-own (Options.LinuxOwn) is linux's
// scaling of those same observations. Every estimator receives its own deep copy of
// identical slices, so that one cannot disturb another's input.
//
// Scoring follows the brief's definitions (inference/metrics): per event and reporting
// interval (Window slices), WAPE, total error, RA, DTW cost, coverage95; per estimator the
// means over events and the median WAPE; error reduction = geometric mean over events of
// WAPE_linux / WAPE_X, each ratio capped at 100.
//
// The evaluation corpus (CorpusFamilies) is scored as `bayesperf eval --trace` scores
// it, and judged against issue 13's acceptance (CorpusAcceptance), each event's miss put
// down to the readings or to the model by linux-own.
//
// The truth also checks the relations: BrokenRelations lists the exact ones a run's exact
// counts break, which the model would take as facts (the command warns of them).
//
// Errors are wrapped with the action that failed; malformed traces, event lists and
// relation files are reported, never a panic. Nothing here is safe for concurrent use.
package eval
