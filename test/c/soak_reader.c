/* soak_reader: a deliberately slow reader of sampling rings, for the no-loss soak
 * (test/hardening_soak_test.go). Run it under `bayesperf run`, so its rings are the
 * sidecar's mirrors.
 *
 *   soak_reader DURATION_MS SEED
 *
 * It forks a child that faults as fast as it can (maps, touches and unmaps 256 pages
 * in a loop) for DURATION_MS, and opens one group on that child:
 *   A  page-faults,  sampling with period 1 (one sample per fault), its own ring
 *   C  minor-faults, sampling with period 1, its own ring
 *   B  page-faults,  counting only (the hidden witness of A)
 * Each ring has 8 data pages (about 1300 records). The reader drains them in bursts of
 * a random number of records (0..600, drawn from SEED) with random sleeps (0..20 ms) in
 * between, and every 2 s stops reading until the kernel has dropped samples on both rings,
 * so the mirrors fill, the sidecar stops taking records from the kernel's rings
 * (backpressure), and the kernel drops samples and reports them in PERF_RECORD_LOST.
 *
 * Why the identity is exact. A software event with sample_period 1 adds 1 to its count
 * and overflows once per fault, and an overflow is never throttled (the kernel only
 * throttles the second and later overflows of one event call, and there is one per
 * fault); each overflow is either written to the ring as a SAMPLE or, when the ring is
 * full, counted as lost. The kernel reports lost samples in a PERF_RECORD_LOST written
 * before the next sample that fits, so at the end the child is held (blocked on a pipe,
 * faulting nothing) while the reader drains everything, then makes 4 more faults into
 * empty rings, which flushes any pending loss report, and exits. So, per event:
 *     count (read from the kernel with the raw read system call, not the shim)
 *       == SAMPLE records received + sum of PERF_RECORD_LOST.lost
 * and also lost == PERF_FORMAT_LOST's lost (the kernel's own count of dropped samples),
 * and A's count == B's count (an independent counter of the same faults, in the same
 * group, so enabled over the same interval).
 *
 * Draining completely: the reader empties the mirror, then asks the shim to flush (an
 * ioctl PAUSE_OUTPUT(0), a no-op for the kernel, makes the shim have the sidecar pump
 * every ring), then empties it again; a flush into an empty mirror moves everything
 * the kernel's ring holds, so when a drain after a flush finds nothing, the kernel's
 * ring was empty.
 *
 * Prints one line per event:
 *   event NAME count N samples S lost L lost_records R format_lost F foreign X
 * and "witness N" (B's count); exits 0 when it could run, whatever the counts (the test
 * judges them), non-zero with a message when something failed. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_helpers.h"
#include "time_helpers.h"

#define DATA_PAGES 8

struct ring {
	const char *name;
	int fd;
	uint64_t id;
	struct perf_event_mmap_page *meta;
	char *data;
	uint64_t size;
	uint64_t samples, lost, lost_records, foreign;
};

static void die(const char *what)
{
	fprintf(stderr, "soak_reader: %s: %s\n", what, strerror(errno));
	exit(2);
}

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (rng_state >> 33) % n;
}

static int open_event(uint64_t config, int sampling, uint64_t read_format, pid_t pid, int group)
{
	struct perf_event_attr a;
	sw_attr(&a, config);
	a.disabled = group < 0;
	a.read_format = read_format;
	if (sampling) {
		a.sample_period = 1;
		a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID;
		a.wakeup_events = 1;
	}
	/* Through syscall(): the shim opens it in this process and registers it. */
	int fd = perf_open(&a, pid, -1, group, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		die("perf_event_open");
	return fd;
}

static void map_ring(struct ring *r)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)(1 + DATA_PAGES) * pg, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (m == MAP_FAILED)
		die("mmap ring");
	r->meta = m;
	r->data = (char *)m + pg;
	r->size = (uint64_t)DATA_PAGES * pg;
	if (ioctl(r->fd, PERF_EVENT_IOC_ID, &r->id) != 0)
		die("ioctl ID");
}

/* drain takes up to max records (max < 0: all) from r and returns how many it took. */
static long drain(struct ring *r, long max)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;
	long n = 0;
	while (tail < head && (max < 0 || n < max)) {
		struct perf_event_header h;
		char rec[64];
		uint64_t off = tail % r->size;
		for (size_t i = 0; i < sizeof h; i++)
			((char *)&h)[i] = r->data[(off + i) % r->size];
		if (h.size < sizeof h || h.size > sizeof rec || tail + h.size > head) {
			fprintf(stderr, "soak_reader: %s: bad record size %u at %llu (head %llu)\n", r->name, h.size,
				(unsigned long long)tail, (unsigned long long)head);
			exit(2);
		}
		for (size_t i = 0; i < h.size; i++)
			rec[i] = r->data[(off + i) % r->size];
		uint64_t id, lost;
		switch (h.type) {
		case PERF_RECORD_SAMPLE:
			memcpy(&id, rec + 8, 8); /* PERF_SAMPLE_IDENTIFIER comes first */
			if (id == r->id)
				r->samples++;
			else
				r->foreign++;
			break;
		case PERF_RECORD_LOST:
			memcpy(&id, rec + 8, 8);
			memcpy(&lost, rec + 16, 8);
			if (id == r->id) {
				r->lost += lost;
				r->lost_records++;
			} else
				r->foreign++;
			break;
		default:
			r->foreign++;
		}
		tail += h.size;
		n++;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	return n;
}

/* settle drains every ring until a flush into empty mirrors brings nothing. */
static void settle(struct ring *rs, int nr)
{
	for (int round = 0; round < 1000; round++) {
		long got = 0;
		for (int i = 0; i < nr; i++)
			got += drain(&rs[i], -1);
		for (int i = 0; i < nr; i++)
			ioctl(rs[i].fd, PERF_EVENT_IOC_PAUSE_OUTPUT, 0); /* the shim flushes the rings */
		for (int i = 0; i < nr; i++)
			got += drain(&rs[i], -1);
		if (got == 0)
			return;
	}
	fprintf(stderr, "soak_reader: rings still delivering after 1000 drain rounds\n");
	exit(2);
}

/* lost_now is the kernel's own count of samples it dropped on r (PERF_FORMAT_LOST), read
 * with the raw read system call. */
static uint64_t lost_now(const struct ring *r)
{
	uint64_t v[2];
	if (syscall(SYS_read, r->fd, v, sizeof v) != (long)sizeof v)
		die("read lost");
	return v[1];
}

/* stall stops reading until the kernel has dropped samples on every ring, the child is
 * done, or 3 s pass. Random bursts alone keep up with a child slowed by a loaded machine
 * (CI saw 20,000 faults a second and no loss on one ring in 8 s); a stall makes the
 * mirror and then the kernel's ring fill at any fault rate, so every soak has losses to
 * account for. */
static void stall(struct ring *rs, int nr, struct pollfd *done)
{
	uint64_t before[8];
	for (int i = 0; i < nr; i++)
		before[i] = lost_now(&rs[i]);
	double end = now_ms() + 3000;
	while (now_ms() < end && poll(done, 1, 0) == 0) {
		int all = 1;
		for (int i = 0; i < nr; i++)
			all &= lost_now(&rs[i]) > before[i];
		if (all)
			return;
		struct timespec ts = {0, 5 * 1000 * 1000};
		nanosleep(&ts, NULL);
	}
}

static void child(int go, int done, int tail, double ms)
{
	char c;
	long pg = sysconf(_SC_PAGESIZE);
	if (read(go, &c, 1) != 1)
		_exit(3);
	double end = now_ms() + ms;
	while (now_ms() < end) {
		char *p = mmap(NULL, 256 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(4);
		for (long i = 0; i < 256; i++)
			p[i * pg] = 1;
		munmap(p, 256 * pg);
	}
	char *last = mmap(NULL, 4 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (last == MAP_FAILED || write(done, "d", 1) != 1 || read(tail, &c, 1) != 1)
		_exit(5);
	for (long i = 0; i < 4; i++)
		last[i * pg] = 1;
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: soak_reader DURATION_MS SEED\n");
		return 2;
	}
	double ms = atof(argv[1]);
	rng_state = strtoull(argv[2], NULL, 10) + 1;
	int go[2], done[2], tail[2];
	if (pipe(go) || pipe(done) || pipe(tail))
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		child(go[0], done[1], tail[0], ms);

	struct ring rs[2] = {{.name = "page-faults"}, {.name = "minor-faults"}};
	rs[0].fd = open_event(PERF_COUNT_SW_PAGE_FAULTS, 1, PERF_FORMAT_LOST, pid, -1);
	rs[1].fd = open_event(PERF_COUNT_SW_PAGE_FAULTS_MIN, 1, PERF_FORMAT_LOST, pid, rs[0].fd);
	int witness = open_event(PERF_COUNT_SW_PAGE_FAULTS, 0, 0, pid, rs[0].fd);
	map_ring(&rs[0]);
	map_ring(&rs[1]);
	if (ioctl(rs[0].fd, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP) != 0)
		die("ioctl ENABLE");
	if (write(go[1], "g", 1) != 1)
		die("start the child");

	/* The slow reader: bursts of 0..600 records per ring, sleeps of 0..20 ms, and a stall
	 * until both rings lose samples once every 2 s (the first after 0.5 s). */
	struct pollfd pd = {.fd = done[0], .events = POLLIN};
	long bursts = 0;
	double next_stall = now_ms() + 500;
	while (poll(&pd, 1, 0) == 0) {
		if (now_ms() >= next_stall) {
			stall(rs, 2, &pd);
			next_stall = now_ms() + 2000;
		}
		for (int i = 0; i < 2; i++)
			drain(&rs[i], (long)rnd(601));
		struct timespec ts = {0, (long)rnd(20001) * 1000};
		nanosleep(&ts, NULL);
		bursts++;
	}
	/* The child is held: drain everything, then let it make its last faults and exit. */
	settle(rs, 2);
	if (write(tail[1], "t", 1) != 1)
		die("release the child");
	int status;
	if (waitpid(pid, &status, 0) != pid)
		die("waitpid");
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "soak_reader: child ended with status %#x\n", status);
		return 2;
	}
	settle(rs, 2);

	for (int i = 0; i < 2; i++) {
		uint64_t v[2];
		/* syscall(SYS_read) goes to the kernel: the shim only interposes read(). */
		if (syscall(SYS_read, rs[i].fd, v, sizeof v) != (long)sizeof v)
			die("read count");
		printf("event %s count %llu samples %llu lost %llu lost_records %llu format_lost %llu foreign %llu\n",
		       rs[i].name, (unsigned long long)v[0], (unsigned long long)rs[i].samples,
		       (unsigned long long)rs[i].lost, (unsigned long long)rs[i].lost_records,
		       (unsigned long long)v[1], (unsigned long long)rs[i].foreign);
	}
	uint64_t w;
	if (syscall(SYS_read, witness, &w, sizeof w) != (long)sizeof w)
		die("read witness");
	printf("witness %llu\nbursts %ld\n", (unsigned long long)w, bursts);
	return 0;
}
