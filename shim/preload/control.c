/*
 * control.c: the interposers that change what the shim's tables must hold or what a
 * mirror may serve: syscall() (perf_event_open, and close/dup numbers called raw),
 * ioctl, fcntl, dup*, close*, the wait family, and sigaction/signal for SIGCHLD.
 */
#include "shim.h"

#include <sys/prctl.h>

static void bump_sync_gen(void)
{
	__atomic_add_fetch(&sync_gen, 1, __ATOMIC_RELEASE);
}

static void child_reaped(void)
{
	bump_sync_gen();
	flush_rings();
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

/* fd_syscall keeps the fd table right when a program closes or duplicates fds with
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
	if (ev != NULL && r == 0 &&
	    (req == PERF_EVENT_IOC_RESET || req == PERF_EVENT_IOC_ENABLE || req == PERF_EVENT_IOC_DISABLE ||
	     req == PERF_EVENT_IOC_REFRESH))
		ioctl_done(ev, req != PERF_EVENT_IOC_REFRESH && ((unsigned long)arg & PERF_IOC_FLAG_GROUP) != 0, req);
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

/* prctl passes through; PR_TASK_PERF_EVENTS_ENABLE and DISABLE switch every event the
 * calling thread opened, which the shim's view of each event's switch state follows
 * (self_pause relies on it). */
EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	int r = real_prctl()(option, a2, a3, a4, a5);
	if (r == 0 && guard == 0 && (option == PR_TASK_PERF_EVENTS_ENABLE || option == PR_TASK_PERF_EVENTS_DISABLE) &&
	    __atomic_load_n(&nperf, __ATOMIC_RELAXED) != 0) {
		int saved = errno;
		prctl_done(option == PR_TASK_PERF_EVENTS_ENABLE);
		bump_sync_gen();
		errno = saved;
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
