/*
 * conn.c: the connection to the sidecar (connect, send a request, receive its reply,
 * go down for good on any failure, start over in a forked child) and the registration of
 * every perf event the process opens (bp_perf_event_open, reached from syscall()).
 * Requests are serialised by conn_lock: one request and its reply at a time.
 */
#include "shim.h"

/* The shared connection state is described in shim.h. */
pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
int conn_state;
int conn_fd = -1;
uint32_t conn_epoch = 1;
uint64_t stale_ns = 2000000;
int64_t coarse_fresh = INT64_MIN;
int kernel_exact;
struct bp_client_page *client_page;

static uint32_t next_handle = 1; /* the sidecar's name for the next registered event */
static uint32_t next_seq = 1;    /* of the next request, echoed by its reply */
static int atfork_done;          /* atfork_child is installed */

/* ---------------------------------------------------------------------------------- */
/* Connection to the sidecar. Callers hold conn_lock.                                   */

/* go_down switches the process to passthrough for good and says so once. */
void go_down(const char *why, int err)
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
int send_msg(uint16_t type, const void *body, size_t len, int fd, uint32_t *seq)
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
int recv_reply(uint16_t type, uint32_t seq, void *body, size_t len, int *fd)
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

/* The vDSO's clock_gettime (shim.h, vdso_clock.h). */
clock_gettime_fn clock_fn;

void resolve_clock(void)
{
	if (__atomic_load_n(&clock_fn, __ATOMIC_RELAXED) == NULL)
		__atomic_store_n(&clock_fn, vdso_clock_gettime(), __ATOMIC_RELAXED);
}

/* connect_locked makes the first connection of this process. */
static void connect_locked(void)
{
	if (conn_state != CONN_NONE)
		return;
	resolve_clock();
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
	/* The coarse clock lags by less than two of its ticks (shim.h): a page whose coarse
	 * age is at most the bound minus two ticks is fresh for sure. */
	struct timespec res;
	uint64_t tick = 0;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0)
		tick = (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec;
	if (tick > 0 && stale_ns > 2 * tick && stale_ns < (uint64_t)INT64_MAX)
		coarse_fresh = (int64_t)(stale_ns - 2 * tick);
	kernel_exact = (rep.flags & BP_HELLO_F_KERNEL_EXACT) != 0;
	__atomic_store_n(&conn_state, CONN_UP, __ATOMIC_RELEASE);
	DEBUG("connected to sidecar %d at %s (stale bound %llu ns, fresh on the coarse clock up to %lld ns)\n",
	      rep.sidecar_pid, path, (unsigned long long)stale_ns, (long long)coarse_fresh);
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
	forget_shard();
	conn_epoch++;
	__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
}

/* handle_call_locked sends a bp_handle request and waits for its bp_status; the caller holds
 * conn_lock. Returns 0, an errno of the transport (the connection is then down), or the
 * sidecar's -status as a positive errno. */
int handle_call_locked(uint16_t type, uint32_t handle, uint32_t flags)
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

/* ---------------------------------------------------------------------------------- */
/* Registration.                                                                      */

/* counts_self reports whether an event opened with pid counts the calling process: pid 0,
 * our pid or one of our threads, or -1 (every task on a CPU, us included). Such a
 * process can observe its own activity causally (do work, then read), so a mirror that is
 * even a millisecond old would be visibly wrong (perf test 3 does exactly that): reads of
 * such an event go to the kernel, and its ring is not mirrored. */
int counts_self(long pid)
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
	/* Populated now: the first read of the page must not fault, as it may come inside a
	 * window in which the tool counts its own page faults (a native read faults none). */
	void *p = real_mmap()(NULL, BP_PAGE_SIZE, PROT_READ, MAP_SHARED | MAP_POPULATE, mfd, 0);
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
	ev->owner = pthread_self();
	ev->on = attr->disabled ? (attr->enable_on_exec ? -1 : 0) : 1;
	ev->nslots = nslots;
	pthread_mutex_lock(&tab_lock);
	if (fdtab[fd] != NULL) /* cannot happen: the kernel just gave us this number */
		release_locked(fdtab[fd]);
	tab_set_locked(fd, ev);
	pthread_mutex_unlock(&tab_lock);
	DEBUG("fd %d registered as handle %u (type %u config %llu read_format %#llx)\n", fd, reg.handle,
	      attr->type, (unsigned long long)attr->config, (unsigned long long)attr->read_format);
}

long bp_perf_event_open(struct perf_event_attr *attr, long pid, long cpu, long group_fd,
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
	/* A pause of this thread's events (self_pause) would stop an event on another
	 * task or on a whole CPU from counting them, and cannot restore the state of one
	 * the table does not hold. */
	struct bp_event *ev = lookup((int)fd);
	if ((int)pid == -1 || ev == NULL || !ev->self)
		owned_other++;
	else
		owned_self++;
	/* A new member changes its leader's group read at once, and the leader's mirror
	 * may be younger than the staleness bound: refresh every mirror before serving it. */
	if ((int)group_fd >= 0)
		__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
	guard--;
	errno = saved;
	return fd;
}
