/* epoll_ring: a sampling event whose ring a tool waits for with epoll, as libbpf's
 * perf_buffer and many hand-written tools do.
 *
 *   epoll_ring wait|pwait|pwait2 [BURSTS]
 *
 * A child touches PAGES_PER_BURST fresh pages per burst, tells the parent (pipe "done")
 * and waits for its go-ahead (pipe "go"), BURSTS times, then exits. The parent samples the
 * child's page faults with period 1 (page-faults -c 1) into an 8-page ring with
 * wakeup_events WAKEUP_EVENTS, and waits with epoll_wait, epoll_pwait or epoll_pwait2 on
 * one epoll set holding the perf fd, "done", and an unrelated pipe made readable once; it
 * waits on a duplicate of the epoll fd (dup, or F_DUPFD_CLOEXEC for pwait2), the original
 * closed.
 *
 * Each time the set reports EPOLLIN on the perf fd the ring must hold records: natively
 * because the kernel woke us after the record that crossed a multiple of WAKEUP_EVENTS,
 * which no earlier drain can have taken (a burst has fewer faults than WAKEUP_EVENTS and
 * the ring is drained only on these wakeups, before the child is let go); through
 * bayesperf because the shim must bring the mirror up to date before the wait returns.
 *
 * Output (one fact per line):
 *   wakeups N         waits that reported EPOLLIN on the perf fd
 *   empty_wakeups N   of those, how many found the ring empty (must be 0)
 *   pipe_events N     reports of the unrelated pipe (must be 1)
 *   samples N         PERF_RECORD_SAMPLE records read
 *   lost N            records the kernel reports lost (PERF_RECORD_LOST)
 *   count N           the event's final count, read() after the child exited
 * Exit status 0 when empty_wakeups is 0, pipe_events is 1, lost is 0, every counted fault
 * was sampled (samples == count) and the waits were woken during the run, not only at its
 * end (at least two wakeups once two multiples of WAKEUP_EVENTS were crossed); 1
 * otherwise; 2 on a setup error. Not one wakeup per multiple: the kernel wakes from
 * irq_work, and on a loaded machine a wakeup can come after the burst's "done" was read
 * and the next burst began, so that one wakeup drains two crossings (natively 19
 * wakeups for 980 samples was seen in CI).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_helpers.h"

#define RING_PAGES 8
#define PAGES_PER_BURST 24
#define WAKEUP_EVENTS 48

static long page_size;

static void die(const char *what)
{
	fprintf(stderr, "epoll_ring: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* child: BURSTS times, wait for a byte on go, touch PAGES_PER_BURST fresh pages, write a
 * byte on done. */
static void child(int go, int done, int bursts)
{
	for (int b = 0; b < bursts; b++) {
		char c;
		if (read(go, &c, 1) != 1)
			_exit(3);
		char *p = mmap(NULL, PAGES_PER_BURST * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(4);
		for (int i = 0; i < PAGES_PER_BURST; i++)
			p[i * page_size] = (char)i;
		if (write(done, "d", 1) != 1)
			_exit(5);
	}
	_exit(0);
}

struct ring {
	struct perf_event_mmap_page *pg;
	uint8_t *data;
	uint64_t size;
};

/* drain consumes every record in the ring; returns how many it found. */
static uint64_t drain(struct ring *r, uint64_t *samples, uint64_t *lost)
{
	uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->pg->data_tail, n = 0;
	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail % r->size;
		/* headers are 8-byte aligned and never straddle the end of the ring */
		memcpy(&h, r->data + off, sizeof h);
		if (h.size < sizeof h)
			break;
		if (h.type == PERF_RECORD_SAMPLE) {
			(*samples)++;
		} else if (h.type == PERF_RECORD_LOST) {
			uint64_t rec[2]; /* id, lost, after the header */
			uint8_t buf[sizeof h + sizeof rec];
			for (size_t i = 0; i < sizeof buf; i++)
				buf[i] = r->data[(off + i) % r->size];
			memcpy(rec, buf + sizeof h, sizeof rec);
			*lost += rec[1];
		}
		tail += h.size;
		n++;
	}
	__atomic_store_n(&r->pg->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

static int wait_set(const char *how, int ep, struct epoll_event *evs, int max)
{
	int n;
	do {
		if (strcmp(how, "wait") == 0) {
			n = epoll_wait(ep, evs, max, 10000);
		} else if (strcmp(how, "pwait") == 0) {
			sigset_t none;
			sigemptyset(&none);
			n = epoll_pwait(ep, evs, max, 10000, &none);
		} else {
			struct timespec ts = {10, 0};
			n = epoll_pwait2(ep, evs, max, &ts, NULL);
		}
	} while (n < 0 && errno == EINTR);
	return n;
}

int main(int argc, char **argv)
{
	if (argc < 2 || (strcmp(argv[1], "wait") && strcmp(argv[1], "pwait") && strcmp(argv[1], "pwait2"))) {
		fprintf(stderr, "usage: epoll_ring wait|pwait|pwait2 [BURSTS]\n");
		return 2;
	}
	const char *how = argv[1];
	int bursts = argc > 2 ? atoi(argv[2]) : 40;
	if (bursts < 1) {
		fprintf(stderr, "epoll_ring: BURSTS must be positive\n");
		return 2;
	}
	page_size = sysconf(_SC_PAGESIZE);
	int go[2], done[2], other[2];
	if (pipe2(go, O_CLOEXEC) || pipe2(done, O_CLOEXEC) || pipe2(other, O_CLOEXEC))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(go[1]);
		close(done[0]);
		child(go[0], done[1], bursts);
	}
	close(go[0]);
	close(done[1]);

	struct perf_event_attr a;
	sw_attr(&a, PERF_COUNT_SW_PAGE_FAULTS);
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
	a.wakeup_events = WAKEUP_EVENTS;
	a.disabled = 1;
	int fd = perf_open(&a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		die("perf_event_open(page-faults of the child)");
	size_t len = (1 + RING_PAGES) * page_size;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap of the ring");
	struct ring r = {.pg = m, .data = (uint8_t *)m + page_size, .size = RING_PAGES * page_size};

	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		die("epoll_create1");
	struct epoll_event e = {.events = EPOLLIN, .data.u64 = 1};
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e))
		die("epoll_ctl(ADD perf fd)");
	e.data.u64 = 2;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, done[0], &e))
		die("epoll_ctl(ADD done)");
	e.data.u64 = 3;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, other[0], &e))
		die("epoll_ctl(ADD pipe)");
	/* Wait on a duplicate of the epoll fd, the original closed: what the shim knows
	 * about the set must follow the open file, not the number. */
	int ep2 = strcmp(how, "pwait2") == 0 ? fcntl(ep, F_DUPFD_CLOEXEC, 20) : dup(ep);
	if (ep2 < 0)
		die("dup of the epoll fd");
	close(ep);
	ep = ep2;
	if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0))
		die("ioctl(ENABLE)");

	uint64_t wakeups = 0, empty = 0, pipe_events = 0, samples = 0, lost = 0;
	int finished = 0, hup = 0, done_open = 1;
	if (write(other[1], "x", 1) != 1 || write(go[1], "g", 1) != 1)
		die("write");
	while (!hup) {
		struct epoll_event evs[4];
		int n = wait_set(how, ep, evs, 4);
		if (n < 0)
			die("epoll wait");
		if (n == 0) {
			fprintf(stderr, "epoll_ring: no event for 10 s (%d bursts finished)\n", finished);
			break;
		}
		/* The ring first: a burst's wakeup is drained before the child is let go. */
		for (int i = 0; i < n; i++) {
			if (evs[i].data.u64 != 1)
				continue;
			if (evs[i].events & EPOLLIN) {
				wakeups++;
				if (drain(&r, &samples, &lost) == 0)
					empty++;
			}
			if (evs[i].events & EPOLLHUP)
				hup = 1;
		}
		for (int i = 0; i < n; i++) {
			char c;
			if (evs[i].data.u64 == 3) {
				if (read(other[0], &c, 1) != 1)
					die("read pipe");
				pipe_events++;
			} else if (evs[i].data.u64 == 2 && done_open) {
				ssize_t k = read(done[0], &c, 1);
				if (k < 0)
					die("read done");
				if (k == 0) { /* the child exited */
					epoll_ctl(ep, EPOLL_CTL_DEL, done[0], NULL);
					done_open = 0;
				} else if (++finished < bursts && write(go[1], "g", 1) != 1) {
					die("write go");
				}
			}
		}
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	drain(&r, &samples, &lost);
	uint64_t count = 0;
	if (read(fd, &count, sizeof count) != sizeof count)
		die("read count");
	printf("wakeups %llu\nempty_wakeups %llu\npipe_events %llu\nsamples %llu\nlost %llu\ncount %llu\n",
	       (unsigned long long)wakeups, (unsigned long long)empty, (unsigned long long)pipe_events,
	       (unsigned long long)samples, (unsigned long long)lost, (unsigned long long)count);
	int ok = empty == 0 && pipe_events == 1 && lost == 0 && samples == count &&
		 (count < 2 * WAKEUP_EVENTS || wakeups >= 2) && finished == bursts && WIFEXITED(status) && WEXITSTATUS(status) == 0;
	return ok ? 0 : 1;
}
