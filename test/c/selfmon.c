/* selfmon: a self-monitoring program, the way stress-ng --perf and PAPI programs count
 * their own work: it opens events on itself (pid 0, disabled), and for each of WINDOWS
 * windows resets and enables them, does a fixed amount of work, reads them MIDREADS
 * times inside the window (a program watching its own counters), disables them, and
 * reads them once more. Only what happens between its ENABLE and DISABLE ioctls may be
 * counted: under `bayesperf run` the shim's own work must stay outside that window.
 *
 *   selfmon WINDOWS SYSCALLS PAGES MIDREADS
 *
 * The work of one window: SYSCALLS getppid() system calls, then PAGES fresh pages
 * touched (one page fault each). Prints, per event, one line
 *   "EVENT total T scaled S enabled E running R"
 * summed over the windows: T the raw values read after each DISABLE, S each scaled by
 * enabled/running as stress-ng and perf stat do (equal to T when nothing multiplexes).
 * Exits 1 with a FAIL line when an event cannot be opened or read. */
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
#include <unistd.h>

#include "perf_helpers.h"

struct ev {
	const char *name;
	uint32_t type;
	uint64_t config;
	int fd;
	double total, scaled, enabled, running;
};

/* tracepoint_id reads the id of a tracepoint from tracefs (0 when it cannot). */
static uint64_t tracepoint_id(const char *name)
{
	char path[256];
	snprintf(path, sizeof path, "/sys/kernel/tracing/events/%s/id", name);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return 0;
	unsigned long long id = 0;
	if (fscanf(f, "%llu", &id) != 1)
		id = 0;
	fclose(f);
	return id;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: selfmon WINDOWS SYSCALLS PAGES MIDREADS\n");
		return 2;
	}
	int windows = atoi(argv[1]);
	long nsys = atol(argv[2]), pages = atol(argv[3]), mid = atol(argv[4]);
	struct ev evs[] = {
		{"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, -1, 0, 0, 0, 0},
		{"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, -1, 0, 0, 0, 0},
		{"raw_syscalls:sys_enter", PERF_TYPE_TRACEPOINT, 0, -1, 0, 0, 0, 0},
		{"syscalls:sys_enter_getppid", PERF_TYPE_TRACEPOINT, 0, -1, 0, 0, 0, 0},
	};
	int n = (int)(sizeof evs / sizeof evs[0]);
	for (int i = 0; i < n; i++) {
		if (evs[i].type == PERF_TYPE_TRACEPOINT) {
			char tp[128];
			snprintf(tp, sizeof tp, "%s", evs[i].name);
			*strchr(tp, ':') = '/';
			evs[i].config = tracepoint_id(tp);
			if (evs[i].config == 0) {
				printf("FAIL no tracepoint id for %s\n", evs[i].name);
				return 1;
			}
		}
		struct perf_event_attr a;
		sw_attr(&a, evs[i].config);
		a.type = evs[i].type;
		a.disabled = 1;
		a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
		evs[i].fd = perf_open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (evs[i].fd < 0) {
			printf("FAIL perf_event_open %s: %s\n", evs[i].name, strerror(errno));
			return 1;
		}
	}
	long psz = sysconf(_SC_PAGESIZE);
	for (int w = 0; w < windows; w++) {
		/* Map before the window, touch inside it: one fault per page in the window. */
		char *mem = mmap(NULL, (size_t)(pages > 0 ? pages : 1) * (size_t)psz, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED) {
			printf("FAIL mmap: %s\n", strerror(errno));
			return 1;
		}
		for (int i = 0; i < n; i++)
			ioctl(evs[i].fd, PERF_EVENT_IOC_RESET, 0);
		for (int i = 0; i < n; i++)
			ioctl(evs[i].fd, PERF_EVENT_IOC_ENABLE, 0);
		for (long r = 0; r <= mid; r++) {
			long lo = nsys * r / (mid + 1), hi = nsys * (r + 1) / (mid + 1);
			for (long k = lo; k < hi; k++)
				syscall(SYS_getppid);
			long plo = pages * r / (mid + 1), phi = pages * (r + 1) / (mid + 1);
			for (long p = plo; p < phi; p++)
				mem[p * psz] = 1;
			if (r < mid)
				for (int i = 0; i < n; i++) {
					uint64_t v[3];
					if (read(evs[i].fd, v, sizeof v) != (ssize_t)sizeof v) {
						printf("FAIL read %s in the window: %s\n", evs[i].name, strerror(errno));
						return 1;
					}
				}
		}
		for (int i = 0; i < n; i++)
			ioctl(evs[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		for (int i = 0; i < n; i++) {
			uint64_t v[3];
			if (read(evs[i].fd, v, sizeof v) != (ssize_t)sizeof v) {
				printf("FAIL read %s: %s\n", evs[i].name, strerror(errno));
				return 1;
			}
			evs[i].total += (double)v[0];
			evs[i].scaled += v[2] > 0 ? (double)v[0] * (double)v[1] / (double)v[2] : 0;
			evs[i].enabled += (double)v[1];
			evs[i].running += (double)v[2];
		}
		munmap(mem, (size_t)(pages > 0 ? pages : 1) * (size_t)psz);
	}
	for (int i = 0; i < n; i++)
		printf("%s total %.0f scaled %.0f enabled %.0f running %.0f\n", evs[i].name, evs[i].total, evs[i].scaled,
		       evs[i].enabled, evs[i].running);
	return 0;
}
