// Package vstage presents a client's counting events through the virtual PMU: it is a
// sidecar.Stage (`bayesperf run --virtual-counters N`) that, for each client, multiplexes
// the events the client opened on N virtual counters exactly as the kernel rotates
// flexible groups, and replaces the values a client reads by what it would read on such a
// PMU: the count while scheduled, time_enabled, and a time_running below it. A tool such
// as perf stat then prints its own multiplexing output (percentages, scaled values). A
// group of more events than N is never counted, as on a real PMU (time_running 0: perf
// prints <not counted>; schedule.Spec.KeepUnfit), corrected or not, and the other events
// stay on the virtual PMU.
//
// With Auto (`bayesperf run`'s default --correct auto on a CPU whose PMU counts) the
// budget is not N but what the PMU can count at once of the client's hardware events
// (vpmu.Budget), measured each time the client's events grow; only hardware events are
// scheduled (software events and tracepoints always count), and only when they do not
// all fit: otherwise the client keeps the kernel's values.
//
// For each client and target task the stage opens its own copies of the client's events
// on that target (package vpmu), the first time it sees them and again whenever the
// client's set of events on it grows; the kernel's own events of the client keep
// counting untouched. A client counting several targets gets a virtual PMU per target:
// perf stat --per-thread -p one per thread, perf stat -r one per repetition's child,
// perf stat -a one per CPU.
// Once the tool has closed every event of a target (Unregistered), or is gone (Forget),
// that PMU is finished and closed and its report kept, so reports and truth cover every
// target and repetition; Logf says so once per target ("target pid N gone"). A
// client's target has one entry in the report, the sum of the PMUs its registrations
// rebuilt (report.go: pastReport), since each PMU counts from its build. Copies
// start at the target's next exec when the client's events have enable_on_exec and the
// target has not exec'd yet (it still runs the client's binary, as perf stat's forked
// child does until its exec); otherwise at once. An event registered after the target has
// started rebuilds the client's virtual PMU, and its counts restart from zero: tools open
// all their events before they start the workload, so this only affects odd clients.
//
// The tool's own windows (window.go): a program that counts itself between its own
// ENABLE and DISABLE ioctls, and resets in between (stress-ng --perf, PAPI), reads what
// a real PMU following those ioctls would show: the view within the windows its own
// kernel event was enabled in (the share of the always-on copy's counts that the
// tool's event also counted), restarted at each reset the shim counts in its client
// page, with the tool's own time_enabled. So with --virtual-counters the stage keeps an
// always-on copy of each event even without Truth when the tool opened one disabled and
// they are all software events or tracepoints (they cost no counter).
//
// Correction (Infer, `bayesperf run --correct bayesperf`): each client's slices feed a
// bayesperf model (built and fed through internal/pipeline, relations bound to the
// events' perf names; task-clock a clock, pipeline.IsClock: a task event's enabled time
// is the time the task ran, which is what task-clock counts, so the model knows it in
// every slice), and a read gets the posterior mean of the event's running total (never
// below what was published, pipeline.Floor), with time_running =
// time_enabled, so that the tool's own scaling leaves it unchanged; a group read is
// corrected member by member, PERF_FORMAT_LOST stays the kernel's, and an event the
// model knows nothing about (never scheduled, unrelated) keeps the virtual view. The
// tool's reads set the instants values refer to: a read by the tool is a synchronous
// refresh passing one event (the sidecar runs with a 1 ns stale bound, so every read is
// one), and the first read of a round of reads (perf stat -I reads every event once per
// interval) splits the current slice there (vpmu.PMU.Split: no rotation). Once the
// target has exited, the next round gets the smoother's final totals, and the copies
// are closed (their final virtual values kept) while the tool still holds its own
// events, which keeps the closes cheap. Published values never decrease. Samples
// carrying PERF_SAMPLE_READ and PERF_RECORD_READ records are not rewritten: they come
// from the tool's own kernel events, which the virtual PMU never multiplexes, so their
// values are exact. Schedule "bayesperf" enforces the overlap schedule of
// inference/schedule instead of the kernel's round robin (with Baseline, a second copy
// follows the kernel's for the report). With Truth, hidden always-on copies give the
// truth of every event (TruthTotals) and, with Intervals, of every interval between the
// tool's rounds of reads (Report).
//
// Memory: a client's model keeps the covariances of its last slices only (at most 1024,
// or 16 MiB) and merges older slices into per-event sums between the rounds whose spans
// Report will ask for (model.Options.Marked); the kernel's scaling is kept as running
// sums. Without Intervals nothing grows with the client's lifetime; with it, one record
// per round of reads.
//
// Collector: each client's virtual PMU reads its copies with read(2) (vpmu's own
// backend: inherited events with enable_on_exec) or, with Stage.Snapshots set
// (`--collector bpf`, or auto where BPF loads; bpf.Snapshots), through the bpf
// collector: copies opened per task with enable_on_exec on a target that has not
// exec'd and, for inherited events, on the threads and processes the target creates
// (new processes held at their fork until their copies are open; without inherit only
// the target thread counts, as the tool's own events do); the tool's reads and rounds of reads
// read the copies at their instant through the collector's Peek (vpmu.PMU.Split,
// Virtual, TruthNow). A client whose PMU cannot be opened that way (BPF unavailable,
// events other than software events and tracepoints, a kernel without what holding
// processes needs) falls back to read(2); Logf says which collector each client got, in
// one line ("collector bpf" or "collector read (why)"), the report's clients say
// "collector", and Collector sums it up for --stats. Building a PMU through BPF cost
// 6-13ms (loading the programs and maps, then attaching them; up to 65ms now and then)
// against under 1ms with read(2), and perf stat registers its events one by one, each a
// rebuild, so its start waited for one load per event. The sidecar's Snapshots is a
// bpf.Loader's, which loads the programs and maps ahead, off the tool's path (from the
// sidecar's start, and for each next build behind the current one): a build that finds
// its set loaded takes 0.4-1ms, as through read(2) ("bpf_loads" in --stats says how many
// builds found theirs ready, waited for the rest of a load started ahead, or loaded on
// the tool's path).
//
// Wiring: `bayesperf sidecar --virtual-counters N` sets sidecar.Config.Stage to
// &vstage.Stage{Counters: N}. The mirror must carry non-group reads in the kernel's
// layout (value, then enabled, running, id, lost), which a stage that changes values
// relies on.
//
// Targets are tasks (pid >= 0 with cpu -1, or pid 0 meaning the client itself) and,
// with --virtual-counters, CPUs (pid -1: perf stat -a gets a virtual PMU per CPU, as a
// real CPU has a PMU each). A CPU's PMU reads its copies with read(2), since the
// snapshotting collector follows tasks; its model has no clock event
// (pipeline.IsClock); it ends when the tool closes its events or is gone. With Auto a
// CPU's events keep the kernel's schedule. Events of one task on one CPU pass through
// unchanged, as do events whose copies cannot be opened. Errors never reach the client:
// they leave the kernel's values in place and are reported through Logf.
//
// Stage is safe for concurrent use: the sidecar calls it for different clients
// concurrently (for one client, one call at a time), and each virtual PMU is built and
// read under its own lock, so one client's PMU being built stalls no other client.
package vstage
