/* hardening_forktool: a tool that forks and execs under load, for the concurrency test
 * (test/hardening_forkexec_test.go). Run it under `bayesperf run`.
 *
 *   hardening_forktool FORKS [--sidecar-may-die]
 *
 * The parent forks a worker (touches a page, sleeps 1 ms, in a loop), opens 8 counting
 * events on it (page-faults, task-clock, context switches, a group of page-faults +
 * minor-faults read with PERF_FORMAT_GROUP, ...), half of them without CLOEXEC so that
 * exec'd children inherit them, and starts 4 threads that read all 8 in a loop (served
 * from mirrors; many of those reads take the shim's locks to ask for a refresh). Then
 * it prints "ready", waits for a line on stdin, and forks FORKS times while the threads
 * read; each child:
 *   - reads the inherited events (they now pass through to the kernel) and checks
 *     read() has the kernel's size and a value no greater than the raw read system
 *     call's right after (the worker keeps counting);
 *   - opens a page-faults event on itself through the shim (a fresh connection to the
 *     sidecar: the parent's, and its locks, which another thread may have held at the
 *     fork, are not the child's), touches 64 pages, and checks read() (served from a
 *     mirror) equals the raw read and counts at least 64 faults;
 *   - every other child then execs this program with "--exec INHERITED_FD", which does
 *     the same in a fresh process (the shim starts over after exec; the inherited fd,
 *     unknown to it, passes through) and exits 0 when all is well;
 *   - the others _exit with 0 when all is well.
 * The parent reaps every child (a child that hangs hangs the test, which has a timeout),
 * requires status 0 from each, stops the threads, kills and reaps the worker, checks
 * every final read() equals the kernel's byte for byte and that it holds exactly the
 * fds it held before the forks, prints
 * "done forks N execs N reads N fds N", waits for stdin's EOF and exits 0; or prints
 * FAIL lines and exits 1. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf_helpers.h"

#define NEV 8
#define NTHREADS 4

static int fails;
#define CHECK(cond, ...)                                         \
	do {                                                     \
		if (!(cond)) {                                   \
			if (__atomic_fetch_add(&fails, 1, __ATOMIC_RELAXED) < 50) { \
				printf("FAIL %d %s:%d: ", getpid(), __FILE__, __LINE__); \
				printf(__VA_ARGS__);             \
				printf("\n");                    \
				fflush(stdout);                  \
			}                                        \
		}                                                \
	} while (0)

static int fds[NEV];
static size_t sizes[NEV];
static pid_t worker;
static volatile int stop;
static uint64_t total_reads;

static int open_on(pid_t pid, uint64_t config, uint64_t format, int group, int cloexec)
{
	struct perf_event_attr a;
	sw_attr(&a, config);
	a.read_format = format;
	int fd = perf_open(&a, pid, -1, group, cloexec ? PERF_FLAG_FD_CLOEXEC : 0);
	if (fd < 0) {
		printf("FAIL %d perf_event_open: %s\n", getpid(), strerror(errno));
		exit(1);
	}
	return fd;
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	if (d == NULL)
		return -1;
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n - 3; /* ., .. and the DIR's own fd */
}

/* touch_and_check opens page-faults on the caller through the shim, makes 64 faults,
 * and checks the mirror's read() equals the kernel's. */
static void touch_and_check(void)
{
	uint64_t a, b;
	int fd = open_on(0, PERF_COUNT_SW_PAGE_FAULTS, 0, -1, 1);
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 64 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED, "mmap");
	for (int i = 0; i < 64; i++)
		p[i * pg] = 1;
	CHECK(read(fd, &a, 8) == 8, "read own event: %s", strerror(errno));
	CHECK(syscall(SYS_read, fd, &b, 8) == 8, "raw read own event");
	CHECK(a == b && a >= 64, "own page-faults: read() %llu, kernel %llu, want equal and >= 64",
	      (unsigned long long)a, (unsigned long long)b);
	munmap(p, 64 * pg);
	close(fd);
}

/* check_inherited reads an inherited fd with read() and the raw system call. */
static void check_inherited(int fd, size_t size)
{
	uint64_t a[8], b[8];
	/* The events count the worker, which runs on: the kernel's value right after is
	 * not smaller. (The first word of a group read is the member count.) */
	ssize_t n = read(fd, a, size);
	ssize_t m = syscall(SYS_read, fd, b, size);
	int v = size == 24 ? 1 : 0;
	CHECK(n == (ssize_t)size && m == n && a[v] <= b[v] && (v == 0 || a[0] == b[0]),
	      "inherited fd %d: read() %zd bytes (value %llu), kernel %zd (value %llu)", fd, n,
	      (unsigned long long)a[v], m, (unsigned long long)b[v]);
}

static void *reader(void *arg)
{
	(void)arg;
	uint64_t buf[8], last[NEV] = {0};
	uint64_t n = 0;
	while (!stop) {
		for (int i = 0; i < NEV; i++) {
			ssize_t r = read(fds[i], buf, sizes[i]);
			CHECK(r == (ssize_t)sizes[i], "thread read of event %d: %zd bytes, want %zu", i, r, sizes[i]);
			/* the first value is the count (or, in a group read, the member count) */
			uint64_t v = sizes[i] == 8 ? buf[0] : buf[1];
			CHECK(v >= last[i], "event %d went down: %llu after %llu", i, (unsigned long long)v,
			      (unsigned long long)last[i]);
			last[i] = v;
			n++;
		}
	}
	__atomic_add_fetch(&total_reads, n, __ATOMIC_RELAXED);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--exec") == 0) {
		/* The exec'd child: a fresh shim. */
		int fd = atoi(argv[2]);
		check_inherited(fd, 8);
		touch_and_check();
		return fails ? 1 : 0;
	}
	if (argc != 2 && !(argc == 3 && strcmp(argv[2], "--sidecar-may-die") == 0)) {
		fprintf(stderr, "usage: hardening_forktool FORKS [--sidecar-may-die] | --exec FD\n");
		return 2;
	}
	int forks = atoi(argv[1]);
	/* A sidecar killed during the run takes the tool's connection with it: the shim
	 * closes that socket, one fd fewer. */
	int may_die = argc == 3;
	worker = fork();
	if (worker == 0) {
		long pg = sysconf(_SC_PAGESIZE);
		char *p = mmap(NULL, 100000 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		for (long i = 0; p != MAP_FAILED; i = (i + 1) % 100000) {
			p[i * pg]++;
			usleep(1000);
		}
		_exit(1);
	}
	/* Odd events without CLOEXEC: exec'd children inherit them. */
	fds[0] = open_on(worker, PERF_COUNT_SW_PAGE_FAULTS, 0, -1, 0);
	fds[1] = open_on(worker, PERF_COUNT_SW_TASK_CLOCK, PERF_FORMAT_TOTAL_TIME_ENABLED, -1, 1);
	fds[2] = open_on(worker, PERF_COUNT_SW_CONTEXT_SWITCHES, 0, -1, 0);
	fds[3] = open_on(worker, PERF_COUNT_SW_CPU_CLOCK, PERF_FORMAT_ID, -1, 1);
	fds[4] = open_on(worker, PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, -1, 0);
	fds[5] = open_on(worker, PERF_COUNT_SW_CPU_MIGRATIONS, 0, -1, 1);
	fds[6] = open_on(worker, PERF_COUNT_SW_PAGE_FAULTS, PERF_FORMAT_GROUP, -1, 0);
	fds[7] = open_on(worker, PERF_COUNT_SW_PAGE_FAULTS_MIN, 0, fds[6], 1);
	for (int i = 0; i < NEV; i++)
		sizes[i] = i == 1 || i == 3 ? 16 : 8;
	sizes[6] = 24; /* nr, page-faults, minor-faults */
	{
		uint64_t b[8];
		for (int i = 0; i < NEV; i++) {
			ssize_t r = syscall(SYS_read, fds[i], b, sizeof b);
			CHECK(r == (ssize_t)sizes[i], "event %d: the kernel reads %zd bytes, the test expects %zu", i, r, sizes[i]);
		}
	}
	int fds_before = count_fds();
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	printf("ready\n");
	fflush(stdout);
	char line[16];
	if (fgets(line, sizeof line, stdin) == NULL)
		return 2;

	int execs = 0;
	char self[64];
	snprintf(self, sizeof self, "/proc/%d/exe", getpid());
	for (int k = 0; k < forks; k++) {
		int do_exec = k % 2 == 1;
		execs += do_exec;
		pid_t pid = fork();
		if (pid < 0) {
			CHECK(0, "fork: %s", strerror(errno));
			break;
		}
		if (pid == 0) {
			for (int i = 0; i < NEV; i++)
				check_inherited(fds[i], sizes[i]);
			touch_and_check();
			if (do_exec) {
				char arg[16];
				snprintf(arg, sizeof arg, "%d", fds[k / 2 % 3 * 2]); /* 0, 2 or 4: not CLOEXEC */
				fflush(stdout);
				execl(self, "hardening_forktool", "--exec", arg, (char *)NULL);
				printf("FAIL %d exec: %s\n", getpid(), strerror(errno));
				fflush(stdout);
				_exit(1);
			}
			fflush(stdout);
			_exit(fails ? 1 : 0);
		}
		int status;
		CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child %d (exec %d) ended with status %#x", pid, do_exec, status);
	}
	stop = 1;
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	/* The worker is reaped: its counts are final, and every read() (its mirror refreshed
	 * after the reap) must equal the kernel's byte for byte. */
	kill(worker, SIGKILL);
	int wst;
	CHECK(waitpid(worker, &wst, 0) == worker, "reap the worker: %s", strerror(errno));
	for (int i = 0; i < NEV; i++) {
		uint64_t a[8], b[8];
		ssize_t n = read(fds[i], a, sizes[i]);
		ssize_t m = syscall(SYS_read, fds[i], b, sizes[i]);
		CHECK(n == m && n == (ssize_t)sizes[i] && memcmp(a, b, sizes[i]) == 0,
		      "final read of event %d: read() %llu, kernel %llu", i, (unsigned long long)a[sizes[i] == 24],
		      (unsigned long long)b[sizes[i] == 24]);
	}
	int fds_after = count_fds();
	CHECK(fds_after == fds_before || (may_die && fds_after == fds_before - 1), "%d fds after the forks, %d before",
	      fds_after, fds_before);
	printf("done forks %d execs %d reads %llu fds %d\n", forks, execs, (unsigned long long)total_reads, fds_after);
	fflush(stdout);
	while (fgets(line, sizeof line, stdin) != NULL)
		;
	return fails ? 1 : 0;
}
