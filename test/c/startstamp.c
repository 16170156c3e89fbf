/* startstamp: prints the CLOCK_MONOTONIC time at which it started, in ns, and exits. The
 * start-up benchmark runs it as a perf tool's workload, to time how long the tool took
 * to start it (natively, and through bayesperf run with each collector). */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	printf("start_ns %llu\n", (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec);
	return 0;
}
