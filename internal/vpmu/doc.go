// Package vpmu is the virtual PMU: it makes multiplexing real on machines whose events
// the kernel never multiplexes (software events, tracepoints) by enforcing a budget of N
// counters itself, and it keeps an exact, hidden, always-on copy of every event as ground
// truth.
//
// Given the events a client asked for (with their {a,b} groups), the budget and the events
// on fixed counters, Open opens, for a target task (or CPU):
//
//   - a dummy software event, always enabled, whose time_enabled is the virtual
//     time_enabled every event shows (the time the target ran since Start);
//   - per view, one copy of every event, opened disabled. A view is a cyclic schedule
//     (inference/schedule): KernelSchedule reproduces the kernel's round robin of flexible
//     groups exactly; any other schedule, such as BayesPerf's overlap schedule, can be
//     enforced side by side on its own copies, so that estimators using different schedules
//     are scored on the same run;
//   - with Truth, an always-on copy of every event, read as one group with the dummy.
//
// Start enables the first configuration of every view. Step, called once per
// multiplexing interval (MuxInterval: the kernel's perf_event_mux_interval_ms, 4 ms
// typically), reads the events that were on during the ending slice, records for each
// view an inference.Slice (Duration = the slice's wall-clock ns; one Reading per event:
// raw count delta, Enabled = the virtual enabled time the target accrued in the slice,
// Running = the time the copy actually counted, 0 for events that were switched off) and the exact truth deltas, then disables the events leaving the
// next configuration and enables those entering it. Virtual reports what a client reading
// its events through a view would see: the cumulative count of the view's copy, time_enabled
// of the dummy and time_running of the copy, i.e. multiplexing exactly as on a real CPU.
//
// The sidecar calls it from `bayesperf run --virtual-counters N`; `bayesperf eval` calls it
// with two views (kernel and overlap) and Truth.
//
// Limits: events are opened per task (inherit optional) or per CPU by this package; on a
// real CPU the truth copies of hardware events would themselves be multiplexed, so Truth
// is meant for software events and tracepoints. Between a Step's read and its toggles a
// few events may land in the neighbouring slice; they are never lost.
//
// Errors are wrapped with the action that failed; a failing read or ioctl is returned,
// never a panic. A PMU is not safe for concurrent use: one goroutine steps it.
package vpmu
