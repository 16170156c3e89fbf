/*
 * shim.h: the internal header of libbayesperf.so, the LD_PRELOAD half of bayesperf.
 *
 * It interposes syscall() to see perf_event_open (libc has no wrapper for it), opens the
 * real event itself in the caller (so pid/cpu/group, inherit, enable_on_exec and the
 * kernel's permission checks are exactly the kernel's), then hands the fd, the attr and
 * the group to the sidecar over the Unix socket named by $BAYESPERF_SOCKET. The sidecar
 * answers with a sealed memfd holding a counting mirror page (bayesperf_abi.h) that it
 * republishes every millisecond while the tool reads; read() on a registered fd is then
 * served from that page in the exact read_format layout, without a system call, when
 * the page is fresh: judged on the coarse clock with a margin of two ticks, and on the
 * precise clock only when the coarse one cannot tell (read.c).
 *
 * Rules the library keeps:
 *  - Nothing happens until the process itself opens a perf event: a workload that merely
 *    inherits LD_PRELOAD is never disturbed (no constructor, no connection, no thread;
 *    fork maps one shared page, see exec.c).
 *  - The measured program carries nothing of bayesperf: an exec whose new program a
 *    perf event opened through the shim will count (perf's workload) drops our
 *    LD_PRELOAD entry and our variables from the new program's environment, and every
 *    fd of ours is O_CLOEXEC (see exec.c).
 *  - Every non-perf fd and every syscall number other than perf_event_open goes straight
 *    to the real function: one table lookup, no locks.
 *  - Any failure of the sidecar (absent, refused, dead, too slow) switches the process to
 *    passthrough for good, with one warning line on stderr. The real fds are in the
 *    caller all along, so the kernel's answers are always available and exact.
 *  - The shim never calls an interposed libc function on itself by name: real functions
 *    are reached through dlsym(RTLD_NEXT) pointers or raw system calls, and a thread-local
 *    guard sends calls made from inside the shim straight through.
 *
 * Concurrency: the fd table is read without locks and changed under tab_lock; requests to
 * the sidecar are serialised by conn_lock (one request and its reply at a time). A read
 * racing a close of the same fd is a bug of the caller; the shim only guarantees not to
 * serve another file's data from a mirror after close() returned.
 */

/*
 * Files, by concern (each starts with what it owns):
 *   real.c     the real libc functions (dlsym(RTLD_NEXT)) and logging
 *   fdtable.c  the shared state: the re-entry guard, sync_gen and the fd table
 *   conn.c     the connection to the sidecar, registration, the perf_event_open path
 *   exec.c     exec, posix_spawn and fork: the measured program runs without us
 *   ring.c     sampling mirrors: mmap/munmap, the shim's own ring pump, poll/epoll
 *   read.c     counting reads served from the mirror, monotonic after a fallback
 *   control.c  syscall(), ioctl, fcntl, dup*, close*, wait*, SIGCHLD
 *
 * This header is internal: it is never installed, and the ABI shared with the sidecar
 * is bayesperf_abi.h. Everything it declares is hidden (libbayesperf.map exports the
 * interposers only). A read served from a mirror takes about a dozen ns, bound by the
 * number of its instructions: the functions on that path are in read.c or static inline
 * here, never a call into another file. Each .c includes this header first (it defines
 * _GNU_SOURCE).
 */
#ifndef BAYESPERF_SHIM_H
#define BAYESPERF_SHIM_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <limits.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bayesperf_abi.h"
#include "vdso_clock.h"

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#if defined(__x86_64__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#endif
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Declarations from here on are hidden: the compiler then reaches shared state and
 * functions of other files directly, not through the GOT or the PLT. */
#pragma GCC visibility push(hidden)

/* ---------------------------------------------------------------------------------- */
/* Real functions (real.c) and raw system calls.                                      */

static inline long raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
#else
#error "libbayesperf: raw system calls are written for x86_64 and aarch64 only"
#endif
}

/* raw_result turns a raw kernel return into the libc convention. */
static inline long raw_result(long r)
{
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* resolve returns *slot, resolving it to the next definition of name first. */
void *resolve(void **slot, const char *name);

/* The libc functions the shim interposes or calls past its own interposers: real_NAME()
 * returns the next definition of NAME, resolved once (the slots live in real.c). */
#define BP_REAL_FUNCS(X)                                                                        \
	X(ssize_t, read, (int, void *, size_t))                                                 \
	X(ssize_t, __read_chk, (int, void *, size_t, size_t))                                   \
	X(ssize_t, readv, (int, const struct iovec *, int))                                     \
	X(ssize_t, pread64, (int, void *, size_t, off_t))                                       \
	X(ssize_t, pread, (int, void *, size_t, off_t))                                         \
	X(int, ioctl, (int, unsigned long, void *))                                             \
	X(int, fcntl, (int, int, void *))                                                       \
	X(int, fcntl64, (int, int, void *))                                                     \
	X(int, close, (int))                                                                    \
	X(int, close_range, (unsigned int, unsigned int, int))                                  \
	X(int, dup, (int))                                                                      \
	X(int, dup2, (int, int))                                                                \
	X(int, dup3, (int, int, int))                                                           \
	X(void *, mmap, (void *, size_t, int, int, int, off_t))                                 \
	X(void *, mmap64, (void *, size_t, int, int, int, off_t))                               \
	X(int, munmap, (void *, size_t))                                                        \
	X(int, poll, (struct pollfd *, nfds_t, int))                                            \
	X(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))     \
	X(int, epoll_wait, (int, struct epoll_event *, int, int))                               \
	X(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))            \
	X(int, epoll_ctl, (int, int, int, struct epoll_event *))                                \
	X(pid_t, wait, (int *))                                                                 \
	X(pid_t, waitpid, (pid_t, int *, int))                                                  \
	X(pid_t, wait3, (int *, int, struct rusage *))                                          \
	X(pid_t, wait4, (pid_t, int *, int, struct rusage *))                                   \
	X(int, waitid, (idtype_t, id_t, siginfo_t *, int))                                      \
	X(pid_t, fork, (void))                                                                  \
	X(int, execve, (const char *, char *const[], char *const[]))                            \
	X(int, execvpe, (const char *, char *const[], char *const[]))                           \
	X(int, fexecve, (int, char *const[], char *const[]))                                    \
	X(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *,         \
			  const posix_spawnattr_t *, char *const[], char *const[]))             \
	X(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *,        \
			  const posix_spawnattr_t *, char *const[], char *const[]))             \
	X(int, sigaction, (int, const struct sigaction *, struct sigaction *))                  \
	X(int, prctl, (int, unsigned long, unsigned long, unsigned long, unsigned long))        \
	X(sighandler_t, signal, (int, sighandler_t))

#define BP_REAL_DECLARE(ret, name, params)                                  \
	typedef ret(*name##_fn) params;                                     \
	extern void *real_##name##_slot;                                    \
	static inline name##_fn real_##name(void)                          \
	{                                                                   \
		void *p = __atomic_load_n(&real_##name##_slot, __ATOMIC_ACQUIRE); \
		return (name##_fn)(LIKELY(p != NULL) ? p : resolve(&real_##name##_slot, #name)); \
	}
BP_REAL_FUNCS(BP_REAL_DECLARE)

/* ---------------------------------------------------------------------------------- */
/* Logging (real.c): raw write(2), so that no stdio lock or buffer of the tool is touched. */

/* say writes one formatted line to stderr. */
__attribute__((format(printf, 1, 2))) void say(const char *fmt, ...);
/* is_verbose reports whether $BAYESPERF_VERBOSE asks for debug lines. */
int is_verbose(void);

#define DEBUG(...)                                  \
	do {                                        \
		if (UNLIKELY(is_verbose()))         \
			say("bayesperf[%d]: ", getpid()), say(__VA_ARGS__); \
	} while (0)

/* ---------------------------------------------------------------------------------- */
/* State and the fd table (fdtable.c).                                                */

/* guard > 0 while the shim itself is running on this thread: nested calls pass through. */
extern TLS int guard;

/* Events this thread opened that self_pause cannot vouch for: ones that do not count the
 * process itself (a pause would stop them counting their target), and self-counting
 * ones the fd table does not hold (their switch state is unknown); and the others, which
 * count the process itself and are in the table. Never decremented (a close makes
 * self_pause find fewer than owned_self, and decline). */
extern TLS int owned_other, owned_self;

/* sync_gen is bumped whenever the values a mirror holds may be behind in a way its age
 * does not show: a perf ioctl (RESET, ENABLE, DISABLE, group-wide flags) or a reaped
 * child (the measured workload ended; its last counts must be exact). It is also bumped
 * when the connection goes down and in a forked child, so that a read whose event is
 * synced to the current sync_gen knows, from that one comparison, that the connection
 * was up and the event is of this process's epoch (the fast path of do_read). */
extern uint64_t sync_gen;

struct bp_event {
	int refs;                             /* fds in the table that point here */
	uint32_t handle;
	uint32_t epoch;                       /* conn_epoch at registration */
	const struct bp_mirror_page *page;    /* read-only mapping of the mirror */
	uint64_t synced_gen;                  /* sync_gen at the last refresh */
	int self;                             /* the event counts the reading process itself */
	int backward;                         /* attr.write_backward */
	int member;                           /* opened into a group (group_fd >= 0) */
	uint32_t leader;                      /* the group leader's handle (0: none, or itself) */
	uint64_t rfmt;                        /* attr.read_format */
	pthread_t owner;                      /* the thread that opened it (prctl's scope) */
	int on;                               /* the tool's own switch: 1 enabled, 0 disabled,
	                                         -1 unknown (enable_on_exec, REFRESH) */
	/* Monotonic reads (read.c, "Monotonic after a fallback"): once a read of this event went
	 * to the kernel after the mirror had served it, all its reads do (onkernel), each
	 * value slot k served as max(kernel + off[k], last[k]). Slots: 0 enabled, 1 running,
	 * 2 + i the value of member i. mono holds last[nslots] then off[nslots]. */
	int onkernel;
	int offs_set;                         /* off[] was computed (under tab_lock) */
	uint32_t nslots;
	uint64_t mono[];
};

#define BP_MAX_FD 65536
extern struct bp_event *fdtab[BP_MAX_FD];
extern int nperf; /* number of table entries in use: 0 makes every lookup free */
extern pthread_mutex_t tab_lock;

static inline struct bp_event *lookup(int fd)
{
	if (LIKELY(__atomic_load_n(&nperf, __ATOMIC_RELAXED) == 0))
		return NULL;
	if ((unsigned)fd >= BP_MAX_FD)
		return NULL;
	return __atomic_load_n(&fdtab[fd], __ATOMIC_ACQUIRE);
}

/* tab_set_locked points fd at ev (NULL: no entry); the caller holds tab_lock. */
void tab_set_locked(int fd, struct bp_event *ev);
/* release_locked drops one reference to ev; the caller holds tab_lock. */
void release_locked(struct bp_event *ev);
/* forget removes fd from the table; alias makes newfd another reference to oldfd's event. */
void forget(int fd);
void alias(int oldfd, int newfd);

/* ---------------------------------------------------------------------------------- */
/* Connection to the sidecar and registration (conn.c).                               */

enum { CONN_NONE = 0, CONN_UP = 1, CONN_DOWN = 2 };

extern pthread_mutex_t conn_lock;
extern int conn_state;  /* CONN_*; read without the lock on the fast path */
extern int conn_fd;
extern uint32_t conn_epoch; /* bumped in a forked child: entries of older epochs pass through */
extern uint64_t stale_ns;
extern int kernel_exact; /* BP_HELLO_F_KERNEL_EXACT: self-counting reads may go to the kernel */
extern struct bp_client_page *client_page;

/* The callers of these hold conn_lock. */
void go_down(const char *why, int err);
int send_msg(uint16_t type, const void *body, size_t len, int fd, uint32_t *seq);
int recv_reply(uint16_t type, uint32_t seq, void *body, size_t len, int *fd);
int handle_call_locked(uint16_t type, uint32_t handle, uint32_t flags);

/* counts_self reports whether an event opened with pid counts the calling process. */
int counts_self(long pid);
/* bp_perf_event_open opens the event in the caller, then registers it with the sidecar. */
long bp_perf_event_open(struct perf_event_attr *attr, long pid, long cpu, long group_fd, unsigned long flags);

/* count_at counts one occurrence in the client page's counter at offset off. */
static inline void count_at(size_t off)
{
	struct bp_client_page *cp = __atomic_load_n(&client_page, __ATOMIC_RELAXED);
	if (cp != NULL)
		__atomic_fetch_add((uint64_t *)(void *)((char *)cp + off), 1, __ATOMIC_RELAXED);
}
#define COUNT(f) count_at(offsetof(struct bp_client_page, f))

/* ---------------------------------------------------------------------------------- */
/* Exec (exec.c).                                                                     */

/* The fds of this process's own events that count itself (pid 0, its pid or a thread,
 * or -1), kept while open: one that is not close-on-exec at an exec counts the new
 * program. Beyond BP_SELF_FDS the rest are not tracked (their exec keeps the shim). */
#define BP_SELF_FDS 64
extern int selffd[BP_SELF_FDS];
extern int nselffd; /* entries in use (each >= 0, or -1 when freed) */

/* mark_counted records whom the event just opened as fd counts, for a later exec. */
void mark_counted(int fd, const struct perf_event_attr *attr, int pid);
/* self_fd_copied tracks newfd, a duplicate of oldfd, if oldfd is a self-counting event. */
void self_fd_copied(int oldfd, int newfd);

/* self_fd_closing forgets fd as one of this process's self-counting events. */
static inline void self_fd_closing(int fd)
{
	if (LIKELY(__atomic_load_n(&nselffd, __ATOMIC_RELAXED) == 0))
		return;
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++)
		if (__atomic_load_n(&selffd[i], __ATOMIC_RELAXED) == fd)
			__atomic_store_n(&selffd[i], -1, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------------------------- */
/* Sampling mirrors and poll/epoll (ring.c).                                          */

/* flush_rings brings every mirror ring up to date with the kernel's ring (or pumps it
 * without a sidecar); flush_rings_paused names the event PAUSE_OUTPUT just paused. */
void flush_rings_paused(uint32_t paused_handle);
void flush_rings(void);

/* The epoll fds that watch a perf fd, by number (see the epoll section of ring.c). */
extern uint8_t epmark[BP_MAX_FD]; /* 1: this epoll fd watches (or watched) a perf fd */
extern int nepmarks; /* marks set so far: 0 keeps every check off the table */

/* ep_mark marks epfd; ep_ctl_done marks it after an epoll_ctl that added or modified fd. */
void ep_mark(int epfd);
void ep_ctl_done(int epfd, int op, int fd);

static inline int ep_marked(int epfd)
{
	return __atomic_load_n(&nepmarks, __ATOMIC_RELAXED) > 0 && (unsigned)epfd < BP_MAX_FD &&
	       __atomic_load_n(&epmark[epfd], __ATOMIC_RELAXED);
}

/* ep_forget clears the mark of a number that is being closed or reused. */
static inline void ep_forget(int fd)
{
	if (UNLIKELY(ep_marked(fd)))
		__atomic_store_n(&epmark[fd], 0, __ATOMIC_RELAXED);
}

/* ep_alias gives a duplicate of a marked epoll fd the same mark. */
static inline void ep_alias(int oldfd, int newfd)
{
	if (UNLIKELY(ep_marked(oldfd)) && newfd != oldfd)
		ep_mark(newfd);
}

/* ---------------------------------------------------------------------------------- */
/* Counting reads (read.c) and the clock a mirror's age is judged by.                  */

/* clock_fn is the kernel's own clock_gettime in the vDSO (for the clocks below),
 * called directly: libc's clock_gettime is a wrapper around the same function, reached
 * through a PLT entry and an indirect call, and costs a read from the mirror about 2 ns
 * more (a quarter of the coarse clock's cost). resolve_clock sets it before the first
 * event is registered (conn.c); NULL before, and libc's clock_gettime where the vDSO
 * has no such function. */
extern clock_gettime_fn clock_fn;
void resolve_clock(void);

static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime_fn f = __atomic_load_n(&clock_fn, __ATOMIC_RELAXED);
	if (UNLIKELY(f == NULL))
		f = clock_gettime;
	f(id, &ts); /* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* coarse_ns is CLOCK_MONOTONIC_COARSE: the time of a recent timekeeping tick, so reading
 * it is a few loads from the vDSO page (no clock read). It is never ahead of
 * CLOCK_MONOTONIC; behind it by less than two of its ticks (its resolution): on this
 * project's VMs it often lags by more than one tick. */
static inline uint64_t coarse_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC_COARSE);
}

/* mirror_shard is this thread's counter of mirror reads in the client page (read.c), NULL
 * until its first one. forget_shard clears it and hands the shards out afresh: a forked
 * child (the forking thread alone) counts in the client page of its own connection. */
extern TLS uint64_t *mirror_shard;
void forget_shard(void);

/* coarse_fresh is the largest coarse age (CLOCK_MONOTONIC_COARSE minus a page's
 * update_ns) at which a page is fresh for sure: stale_ns minus two ticks of the coarse
 * clock, set at the connection; INT64_MIN (the coarse clock decides nothing fresh) when
 * the stale bound is not above two ticks, or before. */
extern int64_t coarse_fresh;

/* ioctl_done records a perf ioctl req (RESET, ENABLE, DISABLE or REFRESH) that
 * succeeded on ev (and on its group's members with group): a reset clears the monotonic
 * value slots, the switch state follows, and each is counted for the sidecar. */
void ioctl_done(struct bp_event *ev, int group, unsigned long req);

/* prctl_done records PR_TASK_PERF_EVENTS_ENABLE (on) or DISABLE, which switched every
 * event the calling thread opened: the switch state of those that count the process,
 * each counted as a switch for the sidecar. */
void prctl_done(int on);

#pragma GCC visibility pop

#endif
