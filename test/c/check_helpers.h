/* check_helpers.h: the failure check of the single-threaded C test programs.
 *
 * CHECK(cond, fmt, ...) prints "FAIL file:line: message" when cond is false and counts
 * it in fails; the program exits with fails ? 1 : 0. Not for threads: the counter and
 * the printing are unlocked (hardening_threads and hardening_forktool keep their own).
 * Header-only, like perf_helpers.h. */
#ifndef BAYESPERF_TEST_CHECK_HELPERS_H
#define BAYESPERF_TEST_CHECK_HELPERS_H

#include <stdio.h>

static int fails;

#define CHECK(cond, ...)                                            \
	do {                                                        \
		if (!(cond)) {                                      \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                        \
			printf("\n");                               \
			fails++;                                    \
		}                                                   \
	} while (0)

#endif
