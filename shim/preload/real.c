/*
 * real.c: the real libc functions the shim reaches past its own interposers (one slot
 * each, resolved once with dlsym(RTLD_NEXT)) and logging with raw write(2).
 */
#include "shim.h"

#define BP_REAL_DEFINE(ret, name, params) void *real_##name##_slot;
BP_REAL_FUNCS(BP_REAL_DEFINE)

/* resolve looks the next definition of name up once; the race is benign (all threads
 * store the same pointer). A missing libc function aborts: there is no sane fallback. */
void *resolve(void **slot, const char *name)
{
	void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (UNLIKELY(p == NULL)) {
		p = dlsym(RTLD_NEXT, name);
		if (p == NULL) {
			static const char msg[] = "bayesperf: cannot resolve a libc function; aborting\n";
			raw_syscall6(SYS_write, 2, (long)msg, sizeof msg - 1, 0, 0, 0);
			abort();
		}
		__atomic_store_n(slot, p, __ATOMIC_RELEASE);
	}
	return p;
}

static int verbose = -1; /* -1: $BAYESPERF_VERBOSE not read yet */

void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof buf)
		n = sizeof buf - 1;
	raw_syscall6(SYS_write, 2, (long)buf, n, 0, 0, 0);
}

int is_verbose(void)
{
	if (verbose < 0) {
		const char *v = getenv(BP_ENV_VERBOSE);
		verbose = v != NULL && v[0] == '1';
	}
	return verbose;
}
