/*
 * ring.c: sampling mirrors. mmap of a registered perf fd maps the sidecar's mirror of
 * the kernel's ring in its place; munmap gives it back; the rings are flushed (made to
 * hold what the kernel's hold) whenever a tool may look at them; once the sidecar is
 * gone the shim pumps the kernel's rings into the mirrors itself. poll and the epoll
 * family are here because a wakeup is such a moment.
 */
#include "shim.h"

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
void flush_rings_paused(uint32_t paused_handle)
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

void flush_rings(void)
{
	flush_rings_paused(0);
}

static int rings_off(void)
{
	const char *v = getenv("BAYESPERF_RINGS");
	return v != NULL && v[0] == '0';
}

/* give_back_mirror undoes a mirror_mmap that cannot complete: it unmaps what was mapped
 * (p, the tool's view; mw, the writable view when p is read-only; kr, the kernel's ring;
 * MAP_FAILED where nothing was) and tells the sidecar to drop the mirror. Returns
 * MAP_FAILED, so that the tool is given the kernel's ring. */
static void *give_back_mirror(struct bp_event *ev, size_t len, void *p, void *mw, void *kr)
{
	if (p != MAP_FAILED)
		real_munmap()(p, len);
	if (kr != MAP_FAILED)
		real_munmap()(kr, len);
	if (mw != MAP_FAILED && mw != p)
		real_munmap()(mw, len);
	pthread_mutex_lock(&conn_lock);
	handle_call_locked(BP_MSG_UNMAP, ev->handle, 0);
	pthread_mutex_unlock(&conn_lock);
	return MAP_FAILED;
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
	if (kr == MAP_FAILED)
		return give_back_mirror(ev, len, p, mw, kr);
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
	if (slot < 0) /* table full: give this one back and use the kernel's */
		return give_back_mirror(ev, len, p, mw, kr);
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
uint8_t epmark[BP_MAX_FD];
int nepmarks;

void ep_mark(int epfd)
{
	if ((unsigned)epfd >= BP_MAX_FD || __atomic_load_n(&epmark[epfd], __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&epmark[epfd], 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&nepmarks, 1, __ATOMIC_RELAXED);
}

void ep_ctl_done(int epfd, int op, int fd)
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

