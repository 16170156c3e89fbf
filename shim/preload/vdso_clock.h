/*
 * vdso_clock.h: the kernel's own clock_gettime in the vDSO, for the shim's read path
 * (conn.c) and for the read benchmark that times it (internal/bench/c/readbench.c).
 */
#ifndef BAYESPERF_VDSO_CLOCK_H
#define BAYESPERF_VDSO_CLOCK_H

#include <dlfcn.h>
#include <time.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

/* vdso_clock_gettime returns the vDSO's clock_gettime, or libc's where the vDSO has
 * none that works. The vDSO is in the link map under its soname already, so
 * RTLD_NOLOAD finds it without opening a file; libc's clock_gettime is a wrapper
 * around the same function, one PLT entry and one indirect call further. */
static inline clock_gettime_fn vdso_clock_gettime(void)
{
	void *f = NULL;
	void *vdso = dlopen("linux-vdso.so.1", RTLD_LAZY | RTLD_NOLOAD);
	if (vdso != NULL) {
#if defined(__x86_64__)
		f = dlvsym(vdso, "__vdso_clock_gettime", "LINUX_2.6");
#elif defined(__aarch64__)
		f = dlvsym(vdso, "__kernel_clock_gettime", "LINUX_2.6.39");
#endif
	}
	struct timespec ts;
	if (f == NULL || ((clock_gettime_fn)f)(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return clock_gettime;
	return (clock_gettime_fn)f;
}

#endif
