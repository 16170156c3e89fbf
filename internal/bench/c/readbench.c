/* bayesperf-readbench: the measured half of `bayesperf bench read`. It times, in one
 * process and one run, the ways a tool can read a counting perf event, and the age of the
 * values the shim's mirror hands out. `bayesperf bench read` runs it under
 * `bayesperf run` (so libbayesperf.so is preloaded and read() of a registered fd is served
 * from the sidecar's mirror page) and summarises what it prints.
 *
 *   bayesperf-readbench [-b BATCHES] [-n READS_PER_BATCH] [-a AGE_SAMPLES] [-s SEED]
 *
 * Methods, timed batch by batch, interleaved round by round (the order rotates) so that
 * all of them see the same machine load:
 *   native  syscall(SYS_read) on the fd: the kernel, whatever read() resolves to
 *   shim    read() on the same fd: the shim's mirror under bayesperf run
 *   floor   a raw seqlock copy of { value, enabled, running } from a page of the shim's
 *           mirror layout (struct bp_mirror_page) in this process: the least a read of
 *           shared memory can cost
 *   clock   clock_gettime(CLOCK_MONOTONIC_COARSE) alone, the vDSO's function called
 *           directly as the shim calls it: the clock the shim reads on every read to
 *           check the mirror's age (for the breakdown, not a way to read)
 *   precise clock_gettime(CLOCK_MONOTONIC) alone, likewise: the clock the shim reads only
 *           when the coarse one cannot tell whether the mirror is fresh
 *   rdpmc   self-monitoring through the kernel's user page (perf_event_mmap_page) with
 *           the rdpmc instruction, when the kernel sets cap_user_rdpmc
 * The event is task-clock of a child that sleeps, read with TOTAL_TIME_ENABLED|RUNNING:
 * a tool reading a target, like perf stat.
 *
 * Age: how old the values a shim read returns are. The tool cannot ask the shim, but it
 * maps the same mirror page (memfd "bayesperf-mirror"), whose update_ns is the
 * CLOCK_MONOTONIC time of the sidecar's kernel read behind the values. Each sample
 * snapshots the page's (generation, update_ns), reads through the shim at time t, and
 * snapshots again: with no publish in between, age = t - update_ns exactly; otherwise the
 * shim may have refreshed, and t - update_ns of the later snapshot is used (a lower bound;
 * such samples are counted). Samples are spaced by seeded random sleeps of 50-250 us so
 * they do not lock onto the sidecar's republish period.
 *
 * Output, one fact per line (parsed by internal/bench):
 *   readbench 1                version of this format
 *   batch_reads N              reads per timed batch
 *   <method> NS                ns per read of one batch (native, shim, floor, clock, precise,
 *                              rdpmc)
 *   rdpmc_unavailable REASON   instead of rdpmc lines
 *   age_us US                  one age sample
 *   age_ambiguous N            samples where a publish happened around the read
 *   age_unavailable REASON     instead of age lines
 *   checks BAD                 reads that returned a wrong size (must be 0)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../shim/preload/bayesperf_abi.h"
#include "../../../shim/preload/vdso_clock.h"

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int open_event(uint32_t type, uint64_t config, pid_t pid, int cpu, int exclude_kernel)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof a);
	a.type = type;
	a.size = sizeof a;
	a.config = config;
	a.exclude_kernel = exclude_kernel;
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	return (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* ---- floor: the seqlock read of the shim's mirror layout, nothing else ---- */

/* noinline: a tool's read() is a call too; the floor must not be hoisted out of the loop. */
static __attribute__((noinline)) int floor_read(const struct bp_mirror_page *pg, uint64_t *v)
{
	for (;;) {
		uint32_t s = __atomic_load_n(&pg->hdr.seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		v[0] = __atomic_load_n(&pg->values[0].value, __ATOMIC_RELAXED);
		v[1] = __atomic_load_n(&pg->hdr.enabled, __ATOMIC_RELAXED);
		v[2] = __atomic_load_n(&pg->hdr.running, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pg->hdr.seq, __ATOMIC_RELAXED) == s)
			return 24;
	}
}

/* floor_page makes a one-page memfd laid out as a published mirror page and returns a
 * read-only mapping of it, as the shim maps the sidecar's pages. */
static const struct bp_mirror_page *floor_page(void)
{
	int fd = memfd_create("readbench-floor", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, BP_PAGE_SIZE) != 0)
		return NULL;
	struct bp_mirror_page *w = mmap(NULL, BP_PAGE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	const struct bp_mirror_page *r = mmap(NULL, BP_PAGE_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (w == MAP_FAILED || r == MAP_FAILED)
		return NULL;
	w->hdr.magic = BP_MIRROR_MAGIC;
	w->hdr.state = BP_MIRROR_OK;
	w->hdr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	w->hdr.nr = 1;
	w->hdr.enabled = w->hdr.running = 1000;
	w->values[0].value = 42;
	__atomic_store_n(&w->hdr.seq, 2, __ATOMIC_SEQ_CST);
	return r;
}

/* ---- rdpmc through the kernel's user page ---- */

static struct perf_event_mmap_page *rdpmc_page;
static char rdpmc_reason[256];

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t rdpmc(uint32_t c)
{
	uint32_t lo, hi;
	__asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(c));
	return lo | (uint64_t)hi << 32;
}

/* The read loop of include/uapi/linux/perf_event.h (perf_event_mmap_page). */
static __attribute__((noinline)) int rdpmc_read(uint64_t *v)
{
	volatile struct perf_event_mmap_page *pc = rdpmc_page;
	uint32_t seq, idx;
	uint64_t count;
	do {
		seq = pc->lock;
		__asm__ volatile("" ::: "memory");
		v[1] = pc->time_enabled;
		v[2] = pc->time_running;
		idx = pc->index;
		count = pc->offset;
		if (pc->cap_user_rdpmc && idx) {
			uint16_t width = pc->pmc_width;
			int64_t pmc = (int64_t)rdpmc(idx - 1);
			pmc <<= 64 - width;
			pmc >>= 64 - width;
			count += (uint64_t)pmc;
		}
		__asm__ volatile("" ::: "memory");
	} while (pc->lock != seq);
	v[0] = count;
	return 24;
}
#endif

/* rdpmc_setup opens instructions on this thread and maps its user page with the raw mmap
 * system call (the kernel's page, not a mirror). It leaves rdpmc_page NULL and says why
 * in rdpmc_reason when the counter cannot be read from user space. */
static void rdpmc_setup(void)
{
#if !defined(__x86_64__) && !defined(__i386__)
	snprintf(rdpmc_reason, sizeof rdpmc_reason, "rdpmc is an x86 instruction; this is not x86");
	return;
#else
	int fd = open_event(PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, 0, -1, 1);
	if (fd < 0) {
		int e = errno;
		snprintf(rdpmc_reason, sizeof rdpmc_reason,
			 "no hardware counter to read: perf_event_open(instructions, self) failed: %s "
			 "(no PMU is exposed to this machine; software events have no counter, their "
			 "user page never sets cap_user_rdpmc)",
			 strerror(e));
		return;
	}
	long pg = sysconf(_SC_PAGESIZE);
	void *p = (void *)syscall(SYS_mmap, NULL, pg, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED || p == NULL) {
		snprintf(rdpmc_reason, sizeof rdpmc_reason, "mmap of the event's user page failed: %s", strerror(errno));
		return;
	}
	struct perf_event_mmap_page *pc = p;
	if (!pc->cap_user_rdpmc) {
		snprintf(rdpmc_reason, sizeof rdpmc_reason,
			 "the kernel does not set cap_user_rdpmc on the user page of instructions "
			 "(see /sys/bus/event_source/devices/cpu/rdpmc)");
		return;
	}
	rdpmc_page = pc;
#endif
}

/* ---- age of the shim's values ---- */

/* find_mirror returns the mapping of a bayesperf mirror page (by the sidecar's memfd
 * name) that is not in skip[0..nskip), or NULL. */
static const struct bp_mirror_page *find_mirror(const struct bp_mirror_page **skip, int nskip)
{
	FILE *f = fopen("/proc/self/maps", "re");
	if (f == NULL)
		return NULL;
	char line[512];
	const struct bp_mirror_page *found = NULL;
	while (found == NULL && fgets(line, sizeof line, f)) {
		if (strstr(line, "/memfd:bayesperf-mirror") == NULL)
			continue;
		unsigned long lo = strtoul(line, NULL, 16);
		const struct bp_mirror_page *pg = (const struct bp_mirror_page *)lo;
		int seen = 0;
		for (int i = 0; i < nskip; i++)
			seen |= skip[i] == pg;
		if (!seen && pg->hdr.magic == BP_MIRROR_MAGIC)
			found = pg;
	}
	fclose(f);
	return found;
}

static void snap(const struct bp_mirror_page *pg, uint64_t *gen, uint64_t *upd)
{
	for (;;) {
		uint32_t s = __atomic_load_n(&pg->hdr.seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			continue;
		*gen = __atomic_load_n(&pg->hdr.generation, __ATOMIC_RELAXED);
		*upd = __atomic_load_n(&pg->hdr.update_ns, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&pg->hdr.seq, __ATOMIC_RELAXED) == s)
			return;
	}
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int age_run(pid_t child, long samples, uint64_t seed)
{
	const struct bp_mirror_page *before[64];
	int nb = 0;
	const struct bp_mirror_page *pg;
	while (nb < 64 && (pg = find_mirror(before, nb)) != NULL)
		before[nb++] = pg;
	int fd = open_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, child, -1, 0);
	if (fd < 0) {
		printf("age_unavailable perf_event_open(task-clock of the child) failed: %s\n", strerror(errno));
		return 0;
	}
	uint64_t v[3];
	int bad = read(fd, v, sizeof v) != 24; /* the first read makes sure the page is published */
	pg = find_mirror(before, nb);
	if (pg == NULL) {
		printf("age_unavailable no bayesperf mirror page is mapped for the event: not running under bayesperf run\n");
		close(fd);
		return bad;
	}
	uint64_t s = seed ? seed : 1;
	long ambiguous = 0;
	for (long i = 0; i < samples; i++) {
		struct timespec d = {0, (long)(50000 + xorshift(&s) % 200000)};
		nanosleep(&d, NULL);
		uint64_t g1, u1, g2, u2;
		snap(pg, &g1, &u1);
		uint64_t t0 = now_ns();
		bad |= read(fd, v, sizeof v) != 24;
		uint64_t t1 = now_ns();
		snap(pg, &g2, &u2);
		double age;
		if (g1 == g2) {
			age = (double)((t0 + t1) / 2) - (double)u1;
		} else {
			age = (double)t1 - (double)u2;
			ambiguous++;
		}
		printf("age_us %.3f\n", age / 1e3);
	}
	printf("age_ambiguous %ld\n", ambiguous);
	close(fd);
	return bad;
}

/* ---- main ---- */

enum { M_NATIVE, M_SHIM, M_FLOOR, M_CLOCK, M_PRECISE, M_RDPMC, NMETHODS };
static const char *names[NMETHODS] = {"native", "shim", "floor", "clock", "precise", "rdpmc"};

/* The shim calls the vDSO's clock_gettime directly, not libc's wrapper around it (shim.h,
 * clock_fn); the clock methods time that same function, found the way the shim finds it,
 * and libc's clock_gettime where it is not found. */
static clock_gettime_fn vdso_clock = clock_gettime;

/* clock_read is the clock the shim reads on every read to check that the values are
 * fresh: clock_gettime(CLOCK_MONOTONIC_COARSE) (vDSO, no system call, no clock read). */
static __attribute__((noinline)) int clock_read(uint64_t *v)
{
	struct timespec ts;
	vdso_clock(CLOCK_MONOTONIC_COARSE, &ts);
	v[0] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 24;
}

/* precise_read is the clock the shim reads only when the coarse one cannot tell:
 * clock_gettime(CLOCK_MONOTONIC) (vDSO, reads the clocksource). */
static __attribute__((noinline)) int precise_read(uint64_t *v)
{
	struct timespec ts;
	vdso_clock(CLOCK_MONOTONIC, &ts);
	v[0] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return 24;
}

int main(int argc, char **argv)
{
	long batches = 200, per = 1000, ages = 2000;
	uint64_t seed = 1;
	int o;
	while ((o = getopt(argc, argv, "b:n:a:s:")) != -1) {
		switch (o) {
		case 'b': batches = atol(optarg); break;
		case 'n': per = atol(optarg); break;
		case 'a': ages = atol(optarg); break;
		case 's': seed = strtoull(optarg, NULL, 10); break;
		default:
			fprintf(stderr, "usage: %s [-b BATCHES] [-n READS_PER_BATCH] [-a AGE_SAMPLES] [-s SEED]\n", argv[0]);
			return 2;
		}
	}
	if (batches < 1 || per < 1 || ages < 0) {
		fprintf(stderr, "readbench: batches and reads per batch must be positive, age samples not negative\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	pid_t child = fork();
	if (child < 0) {
		perror("readbench: fork");
		return 1;
	}
	if (child == 0) {
		for (;;)
			pause();
	}
	int fd = open_event(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, child, -1, 0);
	const struct bp_mirror_page *fp = floor_page();
	if (fd < 0 || fp == NULL) {
		fprintf(stderr, "readbench: %s: %s\n", fd < 0 ? "perf_event_open(task-clock of the child)" : "floor page", strerror(errno));
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return 1;
	}
	rdpmc_setup();
	vdso_clock = vdso_clock_gettime();
	int nm = rdpmc_page ? NMETHODS : M_RDPMC;

	printf("readbench 1\nbatch_reads %ld\n", per);
	if (!rdpmc_page)
		printf("rdpmc_unavailable %s\n", rdpmc_reason);
	long bad = 0;
	uint64_t v[3];
	/* round -1 warms caches, the mirror and the sidecar's active mode; it is not printed */
	for (long r = -1; r < batches; r++) {
		for (int k = 0; k < nm; k++) {
			int m = (int)((r + 1 + k) % nm);
			uint64_t t0 = now_ns();
			switch (m) {
			case M_NATIVE:
				for (long i = 0; i < per; i++)
					bad += syscall(SYS_read, fd, v, sizeof v) != 24;
				break;
			case M_SHIM:
				for (long i = 0; i < per; i++)
					bad += read(fd, v, sizeof v) != 24;
				break;
			case M_FLOOR:
				for (long i = 0; i < per; i++)
					bad += floor_read(fp, v) != 24;
				break;
			case M_CLOCK:
				for (long i = 0; i < per; i++)
					bad += clock_read(v) != 24;
				break;
			case M_PRECISE:
				for (long i = 0; i < per; i++)
					bad += precise_read(v) != 24;
				break;
#if defined(__x86_64__) || defined(__i386__)
			case M_RDPMC:
				for (long i = 0; i < per; i++)
					bad += rdpmc_read(v) != 24;
				break;
#endif
			}
			uint64_t t1 = now_ns();
			if (r >= 0)
				printf("%s %.2f\n", names[m], (double)(t1 - t0) / (double)per);
		}
	}
	fflush(stdout);
	if (ages > 0)
		bad += age_run(child, ages, seed);
	printf("checks %ld\n", bad);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return bad != 0;
}
