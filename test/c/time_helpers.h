/* time_helpers.h: the clock of the C test programs that run for a wall-clock time.
 * Header-only, like perf_helpers.h. */
#ifndef BAYESPERF_TEST_TIME_HELPERS_H
#define BAYESPERF_TEST_TIME_HELPERS_H

#include <time.h>

/* now_ms is CLOCK_MONOTONIC in milliseconds. */
static inline double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#endif
