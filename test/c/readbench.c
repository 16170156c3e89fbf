/* readbench: ns per read() of a counting perf event, through whatever read() resolves to
 * (the shim's mirror under `bayesperf run`), against the raw read system call (the kernel),
 * on the same fd in the same run.
 *
 *   readbench [ITERATIONS]
 *
 * The event is task-clock of a child process that sleeps: the case of a tool reading a
 * target (perf stat), which the mirror serves without a system call. (Events that count
 * the reader itself are refreshed synchronously on every read, for exactness.) */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perf_helpers.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 200000;
	pid_t child = fork();
	if (child == 0) {
		for (;;)
			pause();
	}
	struct perf_event_attr a;
	sw_attr(&a, PERF_COUNT_SW_TASK_CLOCK);
	a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
	int fd = perf_open(&a, child, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		perror("perf_event_open");
		kill(child, SIGKILL);
		return 1;
	}
	uint64_t v[3];
	int bad = 0;
	for (int round = 0; round < 2; round++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			bad |= syscall(SYS_read, fd, v, sizeof v) != 24;
		double t1 = now_ns();
		for (long i = 0; i < n; i++)
			bad |= read(fd, v, sizeof v) != 24;
		double t2 = now_ns();
		if (round == 1) /* the first round warms up */
			printf("native_ns %.1f\nshim_ns %.1f\nratio %.1f\n", (t1 - t0) / n, (t2 - t1) / n, (t1 - t0) / (t2 - t1));
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return bad;
}
