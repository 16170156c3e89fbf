/* hardening_leak: open/close cycles of perf events under the shim, to measure leaks.
 *
 *   hardening_leak CYCLES
 *
 * Each cycle opens a counting page-faults event on a sleeping child (so reads are served
 * from mirrors), reads it, dup()s and closes the dup, and closes it; every 4th cycle
 * also a group of two read with PERF_FORMAT_GROUP, and read again after the member is
 * closed; every 10th cycle a sampling event whose ring is mapped read-write (a mirror)
 * and unmapped, and one mapped read-only (the kernel's ring). Every read() is compared
 * with the raw read system call (the kernel). After CYCLES warm-up cycles the program prints
 *   mark1 FDS MEMFD_MAPS RSS_KB
 * (its own open fds, mappings of bayesperf memfds, VmRSS) and waits for a line on stdin;
 * after CYCLES more, and again after another CYCLES, it prints mark2 and mark3 with the
 * same fields and waits for a line; it exits 0, or 1 after printing FAIL lines. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_helpers.h"
#include "perf_helpers.h"

static pid_t target;

static int open_ev(uint64_t config, uint64_t format, int group, int sample)
{
	struct perf_event_attr a;
	sw_attr(&a, config);
	a.read_format = format;
	if (sample) {
		a.sample_period = 1;
		a.sample_type = PERF_SAMPLE_TID;
	}
	int fd = perf_open(&a, target, -1, group, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		printf("FAIL perf_event_open: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

static void same(const char *what, int fd, size_t size)
{
	uint64_t m[8], k[8];
	memset(m, 1, sizeof m);
	memset(k, 2, sizeof k);
	ssize_t kn = syscall(SYS_read, fd, k, size);
	ssize_t mn = read(fd, m, size);
	CHECK(kn > 0 && mn == kn && memcmp(m, k, (size_t)kn) == 0, "%s: read() %zd, kernel %zd, or different values", what, mn, kn);
}

static void cycle(int i)
{
	int fd = open_ev(PERF_COUNT_SW_PAGE_FAULTS, PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED, -1, 0);
	same("single", fd, 24);
	int d = dup(fd);
	same("dup", d, 24);
	close(d);
	close(fd);
	if (i % 4 == 0) {
		uint64_t f = PERF_FORMAT_GROUP | PERF_FORMAT_ID;
		int l = open_ev(PERF_COUNT_SW_PAGE_FAULTS, f, -1, 0);
		int m = open_ev(PERF_COUNT_SW_CONTEXT_SWITCHES, f, l, 0);
		/* A member coming and going changes its leader's group read at once. */
		same("group of two", l, 8 + 2 * 16);
		close(m);
		same("group after its member closed", l, 8 + 2 * 16);
		close(l);
	}
	if (i % 10 == 0) {
		long pg = sysconf(_SC_PAGESIZE);
		int s = open_ev(PERF_COUNT_SW_PAGE_FAULTS, 0, -1, 1);
		void *r = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE, MAP_SHARED, s, 0);
		CHECK(r != MAP_FAILED, "mmap ring: %s", strerror(errno));
		if (r != MAP_FAILED)
			munmap(r, 3 * pg);
		close(s);
		/* A forward ring mapped read-only (overwrite mode): the kernel's own ring. */
		s = open_ev(PERF_COUNT_SW_PAGE_FAULTS, 0, -1, 1);
		r = mmap(NULL, 3 * pg, PROT_READ, MAP_SHARED, s, 0);
		CHECK(r != MAP_FAILED, "mmap ring read-only: %s", strerror(errno));
		if (r != MAP_FAILED)
			munmap(r, 3 * pg);
		close(s);
	}
}

static void mark(const char *name)
{
	int fds = 0, maps = 0;
	long rss = 0;
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *e;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			fds++;
	closedir(dir);
	fds--; /* the directory's own fd */
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	while (fgets(line, sizeof line, f))
		if (strstr(line, "/memfd:bayesperf"))
			maps++;
	fclose(f);
	f = fopen("/proc/self/status", "r");
	while (fgets(line, sizeof line, f))
		sscanf(line, "VmRSS: %ld kB", &rss);
	fclose(f);
	printf("%s %d %d %ld\n", name, fds, maps, rss);
	fflush(stdout);
	if (!fgets(line, sizeof line, stdin))
		exit(1);
}

/* wait_asleep returns once pid is blocked (state S): until then its counts and times
 * move, and a mirror a millisecond old would differ from the kernel's read. */
static void wait_asleep(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 2000; i++) {
		FILE *f = fopen(path, "r");
		size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
		if (f)
			fclose(f);
		buf[n] = 0;
		char *p = strrchr(buf, ')');
		if (p && p[1] == ' ' && p[2] == 'S')
			return;
		usleep(1000);
	}
	printf("FAIL the child never went to sleep\n");
	exit(1);
}

int main(int argc, char **argv)
{
	int cycles = argc > 1 ? atoi(argv[1]) : 1000;
	int p[2];
	if (pipe(p) < 0)
		return 1;
	target = fork();
	if (target == 0) {
		char c;
		close(p[1]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	wait_asleep(target);
	for (int i = 0; i < cycles; i++)
		cycle(i);
	mark("mark1");
	for (int i = 0; i < cycles; i++)
		cycle(i);
	mark("mark2");
	for (int i = 0; i < cycles; i++)
		cycle(i);
	mark("mark3");
	close(p[1]);
	waitpid(target, NULL, 0);
	return fails ? 1 : 0;
}
