/* soak_faulter: the measured program of the perf record half of the no-loss soak
 * (test/hardening_soak_test.go).
 *
 *   soak_faulter DURATION_MS
 *
 * Prints "ready" and waits for a byte on stdin; then faults as fast as it can (maps,
 * touches and unmaps 256 pages in a loop) for DURATION_MS; then a slow tail: 100 ms of
 * sleep, then 20 faults 5 ms apart, so a loss report the kernel still holds (it writes
 * PERF_RECORD_LOST before the next sample that fits) is written while the tool's ring
 * has room; then prints "done" and waits for stdin's EOF before exiting. While it
 * waits it faults nothing, so a counter of its page faults that is opened before the
 * start and read after "done" counts exactly the faults of the measured phase. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "time_helpers.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: soak_faulter DURATION_MS\n");
		return 2;
	}
	double ms = atof(argv[1]);
	long pg = sysconf(_SC_PAGESIZE);
	char *last = mmap(NULL, 20 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char c;
	if (last == MAP_FAILED || write(1, "ready\n", 6) != 6 || read(0, &c, 1) != 1)
		return 3;
	double end = now_ms() + ms;
	while (now_ms() < end) {
		char *p = mmap(NULL, 256 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return 4;
		for (long i = 0; i < 256; i++)
			p[i * pg] = 1;
		munmap(p, 256 * pg);
	}
	struct timespec ts = {0, 100 * 1000 * 1000};
	nanosleep(&ts, NULL);
	for (long i = 0; i < 20; i++) {
		last[i * pg] = 1;
		ts.tv_nsec = 5 * 1000 * 1000;
		nanosleep(&ts, NULL);
	}
	if (write(1, "done\n", 5) != 5)
		return 5;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
