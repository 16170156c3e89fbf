/* perf_helpers.h: the perf_event_open(2) call the C test programs share, and the page
 * faults they count.
 *
 * glibc has no wrapper, so tools (perf, PAPI) call syscall(SYS_perf_event_open, ...); so
 * does perf_open, because that is the path libbayesperf.so interposes: a program that
 * opened its events another way would not test the shim. Header-only (static inline), so
 * that each program still builds from its one .c file: gcc -o prog prog.c. */
#ifndef BAYESPERF_TEST_PERF_HELPERS_H
#define BAYESPERF_TEST_PERF_HELPERS_H

#include <linux/perf_event.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

/* sw_attr zeroes *a and sets it up for the software event config (a PERF_COUNT_SW_*),
 * with size = sizeof *a; callers add read_format, disabled, sampling, or size 0 for the
 * 64-byte first version. */
static inline void sw_attr(struct perf_event_attr *a, uint64_t config)
{
	memset(a, 0, sizeof *a);
	a->type = PERF_TYPE_SOFTWARE;
	a->size = sizeof *a;
	a->config = config;
}

/* perf_open is perf_event_open(2): the new fd, or -1 with errno set. */
static inline int perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group_fd, unsigned long flags)
{
	return (int)syscall(SYS_perf_event_open, a, pid, cpu, group_fd, flags);
}

/* touch_pages maps pages anonymous pages, writes a byte to each (one page fault each, for
 * page-faults and minor-faults to count) and unmaps them. */
static inline void touch_pages(int pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pages * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	for (int i = 0; i < pages; i++)
		p[i * pg] = 1;
	munmap(p, pages * pg);
}

#endif
