// Package kstage corrects the kernel's own multiplexing in the drop-in path: it is a
// sidecar.Stage (`bayesperf run` and `bayesperf sidecar` without --virtual-counters,
// with --correct bayesperf: not the default there, see below) for a CPU whose PMU has
// fewer counters than the tool asked for events, where the kernel rotates the events
// and reports each one's count with time_enabled and a smaller time_running.
//
// It sees only what the sidecar reads of the tool's events: per client and target (pid,
// cpu: the kernel multiplexes each context on its own), every periodic round the
// cumulative (value, enabled, running) of every live event, a group read member by
// member; the sidecar says which calls are rounds and which are a tool's reads
// (sidecar.CallCorrector), and which events the tool closed (sidecar.Unregisterer):
// those leave their target, whose model is rebuilt over the others. Per round, the
// deltas since the last round are cut into the kernel's own slices (segment.go: a round
// that holds one rotation is split where it happened, as the shares of the round the
// leaving and joining events ran say; the round's span of the target's time is what
// the events that counted at both reads say, since the enabled time of an event not
// counting lags, and that of an inherited event sums its children's), and each slice
// goes to a bayesperf model
// (built and fed through internal/pipeline; relations bound to the events' perf names
// through perf.Namer; task-clock of a task target a clock, pipeline.IsClock). A round
// in which the target did not run adds nothing.
//
// What the tool reads (shim.Values, rewritten in place):
//   - An event whose time_running has always equalled its time_enabled keeps the
//     kernel's values bit for bit: it was never multiplexed, so they are exact. Until
//     some event of a target is multiplexed no model is built at all, so on a machine
//     without a PMU (software events and tracepoints, which the kernel never
//     multiplexes) the stage costs nothing and changes nothing.
//   - A multiplexed event gets the estimate of its running total, with time_running =
//     time_enabled so that the tool's own scaling leaves it unchanged: the smoother's
//     estimate given every slice so far (recomputed once per slice, a tool's reads
//     come in bursts), plus the slice being built (counted, or at the event's latest
//     rate times the share of their latest rates that the events counting there
//     counted, at most 1: one factor for all keeps the exact identities between the
//     events extrapolated, and a value published too high never comes back down),
//     plus the kernel's delta since the last round, scaled by enabled/running where
//     the event ran part of the time (its enabled time at most the time since the
//     round), at its latest rate times that share where it did not run.
//     Such values are estimates as of the read, so once a target is corrected its
//     events' mirrors are marked shim.MirrorSync (sidecar.Syncer): every read of them
//     is a synchronous refresh, whatever the sidecar's staleness bound, and periodic
//     rounds, which no read then serves, keep the last read's values. Values published
//     never decrease (the kernel's values published before the model started
//     included): a smoothed total revised down later comes out of the following
//     intervals.
//   - Once the target task has exited (checked when a round finds it idle and at every
//     refresh, which is how perf stat's reads after reaping its command come), the
//     smoother's final totals, plus the kernel's scaled delta since the last round.
//   - An event the model knows nothing of (never scheduled and tied to nothing
//     counted) keeps the kernel's values (perf prints <not counted>); so does a group
//     read with such a member. PERF_FORMAT_ID and PERF_FORMAT_LOST stay the kernel's.
//   - Events that count the reader itself (perf stat -a, self-monitoring programs) are
//     read by the shim straight from the kernel (the stage is KernelExact): those reads
//     stay the kernel's, as natively, and when the stage is the sidecar's only one
//     (SelfFromKernel) it builds no model for such targets.
//
// Slices must be about the kernel's rotation period to show its structure, so the
// stage implements sidecar.Pacer: while a target of a client is being corrected, the
// server re-reads that client's events at least every multiplexing interval
// (perf_event_mux_interval_ms) even when the tool reads only at the end; and while a
// live target is not corrected yet, every 50 ms, so that a tool reading only at the
// end still has its target's multiplexing seen as it starts (the sidecar makes no
// periodic rounds of its own for a client that does not read).
//
// Accuracy: the stage is tested behind the virtual PMU here (`bayesperf run
// --virtual-counters N --infer-from values`, which presents what a multiplexing kernel
// would) and on the arm64 testbed's real PMU (docs/pmu.md), where on the mixed
// workload it reduced the per-interval error of the kernel's scaling 3.3x-5.8x (10
// runs); it is not the default there: the default (`--correct auto`) is the virtual
// PMU's own schedule (internal/vpmu/vstage), which keeps the kernel from multiplexing
// and measures better.
//
// Limits: targets with more than MaxEvents events keep the kernel's values (events
// corrected before a late one made too many: the kernel's scaled values, with
// time_running = time_enabled, never below what was published); events
// registered after a target's model started rebuild it (their earlier counts enter as
// the kernel's scaled values), and so do events closed (the model starts again from
// the totals so far; none if no event left was ever multiplexed); a tool's
// PERF_EVENT_IOC_RESET of a corrected event is not followed (its values never
// decrease). Relations bind by perf's generic and
// tracepoint names only (perf.Namer), so raw vendor events get the temporal model
// without relations. Without Preload, the first multiplexed round of a target with
// tracepoints reads tracefs (hundreds of milliseconds) under its client's lock.
//
// Stage is safe for concurrent use: the sidecar calls it for different clients
// concurrently (for one client, one call at a time); each client's state is under its
// own lock.
package kstage
