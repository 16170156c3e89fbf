/* hardening_threads: 8 threads reading and polling 64 perf events at once.
 *
 *   hardening_threads WORK_MS
 *
 * Opens 64 counting events on a child that touches a page and sleeps 1 ms in a loop for
 * WORK_MS ms: 48 single events of six software types with assorted read_formats, and 4
 * groups of 4 read with PERF_FORMAT_GROUP. Eight threads read every event in their own
 * order, check each value and time_enabled never go down (per thread) and every group
 * read has 4 members, and every 16 reads poll() all 64 fds with a zero timeout. Once the
 * child is reaped, every read() must equal the raw read system call (the kernel).
 * Prints "reads N polls N" and exits 0, or prints FAIL lines and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_helpers.h"
#include "time_helpers.h"

#define NEV 64
#define NTHREADS 8
#define NGROUPS 4
#define GROUP 4

static int fails;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (!(cond)) {                                      \
			pthread_mutex_lock(&out_lock);              \
			if (fails++ < 50) {                         \
				printf("FAIL %s:%d: ", __FILE__, __LINE__); \
				printf(__VA_ARGS__);                \
				printf("\n");                       \
			}                                           \
			pthread_mutex_unlock(&out_lock);            \
		}                                                   \
	} while (0)

struct ev {
	int fd;
	uint64_t format;
	size_t size; /* bytes read() returns */
	int leader;  /* a group leader: read has GROUP members */
};

static struct ev evs[NEV];
static pid_t target;
static volatile int done;
static uint64_t total_reads, total_polls;

static const uint64_t configs[] = {PERF_COUNT_SW_PAGE_FAULTS, PERF_COUNT_SW_PAGE_FAULTS_MIN, PERF_COUNT_SW_CONTEXT_SWITCHES,
				  PERF_COUNT_SW_TASK_CLOCK, PERF_COUNT_SW_CPU_CLOCK, PERF_COUNT_SW_CPU_MIGRATIONS};
static const uint64_t formats[] = {0, PERF_FORMAT_ID, PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
				  PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_ID | PERF_FORMAT_LOST};

static int open_ev(uint64_t config, uint64_t format, int group)
{
	struct perf_event_attr a;
	sw_attr(&a, config);
	a.read_format = format;
	int fd = perf_open(&a, target, -1, group, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		printf("FAIL perf_event_open: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static size_t read_size(uint64_t f, int nr)
{
	size_t n = (f & PERF_FORMAT_GROUP) ? 8 : 0, per = 8;
	if (f & PERF_FORMAT_TOTAL_TIME_ENABLED)
		n += 8;
	if (f & PERF_FORMAT_TOTAL_TIME_RUNNING)
		n += 8;
	if (f & PERF_FORMAT_ID)
		per += 8;
	if (f & PERF_FORMAT_LOST)
		per += 8;
	return n + (size_t)nr * per;
}

/* value_at returns the count of member i and time_enabled (0 if not asked) of a read. */
static void decode(const struct ev *e, const uint64_t *b, int i, uint64_t *value, uint64_t *enabled)
{
	int k = 0;
	int group = (e->format & PERF_FORMAT_GROUP) != 0;
	if (group)
		k++; /* nr */
	else
		*value = b[k++];
	*enabled = 0;
	if (e->format & PERF_FORMAT_TOTAL_TIME_ENABLED)
		*enabled = b[k++];
	if (e->format & PERF_FORMAT_TOTAL_TIME_RUNNING)
		k++;
	if (group) {
		int per = 1 + !!(e->format & PERF_FORMAT_ID) + !!(e->format & PERF_FORMAT_LOST);
		*value = b[k + i * per];
	}
}

static void *reader(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t last[NEV][GROUP], last_en[NEV];
	memset(last, 0, sizeof last);
	memset(last_en, 0, sizeof last_en);
	struct pollfd pfd[NEV];
	for (int i = 0; i < NEV; i++)
		pfd[i] = (struct pollfd){.fd = evs[i].fd, .events = POLLIN};
	uint64_t reads = 0, polls = 0;
	while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
		for (int j = 0; j < NEV; j++) {
			int i = (j * (2 * id + 1) + id) % NEV; /* each thread its own order */
			const struct ev *e = &evs[i];
			if (e->fd < 0)
				continue;
			uint64_t b[32];
			ssize_t n = read(e->fd, b, sizeof b);
			reads++;
			CHECK(n == (ssize_t)e->size, "thread %d event %d: read %zd bytes, want %zu", id, i, n, e->size);
			if (n != (ssize_t)e->size)
				continue;
			if (e->leader)
				CHECK(b[0] == GROUP, "thread %d group %d: %llu members", id, i, (unsigned long long)b[0]);
			int nr = e->leader ? GROUP : 1;
			for (int m = 0; m < nr; m++) {
				uint64_t v, en;
				decode(e, b, m, &v, &en);
				CHECK(v >= last[i][m], "thread %d event %d member %d: value went from %llu to %llu", id, i, m,
				      (unsigned long long)last[i][m], (unsigned long long)v);
				last[i][m] = v;
				if (m == 0) {
					CHECK(en >= last_en[i], "thread %d event %d: time_enabled went from %llu to %llu", id, i,
					      (unsigned long long)last_en[i], (unsigned long long)en);
					last_en[i] = en;
				}
			}
			if (reads % 16 == 0) {
				int r = poll(pfd, NEV, 0);
				polls++;
				CHECK(r >= 0, "thread %d: poll: %s", id, strerror(errno));
			}
		}
	}
	__atomic_add_fetch(&total_reads, reads, __ATOMIC_RELAXED);
	__atomic_add_fetch(&total_polls, polls, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	long work = argc > 1 ? atol(argv[1]) : 500;
	int go[2];
	if (pipe(go) < 0)
		return 1;
	target = fork();
	if (target == 0) {
		char c;
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		long pg = sysconf(_SC_PAGESIZE);
		char *p = mmap(NULL, (size_t)(work + 1) * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		double end = now_ms() + work;
		for (long i = 0; now_ms() < end && i <= work; i++) {
			p[i * pg] = 1;
			usleep(1000);
		}
		_exit(0);
	}
	close(go[0]);
	int k = 0;
	for (; k < NEV - NGROUPS * GROUP; k++) {
		uint64_t f = formats[k % 4];
		evs[k] = (struct ev){open_ev(configs[k % 6], f, -1), f, read_size(f, 1), 0};
	}
	for (int g = 0; g < NGROUPS; g++) {
		uint64_t f = PERF_FORMAT_GROUP | formats[g % 4];
		int leader = open_ev(configs[g % 6], f, -1);
		evs[k++] = (struct ev){leader, f, read_size(f, GROUP), 1};
		for (int m = 1; m < GROUP; m++) /* members: counted through their leader's reads */
			evs[k++] = (struct ev){open_ev(configs[(g + m) % 6], f, leader), f, read_size(f, 1) + 8, 0};
	}
	/* A member read with PERF_FORMAT_GROUP returns the whole group too. */
	for (int i = 0; i < NEV; i++)
		if (evs[i].format & PERF_FORMAT_GROUP) {
			evs[i].size = read_size(evs[i].format, GROUP);
			evs[i].leader = 1;
		}
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, reader, (void *)(intptr_t)i);
	if (write(go[1], "g", 1) != 1)
		return 1;
	int st;
	waitpid(target, &st, 0);
	usleep(20000); /* the threads read the final values a while */
	__atomic_store_n(&done, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	uint64_t faults = 0;
	for (int i = 0; i < NEV; i++) {
		uint64_t m[32], kk[32];
		memset(m, 0xa5, sizeof m);
		memset(kk, 0x5a, sizeof kk);
		ssize_t kn = syscall(SYS_read, evs[i].fd, kk, sizeof kk);
		ssize_t mn = read(evs[i].fd, m, sizeof m);
		CHECK(kn == (ssize_t)evs[i].size && mn == kn && memcmp(m, kk, (size_t)kn) == 0,
		      "event %d after the child was reaped: read() %zd bytes, kernel %zd, or different values", i, mn, kn);
		if (i == 0)
			faults = kk[0];
	}
	printf("reads %llu polls %llu page-faults %llu\n", (unsigned long long)total_reads, (unsigned long long)total_polls,
	       (unsigned long long)faults);
	return fails ? 1 : 0;
}
