/*
 * libbayesperf.so: the LD_PRELOAD half of bayesperf.
 *
 * It interposes syscall() to see perf_event_open (libc has no wrapper for it), opens the
 * real event itself in the caller (so pid/cpu/group, inherit, enable_on_exec and the
 * kernel's permission checks are exactly the kernel's), then hands the fd, the attr and
 * the group to the sidecar over the Unix socket named by $BAYESPERF_SOCKET. The sidecar
 * answers with a sealed memfd holding a counting mirror page (bayesperf_abi.h) that it
 * republishes at least every millisecond; read() on a registered fd is then served from
 * that page in the exact read_format layout, without a system call.
 *
 * Rules this file keeps:
 *  - Nothing happens until the process itself opens a perf event: a workload that merely
 *    inherits LD_PRELOAD is never disturbed (no constructor, no connection, no thread;
 *    fork maps one shared page, see "Exec").
 *  - The measured program carries nothing of bayesperf: an exec whose new program a
 *    perf event opened through the shim will count (perf's workload) drops our
 *    LD_PRELOAD entry and our variables from the new program's environment, and every
 *    fd of ours is O_CLOEXEC (see "Exec").
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

#define EXPORT __attribute__((visibility("default")))
#define TLS __thread __attribute__((tls_model("initial-exec")))
#if defined(__x86_64__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ volatile("yield" ::: "memory")
#endif
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---------------------------------------------------------------------------------- */
/* Real functions and raw system calls.                                               */

static long raw_syscall6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
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
static long raw_result(long r)
{
	if ((unsigned long)r > -4096UL) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

/* real(name) resolves the next definition of name once; the race is benign (all threads
 * store the same pointer). */
static void *resolve(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (UNLIKELY(p == NULL)) {
		p = dlsym(RTLD_NEXT, name);
		if (p == NULL) {
			static const char msg[] = "bayesperf: cannot resolve a libc function; aborting\n";
			raw_syscall6(SYS_write, 2, (long)msg, sizeof msg - 1, 0, 0, 0);
			abort();
		}
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

#define REAL_DECL(ret, name, params) \
	typedef ret(*name##_fn) params;  \
	static void *real_##name##_slot;  \
	static inline name##_fn real_##name(void) { return (name##_fn)resolve(&real_##name##_slot, #name); }

REAL_DECL(ssize_t, read, (int, void *, size_t))
REAL_DECL(ssize_t, __read_chk, (int, void *, size_t, size_t))
REAL_DECL(ssize_t, readv, (int, const struct iovec *, int))
REAL_DECL(ssize_t, pread64, (int, void *, size_t, off_t))
REAL_DECL(ssize_t, pread, (int, void *, size_t, off_t))
REAL_DECL(int, ioctl, (int, unsigned long, void *))
REAL_DECL(int, fcntl, (int, int, void *))
REAL_DECL(int, fcntl64, (int, int, void *))
REAL_DECL(int, close, (int))
REAL_DECL(int, close_range, (unsigned int, unsigned int, int))
REAL_DECL(int, dup, (int))
REAL_DECL(int, dup2, (int, int))
REAL_DECL(int, dup3, (int, int, int))
REAL_DECL(void *, mmap, (void *, size_t, int, int, int, off_t))
REAL_DECL(void *, mmap64, (void *, size_t, int, int, int, off_t))
REAL_DECL(int, munmap, (void *, size_t))
REAL_DECL(int, poll, (struct pollfd *, nfds_t, int))
REAL_DECL(int, ppoll, (struct pollfd *, nfds_t, const struct timespec *, const sigset_t *))
REAL_DECL(int, epoll_wait, (int, struct epoll_event *, int, int))
REAL_DECL(int, epoll_pwait, (int, struct epoll_event *, int, int, const sigset_t *))
REAL_DECL(int, epoll_ctl, (int, int, int, struct epoll_event *))
REAL_DECL(pid_t, wait, (int *))
REAL_DECL(pid_t, waitpid, (pid_t, int *, int))
REAL_DECL(pid_t, wait3, (int *, int, struct rusage *))
REAL_DECL(pid_t, wait4, (pid_t, int *, int, struct rusage *))
REAL_DECL(int, waitid, (idtype_t, id_t, siginfo_t *, int))
REAL_DECL(pid_t, fork, (void))
REAL_DECL(int, execve, (const char *, char *const[], char *const[]))
REAL_DECL(int, execvpe, (const char *, char *const[], char *const[]))
REAL_DECL(int, fexecve, (int, char *const[], char *const[]))
REAL_DECL(int, posix_spawn, (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			     char *const[], char *const[]))
REAL_DECL(int, posix_spawnp, (pid_t *, const char *, const posix_spawn_file_actions_t *, const posix_spawnattr_t *,
			      char *const[], char *const[]))

/* ---------------------------------------------------------------------------------- */
/* State.                                                                             */

/* guard > 0 while the shim itself is running on this thread: nested calls pass through. */
static TLS int guard;

enum { CONN_NONE = 0, CONN_UP = 1, CONN_DOWN = 2 };

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static int conn_state;  /* CONN_*; read without the lock on the fast path */
static int conn_fd = -1;
static uint32_t conn_epoch = 1; /* bumped in a forked child: entries of older epochs pass through */
static uint32_t next_handle = 1;
static uint32_t next_seq = 1;
static uint64_t stale_ns = 2000000;
static int kernel_exact; /* BP_HELLO_F_KERNEL_EXACT: self-counting reads may go to the kernel */
static struct bp_client_page *client_page;
static int verbose = -1;
static int atfork_done;

/* sync_gen is bumped whenever the values a mirror holds may be behind in a way its age
 * does not show: a perf ioctl (RESET, ENABLE, DISABLE, group-wide flags) or a reaped
 * child (the measured workload ended; its last counts must be exact). It is also bumped
 * when the connection goes down and in a forked child, so that a read whose event is
 * synced to the current sync_gen knows, from that one comparison, that the connection
 * was up and the event is of this process's epoch (the fast path of do_read). */
static uint64_t sync_gen;

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
	/* Monotonic reads (see "Monotonic after a fallback"): once a read of this event went
	 * to the kernel after the mirror had served it, all its reads do (onkernel), each
	 * value slot k served as max(kernel + off[k], last[k]). Slots: 0 enabled, 1 running,
	 * 2 + i the value of member i. mono holds last[nslots] then off[nslots]. */
	int onkernel;
	int offs_set;                         /* off[] was computed (under tab_lock) */
	uint32_t nslots;
	uint64_t mono[];
};

#define BP_MAX_FD 65536
static struct bp_event *fdtab[BP_MAX_FD];
static int nperf; /* number of table entries in use: 0 makes every lookup free */
static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

/* Sampling mirrors the tool has mapped in place of the kernel's rings. */
struct bp_ring {
	void *addr;    /* the mirror, as the tool mapped it */
	size_t len;
	uint32_t handle;
	uint32_t epoch;
	void *kring;   /* the kernel's ring, mapped here too: it keeps the kernel's buffer
	                  alive if the sidecar dies, and the shim then pumps it itself */
	void *mw;      /* a writable view of the mirror (addr itself when the tool's is) */
	int overwrite; /* the tool mapped it read-only */
	int backward;  /* write_backward: after the sidecar's death, swapped for the kernel's */
	int fd;        /* the perf fd it was mapped from */
};
#define BP_MAX_RINGS 1024
static struct bp_ring rings[BP_MAX_RINGS]; /* under tab_lock */
static int nrings;                         /* entries in use; read without the lock */

static inline struct bp_event *lookup(int fd)
{
	if (LIKELY(__atomic_load_n(&nperf, __ATOMIC_RELAXED) == 0))
		return NULL;
	if ((unsigned)fd >= BP_MAX_FD)
		return NULL;
	return __atomic_load_n(&fdtab[fd], __ATOMIC_ACQUIRE);
}

/* ---------------------------------------------------------------------------------- */
/* Logging: raw write(2) so that no stdio lock or buffer of the tool is touched.       */

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	raw_syscall6(SYS_write, 2, (long)buf, n, 0, 0, 0);
}

static int is_verbose(void)
{
	if (verbose < 0) {
		const char *v = getenv(BP_ENV_VERBOSE);
		verbose = v != NULL && v[0] == '1';
	}
	return verbose;
}

#define DEBUG(...)                                  \
	do {                                        \
		if (UNLIKELY(is_verbose()))         \
			say("bayesperf[%d]: ", getpid()), say(__VA_ARGS__); \
	} while (0)

/* ---------------------------------------------------------------------------------- */
/* Connection to the sidecar. Callers hold conn_lock.                                   */

/* go_down switches the process to passthrough for good and says so once. */
static void go_down(const char *why, int err)
{
	if (conn_state == CONN_DOWN)
		return;
	int was_up = conn_state == CONN_UP;
	__atomic_store_n(&conn_state, CONN_DOWN, __ATOMIC_RELEASE);
	__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
	if (conn_fd >= 0) {
		real_close()(conn_fd);
		conn_fd = -1;
	}
	say("bayesperf: %s%s%s; perf events now go straight to the kernel%s\n", why,
	    err ? ": " : "", err ? strerror(err) : "",
	    was_up ? " (values stay exact, uncorrected)" : "");
}

static void atfork_child(void);

/* send_msg sends one message with an optional fd. Returns 0 or an errno. */
static int send_msg(uint16_t type, const void *body, size_t len, int fd, uint32_t *seq)
{
	char buf[sizeof(struct bp_msg_hdr) + sizeof(struct bp_register)];
	struct bp_msg_hdr h = {
		.magic = BP_MSG_MAGIC,
		.version = BP_ABI_VERSION,
		.type = type,
		.size = (uint32_t)(sizeof h + len),
		.seq = next_seq++,
	};
	memcpy(buf, &h, sizeof h);
	memcpy(buf + sizeof h, body, len);
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof h + len};
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(&ctl, 0, sizeof ctl);
		m.msg_control = ctl.b;
		m.msg_controllen = sizeof ctl.b;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	if (seq)
		*seq = h.seq;
	for (;;) {
		long r = raw_syscall6(SYS_sendmsg, conn_fd, (long)&m, MSG_NOSIGNAL, 0, 0, 0);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return (int)-r;
		if ((size_t)r != iov.iov_len)
			return EPROTO;
		return 0;
	}
}

static uint64_t now_ns(void);

/* reply_timeout_ms is how long the shim waits for a reply in all (set_timeout). */
static long reply_timeout_ms = 2000;

static void set_rcvtimeo(int fd, uint64_t ns)
{
	struct timeval tv = {.tv_sec = (time_t)(ns / 1000000000u), .tv_usec = (suseconds_t)(ns % 1000000000u / 1000u)};
	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		tv.tv_usec = 1; /* 0 would mean no timeout */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* recv_reply receives the reply to request seq of type, with an optional fd. */
static int recv_reply(uint16_t type, uint32_t seq, void *body, size_t len, int *fd)
{
	char buf[sizeof(struct bp_msg_hdr) + sizeof(struct bp_register) + 64];
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof buf};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b};
	long r;
	if (fd)
		*fd = -1;
	/* A signal interrupts recvmsg, and a restarted recvmsg waits a whole SO_RCVTIMEO
	 * again: a tool that gets signals more often than that (SIGCHLD, a timer, a
	 * profiler's SIGPROF) would wait forever on a stalled sidecar. Retry with what is
	 * left of the timeout, so it bounds the whole wait. */
	uint64_t limit = (uint64_t)reply_timeout_ms * 1000000u, start = now_ns();
	int shortened = 0;
	for (;;) {
		r = raw_syscall6(SYS_recvmsg, conn_fd, (long)&m, MSG_CMSG_CLOEXEC, 0, 0, 0);
		if (r != -EINTR)
			break;
		uint64_t spent = now_ns() - start;
		if (spent >= limit) {
			r = -EAGAIN;
			break;
		}
		set_rcvtimeo(conn_fd, limit - spent);
		shortened = 1;
	}
	if (shortened)
		set_rcvtimeo(conn_fd, limit);
	if (r < 0)
		return (int)-r;
	if (r == 0)
		return ECONNRESET;
	int got = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int n = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < n; i++) {
			int f;
			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof f);
			if (got < 0 && fd != NULL)
				got = f;
			else
				real_close()(f);
		}
	}
	struct bp_msg_hdr h;
	if ((size_t)r != sizeof h + len || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		goto bad;
	memcpy(&h, buf, sizeof h);
	if (h.magic != BP_MSG_MAGIC || h.version != BP_ABI_VERSION || h.type != (type | BP_MSG_REPLY) ||
	    h.seq != seq || h.size != r)
		goto bad;
	memcpy(body, buf + sizeof h, len);
	if (fd)
		*fd = got;
	return 0;
bad:
	if (got >= 0)
		real_close()(got);
	return EPROTO;
}

static void set_timeout(int fd)
{
	long ms = 2000;
	const char *t = getenv("BAYESPERF_TIMEOUT_MS");
	if (t != NULL && atol(t) > 0)
		ms = atol(t);
	reply_timeout_ms = ms;
	struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

/* connect_locked makes the first connection of this process. */
static void connect_locked(void)
{
	if (conn_state != CONN_NONE)
		return;
	if (!atfork_done) {
		atfork_done = 1;
		pthread_atfork(NULL, NULL, atfork_child);
	}
	const char *path = getenv(BP_ENV_SOCKET);
	if (path == NULL || path[0] == '\0') {
		go_down("BAYESPERF_SOCKET is not set, no sidecar to talk to", 0);
		return;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (strlen(path) >= sizeof sa.sun_path) {
		go_down("BAYESPERF_SOCKET path is too long", 0);
		return;
	}
	strcpy(sa.sun_path, path);
	long fd = raw_syscall6(SYS_socket, AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, 0, 0, 0);
	if (fd < 0) {
		go_down("cannot create a socket for the sidecar", (int)-fd);
		return;
	}
	conn_fd = (int)fd;
	long r;
	do
		r = raw_syscall6(SYS_connect, fd, (long)&sa, sizeof sa, 0, 0, 0);
	while (r == -EINTR);
	if (r < 0) {
		go_down("cannot reach the sidecar", (int)-r);
		return;
	}
	set_timeout(conn_fd);
	struct bp_hello hello = {.pid = getpid()};
	struct bp_hello_reply rep;
	uint32_t seq;
	int page_fd = -1;
	int err = send_msg(BP_MSG_HELLO, &hello, sizeof hello, -1, &seq);
	if (err == 0)
		err = recv_reply(BP_MSG_HELLO, seq, &rep, sizeof rep, &page_fd);
	if (err == 0 && rep.status != 0)
		err = -rep.status;
	if (err == 0 && (page_fd < 0 || rep.page_size != BP_PAGE_SIZE))
		err = EPROTO;
	if (err != 0) {
		if (page_fd >= 0)
			real_close()(page_fd);
		go_down("the sidecar refused the connection", err);
		return;
	}
	void *p = real_mmap()(NULL, BP_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, page_fd, 0);
	real_close()(page_fd);
	if (p == MAP_FAILED) {
		go_down("cannot map the client page", errno);
		return;
	}
	client_page = p;
	if (rep.stale_ns > 0)
		stale_ns = rep.stale_ns;
	kernel_exact = (rep.flags & BP_HELLO_F_KERNEL_EXACT) != 0;
	__atomic_store_n(&conn_state, CONN_UP, __ATOMIC_RELEASE);
	DEBUG("connected to sidecar %d at %s (stale bound %llu ns)\n", rep.sidecar_pid, path,
	      (unsigned long long)stale_ns);
}

/* In a forked child the connection and the registrations belong to the parent: start
 * over, lazily, as a process that has not opened any perf event yet. The inherited perf
 * fds stay in the table but pass through (their epoch is old). */
static void atfork_child(void)
{
	pthread_mutex_init(&conn_lock, NULL);
	pthread_mutex_init(&tab_lock, NULL);
	if (conn_fd >= 0)
		real_close()(conn_fd);
	conn_fd = -1;
	conn_state = CONN_NONE;
	client_page = NULL;
	conn_epoch++;
	__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
}

/* ---------------------------------------------------------------------------------- */
/* Registration.                                                                      */

static void count_at(size_t off)
{
	struct bp_client_page *cp = __atomic_load_n(&client_page, __ATOMIC_RELAXED);
	if (cp != NULL)
		__atomic_fetch_add((uint64_t *)(void *)((char *)cp + off), 1, __ATOMIC_RELAXED);
}
#define COUNT(f) count_at(offsetof(struct bp_client_page, f))

/* The fast read path counts in this thread's shard of the client page (single writer: a
 * plain add, a few ns cheaper than a locked one); see bp_client_page. */
static TLS uint32_t shard_slot; /* 1 + this thread's shard; 0: none yet; > BP_CLIENT_SHARDS: none left */
static uint32_t next_shard;

static __attribute__((noinline)) void count_mirror_read_slow(struct bp_client_page *cp)
{
	if (shard_slot == 0) {
		uint32_t s = __atomic_fetch_add(&next_shard, 1, __ATOMIC_RELAXED);
		shard_slot = s < BP_CLIENT_SHARDS ? s + 1 : BP_CLIENT_SHARDS + 1;
		if (s < BP_CLIENT_SHARDS) {
			__atomic_fetch_add(&cp->mirror_read_shards[s], 1, __ATOMIC_RELAXED);
			return;
		}
	}
	__atomic_fetch_add(&cp->mirror_reads, 1, __ATOMIC_RELAXED);
}

static inline void count_mirror_read(void)
{
	struct bp_client_page *cp = __atomic_load_n(&client_page, __ATOMIC_RELAXED);
	if (UNLIKELY(cp == NULL))
		return;
	uint32_t s = shard_slot - 1;
	if (UNLIKELY(s >= BP_CLIENT_SHARDS)) {
		count_mirror_read_slow(cp);
		return;
	}
	uint64_t *c = &cp->mirror_read_shards[s];
#if defined(__x86_64__)
	/* One unlocked instruction: a signal handler of this thread that reads a perf fd
	 * cannot fall between its load and its store. */
	__asm__ volatile("addq $1, %0" : "+m"(*c));
#else
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
#endif
}

static void tab_set_locked(int fd, struct bp_event *ev)
{
	struct bp_event *old = fdtab[fd];
	if (old == NULL && ev != NULL)
		__atomic_add_fetch(&nperf, 1, __ATOMIC_RELAXED);
	if (old != NULL && ev == NULL)
		__atomic_sub_fetch(&nperf, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&fdtab[fd], ev, __ATOMIC_RELEASE);
}

/* release_locked drops one reference; the last one unregisters and unmaps. */
static void release_locked(struct bp_event *ev)
{
	if (--ev->refs > 0)
		return;
	/* A member leaving its group changes the leader's group read at once (the kernel
	 * detaches it when the last fd goes, right after this): every mirror refreshes
	 * before it is served again, as after an ioctl. */
	if (ev->member)
		__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
	if (ev->epoch == conn_epoch) {
		pthread_mutex_lock(&conn_lock);
		if (conn_state == CONN_UP) {
			/* Synchronous: the kernel event must be gone when close() returns. */
			struct bp_handle h = {.handle = ev->handle};
			struct bp_status st;
			uint32_t seq;
			int err = send_msg(BP_MSG_UNREGISTER, &h, sizeof h, -1, &seq);
			if (err == 0)
				err = recv_reply(BP_MSG_UNREGISTER, seq, &st, sizeof st, NULL);
			if (err != 0)
				go_down("lost the sidecar", err);
		}
		pthread_mutex_unlock(&conn_lock);
	}
	if (ev->page != NULL)
		real_munmap()((void *)ev->page, BP_PAGE_SIZE);
	free(ev);
}

/* forget removes fd from the table (before the kernel closes it, so that a reused fd
 * number never meets a stale entry). */
static void forget(int fd)
{
	if (lookup(fd) == NULL)
		return;
	/* guard: a signal handler that reads a perf fd while this thread holds the locks
	 * below goes straight to the kernel instead of deadlocking on them. */
	int saved = errno;
	guard++;
	pthread_mutex_lock(&tab_lock);
	struct bp_event *ev = fdtab[fd];
	if (ev != NULL) {
		tab_set_locked(fd, NULL);
		release_locked(ev);
	}
	pthread_mutex_unlock(&tab_lock);
	guard--;
	errno = saved;
}

static void alias(int oldfd, int newfd)
{
	if (newfd < 0 || newfd >= BP_MAX_FD || newfd == oldfd)
		return;
	guard++;
	pthread_mutex_lock(&tab_lock);
	struct bp_event *ev = fdtab[oldfd];
	if (ev != NULL) {
		ev->refs++;
		tab_set_locked(newfd, ev);
	}
	pthread_mutex_unlock(&tab_lock);
	guard--;
}

/* counts_self reports whether an event opened with pid counts the calling process: pid 0,
 * our pid or one of our threads, or -1 (every task on a CPU, us included). Such a
 * process can observe its own activity causally (do work, then read), so a mirror that is
 * even a millisecond old would be visibly wrong (perf test 3 does exactly that): reads of
 * such an event go to the kernel, and its ring is not mirrored. */
static int counts_self(long pid)
{
	if (pid == 0 || pid == -1 || pid == getpid())
		return 1;
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%ld", pid);
	return raw_syscall6(SYS_faccessat, AT_FDCWD, (long)path, F_OK, 0, 0, 0) == 0;
}

static void register_event(int fd, const struct perf_event_attr *attr, long pid, long cpu, long group_fd,
			   unsigned long flags)
{
	if (fd >= BP_MAX_FD)
		return;
	pthread_mutex_lock(&conn_lock);
	connect_locked();
	if (conn_state != CONN_UP) {
		pthread_mutex_unlock(&conn_lock);
		return;
	}
	struct bp_register reg;
	memset(&reg, 0, sizeof reg);
	reg.handle = next_handle++;
	reg.pid = (int32_t)pid;
	reg.cpu = (int32_t)cpu;
	reg.group_fd = (int32_t)group_fd;
	reg.flags = flags;
	/* The kernel accepted attr with this size, so these bytes are readable. */
	uint32_t size = attr->size ? attr->size : PERF_ATTR_SIZE_VER0;
	if (size > BP_ATTR_MAX)
		size = BP_ATTR_MAX;
	memcpy(reg.attr, attr, size);
	reg.attr_size = size;
	struct bp_event *leader = group_fd >= 0 ? lookup((int)group_fd) : NULL;
	if (leader != NULL && leader->epoch == conn_epoch)
		reg.group_handle = leader->handle;

	struct bp_register_reply rep;
	uint32_t seq;
	int mfd = -1;
	int err = send_msg(BP_MSG_REGISTER, &reg, sizeof reg, fd, &seq);
	if (err == 0)
		err = recv_reply(BP_MSG_REGISTER, seq, &rep, sizeof rep, &mfd);
	if (err != 0) {
		go_down("lost the sidecar", err);
		pthread_mutex_unlock(&conn_lock);
		return;
	}
	uint32_t epoch = conn_epoch;
	pthread_mutex_unlock(&conn_lock);
	if (rep.status != 0 || mfd < 0) {
		DEBUG("sidecar declined fd %d: %s\n", fd, strerror(-rep.status));
		if (mfd >= 0)
			real_close()(mfd);
		return;
	}
	void *p = real_mmap()(NULL, BP_PAGE_SIZE, PROT_READ, MAP_SHARED, mfd, 0);
	real_close()(mfd);
	uint32_t nslots = 2 + ((attr->read_format & PERF_FORMAT_GROUP) ? BP_MIRROR_MAX_VALUES : 1);
	struct bp_event *ev = calloc(1, sizeof *ev + 2 * nslots * sizeof(uint64_t));
	if (p == MAP_FAILED || ev == NULL) {
		/* The sidecar keeps a registration we cannot use; it goes away with close(). */
		if (p != MAP_FAILED)
			real_munmap()(p, BP_PAGE_SIZE);
		free(ev);
		return;
	}
	ev->refs = 1;
	ev->handle = reg.handle;
	ev->epoch = epoch;
	ev->page = p;
	ev->synced_gen = __atomic_load_n(&sync_gen, __ATOMIC_RELAXED);
	ev->self = counts_self(pid);
	ev->backward = attr->write_backward;
	ev->member = group_fd >= 0;
	ev->leader = reg.group_handle;
	ev->rfmt = attr->read_format;
	ev->nslots = nslots;
	pthread_mutex_lock(&tab_lock);
	if (fdtab[fd] != NULL) /* cannot happen: the kernel just gave us this number */
		release_locked(fdtab[fd]);
	tab_set_locked(fd, ev);
	pthread_mutex_unlock(&tab_lock);
	DEBUG("fd %d registered as handle %u (type %u config %llu read_format %#llx)\n", fd, reg.handle,
	      attr->type, (unsigned long long)attr->config, (unsigned long long)attr->read_format);
}

static void mark_counted(int fd, const struct perf_event_attr *attr, int pid);

static long bp_perf_event_open(struct perf_event_attr *attr, long pid, long cpu, long group_fd,
			       unsigned long flags)
{
	long fd = raw_syscall6(SYS_perf_event_open, (long)attr, pid, cpu, group_fd, (long)flags, 0);
	if (fd < 0)
		return raw_result(fd);
	int saved = errno;
	guard++;
	/* Before the open returns: perf lets its workload exec only after every open. */
	mark_counted((int)fd, attr, (int)pid);
	/* pid, cpu and group_fd are ints in the kernel's ABI; a caller passing them through
	 * syscall()'s varargs leaves the upper halves of the registers undefined. */
	if (__atomic_load_n(&conn_state, __ATOMIC_ACQUIRE) != CONN_DOWN)
		register_event((int)fd, attr, (int)pid, (int)cpu, (int)group_fd, flags);
	/* A new member changes its leader's group read at once, and the leader's mirror
	 * may be younger than the staleness bound: refresh every mirror before serving it. */
	if ((int)group_fd >= 0)
		__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
	guard--;
	errno = saved;
	return fd;
}

static void forget(int fd);
static void alias(int oldfd, int newfd);
static void protect_conn(int fd);
static inline void ep_forget(int fd);
static inline void ep_alias(int oldfd, int newfd);
static void ep_ctl_done(int epfd, int op, int fd);
static int nepmarks; /* (tentative: see the epoll section) */
static void fd_closing(int fd);
static void fd_range_closing(unsigned int first, unsigned int last, int flags);
static void fd_copied(int oldfd, int newfd);
static void self_fd_copied(int oldfd, int newfd);

/* fd_bookkeeping keeps the fd table right when a program closes or duplicates fds with
 * syscall() instead of the libc functions: the call itself still goes to the kernel
 * untouched, but a perf fd closed this way must leave the table before its number can be
 * reused. Returns the kernel's result. */
static long fd_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	switch (nr) {
	case SYS_close:
		fd_closing((int)a1);
		break;
	case SYS_close_range:
		fd_range_closing((unsigned int)a1, (unsigned int)a2, (int)a3);
		break;
#ifdef SYS_dup2
	case SYS_dup2:
#endif
	case SYS_dup3:
		if (a1 != a2)
			fd_closing((int)a2);
		break;
	}
	long r = raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
	if (r >= 0) {
		switch (nr) {
		case SYS_dup:
#ifdef SYS_dup2
		case SYS_dup2:
#endif
		case SYS_dup3:
			fd_copied((int)a1, (int)r);
			break;
		case SYS_fcntl:
			if (a2 == F_DUPFD || a2 == F_DUPFD_CLOEXEC)
				fd_copied((int)a1, (int)r);
			break;
		case SYS_epoll_ctl:
			ep_ctl_done((int)a1, (int)a2, (int)a3);
			break;
		}
	}
	return raw_result(r);
}

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (guard == 0) {
		switch (nr) {
		case SYS_execve:
			return execve((const char *)a1, (char *const *)a2, (char *const *)a3);
		case SYS_perf_event_open:
			return bp_perf_event_open((struct perf_event_attr *)a1, a2, a3, a4, (unsigned long)a5);
		case SYS_close:
		case SYS_close_range:
#ifdef SYS_dup2
		case SYS_dup2:
#endif
		case SYS_dup3:
		case SYS_dup:
		case SYS_fcntl:
		case SYS_epoll_ctl:
			return fd_syscall(nr, a1, a2, a3, a4, a5, a6);
		}
	}
	return raw_result(raw_syscall6(nr, a1, a2, a3, a4, a5, a6));
}

/* ---------------------------------------------------------------------------------- */
/* Exec: the measured program runs without us.                                        */

/* A tool such as perf stat forks its workload before it opens any event, the child
 * blocks on a pipe while the parent opens the counters with enable_on_exec, and then it
 * execs (evlist__prepare_workload). The child inherited LD_PRELOAD and
 * BAYESPERF_SOCKET: left alone, it would load this library after the exec, and its
 * loading (an openat, a read, mmaps, page faults) would be counted by the very events
 * the tool opened for it. So such an exec leaves our preload entry and our variables
 * out of the new program's environment; the new program then runs exactly as without
 * bayesperf (and has no fd of ours: all of them are O_CLOEXEC).
 *
 * Which exec is the measured program's: one that a perf event opened through the shim
 * will count, because the event targets the exec'ing process (perf stat -- CMD opens
 * them on its forked child's pid, with enable_on_exec), or counts the descendants of its
 * parent (an event on every task of a CPU, pid -1, as perf stat -a opens; an inherited
 * event on the parent itself), or counts the process itself and outlives the exec (its
 * own event on itself whose fd is not close-on-exec). perf opens the events after the
 * fork, so the child learns of them through memory the two share: the marks page, a
 * MAP_SHARED anonymous page mapped before the first fork (fork is interposed for that)
 * or at the first perf event, whichever comes first, that fork children share with their
 * parent. Every process that opens a perf event writes there which pids its events
 * count. Any other exec keeps the shim: the shell of `bayesperf run -- sh -c 'perf stat
 * ...'`, and a tool started by another tool that does not count it, are served. (Simply
 * stripping every exec of a perf client's children would cut off tools that start
 * tools.) Marks are never removed: a pid reused within one tool's lifetime, or more
 * than BP_MARKS_MAX marks, can only err towards one of the two sides of this rule.
 *
 * What is removed: BAYESPERF_SOCKET and BAYESPERF_VERBOSE (which `bayesperf run` sets),
 * and this library's entry in LD_PRELOAD (the variable goes when nothing else is left
 * in it); the user's other preloads and variables stay verbatim and in order. The
 * exec'ing child of a multithreaded parent may only do async-signal-safe work, so the
 * new environment is built on the stack, and everything that needs dlsym or dladdr is
 * resolved before the fork (prepare_exec). */

enum { MARK_TARGET = 1, MARK_DESCENDANTS = 2 };
#define BP_MARKS_MAX 511
struct bp_marks {
	uint32_t n;   /* slots taken (may exceed BP_MARKS_MAX: those marks are lost, and the
	                 programs they would have named keep the shim, as before marks) */
	uint32_t pad;
	struct {
		int32_t pid;  /* written last (release): 0 while the slot is being filled */
		uint32_t kind; /* MARK_TARGET: events count pid; MARK_DESCENDANTS: its children */
	} m[BP_MARKS_MAX];
};
static struct bp_marks *marks; /* shared with fork children; NULL until needed */
static char shim_path[PATH_MAX]; /* this library as named in LD_PRELOAD ("" unknown) */

/* The fds of this process's own events that count itself (pid 0, its pid or a thread,
 * or -1), kept while open: one that is not close-on-exec at an exec counts the new
 * program. Beyond BP_SELF_FDS the rest are not tracked (their exec keeps the shim). */
#define BP_SELF_FDS 64
static int selffd[BP_SELF_FDS];
static int nselffd; /* entries in use (each >= 0, or -1 when freed) */
static pthread_mutex_t selffd_lock = PTHREAD_MUTEX_INITIALIZER;

/* prepare_exec maps the marks page, finds our own path and resolves the functions the
 * exec interposers call, in a state where dlsym and mmap are safe (not in a fork child). */
static void prepare_exec(void)
{
	if (__atomic_load_n(&marks, __ATOMIC_ACQUIRE) != NULL)
		return;
	Dl_info info;
	if (shim_path[0] == '\0' && dladdr((void *)prepare_exec, &info) != 0 && info.dli_fname != NULL &&
	    strlen(info.dli_fname) < sizeof shim_path)
		strcpy(shim_path, info.dli_fname);
	(void)real_execve(), (void)real_execvpe(), (void)real_fexecve(), (void)real_fork();
	void *p = real_mmap()(NULL, sizeof(struct bp_marks), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return; /* no marks: children of this process keep the preload, as before */
	struct bp_marks *none = NULL;
	if (!__atomic_compare_exchange_n(&marks, &none, (struct bp_marks *)p, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		real_munmap()(p, sizeof(struct bp_marks));
}

static int marked(struct bp_marks *m, int32_t pid, uint32_t kind)
{
	uint32_t n = __atomic_load_n(&m->n, __ATOMIC_ACQUIRE);
	if (n > BP_MARKS_MAX)
		n = BP_MARKS_MAX;
	for (uint32_t i = 0; i < n; i++)
		if (__atomic_load_n(&m->m[i].pid, __ATOMIC_ACQUIRE) == pid && m->m[i].kind == kind)
			return 1;
	return 0;
}

static void add_mark(int32_t pid, uint32_t kind)
{
	struct bp_marks *m = __atomic_load_n(&marks, __ATOMIC_ACQUIRE);
	if (m == NULL || marked(m, pid, kind))
		return;
	uint32_t i = __atomic_fetch_add(&m->n, 1, __ATOMIC_RELAXED);
	if (i >= BP_MARKS_MAX)
		return;
	m->m[i].kind = kind;
	__atomic_store_n(&m->m[i].pid, pid, __ATOMIC_RELEASE);
}

static void self_fd_add(int fd)
{
	pthread_mutex_lock(&selffd_lock);
	int slot = -1;
	for (int i = 0; i < nselffd && slot < 0; i++)
		if (selffd[i] < 0)
			slot = i;
	if (slot < 0 && nselffd < BP_SELF_FDS)
		slot = nselffd++;
	if (slot >= 0)
		__atomic_store_n(&selffd[slot], fd, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&selffd_lock);
}

/* self_fd_copied tracks a duplicate of a self-counting event's fd (dup clears
 * close-on-exec: the copy alone keeps the event alive across an exec). */
static void self_fd_copied(int oldfd, int newfd)
{
	if (LIKELY(__atomic_load_n(&nselffd, __ATOMIC_RELAXED) == 0) || newfd < 0 || newfd == oldfd)
		return;
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++)
		if (__atomic_load_n(&selffd[i], __ATOMIC_RELAXED) == oldfd) {
			self_fd_add(newfd);
			return;
		}
}

/* mark_counted records whom the event just opened as fd counts; see above. */
static void mark_counted(int fd, const struct perf_event_attr *attr, int pid)
{
	prepare_exec();
	int32_t me = (int32_t)raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (pid > 0 && !counts_self(pid)) {
		add_mark(pid, MARK_TARGET);
		if (attr->inherit)
			add_mark(pid, MARK_DESCENDANTS);
		return;
	}
	if (pid == -1 || attr->inherit)
		add_mark(me, MARK_DESCENDANTS);
	self_fd_add(fd);
}

/* self_fd_closing forgets fd as one of this process's self-counting events. */
static inline void self_fd_closing(int fd)
{
	if (LIKELY(__atomic_load_n(&nselffd, __ATOMIC_RELAXED) == 0))
		return;
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++)
		if (__atomic_load_n(&selffd[i], __ATOMIC_RELAXED) == fd)
			__atomic_store_n(&selffd[i], -1, __ATOMIC_RELAXED);
}

/* exec_counted reports whether a program this process execs now (or, with spawn, a
 * child it starts) will be counted by a perf event opened through the shim. */
static int exec_counted(int spawn)
{
	struct bp_marks *m = __atomic_load_n(&marks, __ATOMIC_ACQUIRE);
	int32_t me = (int32_t)raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (spawn)
		return m != NULL && marked(m, me, MARK_DESCENDANTS);
	if (m != NULL) {
		int32_t parent = (int32_t)raw_syscall6(SYS_getppid, 0, 0, 0, 0, 0, 0);
		if (marked(m, me, MARK_TARGET) || marked(m, parent, MARK_DESCENDANTS))
			return 1;
	}
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++) {
		int fd = __atomic_load_n(&selffd[i], __ATOMIC_RELAXED);
		if (fd < 0)
			continue;
		long fl = raw_syscall6(SYS_fcntl, fd, F_GETFD, 0, 0, 0, 0);
		if (fl >= 0 && !(fl & FD_CLOEXEC))
			return 1; /* the event survives the exec and counts the new program */
	}
	return 0;
}

static int env_is(const char *kv, const char *name)
{
	size_t n = strlen(name);
	return strncmp(kv, name, n) == 0 && kv[n] == '=';
}

/* drop_preload writes into out the value of LD_PRELOAD (val) without our entry and one
 * separator next to it, the rest verbatim. Returns 0 when val has no entry of ours (keep
 * the variable as is), 1 when out holds the new value ("" : drop the variable). */
static int drop_preload(const char *val, char *out)
{
	size_t plen = strlen(shim_path);
	if (plen == 0)
		return 0;
	for (const char *t = val; *t != '\0';) {
		while (*t == ':' || *t == ' ')
			t++;
		const char *e = t;
		while (*e != '\0' && *e != ':' && *e != ' ')
			e++;
		if ((size_t)(e - t) == plen && memcmp(t, shim_path, plen) == 0) {
			/* Remove [t, e) and the separator after it, or before it when it is last. */
			const char *from = t, *to = e;
			if (*to != '\0')
				to++;
			else if (from > val)
				from--;
			size_t head = (size_t)(from - val);
			memcpy(out, val, head);
			strcpy(out + head, to);
			for (const char *c = out; *c != '\0'; c++)
				if (*c != ':' && *c != ' ')
					return 1;
			out[0] = '\0';
			return 1;
		}
		t = e;
	}
	return 0;
}

typedef int (*exec_fn)(void *ctx, char *const env[]);

/* exec_env calls fn with envp, or with envp less what is ours when the new program will
 * be counted (exec_counted). The new environment lives on this stack frame (no allocation: this
 * may run in a fork child of a multithreaded tool, or in a vfork child). */
static int exec_env(char *const envp[], int spawn, exec_fn fn, void *ctx)
{
	if (envp == NULL || !exec_counted(spawn))
		return fn(ctx, envp);
	size_t n = 0, ldlen = 0;
	for (; envp[n] != NULL; n++)
		if (env_is(envp[n], "LD_PRELOAD") && ldlen == 0)
			ldlen = strlen(envp[n]);
	if (n > 65536 || ldlen > 65536)
		return fn(ctx, envp); /* too big for this stack frame: exec as before */
	char *out[n + 1];
	char ld[ldlen + 1];
	int ld_done = 0; /* ld.so reads the first LD_PRELOAD entry: later ones stay as they are */
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		const char *kv = envp[i];
		if (env_is(kv, BP_ENV_SOCKET) || env_is(kv, BP_ENV_VERBOSE))
			continue;
		if (env_is(kv, "LD_PRELOAD") && !ld_done) {
			ld_done = 1;
			memcpy(ld, "LD_PRELOAD=", 11);
			if (drop_preload(kv + 11, ld + 11)) {
				if (ld[11] != '\0')
					out[k++] = ld;
				continue;
			}
		}
		out[k++] = (char *)kv;
	}
	out[k] = NULL;
	return fn(ctx, out);
}

struct exec_args {
	const char *path;
	char *const *argv;
	int fd;
};

static int do_execve(void *c, char *const env[])
{
	struct exec_args *a = c;
	return real_execve()(a->path, a->argv, env);
}

static int do_execvpe(void *c, char *const env[])
{
	struct exec_args *a = c;
	return real_execvpe()(a->path, a->argv, env);
}

static int do_fexecve(void *c, char *const env[])
{
	struct exec_args *a = c;
	return real_fexecve()(a->fd, a->argv, env);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	struct exec_args a = {.path = path, .argv = argv};
	return exec_env(envp, 0, do_execve, &a);
}

EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	struct exec_args a = {.path = file, .argv = argv};
	return exec_env(envp, 0, do_execvpe, &a);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	struct exec_args a = {.fd = fd, .argv = argv};
	return exec_env(envp, 0, do_fexecve, &a);
}

/* The execl family collects its NULL-terminated arguments (execle: then envp) as libc
 * does, and goes through the functions above. */
#define EXECL_ARGV(arg0, last, argv, extra)                        \
	va_list ap;                                                \
	va_start(ap, last);                                        \
	size_t argc = 1;                                           \
	{                                                          \
		va_list cp;                                        \
		va_copy(cp, ap);                                   \
		while (va_arg(cp, char *) != NULL)                 \
			argc++;                                    \
		va_end(cp);                                        \
	}                                                          \
	char *argv[argc + 1];                                      \
	argv[0] = (char *)(arg0);                                  \
	for (size_t i = 1; i <= argc; i++)                         \
		argv[i] = va_arg(ap, char *); /* argv[argc] = NULL */ \
	extra;                                                     \
	va_end(ap)

EXPORT int execl(const char *path, const char *arg, ...)
{
	EXECL_ARGV(arg, arg, argv, (void)0);
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	EXECL_ARGV(arg, arg, argv, (void)0);
	return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	EXECL_ARGV(arg, arg, argv, envp = va_arg(ap, char *const *));
	return execve(path, argv, envp);
}

struct spawn_args {
	pid_t *pid;
	const char *path;
	const posix_spawn_file_actions_t *fa;
	const posix_spawnattr_t *attr;
	char *const *argv;
};

static int do_posix_spawn(void *c, char *const env[])
{
	struct spawn_args *a = c;
	return real_posix_spawn()(a->pid, a->path, a->fa, a->attr, a->argv, env);
}

static int do_posix_spawnp(void *c, char *const env[])
{
	struct spawn_args *a = c;
	return real_posix_spawnp()(a->pid, a->path, a->fa, a->attr, a->argv, env);
}

/* posix_spawn execs in a child that never runs our code: a perf client whose events
 * count its children passes the stripped environment itself. */
EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct spawn_args a = {pid, path, fa, attr, argv};
	return exec_env(envp, 1, do_posix_spawn, &a);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	struct spawn_args a = {pid, file, fa, attr, argv};
	return exec_env(envp, 1, do_posix_spawnp, &a);
}

/* fork maps the marks page first, so that the child shares it with its parent and sees
 * the parent's first perf event even when it comes after the fork (perf's order). */
EXPORT pid_t fork(void)
{
	if (!guard) {
		int saved = errno;
		prepare_exec();
		errno = saved;
	}
	return real_fork()();
}

/* ---------------------------------------------------------------------------------- */
/* Sampling mirrors.                                                                  */

/* handle_call sends a bp_handle request and waits for its bp_status; the caller holds
 * conn_lock. Returns 0, an errno of the transport (the connection is then down), or the
 * sidecar's -status as a positive errno. */
static int handle_call_locked(uint16_t type, uint32_t handle, uint32_t flags)
{
	if (conn_state != CONN_UP)
		return ENOTCONN;
	struct bp_handle h = {.handle = handle, .flags = flags};
	struct bp_status st;
	uint32_t seq;
	int err = send_msg(type, &h, sizeof h, -1, &seq);
	if (err == 0)
		err = recv_reply(type, seq, &st, sizeof st, NULL);
	if (err != 0) {
		go_down("lost the sidecar", err);
		return err;
	}
	return st.status < 0 ? -st.status : 0;
}

/* flush_rings makes every mirror ring hold what the kernel's rings hold now: called
 * where a tool may look at its rings expecting the kernel's latest records (a poll that
 * returned, an ioctl such as DISABLE or PAUSE_OUTPUT, a reaped child). */
/* Offsets in struct perf_event_mmap_page. */
#define PG_DATA_HEAD 1024
#define PG_DATA_TAIL 1032
#define PG_DATA_OFFSET 1040
#define PG_DATA_SIZE 1048

static void ring_copy_out(uint8_t *dst, const uint8_t *data, uint64_t mask, uint64_t pos, size_t n)
{
	size_t i = pos & mask, first = mask + 1 - i;
	if (first >= n) {
		memcpy(dst, data + i, n);
	} else {
		memcpy(dst, data + i, first);
		memcpy(dst + first, data, n - first);
	}
}

static void ring_copy_in(uint8_t *data, uint64_t mask, uint64_t pos, const uint8_t *src, size_t n)
{
	size_t i = pos & mask, first = mask + 1 - i;
	if (first >= n) {
		memcpy(data + i, src, n);
	} else {
		memcpy(data + i, src, first);
		memcpy(data, src + first, n - first);
	}
}

/* shim_pump is the sidecar's pump done by the shim once the sidecar is gone: move every
 * record that fits from the kernel's ring to the mirror, kernel-style (record bytes, then
 * store-release of the mirror's data_head; load-acquire of the tool's data_tail before
 * reusing space). Forward rings only; a record that does not fit stays in the kernel's
 * ring, which then drops and counts as it would without us. */
static void shim_pump(struct bp_ring *r)
{
	uint8_t *k = r->kring, *m = r->mw;
	uint64_t ksize = *(uint64_t *)(void *)(k + PG_DATA_SIZE), msize = *(uint64_t *)(void *)(m + PG_DATA_SIZE);
	uint64_t koff = *(uint64_t *)(void *)(k + PG_DATA_OFFSET), moff = *(uint64_t *)(void *)(m + PG_DATA_OFFSET);
	if (ksize == 0 || ksize != msize || (ksize & (ksize - 1)) || koff + ksize > r->len || moff + msize > r->len)
		return;
	uint64_t mask = ksize - 1;
	uint64_t *khead = (uint64_t *)(void *)(k + PG_DATA_HEAD), *ktail = (uint64_t *)(void *)(k + PG_DATA_TAIL);
	uint64_t *mhead = (uint64_t *)(void *)(m + PG_DATA_HEAD), *mtail = (uint64_t *)(void *)(m + PG_DATA_TAIL);
	uint64_t kh = __atomic_load_n(khead, __ATOMIC_ACQUIRE);
	uint64_t kt = __atomic_load_n(ktail, __ATOMIC_RELAXED);
	uint64_t mh = __atomic_load_n(mhead, __ATOMIC_RELAXED);
	uint8_t rec[65536];
	while (kh - kt >= 8 && kh - kt <= ksize) {
		struct perf_event_header h;
		ring_copy_out((uint8_t *)&h, k + koff, mask, kt, sizeof h);
		if (h.size < sizeof h || h.size > kh - kt)
			break;
		if (!r->overwrite) {
			uint64_t mt = __atomic_load_n(mtail, __ATOMIC_ACQUIRE);
			if (((mt - (mh + 1)) & mask) < h.size)
				break;
		}
		ring_copy_out(rec, k + koff, mask, kt, h.size);
		ring_copy_in(m + moff, mask, mh, rec, h.size);
		mh += h.size;
		kt += h.size;
	}
	__atomic_store_n(mhead, mh, __ATOMIC_RELEASE);
	if (!r->overwrite)
		__atomic_store_n(ktail, kt, __ATOMIC_RELEASE);
}

/* swap_backward replaces a backward mirror by the kernel's ring at the same address: a
 * backward ring has no data_tail, so the tool can simply go on reading the kernel's. */
static void swap_backward(struct bp_ring *r)
{
	struct bp_event *ev = (unsigned)r->fd < BP_MAX_FD ? fdtab[r->fd] : NULL;
	if (ev == NULL || ev->handle != r->handle || ev->epoch != r->epoch)
		return; /* the fd is gone: the kernel's ring is only reachable through kring */
	void *p = real_mmap()(r->addr, r->len, PROT_READ, MAP_SHARED | MAP_FIXED, r->fd, 0);
	if (p == r->addr)
		r->backward = 0, r->kring = NULL; /* now the tool's mapping is the kernel's */
}

static void shim_pump_all(void)
{
	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < BP_MAX_RINGS; i++) {
		struct bp_ring *r = &rings[i];
		if (r->addr == NULL || r->epoch != conn_epoch || r->kring == NULL)
			continue;
		if (r->backward)
			swap_backward(r);
		else
			shim_pump(r);
	}
	pthread_mutex_unlock(&tab_lock);
}

/* flush_rings makes every mirror ring hold what the kernel's rings hold now: called
 * where a tool may look at its rings expecting the kernel's latest records (a poll that
 * returned, an ioctl such as DISABLE or PAUSE_OUTPUT, a reaped child). Without a
 * sidecar, the shim moves the records itself. */
static void flush_rings_paused(uint32_t paused_handle)
{
	if (LIKELY(__atomic_load_n(&nrings, __ATOMIC_RELAXED) == 0) || guard)
		return;
	int saved = errno;
	guard++;
	if (__atomic_load_n(&conn_state, __ATOMIC_ACQUIRE) == CONN_UP) {
		pthread_mutex_lock(&conn_lock);
		if (handle_call_locked(BP_MSG_FLUSH, paused_handle, paused_handle ? BP_FLUSH_PAUSED : 0) == 0)
			COUNT(ring_flushes);
		pthread_mutex_unlock(&conn_lock);
	}
	if (__atomic_load_n(&conn_state, __ATOMIC_ACQUIRE) == CONN_DOWN)
		shim_pump_all();
	guard--;
	errno = saved;
}

static void flush_rings(void)
{
	flush_rings_paused(0);
}

static int rings_off(void)
{
	const char *v = getenv("BAYESPERF_RINGS");
	return v != NULL && v[0] == '0';
}

/* mirror_mmap maps the sidecar's mirror of ev's ring in place of the kernel's. Returns
 * MAP_FAILED when the kernel's ring must be mapped instead (the caller does that). */
static void *mirror_mmap(struct bp_event *ev, void *addr, size_t len, int prot, int flags, int fd)
{
	/* Events that count the reader are not mirrored: such a reader can expect the
	 * records of what it just did to be in the ring, which only the kernel's ring
	 * guarantees. */
	if (ev->self || ev->page == NULL || ev->epoch != conn_epoch || !(flags & MAP_SHARED) || rings_off() ||
	    __atomic_load_n(&conn_state, __ATOMIC_ACQUIRE) != CONN_UP)
		return MAP_FAILED;
	struct bp_map m = {.handle = ev->handle, .prot = prot, .length = len};
	struct bp_status st;
	uint32_t seq;
	int mfd = -1;
	pthread_mutex_lock(&conn_lock);
	int err = conn_state == CONN_UP ? send_msg(BP_MSG_MAP, &m, sizeof m, -1, &seq) : ENOTCONN;
	if (err == 0)
		err = recv_reply(BP_MSG_MAP, seq, &st, sizeof st, &mfd);
	if (err != 0 && err != ENOTCONN)
		go_down("lost the sidecar", err);
	pthread_mutex_unlock(&conn_lock);
	if (err != 0 || st.status != 0 || mfd < 0) {
		if (mfd >= 0)
			real_close()(mfd);
		if (err == 0)
			DEBUG("sidecar declined to mirror the ring of handle %u: %s\n", ev->handle, strerror(-st.status));
		return MAP_FAILED;
	}
	void *p = real_mmap()(addr, len, prot, flags, mfd, 0);
	void *mw = p, *kr = MAP_FAILED;
	if (p != MAP_FAILED && !(prot & PROT_WRITE))
		mw = real_mmap()(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	if (p != MAP_FAILED && mw != MAP_FAILED)
		kr = real_mmap()(NULL, len, prot & (PROT_READ | PROT_WRITE), MAP_SHARED, fd, 0);
	real_close()(mfd);
	if (kr == MAP_FAILED) {
		if (mw != MAP_FAILED && mw != p)
			real_munmap()(mw, len);
		if (p != MAP_FAILED)
			real_munmap()(p, len);
		pthread_mutex_lock(&conn_lock);
		handle_call_locked(BP_MSG_UNMAP, ev->handle, 0);
		pthread_mutex_unlock(&conn_lock);
		return MAP_FAILED;
	}
	pthread_mutex_lock(&tab_lock);
	int slot = -1;
	for (int i = 0; i < BP_MAX_RINGS && slot < 0; i++)
		if (rings[i].addr == NULL)
			slot = i;
	if (slot >= 0) {
		rings[slot] = (struct bp_ring){.addr = p, .len = len, .handle = ev->handle, .epoch = ev->epoch,
					       .kring = kr, .mw = mw, .overwrite = !(prot & PROT_WRITE),
					       .backward = ev->backward, .fd = fd};
		__atomic_add_fetch(&nrings, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_unlock(&tab_lock);
	if (slot < 0) { /* table full: give this one back and use the kernel's */
		real_munmap()(p, len);
		real_munmap()(kr, len);
		if (mw != p)
			real_munmap()(mw, len);
		pthread_mutex_lock(&conn_lock);
		handle_call_locked(BP_MSG_UNMAP, ev->handle, 0);
		pthread_mutex_unlock(&conn_lock);
		return MAP_FAILED;
	}
	DEBUG("ring of handle %u (%zu bytes) mirrored at %p\n", ev->handle, len, p);
	return p;
}

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off,
		     void *(*real)(void *, size_t, int, int, int, off_t))
{
	struct bp_event *ev = lookup(fd);
	if (LIKELY(ev == NULL) || guard || off != 0)
		return real(addr, len, prot, flags, fd, off);
	int saved = errno;
	guard++;
	void *p = mirror_mmap(ev, addr, len, prot, flags, fd);
	guard--;
	if (p != MAP_FAILED) {
		errno = saved;
		return p;
	}
	errno = saved;
	return real(addr, len, prot, flags, fd, off);
}

static void *call_real_mmap(void *a, size_t l, int p, int f, int fd, off_t o) { return real_mmap()(a, l, p, f, fd, o); }
static void *call_real_mmap64(void *a, size_t l, int p, int f, int fd, off_t o) { return real_mmap64()(a, l, p, f, fd, o); }

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, call_real_mmap);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, call_real_mmap64);
}

EXPORT int munmap(void *addr, size_t len)
{
	if (LIKELY(__atomic_load_n(&nrings, __ATOMIC_RELAXED) == 0) || guard)
		return real_munmap()(addr, len);
	struct bp_ring r = {0};
	guard++;
	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < BP_MAX_RINGS; i++) {
		if (rings[i].addr != NULL && rings[i].addr == addr) {
			r = rings[i];
			rings[i].addr = NULL;
			__atomic_sub_fetch(&nrings, 1, __ATOMIC_RELAXED);
			break;
		}
	}
	pthread_mutex_unlock(&tab_lock);
	guard--;
	int ret = real_munmap()(addr, len);
	if (r.addr != NULL) {
		if (r.kring != NULL)
			real_munmap()(r.kring, r.len);
		if (r.mw != NULL && r.mw != r.addr)
			real_munmap()(r.mw, r.len);
	}
	if (r.addr != NULL && r.epoch == conn_epoch) {
		/* Synchronous: the kernel's ring must be unmapped when munmap() returns, so the
		 * tool can map the fd again, with another size if it likes. */
		int saved = errno;
		guard++;
		pthread_mutex_lock(&conn_lock);
		handle_call_locked(BP_MSG_UNMAP, r.handle, 0);
		pthread_mutex_unlock(&conn_lock);
		guard--;
		errno = saved;
	}
	return ret;
}

/* poll and epoll keep the kernel's readiness of the real fds (wakeups at the watermark,
 * POLLHUP when the target exits); before the tool looks at its rings, the mirrors are
 * brought up to date, so it never wakes to an empty mirror. */
EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	int r = real_poll()(fds, n, timeout);
	if (r > 0)
		flush_rings();
	return r;
}

EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *mask)
{
	int r = real_ppoll()(fds, n, ts, mask);
	if (r > 0)
		flush_rings();
	return r;
}

/* epoll: the tool's epoll sets keep the kernel's readiness of the real perf fds, as poll
 * does. epoll_ctl notes which epoll fds watch a registered perf fd (directly: a nested
 * set is waited on in turn, and that wait flushes); a wait on such a set that returns
 * events brings the mirror rings up to date first, so the tool never wakes to an empty
 * mirror. A wait on a set without perf fds (a tool's own event loop) costs nothing
 * extra. The marks are kept per fd number: cleared when the number is closed or reused,
 * copied by dup; a stale mark only costs one needless flush. */
static uint8_t epmark[BP_MAX_FD]; /* 1: this epoll fd watches (or watched) a perf fd */
static int nepmarks; /* marks set so far: 0 keeps every check off the table */

static void ep_mark(int epfd)
{
	if ((unsigned)epfd >= BP_MAX_FD || __atomic_load_n(&epmark[epfd], __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&epmark[epfd], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&nepmarks, 1, __ATOMIC_RELAXED);
}

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

static void ep_ctl_done(int epfd, int op, int fd)
{
	if ((op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && lookup(fd) != NULL)
		ep_mark(epfd);
}

EXPORT int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event)
{
	int r = real_epoll_ctl()(epfd, op, fd, event);
	if (r == 0)
		ep_ctl_done(epfd, op, fd);
	return r;
}

/* ep_woke runs after a wait on epfd returned r. */
static inline void ep_woke(int epfd, int r)
{
	if (r > 0 && ep_marked(epfd))
		flush_rings();
}

EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout)
{
	int r = real_epoll_wait()(epfd, ev, max, timeout);
	ep_woke(epfd, r);
	return r;
}

EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	int r = real_epoll_pwait()(epfd, ev, max, timeout, mask);
	ep_woke(epfd, r);
	return r;
}

/* epoll_pwait2 (Linux 5.11, glibc 2.35) is reached through libc when libc has it, else
 * with the raw system call (as glibc does: the kernel's sigset is 8 bytes). */
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
static void *real_epoll_pwait2_slot;
static int real_epoll_pwait2_missing;

EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *ts, const sigset_t *mask)
{
	epoll_pwait2_fn f = __atomic_load_n(&real_epoll_pwait2_slot, __ATOMIC_ACQUIRE);
	if (f == NULL && !__atomic_load_n(&real_epoll_pwait2_missing, __ATOMIC_RELAXED)) {
		f = (epoll_pwait2_fn)dlsym(RTLD_NEXT, "epoll_pwait2");
		if (f != NULL)
			__atomic_store_n(&real_epoll_pwait2_slot, (void *)f, __ATOMIC_RELEASE);
		else
			__atomic_store_n(&real_epoll_pwait2_missing, 1, __ATOMIC_RELAXED);
	}
	int r;
	if (f != NULL) {
		r = f(epfd, ev, max, ts, mask);
	} else {
#ifdef SYS_epoll_pwait2
		struct bp_kernel_timespec {
			long long tv_sec;
			long long tv_nsec;
		} kts, *kp = NULL; /* struct __kernel_timespec */
		if (ts != NULL) {
			kts.tv_sec = ts->tv_sec;
			kts.tv_nsec = ts->tv_nsec;
			kp = &kts;
		}
		r = (int)raw_result(raw_syscall6(SYS_epoll_pwait2, epfd, (long)ev, max, (long)kp, (long)mask, 8));
#else
		errno = ENOSYS;
		r = -1;
#endif
	}
	ep_woke(epfd, r);
	return r;
}

/* ---------------------------------------------------------------------------------- */
/* Counting reads from the mirror.                                                    */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t read_size(uint64_t fmt, uint32_t nr)
{
	size_t n = 0, per = 8;
	if (fmt & PERF_FORMAT_GROUP)
		n += 8;
	else
		nr = 1;
	if (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED)
		n += 8;
	if (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING)
		n += 8;
	if (fmt & PERF_FORMAT_ID)
		per += 8;
	if (fmt & PERF_FORMAT_LOST)
		per += 8;
	return n + (size_t)nr * per;
}

#define LOAD(p) __atomic_load_n(&(p), __ATOMIC_RELAXED)

/* mirror_copy encodes the page into buf in read_format layout under the seqlock (pairs
 * with shim.Mirror.Publish). Returns bytes written, -ENOSPC when count is too small, 0
 * when the page cannot serve (not OK, or no consistent copy), and sets *fresh to 1 when
 * the values are within the staleness bound (never for BP_MIRROR_F_SYNC), 3 when they
 * are final, 0 otherwise. */
static ssize_t mirror_copy(const struct bp_mirror_page *pg, char *buf, size_t count, int *fresh)
{
	for (int tries = 0; tries < 256; tries++) {
		uint32_t s1 = __atomic_load_n(&pg->hdr.seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			cpu_relax();
			continue;
		}
		uint32_t state = LOAD(pg->hdr.state);
		uint32_t flags = LOAD(pg->hdr.flags);
		uint64_t upd = LOAD(pg->hdr.update_ns);
		uint64_t fmt = LOAD(pg->hdr.read_format);
		uint32_t nr = LOAD(pg->hdr.nr);
		ssize_t ret;
		if (state != BP_MIRROR_OK || nr == 0 || nr > BP_MIRROR_MAX_VALUES) {
			ret = 0;
		} else {
			size_t need = read_size(fmt, nr);
			if (count < need) {
				ret = -ENOSPC;
			} else {
				uint64_t *o = (uint64_t *)(void *)buf; /* callers pass u64 buffers; memcpy below keeps it legal */
				uint64_t tmp;
				size_t k = 0;
#define PUT(x) (tmp = (x), memcpy(o + k, &tmp, 8), k++)
				/* The kernel's layouts (perf_read_one, perf_read_group): a single
				 * event is { value, enabled, running, id, lost }, a group is
				 * { nr, enabled, running, { value, id, lost } x nr }. */
				int group = (fmt & PERF_FORMAT_GROUP) != 0;
				if (group)
					PUT(nr);
				else {
					nr = 1;
					PUT(LOAD(pg->values[0].value));
				}
				if (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED)
					PUT(LOAD(pg->hdr.enabled));
				if (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING)
					PUT(LOAD(pg->hdr.running));
				for (uint32_t i = 0; i < nr; i++) {
					if (group)
						PUT(LOAD(pg->values[i].value));
					if (fmt & PERF_FORMAT_ID)
						PUT(LOAD(pg->values[i].id));
					if (fmt & PERF_FORMAT_LOST)
						PUT(LOAD(pg->values[i].lost));
				}
#undef PUT
				ret = (ssize_t)need;
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pg->hdr.seq, __ATOMIC_RELAXED) != s1)
			continue;
		*fresh = (flags & BP_MIRROR_F_FINAL) ? 3 : (!(flags & BP_MIRROR_F_SYNC) && now_ns() - upd <= stale_ns);
		return ret;
	}
	*fresh = 0;
	return 0;
}

/* refresh asks the sidecar to republish ev's mirror from the kernel now. */
static int refresh(struct bp_event *ev)
{
	int err = 0;
	pthread_mutex_lock(&conn_lock);
	if (conn_state != CONN_UP || ev->epoch != conn_epoch) {
		err = ENOTCONN;
	} else {
		struct bp_handle h = {.handle = ev->handle};
		struct bp_status st;
		uint32_t seq;
		err = send_msg(BP_MSG_REFRESH, &h, sizeof h, -1, &seq);
		if (err == 0)
			err = recv_reply(BP_MSG_REFRESH, seq, &st, sizeof st, NULL);
		if (err != 0)
			go_down("lost the sidecar", err);
		else if (st.status != 0)
			err = -st.status;
	}
	pthread_mutex_unlock(&conn_lock);
	return err;
}

/* mirror_read serves a read of a registered fd. Returns 1 with *ret set when it did, 0
 * when the caller must read the kernel. */
static int mirror_read(struct bp_event *ev, void *buf, size_t count, ssize_t *ret)
{
	if (ev->page == NULL || ev->epoch != conn_epoch ||
	    __atomic_load_n(&conn_state, __ATOMIC_ACQUIRE) != CONN_UP)
		return 0;
	uint64_t gen = __atomic_load_n(&sync_gen, __ATOMIC_ACQUIRE);
	int fresh = 0;
	ssize_t n = 0;
	int synced = 0;
	if (__atomic_load_n(&ev->synced_gen, __ATOMIC_RELAXED) == gen) {
		n = mirror_copy(ev->page, buf, count, &fresh);
		if (ev->self && !(fresh & 2))
			fresh = 0; /* a corrected self-counting event: refresh before every read */
	}
	if (!fresh) {
		__atomic_store_n(&ev->synced_gen, gen, __ATOMIC_RELAXED);
		if (refresh(ev) != 0)
			return 0;
		n = mirror_copy(ev->page, buf, count, &fresh);
		synced = 1;
	}
	if (n == 0)
		return 0;
	if (synced)
		COUNT(sync_refreshes);
	COUNT(mirror_reads);
	if (n < 0) {
		errno = (int)-n;
		*ret = -1;
	} else {
		*ret = n;
	}
	return 1;
}

/* fast_copy serves the common read of one event (no PERF_FORMAT_GROUP) from a fresh
 * page: the same seqlock read and layout as mirror_copy, straight-line. Returns the bytes
 * written, or 0 when anything is unusual (odd or moving seq, page not OK, group format,
 * short buffer, not fresh): the caller then takes the slow path, which decides afresh and
 * overwrites buf. */
static inline ssize_t fast_copy(const struct bp_mirror_page *pg, void *buf, size_t count)
{
	uint32_t s1 = __atomic_load_n(&pg->hdr.seq, __ATOMIC_ACQUIRE);
	uint32_t state = LOAD(pg->hdr.state);
	uint32_t flags = LOAD(pg->hdr.flags);
	uint64_t upd = LOAD(pg->hdr.update_ns);
	uint64_t fmt = LOAD(pg->hdr.read_format);
	uint32_t nr = LOAD(pg->hdr.nr);
	if (UNLIKELY((s1 & 1) || state != BP_MIRROR_OK || nr == 0 || (fmt & PERF_FORMAT_GROUP)))
		return 0;
	/* perf_read_one: { value, enabled?, running?, id?, lost? }, in read_format bit order. */
	uint64_t v[5];
	size_t k = 0;
	v[k++] = LOAD(pg->values[0].value);
	if (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED)
		v[k++] = LOAD(pg->hdr.enabled);
	if (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING)
		v[k++] = LOAD(pg->hdr.running);
	if (fmt & PERF_FORMAT_ID)
		v[k++] = LOAD(pg->values[0].id);
	if (fmt & PERF_FORMAT_LOST)
		v[k++] = LOAD(pg->values[0].lost);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (UNLIKELY(__atomic_load_n(&pg->hdr.seq, __ATOMIC_RELAXED) != s1 || count < k * 8))
		return 0;
	/* Fresh: final values, or published within the staleness bound (clock read after
	 * the copy, so the age is never underestimated) and not to be refreshed at every
	 * read (BP_MIRROR_F_SYNC). */
	if (!(flags & BP_MIRROR_F_FINAL) && UNLIKELY((flags & BP_MIRROR_F_SYNC) || now_ns() - upd > stale_ns))
		return 0;
	memcpy(buf, v, k * 8);
	return (ssize_t)(k * 8);
}

static __attribute__((noinline)) ssize_t do_read_slow(struct bp_event *ev, int fd, void *buf, size_t count,
						      ssize_t (*real)(int, void *, size_t));

static inline __attribute__((always_inline)) ssize_t do_read(int fd, void *buf, size_t count,
							      ssize_t (*real)(int, void *, size_t))
{
	struct bp_event *ev = lookup(fd);
	if (LIKELY(ev == NULL) || guard)
		return real(fd, buf, count);
	/* Fast path, the common case of a tool reading a target: the event is synced to the
	 * current sync_gen (so the connection is up, the event is of this epoch and nothing
	 * since its last refresh made the mirror behind) and its page is fresh. No lock, no
	 * system call; anything else takes the slow path, which decides afresh. */
	if (LIKELY(!ev->self) &&
	    LIKELY(__atomic_load_n(&ev->synced_gen, __ATOMIC_RELAXED) == __atomic_load_n(&sync_gen, __ATOMIC_ACQUIRE))) {
		ssize_t n = fast_copy(ev->page, buf, count);
		if (LIKELY(n > 0)) {
			count_mirror_read();
			return n;
		}
	}
	return do_read_slow(ev, fd, buf, count, real);
}

/* ---------------------------------------------------------------------------------- */
/* Monotonic after a fallback.                                                        */

/* A corrected value (a virtual PMU's estimate, a correction of the kernel's
 * multiplexing) may be above the kernel's count of the same event. When the shim falls
 * back to the kernel (the sidecar died, or declined an event it had served), a tool that
 * computes deltas (perf stat -I) would see its running total go backwards, and perf's
 * unsigned delta wrapped to 18446744073709551616 for an interval. The rule, per event
 * and per value slot (time_enabled, time_running, each member's value):
 *
 *   - every value a mirror read serves is remembered as last[k] (the largest served);
 *   - at the first read the kernel serves after that, off[k] = max(0, floor[k] - K[k]),
 *     where K is that read's kernel value and floor[k] the larger of last[k] and the
 *     value in the mirror page (the sidecar publishes monotonically, so the page is at
 *     least what any fast-path read served; each field is read on its own, so a page a
 *     killed sidecar left mid-publish still gives a floor);
 *   - from then on every read of the event goes to the kernel and serves
 *     max(K[k] + off[k], last[k]).
 *
 * So no value a tool has seen is taken back, the jump at the fallback is at most the
 * correction's own error (the corrected value is continued, not the kernel's), and the
 * increments after it are the kernel's exact ones. A PERF_EVENT_IOC_RESET clears the
 * value slots (not the times, which RESET leaves). A forked child's reads of inherited
 * fds are the kernel's, unchanged (another epoch). */

/* value_slot returns the u64 index in a read buffer of n bytes in read_format fmt that
 * holds slot k, or -1. */
static long value_slot(uint64_t fmt, const uint64_t *b, size_t n, uint32_t k)
{
	size_t words = n / 8, i = 0;
	int group = (fmt & PERF_FORMAT_GROUP) != 0;
	uint64_t nr = 1;
	if (group) {
		if (words < 1)
			return -1;
		memcpy(&nr, &b[0], 8);
		i = 1;
	} else {
		if (k == 2)
			return 0;
		i = 1;
	}
	long en = -1, run = -1;
	if (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED)
		en = (long)i++;
	if (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING)
		run = (long)i++;
	long at = -1;
	if (k == 0)
		at = en;
	else if (k == 1)
		at = run;
	else if (group && k - 2 < nr) {
		size_t per = 1 + !!(fmt & PERF_FORMAT_ID) + !!(fmt & PERF_FORMAT_LOST);
		at = (long)(i + (k - 2) * per);
	}
	return at >= 0 && (size_t)at < words ? at : -1;
}

static void max_store(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (cur < v && !__atomic_compare_exchange_n(p, &cur, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* note_served remembers the values a mirror read put in buf. */
static void note_served(struct bp_event *ev, const void *buf, size_t n)
{
	uint64_t *last = ev->mono;
	for (uint32_t k = 0; k < ev->nslots; k++) {
		long at = value_slot(ev->rfmt, buf, n, k);
		if (at < 0) {
			if (k >= 2)
				break;
			continue;
		}
		uint64_t v;
		memcpy(&v, (const char *)buf + at * 8, 8);
		max_store(&last[k], v);
	}
}

/* page_slot reads slot k of the mirror page field by field, without the seqlock. */
static int page_slot(const struct bp_mirror_page *pg, uint32_t k, uint64_t *v)
{
	if (pg == NULL || LOAD(pg->hdr.state) != BP_MIRROR_OK)
		return 0;
	if (k == 0)
		*v = LOAD(pg->hdr.enabled);
	else if (k == 1)
		*v = LOAD(pg->hdr.running);
	else if (k - 2 < LOAD(pg->hdr.nr) && k - 2 < BP_MIRROR_MAX_VALUES)
		*v = LOAD(pg->values[k - 2].value);
	else
		return 0;
	return 1;
}

/* kernel_read serves a read of ev from the kernel under the rule above. */
static ssize_t kernel_read(struct bp_event *ev, int fd, void *buf, size_t count, ssize_t (*real)(int, void *, size_t))
{
	if (!__atomic_load_n(&ev->onkernel, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&ev->onkernel, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&ev->synced_gen, UINT64_MAX, __ATOMIC_RELAXED); /* never the fast path again */
	}
	ssize_t r = real(fd, buf, count);
	if (r <= 0 || ev->epoch != conn_epoch)
		return r;
	int saved = errno;
	uint64_t *last = ev->mono, *off = ev->mono + ev->nslots;
	if (!__atomic_load_n(&ev->offs_set, __ATOMIC_ACQUIRE)) {
		guard++;
		pthread_mutex_lock(&tab_lock);
		if (!ev->offs_set) {
			for (uint32_t k = 0; k < ev->nslots; k++) {
				long at = value_slot(ev->rfmt, buf, (size_t)r, k);
				if (at < 0)
					continue;
				uint64_t kv, floor = __atomic_load_n(&last[k], __ATOMIC_RELAXED), pv;
				memcpy(&kv, (char *)buf + at * 8, 8);
				if (page_slot(ev->page, k, &pv) && pv > floor)
					floor = pv;
				off[k] = floor > kv ? floor - kv : 0;
			}
			__atomic_store_n(&ev->offs_set, 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&tab_lock);
		guard--;
	}
	for (uint32_t k = 0; k < ev->nslots; k++) {
		long at = value_slot(ev->rfmt, buf, (size_t)r, k);
		if (at < 0) {
			if (k >= 2)
				break;
			continue;
		}
		uint64_t v;
		memcpy(&v, (char *)buf + at * 8, 8);
		v += __atomic_load_n(&off[k], __ATOMIC_RELAXED);
		uint64_t l = __atomic_load_n(&last[k], __ATOMIC_RELAXED);
		if (v < l)
			v = l;
		else
			max_store(&last[k], v);
		memcpy((char *)buf + at * 8, &v, 8);
	}
	errno = saved;
	return r;
}

/* reset_values clears the value slots of ev after PERF_EVENT_IOC_RESET: the kernel's
 * count restarts from 0, and so does what the tool expects. */
static void reset_values(struct bp_event *ev)
{
	uint64_t *last = ev->mono, *off = ev->mono + ev->nslots;
	for (uint32_t k = 2; k < ev->nslots; k++) {
		__atomic_store_n(&last[k], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&off[k], 0, __ATOMIC_RELAXED);
	}
}

static void reset_group_values(struct bp_event *ev, int group)
{
	reset_values(ev);
	if (!group || __atomic_load_n(&nperf, __ATOMIC_RELAXED) == 0)
		return;
	guard++;
	pthread_mutex_lock(&tab_lock);
	for (int fd = 0; fd < BP_MAX_FD; fd++) {
		struct bp_event *m = fdtab[fd];
		if (m != NULL && m != ev && m->leader == ev->handle && m->epoch == ev->epoch)
			reset_values(m);
	}
	pthread_mutex_unlock(&tab_lock);
	guard--;
}

static ssize_t do_read_slow(struct bp_event *ev, int fd, void *buf, size_t count, ssize_t (*real)(int, void *, size_t))
{
	if (ev->self && kernel_exact && ev->epoch == conn_epoch) {
		/* The reader counts itself: only the kernel knows what it did a microsecond
		 * ago, and the sidecar's stage says such reads may keep the kernel's values
		 * (BP_HELLO_F_KERNEL_EXACT: identity, or the correction of the kernel's
		 * multiplexing, which leaves them), so asking it would only cost a round
		 * trip. (With another stage, mirror_read refreshes.) */
		COUNT(self_reads);
		return real(fd, buf, count);
	}
	ssize_t r;
	if (!__atomic_load_n(&ev->onkernel, __ATOMIC_ACQUIRE)) {
		guard++;
		int served = mirror_read(ev, buf, count, &r);
		guard--;
		if (served) {
			if (r > 0)
				note_served(ev, buf, (size_t)r);
			return r;
		}
	}
	COUNT(passthrough_reads);
	return kernel_read(ev, fd, buf, count, real);
}

static ssize_t call_real_read(int fd, void *buf, size_t count) { return real_read()(fd, buf, count); }

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	return do_read(fd, buf, count, call_real_read);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	if (count > buflen || lookup(fd) == NULL)
		return real___read_chk()(fd, buf, count, buflen); /* aborts on overflow, as libc does */
	return do_read(fd, buf, count, call_real_read);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int iovcnt)
{
	struct bp_event *ev = lookup(fd);
	if (LIKELY(ev == NULL) || guard || iovcnt <= 0 || iovcnt > IOV_MAX)
		return real_readv()(fd, iov, iovcnt);
	/* perf has no read_iter: the kernel calls its read once per iovec and stops at the
	 * first short one (do_loop_readv_writev). Do exactly that. */
	ssize_t total = 0;
	for (int i = 0; i < iovcnt; i++) {
		ssize_t r = do_read(fd, iov[i].iov_base, iov[i].iov_len, call_real_read);
		if (r < 0)
			return total > 0 ? total : r;
		total += r;
		if ((size_t)r != iov[i].iov_len)
			break;
	}
	return total;
}

/* pread on a perf fd fails with ESPIPE in the kernel; it is interposed only so that the
 * list of entry points is complete, and passes through. */
EXPORT ssize_t pread64(int fd, void *buf, size_t count, off_t off)
{
	return real_pread64()(fd, buf, count, off);
}

EXPORT ssize_t pread(int fd, void *buf, size_t count, off_t off)
{
	return real_pread()(fd, buf, count, off);
}

/* ---------------------------------------------------------------------------------- */
/* Control: ioctl, fcntl, dup*, close, wait*.                                         */

static void flush_rings(void);

static void bump_sync_gen(void)
{
	__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
}

static void child_reaped(void)
{
	bump_sync_gen();
	flush_rings();
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	int r = real_ioctl()(fd, req, arg);
	/* Any perf ioctl but ID may change what a read returns (ENABLE, DISABLE, RESET,
	 * REFRESH, PERIOD, group-wide via PERF_IOC_FLAG_GROUP): every mirror must be
	 * refreshed before it is served again. */
	struct bp_event *ev = lookup(fd);
	if (ev != NULL && req == PERF_EVENT_IOC_RESET && r == 0)
		reset_group_values(ev, ((unsigned long)arg & PERF_IOC_FLAG_GROUP) != 0);
	if (ev != NULL && req != PERF_EVENT_IOC_ID) {
		bump_sync_gen();
		/* After PAUSE_OUTPUT(1) the kernel leaves the ring alone: the moment to copy a
		 * backward ring, which the tool is about to read. */
		if (req == PERF_EVENT_IOC_PAUSE_OUTPUT && arg != NULL && ev->epoch == conn_epoch)
			flush_rings_paused(ev->handle);
		else
			flush_rings();
	}
	return r;
}

static int do_fcntl(int fd, int cmd, void *arg, int (*real)(int, int, void *))
{
	int r = real(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		fd_copied(fd, r);
	return r;
}

static int call_real_fcntl(int fd, int cmd, void *arg) { return real_fcntl()(fd, cmd, arg); }
static int call_real_fcntl64(int fd, int cmd, void *arg) { return real_fcntl64()(fd, cmd, arg); }

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(fd, cmd, arg, call_real_fcntl);
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return do_fcntl(fd, cmd, arg, call_real_fcntl64);
}

/* protect_conn keeps the tool from silently reusing our socket's fd number. */
static void protect_conn(int fd)
{
	if (UNLIKELY(fd == conn_fd && fd >= 0) && guard == 0) {
		guard++;
		pthread_mutex_lock(&conn_lock);
		if (fd == conn_fd) {
			conn_fd = -1; /* the tool closes it itself */
			__atomic_store_n(&conn_state, CONN_DOWN, __ATOMIC_RELEASE);
			__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
			say("bayesperf: the program closed the sidecar's socket; perf events now go straight to the kernel\n");
		}
		pthread_mutex_unlock(&conn_lock);
		guard--;
	}
}

/* fd_closing drops fd from the shim's tables before the program closes it (or dup2s
 * over it): a perf fd leaves the event table, our socket's number is protected, an epoll
 * set loses its mark. */
static void fd_closing(int fd)
{
	forget(fd);
	self_fd_closing(fd);
	protect_conn(fd);
	ep_forget(fd);
}

/* fd_range_closing is fd_closing for close_range(first, last, flags). */
static void fd_range_closing(unsigned int first, unsigned int last, int flags)
{
	if (flags & CLOSE_RANGE_CLOEXEC)
		return;
	if (__atomic_load_n(&nperf, __ATOMIC_RELAXED) > 0)
		for (unsigned int fd = first; fd <= last && fd < BP_MAX_FD; fd++)
			forget((int)fd);
	if (__atomic_load_n(&nepmarks, __ATOMIC_RELAXED) > 0)
		for (unsigned int fd = first; fd <= last && fd < BP_MAX_FD; fd++)
			ep_forget((int)fd);
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++) {
		int fd = __atomic_load_n(&selffd[i], __ATOMIC_RELAXED);
		if (fd >= 0 && (unsigned)fd >= first && (unsigned)fd <= last)
			__atomic_store_n(&selffd[i], -1, __ATOMIC_RELAXED);
	}
	if (conn_fd >= 0 && (unsigned)conn_fd >= first && (unsigned)conn_fd <= last)
		protect_conn(conn_fd);
}

/* fd_copied gives newfd, a duplicate of oldfd, what oldfd has in the shim's tables. */
static void fd_copied(int oldfd, int newfd)
{
	if (lookup(oldfd) != NULL)
		alias(oldfd, newfd);
	ep_alias(oldfd, newfd);
	self_fd_copied(oldfd, newfd);
}

EXPORT int close(int fd)
{
	if (!guard)
		fd_closing(fd);
	return real_close()(fd);
}

EXPORT int close_range(unsigned int first, unsigned int last, int flags)
{
	if (!guard)
		fd_range_closing(first, last, flags);
	return real_close_range()(first, last, flags);
}

EXPORT int dup(int fd)
{
	int r = real_dup()(fd);
	if (r >= 0)
		fd_copied(fd, r);
	return r;
}

EXPORT int dup2(int oldfd, int newfd)
{
	if (oldfd != newfd && !guard)
		fd_closing(newfd);
	int r = real_dup2()(oldfd, newfd);
	if (r >= 0)
		fd_copied(oldfd, r);
	return r;
}

EXPORT int dup3(int oldfd, int newfd, int flags)
{
	if (oldfd != newfd && !guard)
		fd_closing(newfd);
	int r = real_dup3()(oldfd, newfd, flags);
	if (r >= 0)
		fd_copied(oldfd, r);
	return r;
}

/* A reaped child is usually the measured workload ending: the next read of every mirror
 * must see its final counts, not a value up to one republish period old. */
EXPORT pid_t wait(int *status)
{
	pid_t r = real_wait()(status);
	if (r > 0)
		child_reaped();
	return r;
}

EXPORT pid_t waitpid(pid_t pid, int *status, int options)
{
	pid_t r = real_waitpid()(pid, status, options);
	if (r > 0)
		child_reaped();
	return r;
}

EXPORT pid_t wait3(int *status, int options, struct rusage *ru)
{
	pid_t r = real_wait3()(status, options, ru);
	if (r > 0)
		child_reaped();
	return r;
}

EXPORT pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	pid_t r = real_wait4()(pid, status, options, ru);
	if (r > 0)
		child_reaped();
	return r;
}

EXPORT int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	int r = real_waitid()(idtype, id, info, options);
	if (r == 0 && info != NULL && info->si_pid != 0)
		child_reaped();
	return r;
}

/* A tool may learn that its workload ended from SIGCHLD alone and read its counters
 * before it reaps the child: perf stat's handler sets child_pid to -1, and perf then
 * skips wait4 altogether when `true` exits before perf gets there, and reads at once.
 * Only wait* told the shim so far, so such a read was served from the page the sidecar
 * published when the event was registered, before the exec: running 0, and perf printed
 * <not counted> (3 of 20 runs of perf stat -- true). So a SIGCHLD handler the tool
 * installs runs behind a trampoline that first marks every mirror as behind (sync_gen,
 * one atomic add: async-signal-safe), then calls the tool's handler with the same
 * arguments. sigaction reports the tool's own handler back, never the trampoline. */
struct chld_handler {
	void *fn;
	int siginfo; /* SA_SIGINFO: fn takes (int, siginfo_t *, void *) */
};
static struct chld_handler chld_slots[2];
static int chld_slot; /* the slot in use; the other is written before a switch */

REAL_DECL(int, sigaction, (int, const struct sigaction *, struct sigaction *))
REAL_DECL(sighandler_t, signal, (int, sighandler_t))

static void chld_trampoline(int sig, siginfo_t *si, void *uc)
{
	__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
	struct chld_handler *h = &chld_slots[__atomic_load_n(&chld_slot, __ATOMIC_ACQUIRE)];
	if (h->siginfo)
		((void (*)(int, siginfo_t *, void *))h->fn)(sig, si, uc);
	else
		((void (*)(int))h->fn)(sig);
}

static pthread_mutex_t chld_lock = PTHREAD_MUTEX_INITIALIZER;

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig != SIGCHLD || guard)
		return real_sigaction()(sig, act, old);
	/* Serialise changes of the SIGCHLD handler (threads may race): the slot written is
	 * never the one a delivery may be reading. Signals are blocked meanwhile, so that a
	 * handler calling sigaction (async-signal-safe) cannot wait for its own thread. */
	sigset_t all, saved_mask;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &saved_mask);
	pthread_mutex_lock(&chld_lock);
	int cur = __atomic_load_n(&chld_slot, __ATOMIC_RELAXED);
	struct chld_handler prev = chld_slots[cur];
	struct sigaction mine;
	const struct sigaction *use = act;
	int wrapped = act != NULL && act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
	if (wrapped) {
		chld_slots[!cur] = (struct chld_handler){
			.fn = (act->sa_flags & SA_SIGINFO) ? (void *)act->sa_sigaction : (void *)act->sa_handler,
			.siginfo = (act->sa_flags & SA_SIGINFO) != 0,
		};
		__atomic_store_n(&chld_slot, !cur, __ATOMIC_RELEASE);
		mine = *act;
		mine.sa_sigaction = chld_trampoline;
		mine.sa_flags |= SA_SIGINFO;
		use = &mine;
	}
	int r = real_sigaction()(sig, use, old);
	if (r != 0 && wrapped)
		__atomic_store_n(&chld_slot, cur, __ATOMIC_RELEASE); /* nothing changed */
	if (r == 0 && old != NULL && old->sa_sigaction == chld_trampoline) {
		if (prev.siginfo) {
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))prev.fn;
		} else {
			old->sa_handler = (sighandler_t)prev.fn;
			old->sa_flags &= ~SA_SIGINFO;
		}
	}
	pthread_mutex_unlock(&chld_lock);
	int saved = errno;
	pthread_sigmask(SIG_SETMASK, &saved_mask, NULL);
	errno = saved;
	return r;
}

/* glibc's signal() installs its handler with its own internal sigaction, which the
 * interposer above does not see: for SIGCHLD, do what it does (BSD semantics: the
 * signal blocked in its handler, SA_RESTART) through the interposer. */
EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
	if (sig != SIGCHLD || guard)
		return real_signal()(sig, handler);
	struct sigaction act, old;
	memset(&act, 0, sizeof act);
	act.sa_handler = handler;
	sigemptyset(&act.sa_mask);
	sigaddset(&act.sa_mask, sig);
	act.sa_flags = SA_RESTART;
	if (sigaction(sig, &act, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}
