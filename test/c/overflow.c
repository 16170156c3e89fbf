/* overflow: the overflow-signal path PAPI_overflow uses, without PAPI (whose perf_event
 * component needs a hardware PMU this VM lacks): a sampling task-clock event on the
 * process itself, fcntl(F_SETFL, O_ASYNC) + F_SETSIG + F_SETOWN_EX, ioctl(REFRESH) to
 * re-arm after each overflow, and a handler that reads the counter with read() while
 * the main thread keeps reading it too (so a read in a signal handler can interrupt one
 * in progress). Prints "signals N reads M" and exits 0 when every signal came with the
 * event's fd and the counts only grew. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_helpers.h"

static volatile sig_atomic_t signals, badfd, backwards;
static int fd;
static uint64_t last;

static void handler(int sig, siginfo_t *info, void *uc)
{
	(void)sig;
	(void)uc;
	signals++;
	if (info->si_fd != fd)
		badfd++;
	uint64_t v;
	if (read(fd, &v, sizeof v) == sizeof v) {
		if (v < last)
			backwards++;
		last = v;
	}
	ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
}

int main(void)
{
	struct perf_event_attr a;
	sw_attr(&a, PERF_COUNT_SW_TASK_CLOCK);
	a.sample_period = 2000000; /* 2 ms of CPU */
	a.sample_type = PERF_SAMPLE_IP;
	a.disabled = 1;
	a.wakeup_events = 1;
	fd = perf_open(&a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("perf_event_open");
		return 1;
	}
	long pg = sysconf(_SC_PAGESIZE);
	void *ring = mmap(NULL, 9 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGRTMIN + 2, &sa, NULL);
	struct f_owner_ex owner = {.type = F_OWNER_TID, .pid = (pid_t)syscall(SYS_gettid)};
	if (fcntl(fd, F_SETFL, O_ASYNC) != 0 || fcntl(fd, F_SETSIG, SIGRTMIN + 2) != 0 ||
	    fcntl(fd, F_SETOWN_EX, &owner) != 0) {
		perror("fcntl");
		return 1;
	}
	ioctl(fd, PERF_EVENT_IOC_RESET, 0);
	ioctl(fd, PERF_EVENT_IOC_REFRESH, 1);
	/* 300 ms of this thread's CPU time (at most 10 s of wall time): signals come per
	 * 2 ms of CPU, so a run on a loaded machine gets as many as on an idle one, and the
	 * test can compare runs with and without bayesperf. */
	struct timespec c0, c, w0, w;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	clock_gettime(CLOCK_MONOTONIC, &w0);
	long reads = 0;
	do {
		uint64_t v;
		if (read(fd, &v, sizeof v) == sizeof v)
			reads++;
		for (volatile int i = 0; i < 20000; i++)
			;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
		clock_gettime(CLOCK_MONOTONIC, &w);
	} while ((c.tv_sec - c0.tv_sec) * 1000000000L + (c.tv_nsec - c0.tv_nsec) < 300000000L &&
		 (w.tv_sec - w0.tv_sec) < 10);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	printf("signals %d reads %ld\n", (int)signals, reads);
	if (signals < 10 || badfd || backwards) {
		printf("FAIL signals %d (want >= 10), with a wrong si_fd %d, counts going backwards %d\n", (int)signals,
		       (int)badfd, (int)backwards);
		return 1;
	}
	return 0;
}
