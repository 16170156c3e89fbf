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
//   - one always-on copy of every distinct event. It is the truth (Truth), and for
//     software events and tracepoints, which the kernel never multiplexes, it is also
//     what every view counts: a view's count of such an event advances by exactly what
//     the copy counted in the slices the view scheduled it in, so views switch
//     atomically at slice boundaries, as a real PMU does, and cost no kernel event of
//     their own. A view is a cyclic schedule (inference/schedule): KernelSchedule
//     reproduces the kernel's round robin of flexible groups exactly; any other
//     schedule, such as BayesPerf's overlap schedule, can be enforced side by side, so
//     that estimators using different schedules are scored on the same run;
//   - for any other event (hardware events, which the kernel would itself multiplex if
//     they were all enabled on a real CPU), per view one copy, opened disabled and
//     switched by ioctl, and with Truth always-on copies. All of them are pinned: the
//     kernel schedules pinned events before flexible ones (such as the client's own
//     events, which sit in the same context), never multiplexes them, and puts one that
//     finds no counter in error state, which fails the next read instead of scaling
//     silently. Truth copies are shared between events that differ only in the
//     privilege levels they count (one per level: instructions, instructions:u and
//     instructions:k take two counters), so a view gets the counters the truth leaves;
//     Budget measures how many that is.
//
// Start enables the first configuration of every view. Step, called once per
// multiplexing interval (MuxInterval: the kernel's perf_event_mux_interval_ms, 4 ms
// typically), reads the always-on copies (and the view copies that were on during the
// ending slice) and records, for each view, an inference.Slice: Duration = the virtual
// enabled time the target accrued in the slice (the time it ran), and one Reading per
// event with the raw count delta, Enabled = that time, and Running = Enabled for the
// events scheduled in the slice, 0 for the others. It also records the exact truth
// deltas, and moves every view to its next configuration (disabling and enabling view
// copies, where there are any). Like the kernel, which rotates a task's events only
// while the task runs, a Step in which the target did not run at all is Idle: it records
// nothing and does not rotate, and the next slice covers the idle time (Flush ends the
// last slice regardless).
//
// Virtual reports what a client reading its events through a view would see: the view's
// cumulative count (for a derived event, its count at the last Step plus what the
// always-on copy counted since, if the view schedules it now), the dummy's time_enabled,
// and as time_running the enabled time of the slices in which the event was scheduled:
// multiplexing exactly as a tool sees it on a real CPU.
//
// The sidecar calls it from `bayesperf run --virtual-counters N`, for a client (perf stat)
// whose events target a command that has not exec'd yet:
//
//	ks, err := vpmu.KernelSchedule(events, n, fixed) // events: perf.ParseEvents or the client's attrs
//	p, err := vpmu.Open(vpmu.Config{Events: events, Views: []vpmu.View{{Name: "kernel", Schedule: ks}},
//		Pid: target, CPU: perf.AnyCPU, Inherit: true, EnableOnExec: true})
//	r, err := vpmu.NewRunner(p, 0, false) // steps every perf_event_mux_interval_ms
//	c, err := r.Virtual(0, i)             // what the client's read() of event i returns
//	r.Stop(); p.Close()
//
// `bayesperf eval` calls RunCommand with two views (kernel and overlap) and Truth.
//
// Kernel steps the same way without a budget, for `bayesperf stat` without
// --virtual-counters: the events as the kernel schedules them, its slices the deltas of
// what the kernel reported. Deltas, never-decreasing totals and merging are
// internal/pipeline's, shared with the other correctors.
//
// The PMU reads its copies through one perf.Collector, in one way: Step ends a slice at
// the collector's next snapshot and then switches the views (SetEnabled, for the slice
// that has just begun); Split, Flush, Virtual and TruthNow read the copies at their
// instant through its Peek. Without Config.Snapshots the collector is the read(2) one
// over the events Open opened (copies), which reads at once and is paced by the caller;
// with it, a snapshotting collector (bpf.Snapshots) reads every copy at its slice
// boundaries in the kernel and paces Step, and the Runner waits for a snapshot without
// its lock, so a server's reads go on while the target sleeps (the sidecar's
// `--collector bpf`).
//
// Limits: events are opened per task (inherit optional) or per CPU by this package. A
// hardware event's truth takes the hypervisor level and guest time as empty (see
// truthParts). The always-on copies are read one after
// another, so an event's slice boundary is the instant of its own read, microseconds
// apart from the next event's; views and truth share it, so a derived view counts
// exactly the truth of its slices (TestEmulationNoise). View copies (hardware events)
// are read right after their truth and switched once every copy is read: what a copy
// counts between its read and its switch-off is left out of its view (it counted in a
// slice its view had it off), and one switched on misses what happened before its
// ioctl: a few events short of the truth, never in another slice. Software events had
// such copies too, until derived views replaced them: 0.4-0.7% of all counts, and up
// to 14-25% of a single event's (getpid under load), were in the wrong slice.
// `bayesperf eval -e DEMO_EVENTS
// --counters 4 --fixed task-clock --collector read -- bayesperf workload mixed
// --duration 3s`, 6 alternating pairs, medians: bayesperf's median WAPE 0.258 before,
// 0.148 after, error reduction 1.97 and 2.51 (linux's own median WAPE fell too, 0.415 to
// 0.344), coverage95 0.946 and 0.979, 83 fds and 35.
//
// Errors are wrapped with the action that failed; a failing read or ioctl is returned,
// never a panic. A PMU is not safe for concurrent use: one goroutine steps it.
package vpmu
