/*
 * read.c: counting reads. read, __read_chk and readv of a registered perf fd are served
 * from the event's mirror page in the kernel's read_format layout (the hot path:
 * read_event and everything it calls are in this file or static inline in shim.h),
 * refreshed by the sidecar when the page may be behind, and from the kernel, kept
 * monotonic, after a fallback.
 */
#include "shim.h"

#include <sys/prctl.h>

/* ---------------------------------------------------------------------------------- */
/* Counting reads from the mirror.                                                    */

/* The fast read path counts in this thread's shard of the client page (single writer: a
 * plain add, a few ns cheaper than a locked one); see bp_client_page. mirror_shard
 * (shim.h) points at it, so that the count is one thread-local load and one add. */
TLS uint64_t *mirror_shard;
static TLS int shard_none; /* every shard was taken before this thread's first read */
static uint32_t next_shard;

static __attribute__((noinline)) void count_mirror_read_slow(void)
{
	struct bp_client_page *cp = __atomic_load_n(&client_page, __ATOMIC_RELAXED);
	if (cp == NULL)
		return;
	if (!shard_none) {
		uint32_t s = __atomic_fetch_add(&next_shard, 1, __ATOMIC_RELAXED);
		if (s < BP_CLIENT_SHARDS) {
			mirror_shard = &cp->mirror_read_shards[s];
			__atomic_fetch_add(mirror_shard, 1, __ATOMIC_RELAXED);
			return;
		}
		shard_none = 1;
	}
	__atomic_fetch_add(&cp->mirror_reads, 1, __ATOMIC_RELAXED);
}

void forget_shard(void)
{
	mirror_shard = NULL;
	shard_none = 0;
	next_shard = 0;
}

static inline void count_mirror_read(void)
{
	uint64_t *c = mirror_shard;
	if (UNLIKELY(c == NULL)) {
		count_mirror_read_slow();
		return;
	}
#if defined(__x86_64__)
	/* One unlocked instruction: a signal handler of this thread that reads a perf fd
	 * cannot fall between its load and its store. */
	__asm__ volatile("addq $1, %0" : "+m"(*c));
#else
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
#endif
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

/* Freshness. A page published at upd (CLOCK_MONOTONIC) is fresh while its age, now -
 * upd, is at most stale_ns. The coarse clock c lags now by less than two of its ticks
 * (shim.h), so the age lies in [c - upd, c - upd + 2 ticks): the page is fresh for sure
 * when c - upd <= coarse_fresh (stale_ns minus two ticks), stale for sure when
 * c - upd > stale_ns, and only in between is the precise clock read (counted in the
 * client page). The sidecar's stale bound is two ticks plus its republish period, so a
 * page it republishes on time is judged on the coarse clock alone; with a bound of two
 * ticks or less (a stage that wants values as of every read) every fresh page takes the
 * precise clock. Signed: upd may be ahead of the coarse clock. */
static __attribute__((noinline)) int fresh_precise(uint64_t upd)
{
	COUNT(precise_clock_reads);
	return now_ns() - upd <= stale_ns;
}

static inline int fresh_since(uint64_t upd)
{
	int64_t c = (int64_t)(coarse_ns() - upd);
	if (LIKELY(c <= coarse_fresh))
		return 1;
	if (c > (int64_t)stale_ns)
		return 0;
	return fresh_precise(upd);
}

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
		*fresh = (flags & BP_MIRROR_F_FINAL) ? 3 : (!(flags & BP_MIRROR_F_SYNC) && fresh_since(upd));
		return ret;
	}
	*fresh = 0;
	return 0;
}

static int self_pause(void);
static void self_resume(int paused);

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
		int paused = ev->self ? self_pause() : 0;
		int err = refresh(ev);
		self_resume(paused);
		if (err != 0)
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

/* single_size[fmt & 31] is the size of a single event's read in read_format fmt (the
 * bits below 32: ENABLED, RUNNING, ID, GROUP, LOST), 0 with PERF_FORMAT_GROUP. */
#define SZ(f) ((f) & PERF_FORMAT_GROUP ? 0 : 8 * (1 + !!((f) & 1) + !!((f) & 2) + !!((f) & 4) + !!((f) & 16)))
#define SZ4(f) SZ(f), SZ(f + 1), SZ(f + 2), SZ(f + 3)
static const uint8_t single_size[32] = {SZ4(0), SZ4(4), SZ4(8), SZ4(12), SZ4(16), SZ4(20), SZ4(24), SZ4(28)};
#undef SZ4
#undef SZ
_Static_assert(PERF_FORMAT_TOTAL_TIME_ENABLED == 1 && PERF_FORMAT_TOTAL_TIME_RUNNING == 2 && PERF_FORMAT_ID == 4 &&
		       PERF_FORMAT_GROUP == 8 && PERF_FORMAT_LOST == 16,
	       "read_format bits as in perf_event.h");

/* fast_copy serves the common read of one event (no PERF_FORMAT_GROUP) from a fresh
 * page: the same seqlock read and layout as mirror_copy, straight-line. Returns the bytes
 * written, or 0 when anything is unusual (odd or moving seq, page not OK, group format,
 * short buffer, not fresh): the caller then takes the slow path, which decides afresh and
 * overwrites buf (so buf may already hold this copy, or a torn one).
 *
 * Each field goes from the page straight to buf inside the seqlock, as in mirror_copy:
 * a few predictable branches by format bit, no loop, no memcpy of variable size, and no
 * value held in a register across the clock call (which would have to be saved and
 * restored around it). The branches fall through for perf stat's format,
 * TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING; any other costs a taken jump or two. */
static inline __attribute__((always_inline)) ssize_t fast_copy(const struct bp_mirror_page *pg, void *buf,
								size_t count)
{
	uint32_t s1 = __atomic_load_n(&pg->hdr.seq, __ATOMIC_ACQUIRE);
	uint32_t state = LOAD(pg->hdr.state);
	uint32_t flags = LOAD(pg->hdr.flags);
	uint64_t upd = LOAD(pg->hdr.update_ns);
	uint64_t fmt = LOAD(pg->hdr.read_format);
	uint32_t nr = LOAD(pg->hdr.nr);
	/* perf_read_one: { value, enabled?, running?, id?, lost? }, in read_format bit order.
	 * A group's need is 0, so need - 1 >= count sends it to mirror_copy, as it does a
	 * short buffer. fmt may be torn here, but need is checked against count before
	 * anything is stored. */
	size_t need = single_size[fmt & 31];
	if (UNLIKELY(need - 1 >= count))
		return 0;
	char *o = buf;
#define PUT(x) (memcpy(o, &(uint64_t){LOAD(x)}, 8), o += 8)
	PUT(pg->values[0].value);
	if (LIKELY(fmt & PERF_FORMAT_TOTAL_TIME_ENABLED))
		PUT(pg->hdr.enabled);
	if (LIKELY(fmt & PERF_FORMAT_TOTAL_TIME_RUNNING))
		PUT(pg->hdr.running);
	if (UNLIKELY(fmt & PERF_FORMAT_ID))
		PUT(pg->values[0].id);
	if (UNLIKELY(fmt & PERF_FORMAT_LOST))
		PUT(pg->values[0].lost);
#undef PUT
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	uint32_t s2 = __atomic_load_n(&pg->hdr.seq, __ATOMIC_RELAXED);
	if (UNLIKELY((s1 & 1) || s2 != s1 || state != BP_MIRROR_OK || nr == 0))
		return 0;
	/* Fresh: final values, or published within the staleness bound (clock read after
	 * the copy, so the age is never underestimated) and not to be refreshed at every
	 * read (BP_MIRROR_F_SYNC). */
	if (!(flags & BP_MIRROR_F_FINAL) && UNLIKELY((flags & BP_MIRROR_F_SYNC) || !fresh_since(upd)))
		return 0;
	return (ssize_t)need;
}

static __attribute__((noinline)) ssize_t do_read_slow(struct bp_event *ev, int fd, void *buf, size_t count,
						      ssize_t (*real)(int, void *, size_t));
static __attribute__((noinline)) ssize_t call_real_read(int fd, void *buf, size_t count);

/* read_event serves a read of the registered event ev. Out of line, so that a read of
 * any other fd (do_read) saves no register and makes no call before it jumps to libc. */
static __attribute__((noinline)) ssize_t read_event(int fd, void *buf, size_t count, struct bp_event *ev)
{
	if (UNLIKELY(guard))
		return call_real_read(fd, buf, count);
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
	return do_read_slow(ev, fd, buf, count, call_real_read);
}

/* do_read: every path is a jump, so that a read of any other fd costs a lookup. */
static inline ssize_t do_read(int fd, void *buf, size_t count)
{
	struct bp_event *ev = lookup(fd);
	if (LIKELY(ev != NULL))
		return read_event(fd, buf, count, ev);
	void *f = __atomic_load_n(&real_read_slot, __ATOMIC_ACQUIRE);
	if (LIKELY(f != NULL))
		return ((read_fn)f)(fd, buf, count);
	return call_real_read(fd, buf, count);
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

/* count_ioctl counts a perf ioctl of ev in the client page for the sidecar (no system
 * call: the tool's own events may be counting this very moment): resets in the low 16
 * bits, switches in the high 16. */
static void count_ioctl(struct bp_event *ev, uint32_t inc)
{
	struct bp_client_page *cp = __atomic_load_n(&client_page, __ATOMIC_RELAXED);
	if (cp != NULL && ev->epoch == conn_epoch && ev->handle < BP_CLIENT_IOCTLS)
		__atomic_fetch_add(&cp->ioctls[ev->handle], inc, __ATOMIC_RELAXED);
}

/* ioctl_done applies to ev (and to its group's members with group) what the perf ioctl
 * that just succeeded changes in the shim's view: a reset clears the monotonic value
 * slots; a switch sets the tool's switch state (REFRESH enables until an overflow
 * limit, then the kernel disables: unknown from then on); every reset and switch is
 * counted for the sidecar. */
static void ioctl_done_one(struct bp_event *ev, unsigned long req)
{
	int reset = req == PERF_EVENT_IOC_RESET;
	if (reset)
		reset_values(ev);
	else
		__atomic_store_n(&ev->on, req == PERF_EVENT_IOC_ENABLE ? 1 : req == PERF_EVENT_IOC_DISABLE ? 0 : -1,
				 __ATOMIC_RELAXED);
	count_ioctl(ev, reset ? 1u : 1u << 16);
}

void ioctl_done(struct bp_event *ev, int group, unsigned long req)
{
	ioctl_done_one(ev, req);
	if (!group || __atomic_load_n(&nperf, __ATOMIC_RELAXED) == 0)
		return;
	guard++;
	pthread_mutex_lock(&tab_lock);
	for (int fd = 0; fd < BP_MAX_FD; fd++) {
		struct bp_event *m = fdtab[fd];
		if (m != NULL && m != ev && m->leader == ev->handle && m->epoch == ev->epoch)
			ioctl_done_one(m, req);
	}
	pthread_mutex_unlock(&tab_lock);
	guard--;
}

void prctl_done(int on)
{
	pthread_t me = pthread_self();
	guard++;
	pthread_mutex_lock(&tab_lock);
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++) {
		int fd = __atomic_load_n(&selffd[i], __ATOMIC_RELAXED);
		struct bp_event *ev = fd >= 0 ? fdtab[fd] : NULL;
		if (ev != NULL && pthread_equal(ev->owner, me)) {
			__atomic_store_n(&ev->on, on, __ATOMIC_RELAXED);
			count_ioctl(ev, 1u << 16);
		}
	}
	pthread_mutex_unlock(&tab_lock);
	guard--;
}

/* Reads inside the tool's own window. A read of a self-counting event under a stage that
 * changes values (the virtual PMU) is a synchronous refresh: a round trip to the sidecar
 * (sendmsg, recvmsg, a context switch or two) in the middle of the window the tool is
 * counting, which its own events would count, and the virtual PMU follows those events.
 * So the round trip is made with this thread's events paused: one
 * prctl(PR_TASK_PERF_EVENTS_DISABLE) before it and one ENABLE after. A tool's events see
 * the entry of the first and the exit of the second, as they see the entry and exit of
 * the read(2) it made natively; their time_enabled does not run meanwhile (the round
 * trip's tens of microseconds), which a native read's does (under a microsecond).
 *
 * prctl switches every event the calling thread opened, so the pause is made only when
 * that is exactly right: every such event counts this process only (owned_other is 0:
 * none on another task or CPU, none the table does not hold), every one is still open
 * and listed once in selffd (owned_self of them), and every one is enabled by the tool
 * (on), so the ENABLE restores what the DISABLE stopped. Events other
 * threads opened keep counting, the round trip included, as before. An event the tool
 * closed while a ring it mapped keeps it alive is no longer seen here: prctl would
 * enable it. */
static int self_pause(void)
{
	if (owned_other != 0)
		return 0;
	pthread_t me = pthread_self();
	int mine = 0;
	for (int i = 0; i < __atomic_load_n(&nselffd, __ATOMIC_RELAXED); i++) {
		int fd = __atomic_load_n(&selffd[i], __ATOMIC_RELAXED);
		struct bp_event *ev = fd >= 0 ? lookup(fd) : NULL;
		if (ev == NULL || !pthread_equal(ev->owner, me))
			continue;
		if (__atomic_load_n(&ev->on, __ATOMIC_RELAXED) != 1)
			return 0;
		mine++;
	}
	/* Every one of them seen (selffd keeps BP_SELF_FDS, and a duplicated fd is listed
	 * twice): else one not seen could be disabled, and the ENABLE would enable it. */
	if (mine == 0 || mine != owned_self || raw_syscall6(SYS_prctl, PR_TASK_PERF_EVENTS_DISABLE, 0, 0, 0, 0, 0) != 0)
		return 0;
	COUNT(self_pauses);
	return 1;
}

static void self_resume(int paused)
{
	if (paused)
		(void)raw_syscall6(SYS_prctl, PR_TASK_PERF_EVENTS_ENABLE, 0, 0, 0, 0, 0);
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

static __attribute__((noinline)) ssize_t call_real_read(int fd, void *buf, size_t count)
{
	return real_read()(fd, buf, count);
}

EXPORT ssize_t read(int fd, void *buf, size_t count)
{
	return do_read(fd, buf, count);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t count, size_t buflen)
{
	if (count > buflen || lookup(fd) == NULL)
		return real___read_chk()(fd, buf, count, buflen); /* aborts on overflow, as libc does */
	return do_read(fd, buf, count);
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
		ssize_t r = do_read(fd, iov[i].iov_base, iov[i].iov_len);
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

