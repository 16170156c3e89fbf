// Package truth records, beside what a tool was served, the exact count of each of its
// hardware events: it is a sidecar.Stage wrapped around the stage that corrects (or
// around none), for `bayesperf run --truth FILE.csv` on a CPU whose PMU the kernel
// multiplexes. It is how the kernel's own scaling and its correction (internal/kstage)
// are scored against the truth on a real PMU, in the same run, from what the tool read.
//
// When a tool registers a hardware event (any type but software, tracepoint and
// breakpoint), the stage opens hidden copies of it on the same target (pid, cpu), with
// the tool's inherit and enable-on-exec bits, pinned so that the kernel never
// multiplexes them: one per privilege level it counts (perf.LevelParts), shared by every
// event of the target that counts that level of the same event, so that instructions,
// instructions:u and instructions:k take two counters, and their sum is each event's
// truth. A pinned copy takes a counter from the tool's events: the kernel multiplexes
// those over the counters left. The tool's reads of such events become synchronous
// refreshes (sidecar.Syncer); at each one the stage writes one CSV row (Header): the
// kernel's (value, enabled, running) as read, what the inner stage left for the tool,
// and the truth read right after. Events of a group read and events the stage could not
// copy (no counter left for a pinned copy, or perf_event_open refused) get no rows; -v
// logs why.
//
// Limits: the truth counts from the tool's exec (or open) onwards, so a tool that
// enables its events later (perf stat -D, self-monitoring) sees its window and the
// truth does not. Calls for different clients may come concurrently (sidecar.Stage):
// each client's copies are under its own lock; rows are written as they come and Close
// flushes them.
package truth
