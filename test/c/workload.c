/* workload: a deterministic program for the drop-in tests.
 *
 *   workload PAGES SLEEPS STATUS [SPIN_MS]
 *
 * touches PAGES fresh anonymous pages (PAGES minor page faults), sleeps SLEEPS times
 * for 1 ms (SLEEPS voluntary context switches), spins for SPIN_MS ms of wall time while
 * touching one more page every ms (SPIN_MS pages in all, whatever the load), and exits
 * with STATUS. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "time_helpers.h"

int main(int argc, char **argv)
{
	long pages = argc > 1 ? atol(argv[1]) : 1000;
	int sleeps = argc > 2 ? atoi(argv[2]) : 10;
	int status = argc > 3 ? atoi(argv[3]) : 0;
	long spin = argc > 4 ? atol(argv[4]) : 0;
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, (size_t)(pages + spin + 1) * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 111;
	for (long i = 0; i < pages; i++)
		p[i * pg] = 1;
	for (int i = 0; i < sleeps; i++)
		usleep(1000);
	double start = now_ms();
	long touched = 0;
	volatile unsigned long x = 0;
	while (now_ms() - start < spin) {
		long want = (long)(now_ms() - start);
		while (touched < want && touched < spin)
			p[(pages + touched++) * pg] = 1;
		for (int i = 0; i < 10000; i++)
			x += i;
	}
	/* Descheduled near the end, the loop may stop short: the fault count must not
	 * depend on the machine's load. */
	while (touched < spin)
		p[(pages + touched++) * pg] = 1;
	return status;
}
