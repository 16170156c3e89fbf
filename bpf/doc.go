// Package bpf collects per-slice snapshots of a target's perf counters in the kernel, with an
// eBPF program, so that the sidecar sees what every event counted in every slice without a
// read(2) per event per slice.
//
// # How it works
//
// The collector opens the caller's events itself, one set per thread of the target (or per
// CPU for a system-wide target), and stores their fds in a BPF_MAP_TYPE_PERF_EVENT_ARRAY at
// index slot*len(Events)+i. A cpu-clock sampling event on every CPU, with a period of one
// slice of wall-clock time, runs the program on_tick: if the interrupted thread is tracked,
// it reads (count, enabled, running) of all its events with bpf_perf_event_read_value and
// submits one record to a BPF ring buffer, which Next consumes (cilium/ebpf's ringbuf
// package; the project's own ringbuf package is the perf mmap ring, not this one).
//
// Slices are wall-clock slices, like the kernel's multiplexing timer, and one timer per CPU
// serves any number of threads. A per-thread counter only moves while its thread runs, so a
// thread that was not running at a tick has nothing new to report since it last left its
// CPU: a sched_switch program snapshots a tracked thread as it is switched out (in its own
// context, before its events are scheduled out), so that a thread that seldom runs at a
// tick (a shell waiting for its child) reports what it counted in the slice it counted it,
// not slices later. Those records do not wake the collector (the next tick's record does);
// the program runs on every context switch of the machine, a hash lookup for an untracked
// task. Before it, on a shell loop of short commands, the linux estimator's error in
// `bayesperf eval --collector bpf` was worse than with --collector read in 8 pairs of runs
// out of 8 (0.11-0.19 against 0.07-0.11); with it, 0.10-0.14 against 0.08-0.15.
//
// A slice ends at every round of ticks in which the target ran, as the read(2) backend
// steps every interval in which it ran: a tick that finds a tracked thread running
// snapshots it, and a tick that finds none ends the slice all the same (a header-only
// round record) if a tracked thread left its CPU or exited since the previous tick, since
// the values of a thread not running are those of its switch snapshot, already sent.
// Every CPU's timer fires within microseconds of the others, so the ticks of one round
// (within half a slice of the first) end one slice; a round with no tracked thread run
// ends none. When a slice was ended by a round record, Next waits briefly for the ticks
// of the other CPUs, on one of which a tracked thread may be running. Before, only a tick
// finding a tracked thread running ended a slice, so a target that mostly sleeps got one
// slice per many intervals: `bayesperf workload sleep` got 41-409 slices against 834-986
// through read(2), a target running 200µs every 3ms (TestSlicesOfASleeper) 1-3 slices for
// 55 intervals of wall time, now 51-55.
//
// Events opened with inherit=1 cannot be read from BPF, so tasks are followed explicitly:
// a sched_process_fork tracepoint program marks every task created by a tracked one
// (thread or child process, as perf's inherit follows both) as pending in the kernel, so
// that its own children are caught too, and wakes the collector, which opens the new
// task's events and gives it a slot. Whatever the new task counts before its events are
// open is not seen: Stats.MaxFollowLatency measured 0.4ms idle to 10ms on a loaded 2-core
// VM (and 400ms with the load average at 15). For short-lived processes that is most of
// their life: a shell loop of 150 `cat` (TestHoldsNewProcesses without holding) showed 94
// to 126 of the 150 execve and 0.2-3.4% fewer page faults than inherited events in the same
// run; `bayesperf eval --collector bpf` on the loop of TestEvalBPFMatchesRead saw 63-79 of
// its 100 execve and 13-30% fewer page faults than --collector read (load average 10-15).
//
// Options.HoldProcesses (which eval uses) closes that gap for processes: the fork program
// (then a BTF tracepoint program, tp_btf/sched_process_fork) sends a new process SIGSTOP
// with the bpf_send_signal_task kfunc (kernel 6.13+) before the child has ever run, so the
// stop takes effect on its way to user space, before its first instruction; the collector
// opens its events and sends SIGCONT. The notice is published only after the signal is
// pending, so the SIGCONT cannot come first (it would do nothing, and the child would stop
// for good); a SIGCONT removes a pending SIGSTOP, so a child the collector reaches before
// it runs does not stop at all. Processes still held when the collector closes (a held
// map in the kernel) are continued by Close. With it the shell loop's execve and
// syscalls:sys_enter_openat totals equal the inherited events' exactly, in the same run and
// between `eval --collector bpf` and `--collector read` runs (TestEvalBPFMatchesRead), and
// the page faults are short by at most one per process (0-60 of 11200 for 150 processes):
// schedule_tail writes the child's tid into its memory before it first returns to user
// space, which inherited events count and the held child's own events, opened later, do
// not. Go's fork+exec (`bayesperf workload fork`) gives the same: every execve, 0-60 of
// 4400-5900 faults missing for 77-108 children.
//
// What a held process's parent can notice: if the child reaches its stop before the
// collector continues it, the parent gets SIGCHLD (CLD_STOPPED, then CLD_CONTINUED) and a
// parent waiting with WUNTRACED or WCONTINUED sees the stop (an interactive shell with job
// control would report the job stopped: do not hold under one); a wait without them just
// wakes and waits again, one more context switch of the parent. A SIGCONT handler the
// child inherited from its parent runs. The child starts later by the follow latency. A
// process held when the collector's own process is killed (SIGKILL: Close never runs)
// stays stopped until something sends it SIGCONT (the kernel does, with SIGHUP, if its
// process group becomes orphaned). New threads are never held (SIGSTOP stops the whole
// process, the creating thread too), so a thread still counts only from the moment its
// events are open. (Per-CPU events filtered
// by a cgroup would see every task from its first instruction, and the program reads them
// unchanged (slots are then CPUs), but on this 6.18 kernel they triggered a WARN in perf's
// visit_groups_merge and the slice timers of the CPU context stopped firing, so they are
// not used. An fexit program on schedule_tail, in the child's first moment on a CPU, would
// not need the kfunc, but this kernel refuses fentry/fexit programs and has no kprobes.)
// A sched_process_exit program takes each thread's last snapshot in its exit path. Once
// the kernel has detached an exited thread's events, at the next slice Next returns, its
// final values are read with read(2) into a running sum and its slot is recycled, so
// Options.MaxThreads bounds the threads alive at once, not the threads ever created. The
// read matters: the thread's own sched:sched_process_exit is counted after the program
// ran, and reading it only when a slot was needed put every exit of a run in its last
// slice (TestExitsCountInTheirSlices).
//
// Options.EnableOnExec serves the drop-in sidecar (`bayesperf run --virtual-counters N
// --collector bpf`), whose target is perf stat's forked child before it execs the
// command: the events of the threads present at NewCollector are opened disabled with
// enable_on_exec, so that the kernel enables them in the exec, as it does perf stat's
// own. Before the exec they read zero, and the exec's own sys_enter_execve is not
// counted, as perf's events do not count it either (TestEnableOnExec). Options.Descendants
// makes Threads follow only the thread Pid and the tasks it creates, as an inherited event
// opened on it counts, not the sibling threads its process already has (`perf stat -p` of
// a running process opens one event per thread, and adds them up).
//
// Wait and Peek serve a reader between slices (the sidecar answering a tool's read at
// the instant it reads, and splitting a slice there). Wait blocks until Next would
// return at once, without consuming anything, so a virtual PMU waits for the next
// snapshot without its lock and takes it under the lock, where no read can see a
// snapshot taken but not applied. That includes the wait for an exited target's threads
// to be finished before the final snapshot reads them (the exit record comes before the
// kernel frees the task's memory: 66ms for 1 GiB of 4 KiB pages, up to a 1s bound),
// which Wait does without any lock: done in Next, with the collector's lock held, it held
// up every Peek and the virtual PMU's reads (TestExitWaitHoldsNoLock: 0.95s before). Peek reads events now with read(2), gated as the next
// snapshot would report them, without ending the slice: the next snapshot covers the
// whole slice, so a reader that ends a slice at a Peek (vpmu's Split) gets the rest of
// it from that snapshot. What Peek reads is taken into the sums, so the next snapshot
// reports at least as much: a thread's own snapshots can be behind its events (a switch
// snapshot precedes the context switch the kernel counts, an exit snapshot precedes the
// thread's own sched_process_exit), and a Peek after a tick whose snapshot Next has not
// returned yet reads past that tick; a virtual PMU that served such a Peek would
// otherwise serve less at the next read.
//
// A goroutine consumes the BPF ring buffer as records arrive, so new threads are followed
// however late Next is called; Next returns the sums as of the last record applied. It runs
// on its own OS thread at nice -10 (when allowed), because a target that saturates the
// CPUs would otherwise starve it and new threads would get away unfollowed.
//
// SetEnabled (for a sidecar that multiplexes events itself) costs one ioctl per followed
// thread, and an ioctl on a thread running on another CPU is a cross-CPU call: with 80 busy
// threads on 2 vCPUs that made a few toggles per slice take milliseconds. It also lags the
// snapshot it follows by the collector's wake-up and those ioctls, so a virtual PMU
// rotating its copies at every snapshot saw a copy count a little past the end of its turn
// and miss the start of the next: on `bayesperf workload sleep`, 5-33% of what single
// events (context-switches, cpu-migrations, the read and close syscalls) counted in their
// turns was misplaced, against under 5% with the read(2) backend, whose switches follow
// its reads within microseconds. Options.SwitchAtSnapshots (which eval uses) does without
// both: every event counts in the kernel all the time, and the collector advances an event
// by its delta over a slice only if it was enabled for that slice, so a view's copy counts
// over exactly the slices it was scheduled in. Copies that differ only in the disabled bit
// are then one kernel event (eval's truth copy and two view copies of each event: a third
// of the reads per tick and per context switch).
//
// Snapshots are cumulative, so a late Next loses nothing: its snapshot covers several
// slices. Late it can be, on a saturated machine: the kernel's ticks keep time, but the
// consuming goroutine (nice -10 on its own thread) and Next's caller need the Go
// scheduler, whose Ps threads of normal priority may hold while off the CPU; with other
// test packages loading a 2-core VM, a slice waited up to 40-170ms to be returned while
// the target spun on (Stats.MaxSliceLag). A running thread's values are those of its last tick, so what it counted since
// shows up in the next slice; with one thread this is at most the part of a slice it ran
// after the tick.
//
// Estimates through BPF against read(2) (`bayesperf eval -e DEMO_EVENTS --counters 4
// --fixed task-clock --collector bpf|read -- bayesperf workload W --duration 3s`,
// alternately; medians over pairs of runs of bayesperf's median WAPE over events, then of
// its mean WAPE): mixed 0.204 against 0.274 and 0.274 against 0.346 (6 pairs), sleep
// 0.170 against 0.189 and 0.447 against 0.485 (6), syscalls 0.171 against 0.251 (4),
// memory 0.300 against 0.376 (4), fork 0.218 against 0.354 (4); on the shell loop of
// TestEvalBPFMatchesRead (8 events, --counters 3, 12 pairs of 6-10 intervals) 0.100
// against 0.101. Slices: 893 against 812 (mixed), 1014 against 975 (sleep). The linux
// estimator gains too, as the views now count over exactly their slices, so the error
// reductions, relative to linux in the same run, move less (bayesperf 1.89 against 1.64
// on mixed, 0.91 against 1.03 on fork). Before the round records, SwitchAtSnapshots and
// tracepoint programs that let their tracepoints count (below; sched:sched_switch's truth
// was 0 through BPF): 0.526 against 0.400 (mixed, 4 pairs, 410 slices against 824) and
// 0.555 against 0.247 (sleep, 212 slices against 912). Earlier still, the switch
// snapshots and ending slices at ticks only, not at a thread's exit (the virtual PMU
// rotated at every command's exit), had taken the shell loop's bayesperf mean WAPE from
// 0.36 against 0.19 to 0.166 against 0.138. TestEvalBPFEstimatesAsGoodAsRead in test/
// checks the mixed workload over 5 pairs (BPF's median WAPE at most 1.3 times read's). Since the read(2) backend of the virtual PMU
// also derives its views from always-on copies, exactly (internal/vpmu), BPF has lost
// that edge: mixed, 2s, 8 pairs, 0.195 against 0.154 (read better in 7), 3s, 4 pairs,
// 0.212 against 0.174 (read better in 2); slices 646 against 634 and 697 against 803.
// With exited threads read at the next slice (below), 2s, 8 pairs: 0.187 against 0.174
// (read better in 3), slices 664 against 653; with the model's short-slice fix, in four
// runs of that test (5 pairs each), medians 0.102-0.137 against 0.143-0.179.
//
// The tracepoint programs (sched_switch, sched_process_exit, sched_process_fork) return
// 1: the kernel passes a tracepoint hit on to perf events only if the programs attached
// to it return non-zero, and with 0, sched:sched_switch and sched:sched_process_exit
// counted nothing machine-wide while a collector ran (TestTracepointsStillCount).
//
// Both collectors perturb the target, and a target switching often more through BPF: the
// sleep workload (threads of one process waking each other) made 284-332k context
// switches in 3s under `perf stat`, 118-197k under `eval --collector read`, 99-127k under
// `--collector bpf`. Most of that is the per-thread events themselves, not the programs:
// `perf stat -p` of the running workload, which opens every thread's events separately
// as this package must, let it make 34-39k switches a second against 79-93k for `perf
// stat` of the command (inherited events, no BPF in either). The kernel switches between
// threads whose event contexts are clones of one inherited context by swapping the
// contexts, without scheduling every event out and in; separately opened events get no
// such shortcut. The switch snapshot adds 1.8µs per run of on_switch (kernel BPF stats,
// 134k runs, 0.24s of CPU in a 3s run), reading every event of the thread (25 for eval's
// 24 events; 73 before copies were merged). The mixed workload switches less (21-23k
// natively, 10-20k under either collector) and got more CPU through BPF (task-clock
// 2.1-2.6s against 1.7-2.7s).
//
// # Costs (2-core VM, kernel 6.18, a busy single-threaded target, 1ms slices)
//
// BenchmarkSliceCost reports them (`go test -run '^$' -bench SliceCost ./bpf`). Measured
// with the load average at 10-15 (other jobs on the VM), so the ratios matter more than
// the times: at 35 events the BPF programs cost 15-16µs of kernel time per slice (about
// 4.5µs per record; this includes the sched_switch program's runs on every context switch
// of the machine, 15-20 per slice here, most of them a lookup that finds an untracked
// task), the collector's own CPU time was 125-143µs per slice, dominated by one thread
// wake-up per slice, which is dear in this VM, and read(2) of the 35 events cost
// 244-276µs: read/bpf was 1.73 and 1.74 in two runs, and 0.94-1.46 in three later ones
// at the same load. The switch snapshots cost part of BPF's advantage: run alternately,
// the collector without them (commit e9fbe71) had read/bpf 3.36 and 1.61 with 6-7µs of
// kernel time per slice (the tick program alone), with them 1.46 and 1.37 with 13-16µs
// (every program; a target preempted by other jobs leaves its CPU several times per slice,
// each time a snapshot). One group read per slice (possible only when all events can form
// one group) cost less than BPF (groupread/bpf 0.33-0.77). At 4 events read(2) is about
// as cheap as BPF or cheaper (read/bpf 0.40-1.36). Not
// counted on either side: the interrupts of the per-CPU slice timers, which the BPF
// collector adds.
//
// # Using it
//
//	c, err := bpf.NewCollector(bpf.Options{Pid: pid, Threads: true, Events: attrs, Slice: 4 * time.Millisecond})
//	var unavailable *bpf.UnavailableError
//	if errors.As(err, &unavailable) {
//		// fall back to polling with read(2)
//	}
//	for {
//		snap, err := c.Next() // cumulative counts, one per event, summed over threads
//		if err == io.EOF {
//			break // the target exited; the previous snapshot was its final one
//		}
//	}
//	c.Close()
//
// # Errors and concurrency
//
// NewCollector returns an *UnavailableError (errors.Is(err, ErrUnavailable)) when BPF cannot
// be used here: no CAP_BPF/CAP_PERFMON (not root), or a kernel without the BPF ring buffer
// or bpf_perf_event_read_value. Any other error is a real failure (bad options, a target
// that does not exist, an event the kernel rejects). Records from the kernel are checked
// and never cause a panic. A Collector's Next must be called from one goroutine at a time;
// Close may be called from any goroutine and makes a blocked Next return.
//
// The object file and its Go bindings (snapshot_bpfel.*) are generated by bpf2go from
// snapshot.c and committed, so building never needs clang; `make generate` regenerates
// them.
package bpf
