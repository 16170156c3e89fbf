/*
 * fdtable.c: the state every part of the shim shares: the re-entry guard, sync_gen, and
 * the fd table that maps a perf fd to its registered event (lookup in shim.h), with the
 * reference counting that dup and close need. The table is read without locks and
 * changed under tab_lock.
 */
#include "shim.h"

/* Described in shim.h. */
TLS int guard;
TLS int owned_other;
TLS int owned_self;
uint64_t sync_gen;
struct bp_event *fdtab[BP_MAX_FD];
int nperf;
pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

void tab_set_locked(int fd, struct bp_event *ev)
{
	struct bp_event *old = fdtab[fd];
	if (old == NULL && ev != NULL)
		__atomic_add_fetch(&nperf, 1, __ATOMIC_RELAXED);
	if (old != NULL && ev == NULL)
		__atomic_sub_fetch(&nperf, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&fdtab[fd], ev, __ATOMIC_RELEASE);
}

/* release_locked drops one reference; the last one unregisters and unmaps. */
void release_locked(struct bp_event *ev)
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
void forget(int fd)
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

void alias(int oldfd, int newfd)
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
