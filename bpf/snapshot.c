//go:build ignore

// snapshot.c: at every slice tick, read (count, enabled, running) of every event of the
// thread (or CPU) that is running, and hand one record to user space through a BPF ring
// buffer. Compiled by bpf2go (see gen.go); the object is committed so that building the
// Go package never needs clang.
//
// The program uses no libbpf headers: the few helper declarations it needs are written
// out below from the UAPI header, so `make generate` needs only clang and linux UAPI.

#include <linux/types.h>
#include <linux/bpf.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)BPF_FUNC_map_update_elem;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_delete_elem;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)BPF_FUNC_ktime_get_ns;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)BPF_FUNC_get_current_pid_tgid;
static __u32 (*bpf_get_smp_processor_id)(void) = (void *)BPF_FUNC_get_smp_processor_id;
static long (*bpf_perf_event_read_value)(void *map, __u64 flags, struct bpf_perf_event_value *buf, __u32 size) = (void *)BPF_FUNC_perf_event_read_value;
static long (*bpf_ringbuf_output)(void *ringbuf, void *data, __u64 size, __u64 flags) = (void *)BPF_FUNC_ringbuf_output;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) = (void *)BPF_FUNC_probe_read_kernel;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)BPF_FUNC_ringbuf_reserve;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)BPF_FUNC_ringbuf_submit;
static long (*bpf_send_signal)(__u32 sig) = (void *)BPF_FUNC_send_signal;

// MAX_EVENTS bounds the events per thread (or CPU); the Go side refuses more.
#define MAX_EVENTS 128
// SLOT_PENDING marks a thread seen forking but whose events user space has not opened yet.
#define SLOT_PENDING 0xffffffffu
// SIGSTOP is 19 on every architecture this builds for (x86, arm64, riscv).
#define SIGSTOP 19

enum kind {
	KIND_TICK = 1, // periodic snapshot of a running thread (or CPU)
	KIND_EXIT = 2, // last snapshot of a thread, taken in its exit path
	KIND_FORK = 3, // a tracked thread created a task: user space must open its events
	KIND_GONE = 4, // a thread exited before user space opened its events
	KIND_HELD = 5, // as KIND_FORK, for a new process stopped until user space continues it
	KIND_SWITCH = 6, // snapshot of a thread leaving its CPU (not a slice boundary)
	KIND_ROUND = 7,  // a slice tick found no tracked thread running, but one ran since the last
	KIND_HELD_EARLY = 8, // a new process stopped on its first way to user space (early_hold)
};

enum stat {
	STAT_TICKS = 0,   // timer interrupts seen, tracked thread running or not
	STAT_RECORDS,     // snapshot records submitted
	STAT_DROPS,       // records lost because the ring buffer was full
	STAT_READ_ERRORS, // bpf_perf_event_read_value failures
	STAT_MAX,
};

// header starts every record; a notice (KIND_FORK, KIND_GONE) is only a header.
struct header {
	__u64 time_ns; // bpf_ktime_get_ns: CLOCK_MONOTONIC
	__u32 tid;     // thread whose events were read (the child for KIND_FORK)
	__u32 slot;    // slot of the thread (the parent tid for KIND_FORK)
	__u16 kind;
	__u16 nr;      // number of values that follow
	__u32 cpu;
	__u32 errs; // number of values that could not be read (sent as zeros)
	__s32 err;  // first read error, negative errno
};

// record is a snapshot; only the first nr values are sent.
struct record {
	struct header h;
	struct bpf_perf_event_value vals[MAX_EVENTS];
};

// Set by user space before loading; frozen afterwards.
const volatile __u32 nr_events = 1;
const volatile __u32 system_wide = 0;    // slots are CPUs, every tick is a snapshot
const volatile __u32 follow_forks = 0;   // report tasks created by tracked threads
const volatile __u32 fork_child_off = 0; // offset of child_pid in the sched_process_fork record
const volatile __u32 hold_processes = 0; // stop new processes until their events are open
const volatile __u32 early_hold = 0;     // on_fork marks new tasks for on_first_exit to stop

// events holds the per-thread (or per-CPU) counters at index slot*nr_events+i. User space
// creates it with the real size: libbpf-style loaders clamp max_entries to the CPUs.
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
	__uint(max_entries, 1);
} events SEC(".maps");

// threads maps a tracked tid to its slot (or SLOT_PENDING).
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} threads SEC(".maps");

// held holds the new processes on_fork_hold stopped and user space has not continued yet,
// so that closing the collector can continue them whatever records it did not consume.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} held SEC(".maps");

// unheld holds the tasks on_fork saw created, with early_hold, until their first way back
// to user space (on_first_exit stops the processes among them there) or their exit.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} unheld SEC(".maps");

// ran is set when a tracked thread leaves its CPU (or exits) and cleared by the next slice
// tick, which then ends the slice even if it finds no tracked thread running: the thread's
// counts are already in the ring (its switch snapshot), so the slice can end on time.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 1);
} ran SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 18);
} records SEC(".maps");

// scratch builds a record off the 512-byte BPF stack.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct record);
	__uint(max_entries, 1);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, STAT_MAX);
} stats SEC(".maps");

static __always_inline void count(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);
	if (v)
		*v += 1;
}

static __always_inline void snapshot(__u32 tid, __u32 slot, __u16 kind, __u64 flags)
{
	__u32 zero = 0;
	struct record *r = bpf_map_lookup_elem(&scratch, &zero);
	if (!r)
		return;
	__u32 n = nr_events;
	if (n > MAX_EVENTS)
		n = MAX_EVENTS;
	__u64 base = (__u64)slot * n;
	r->h.tid = tid;
	r->h.slot = slot;
	r->h.kind = kind;
	r->h.nr = n;
	r->h.cpu = bpf_get_smp_processor_id();
	r->h.errs = 0;
	r->h.err = 0;
	for (__u32 i = 0; i < MAX_EVENTS; i++) {
		if (i >= n)
			break;
		long e = bpf_perf_event_read_value(&events, (base + i) & BPF_F_INDEX_MASK, &r->vals[i], sizeof(r->vals[i]));
		if (e) {
			r->vals[i].counter = 0;
			r->vals[i].enabled = 0;
			r->vals[i].running = 0;
			if (!r->h.errs)
				r->h.err = e;
			r->h.errs++;
			count(STAT_READ_ERRORS);
		}
	}
	// Taken after the reads so that the time never precedes the values.
	r->h.time_ns = bpf_ktime_get_ns();
	__u64 size = __builtin_offsetof(struct record, vals) + (__u64)n * sizeof(r->vals[0]);
	if (size > sizeof(*r))
		size = sizeof(*r);
	if (bpf_ringbuf_output(&records, r, size, flags))
		count(STAT_DROPS);
	else
		count(STAT_RECORDS);
}

// fill_header makes r a notice of kind about tid (no values follow).
static __always_inline void fill_header(struct header *r, __u32 tid, __u32 slot, __u16 kind)
{
	r->time_ns = bpf_ktime_get_ns();
	r->tid = tid;
	r->slot = slot;
	r->kind = kind;
	r->nr = 0;
	r->cpu = bpf_get_smp_processor_id();
	r->errs = 0;
	r->err = 0;
}

static __always_inline void notice(__u32 tid, __u32 slot, __u16 kind)
{
	struct header r = {};
	fill_header(&r, tid, slot, kind);
	// Forced wake-up: user space must open the new thread's events quickly.
	if (bpf_ringbuf_output(&records, &r, sizeof(r), BPF_RB_FORCE_WAKEUP))
		count(STAT_DROPS);
}

static __always_inline void mark_ran(void)
{
	__u32 zero = 0;
	__u32 *r = bpf_map_lookup_elem(&ran, &zero);
	if (r && !*r)
		*r = 1;
}

// on_tick runs on the slice timer (a cpu-clock sampling event on every CPU, all started
// together, so one round of ticks is one slice boundary). A tick that finds a tracked
// thread running snapshots it; one that finds none ends the slice all the same (a header
// only, KIND_ROUND) if a tracked thread ran since the last tick, as the read(2) backend
// ends a slice every interval in which the target ran at all. Without it a target that
// seldom runs at a tick (one that mostly sleeps) got a slice per several intervals.
// Clearing ran is not atomic: two CPUs may both end the round; user space treats the
// boundaries of one round as one.
SEC("perf_event")
int on_tick(void *ctx)
{
	count(STAT_TICKS);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	if (system_wide) {
		snapshot(tid, bpf_get_smp_processor_id(), KIND_TICK, BPF_RB_FORCE_WAKEUP);
		return 0;
	}
	__u32 zero = 0;
	__u32 *r = bpf_map_lookup_elem(&ran, &zero);
	__u32 *slot = bpf_map_lookup_elem(&threads, &tid);
	if (!slot || *slot == SLOT_PENDING) {
		if (r && *r) {
			*r = 0;
			notice(tid, SLOT_PENDING, KIND_ROUND);
		}
		return 0;
	}
	if (r && *r)
		*r = 0;
	snapshot(tid, *slot, KIND_TICK, BPF_RB_FORCE_WAKEUP);
	return 0;
}

// TP_COUNT is what a tracepoint program returns: the kernel counts the tracepoint in perf
// events (anyone's: a tool's sched:sched_switch, eval's truth copies) only if the programs
// attached to it return non-zero. Returning 0 made sched:sched_switch and
// sched:sched_process_exit count nothing, machine-wide, while a collector ran. The
// snapshot a program takes precedes that count, so a thread's sched_switch count of the
// switch it snapshots reaches user space with its next snapshot.
#define TP_COUNT 1

// on_switch runs as a tracked thread leaves its CPU (sched_switch runs in the thread that
// is switched out, before its events are scheduled out): without it, a thread that is not
// running at a tick (a shell waiting for its child) would report what it counted only at
// the next tick that finds it running, slices later.
SEC("tracepoint/sched/sched_switch")
int on_switch(void *ctx)
{
	if (system_wide)
		return TP_COUNT;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 *slot = bpf_map_lookup_elem(&threads, &tid);
	if (!slot || *slot == SLOT_PENDING)
		return TP_COUNT;
	// No wake-up: user space needs it only with the next tick's record, which wakes it
	// (a wake-up per context switch would cost more than the snapshots). The kernel wakes
	// the consumer for a default-flag record only when it has read everything before it,
	// so the tick and exit records force their wake-up.
	snapshot(tid, *slot, KIND_SWITCH, BPF_RB_NO_WAKEUP);
	mark_ran();
	return TP_COUNT;
}

// on_exit runs in the exiting thread, before the kernel detaches its perf events, so the
// values it reads are the thread's final ones (up to the few instructions left).
SEC("tracepoint/sched/sched_process_exit")
int on_exit(void *ctx)
{
	if (system_wide)
		return TP_COUNT;
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 *slot = bpf_map_lookup_elem(&threads, &tid);
	if (!slot)
		return TP_COUNT;
	if (*slot == SLOT_PENDING)
		notice(tid, SLOT_PENDING, KIND_GONE);
	else
		snapshot(tid, *slot, KIND_EXIT, BPF_RB_FORCE_WAKEUP);
	mark_ran();
	bpf_map_delete_elem(&threads, &tid);
	bpf_map_delete_elem(&held, &tid);
	if (early_hold)
		bpf_map_delete_elem(&unheld, &tid);
	return TP_COUNT;
}

// on_fork marks a task created by a tracked thread as pending right away, so that the tasks
// it creates in turn are seen even before user space has opened its events.
SEC("tracepoint/sched/sched_process_fork")
int on_fork(void *ctx)
{
	if (system_wide || !follow_forks)
		return TP_COUNT;
	__u32 parent = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&threads, &parent))
		return TP_COUNT;
	__s32 child = 0;
	if (bpf_probe_read_kernel(&child, sizeof(child), (char *)ctx + fork_child_off) || child <= 0)
		return TP_COUNT;
	__u32 key = (__u32)child, pending = SLOT_PENDING;
	bpf_map_update_elem(&threads, &key, &pending, BPF_NOEXIST);
	// Before the child can run (the fork tracepoint precedes its wake-up), so that
	// on_first_exit finds it; a thread is never stopped (on_first_exit tells them apart).
	if (early_hold)
		bpf_map_update_elem(&unheld, &key, &pending, BPF_ANY);
	notice(key, parent, KIND_FORK);
	return TP_COUNT;
}

// on_first_exit holds new processes without the kernel's BTF, while on_fork_hold cannot be
// loaded yet (user space attaches it once the BTF is decoded, then detaches this and
// on_fork). It runs on every system call's exit on the machine, so only for that while:
// a new child's first return to user space passes it too (x86's ret_from_fork goes out
// through the system call exit), and the plain bpf_send_signal stops the current task
// there, before its first instruction. on_fork has already published the child's
// KIND_FORK notice, so a child this never stops is still followed; the KIND_HELD_EARLY
// notice comes after the signal is pending, as on_fork_hold's KIND_HELD does.
SEC("raw_tracepoint/sys_exit")
int on_first_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id;
	if (!bpf_map_lookup_elem(&unheld, &tid))
		return 0;
	// A thread leaves too, so that unheld empties as its tasks first return: user space
	// waits for that before it detaches this program (hold.go).
	bpf_map_delete_elem(&unheld, &tid);
	if (tid != (__u32)(id >> 32))
		return 0;
	struct header *r = bpf_ringbuf_reserve(&records, sizeof(struct header), 0);
	if (!r) {
		count(STAT_DROPS);
		return 0;
	}
	__u32 one = 1;
	__u16 kind = KIND_HELD_EARLY;
	if (bpf_map_update_elem(&held, &tid, &one, BPF_ANY)) {
		kind = KIND_FORK;
	} else if (bpf_send_signal(SIGSTOP)) {
		bpf_map_delete_elem(&held, &tid);
		kind = KIND_FORK;
	}
	fill_header(r, tid, 0, kind);
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

// The two fields of the kernel's task_struct that on_fork_hold reads, relocated to the
// running kernel's layout by the loader (CO-RE, from the kernel's BTF).
struct task_struct {
	int pid;
	int tgid;
} __attribute__((preserve_access_index));

enum pid_type { PIDTYPE_PID, PIDTYPE_TGID };

// A kfunc (kernel 6.13+): sends sig to task, not only to the current one.
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type, __u64 value) __attribute__((section(".ksyms")));

// on_fork_hold replaces on_fork when new processes are held: it does what on_fork does and,
// for a new process (not a thread), sends it SIGSTOP before it has ever run: the stop takes
// effect on its way to user space, before its first instruction, and user space continues
// it once its events are open. Threads are not held: SIGSTOP stops a whole process, the
// creating thread too.
SEC("tp_btf/sched_process_fork")
int on_fork_hold(__u64 *ctx)
{
	if (system_wide || !follow_forks)
		return 0;
	__u32 parent = (__u32)bpf_get_current_pid_tgid();
	if (!bpf_map_lookup_elem(&threads, &parent))
		return 0;
	struct task_struct *child = (struct task_struct *)ctx[1];
	__s32 pid = child->pid, tgid = child->tgid;
	if (pid <= 0)
		return 0;
	__u32 key = (__u32)pid, pending = SLOT_PENDING;
	// on_fork, still attached while this one is being attached in its place, got here
	// first: it owns the child.
	if (bpf_map_lookup_elem(&threads, &key))
		return 0;
	bpf_map_update_elem(&threads, &key, &pending, BPF_NOEXIST);
	if (pid != tgid || !hold_processes) {
		notice(key, parent, KIND_FORK);
		return 0;
	}
	// The notice is reserved first and published only after the signal is sent, so that
	// user space can never send SIGCONT before the SIGSTOP is pending (the kernel would
	// discard it, and the process would stay stopped). No room in the ring: no notice
	// either, as for on_fork.
	struct header *r = bpf_ringbuf_reserve(&records, sizeof(struct header), 0);
	if (!r) {
		count(STAT_DROPS);
		return 0;
	}
	__u32 one = 1;
	__u16 kind = KIND_HELD;
	if (bpf_map_update_elem(&held, &key, &one, BPF_ANY)) {
		kind = KIND_FORK;
	} else if (bpf_send_signal_task(child, SIGSTOP, PIDTYPE_TGID, 0)) {
		bpf_map_delete_elem(&held, &key);
		kind = KIND_FORK;
	}
	fill_header(r, key, parent, kind);
	bpf_ringbuf_submit(r, BPF_RB_FORCE_WAKEUP);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
