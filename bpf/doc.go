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
// thread that was not running at a tick has nothing new to report.
//
// Events opened with inherit=1 cannot be read from BPF, so tasks are followed explicitly:
// a sched_process_fork tracepoint program marks every task created by a tracked one
// (thread or child process, as perf's inherit follows both) as pending in the kernel, so
// that its own children are caught too, and wakes the collector, which opens the new
// task's events and gives it a slot. Whatever the new task counts before its events are
// open is not seen: Stats.MaxFollowLatency measured 0.4ms idle to 10ms on a loaded 2-core
// VM. That is nothing for threads and long-lived children, but a shell loop of short
// commands (cat, ls: about a millisecond each) lost about a quarter of its page faults in
// `bayesperf eval --collector bpf` compared with inherited events read with read(2).
// Polling /proc/PID/task instead would lose a whole polling period and miss short-lived
// tasks altogether. (Per-CPU events filtered by a cgroup would see every task from its
// first instruction, and the program reads them unchanged (slots are then CPUs), but on
// this 6.18 kernel they triggered a WARN in perf's visit_groups_merge and the slice
// timers of the CPU context stopped firing, so they are not used.)
// A sched_process_exit program takes each thread's last snapshot in its exit path. The
// slot of an exited thread is recycled once the kernel has detached its events: its final
// values are read with read(2) and kept in a running sum, so Options.MaxThreads bounds the
// threads alive at once, not the threads ever created.
//
// A goroutine consumes the BPF ring buffer as records arrive, so new threads are followed
// however late Next is called; Next returns the sums as of the last record applied. It runs
// on its own OS thread at nice -10 (when allowed), because a target that saturates the
// CPUs would otherwise starve it and new threads would get away unfollowed.
//
// SetEnabled (for a sidecar that multiplexes events itself) costs one ioctl per followed
// thread, and an ioctl on a thread running on another CPU is a cross-CPU call: with 80 busy
// threads on 2 vCPUs that made a few toggles per slice take milliseconds. A virtual PMU over
// software events could instead keep every copy on and count a view's event only in the
// slices it schedules it, which gives the same observations without any ioctl.
// Snapshots are cumulative, so a late Next loses nothing: its snapshot covers several
// slices. A thread's values are those of its last tick (or exit), so what it counted since
// shows up in a later slice; with one thread this is at most the part of a slice it ran
// after the tick.
//
// # Costs (2-core VM, kernel 6.18, a busy single-threaded target, 1ms slices)
//
// BenchmarkSliceCost reports them: the tick program runs about 5.5µs per record with 4
// events and 6.7µs with 35 (kernel BPF stats; mostly fixed cost, the reads themselves add
// about 40ns per event), and the collector's own CPU time is dominated by one thread
// wake-up per slice, which is dear in this VM (50-70µs). At 35 events the BPF collector
// used 1.8 to 4 times less CPU than read(2) per event per slice in our runs on a loaded
// machine; one group read per slice (possible only when all events can form one group)
// cost about the same as BPF. Not counted on either side: the interrupts of the per-CPU
// slice timers, which the BPF collector adds.
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
