/* readformat: checks that read() on perf fds returns exactly what the kernel returns, in
 * the read_format layout, for every read_format combination, alone and in groups, and
 * that the self-monitoring user page sends a software event's reader to read().
 *
 * Under `bayesperf run`, read() is served by the shim from the sidecar's mirror while
 * syscall(SYS_read, ...) goes straight to the kernel (the shim passes every syscall number
 * but perf_event_open through), so comparing the two checks the mirror against the
 * kernel. The events count a child process that touches pages on command (events that
 * count the reader itself are read from the kernel by the shim, not from a mirror). They
 * are disabled before comparing, so the values cannot move in between and must be equal
 * byte for byte. Natively the two are the same call and the program passes trivially,
 * which checks the program itself.
 *
 * Prints "reads N" (read()/readv() calls on the child's events, each should be a mirror
 * read) and exits 0, or prints FAIL lines and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check_helpers.h"
#include "perf_helpers.h"

static int reads;
static pid_t target;
static int cmd_w, ack_r;

static int open_event(uint64_t config, uint64_t fmt, int group_fd)
{
	struct perf_event_attr a;
	sw_attr(&a, config);
	a.read_format = fmt;
	a.disabled = group_fd < 0;
	int fd = perf_open(&a, target, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		printf("FAIL perf_event_open config %llu format %#llx: %s\n", (unsigned long long)config,
		       (unsigned long long)fmt, strerror(errno));
		exit(1);
	}
	return fd;
}

static size_t expect_size(uint64_t fmt, int nr)
{
	size_t n = (fmt & PERF_FORMAT_GROUP) ? 8 : 0, per = 8;
	if (!(fmt & PERF_FORMAT_GROUP))
		nr = 1;
	n += (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED) ? 8 : 0;
	n += (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING) ? 8 : 0;
	per += (fmt & PERF_FORMAT_ID) ? 8 : 0;
	per += (fmt & PERF_FORMAT_LOST) ? 8 : 0;
	return n + nr * per;
}

/* touch has the target child touch pages and waits until it did. */
static void touch(int pages)
{
	unsigned char c = (unsigned char)pages;
	if (write(cmd_w, &c, 1) != 1 || read(ack_r, &c, 1) != 1) {
		printf("FAIL talk to the target child\n");
		exit(1);
	}
}

/* compare reads fd through libc (the mirror) and through the raw syscall (the kernel). */
static void compare(const char *what, int fd, uint64_t fmt, int nr)
{
	uint64_t m[64], k[64];
	memset(m, 0xa5, sizeof m);
	memset(k, 0x5a, sizeof k);
	ssize_t km = syscall(SYS_read, fd, k, sizeof k);
	ssize_t mm = read(fd, m, sizeof m);
	reads++;
	size_t want = expect_size(fmt, nr);
	CHECK(km == (ssize_t)want, "%s format %#llx: kernel read %zd bytes, want %zu", what, (unsigned long long)fmt, km, want);
	CHECK(mm == km, "%s format %#llx: read() returned %zd, kernel %zd", what, (unsigned long long)fmt, mm, km);
	if (mm == km && km > 0)
		CHECK(memcmp(m, k, (size_t)km) == 0, "%s format %#llx: read() bytes differ from the kernel's (first words %llu/%llu %llu/%llu)",
		      what, (unsigned long long)fmt, (unsigned long long)m[0], (unsigned long long)k[0],
		      (unsigned long long)m[1], (unsigned long long)k[1]);
	/* One byte short: both must fail with ENOSPC. */
	errno = 0;
	ssize_t s = read(fd, m, want - 1);
	reads++;
	CHECK(s == -1 && errno == ENOSPC, "%s format %#llx: short read returned %zd errno %d, want -1 ENOSPC", what,
	      (unsigned long long)fmt, s, errno);
	/* readv with the buffer split in two: the kernel calls perf's read once per iovec
	 * and stops at the first short one; readv() must do the same. */
	uint64_t v[64], kv[64];
	memset(v, 0, sizeof v);
	memset(kv, 0, sizeof kv);
	struct iovec iov[2] = {{v, 8}, {(char *)v + 8, sizeof v - 8}};
	struct iovec kiov[2] = {{kv, 8}, {(char *)kv + 8, sizeof kv - 8}};
	ssize_t krv = syscall(SYS_readv, fd, kiov, 2);
	int kerr = errno;
	ssize_t rv = readv(fd, iov, 2);
	int verr = errno;
	reads += (want <= 8) ? 2 : 1;
	CHECK(rv == krv && (rv >= 0 || verr == kerr) && memcmp(v, kv, sizeof v) == 0,
	      "%s format %#llx: readv returned %zd (errno %d), kernel %zd (errno %d)", what, (unsigned long long)fmt, rv,
	      verr, krv, kerr);
}

static void child_loop(int cmd_r, int ack_w)
{
	unsigned char c;
	while (read(cmd_r, &c, 1) == 1) {
		touch_pages(c);
		if (write(ack_w, &c, 1) != 1)
			break;
	}
	_exit(0);
}

/* sleep_past_stale_bound sleeps longer than the age up to which the shim may serve a
 * mirror without refreshing it: the sidecar's default stale bound, two ticks of the
 * coarse clock plus its 1 ms republish period (sidecar.Config.StaleBound), and 2 ms more.
 * The sidecar republishes every millisecond while a tool reads, but that is best effort
 * on a loaded machine; only past the bound must the next read show new counts. */
static void sleep_past_stale_bound(void)
{
	struct timespec res = {0, 10000000}; /* the sidecar's fallback: a 10 ms tick */
	clock_getres(CLOCK_MONOTONIC_COARSE, &res);
	long long ns = 2 * ((long long)res.tv_sec * 1000000000LL + res.tv_nsec) + 3000000LL;
	struct timespec d = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
	while (nanosleep(&d, &d) != 0 && errno == EINTR)
		;
}

int main(void)
{
	int cmd[2], ack[2];
	if (pipe(cmd) != 0 || pipe(ack) != 0)
		return 1;
	target = fork();
	if (target == 0) {
		close(cmd[1]);
		close(ack[0]);
		child_loop(cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	cmd_w = cmd[1];
	ack_r = ack[0];
	const uint64_t cfg[3] = {PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_CONTEXT_SWITCHES};
	for (uint64_t fmt = 0; fmt < 32; fmt++) {
		int n = (fmt & PERF_FORMAT_GROUP) ? 3 : 1;
		int fds[3];
		for (int i = 0; i < n; i++)
			fds[i] = open_event(cfg[i], fmt, i == 0 ? -1 : fds[0]);
		ioctl(fds[0], PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
		ioctl(fds[0], PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
		touch(50);
		usleep(1000);
		/* While enabled, reads are live: the page-fault count seen through read()
		 * must be at least the 50 faults just made and never go backwards. */
		uint64_t a[64], b[64];
		ssize_t ra = read(fds[0], a, sizeof a);
		reads++;
		touch(20);
		sleep_past_stale_bound();
		ssize_t rb = read(fds[0], b, sizeof b);
		reads++;
		/* The leader's value: first in a single event's layout, after nr, enabled and
		 * running in a group's. */
		size_t voff = (fmt & PERF_FORMAT_GROUP) ? 1 + !!(fmt & PERF_FORMAT_TOTAL_TIME_ENABLED) +
								  !!(fmt & PERF_FORMAT_TOTAL_TIME_RUNNING)
							: 0;
		CHECK(ra == rb && ra == (ssize_t)expect_size(fmt, n), "format %#llx: live reads returned %zd and %zd", (unsigned long long)fmt, ra, rb);
		CHECK(a[voff] >= 50 && b[voff] >= a[voff] + 20, "format %#llx: live page-fault counts %llu then %llu, want >= 50 and +20",
		      (unsigned long long)fmt, (unsigned long long)a[voff], (unsigned long long)b[voff]);
		ioctl(fds[0], PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
		for (int i = 0; i < n; i++)
			compare(i == 0 ? "leader" : "member", fds[i], fmt, n);
		/* A dup of the fd reads the same event. */
		int d = dup(fds[0]);
		compare("dup", d, fmt, n);
		close(d);
		for (int i = n - 1; i >= 0; i--)
			close(fds[i]);
	}

	/* Self-monitoring: the user page of a software event has index 0 (no rdpmc), so a
	 * reader following the documented protocol falls back to read(). */
	int mirrored = reads; /* reads so far were of the child's events, served by mirrors */
	pid_t child = target;
	target = 0; /* this part monitors the program itself */
	int fd = open_event(PERF_COUNT_SW_TASK_CLOCK, PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING, -1);
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	long pg = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pc = mmap(NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(pc != MAP_FAILED, "mmap user page: %s", strerror(errno));
	if (pc != MAP_FAILED) {
		uint32_t seq, idx;
		uint64_t cap;
		do {
			seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
			idx = pc->index;
			cap = pc->capabilities;
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
		} while (__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq);
		CHECK(idx == 0, "user page index %u, want 0 for a software event", idx);
		(void)cap;
		uint64_t v1[3], v2[3];
		volatile unsigned long x = 0;
		for (int i = 0; i < 2000000; i++)
			x += i;
		ssize_t r1 = read(fd, v1, sizeof v1);
		reads++;
		usleep(3000);
		for (int i = 0; i < 2000000; i++)
			x += i;
		ssize_t r2 = read(fd, v2, sizeof v2);
		reads++;
		CHECK(r1 == 24 && r2 == 24, "task-clock reads returned %zd, %zd", r1, r2);
		CHECK(v2[0] > v1[0] && v2[1] > v1[1] && v2[2] > v1[2] && v1[0] > 0,
		      "task-clock did not advance through read(): %llu -> %llu", (unsigned long long)v1[0], (unsigned long long)v2[0]);
		munmap(pc, pg);
	}
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	compare("task-clock", fd, PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING, 1);
	close(fd);
	close(cmd_w);
	waitpid(child, NULL, 0);
	printf("reads %d\n", mirrored);
	return fails ? 1 : 0;
}
