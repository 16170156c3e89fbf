/* fdlife: the life of perf fds under the shim: dup/dup2/dup3/F_DUPFD aliases, close and
 * fd-number reuse (a reused number must never be served from a stale mirror), fork
 * (inherited fds, and a child opening its own events), threads reading concurrently, and
 * syscall() numbers other than perf_event_open passing through. The events count a
 * sleeping child, so that read() is served from mirrors; every read() is compared with the
 * raw read system call (the kernel). Exits 0, or prints FAIL lines and exits 1. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_helpers.h"
#include "perf_helpers.h"

static pid_t target; /* a sleeping child: its events are served from mirrors */

static int open_faults_on(pid_t pid);
static int open_faults(void) { return open_faults_on(target); }

static int open_faults_on(pid_t pid)
{
	struct perf_event_attr a;
	sw_attr(&a, PERF_COUNT_SW_PAGE_FAULTS);
	a.size = 0; /* the 64-byte first version, as PAPI and perf's probes send it */
	a.read_format = PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED;
	a.disabled = 1;
	int fd = perf_open(&a, pid, -1, -1, 0);
	if (fd < 0) {
		printf("FAIL perf_event_open: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* same reads fd through read() and the raw syscall; both must agree exactly. */
static void same(const char *what, int fd)
{
	uint64_t m[3] = {1, 1, 1}, k[3] = {2, 2, 2};
	ssize_t km = syscall(SYS_read, fd, k, sizeof k);
	ssize_t mm = read(fd, m, sizeof m);
	CHECK(km == 24 && mm == km && memcmp(m, k, sizeof m) == 0, "%s: read() %zd [%llu %llu %llu], kernel %zd [%llu %llu %llu]",
	      what, mm, (unsigned long long)m[0], (unsigned long long)m[1], (unsigned long long)m[2], km,
	      (unsigned long long)k[0], (unsigned long long)k[1], (unsigned long long)k[2]);
}

static int shared_fd;
static void *reader(void *arg)
{
	(void)arg;
	uint64_t first[3], v[3];
	if (read(shared_fd, first, sizeof first) != 24)
		return (void *)1;
	for (int i = 0; i < 2000; i++)
		if (read(shared_fd, v, sizeof v) != 24 || memcmp(v, first, sizeof v) != 0)
			return (void *)1;
	return NULL;
}

int main(void)
{
	target = fork();
	if (target == 0) {
		for (;;)
			pause();
	}
	/* syscall() passes other numbers through untouched. */
	CHECK(syscall(SYS_gettid) == gettid(), "syscall(SYS_gettid) != gettid()");
	errno = 0;
	CHECK(syscall(-1L) == -1 && errno == ENOSYS, "syscall(-1) did not fail with ENOSYS (errno %d)", errno);
	unsigned cpu = 999;
	CHECK(syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 && cpu < 4096, "syscall(SYS_getcpu) failed");

	int fd = open_faults();
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	touch_pages(100);
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	same("original", fd);

	int d = dup(fd);
	close(fd);
	same("dup after closing the original", d);
	CHECK(dup2(d, 100) == 100, "dup2");
	same("dup2", 100);
	close(100);
	same("dup after closing the dup2 copy", d);
	int e = fcntl(d, F_DUPFD_CLOEXEC, 200);
	CHECK(e >= 200, "F_DUPFD_CLOEXEC");
	same("F_DUPFD_CLOEXEC", e);
	CHECK(dup3(d, 150, O_CLOEXEC) == 150, "dup3");
	same("dup3", 150);
	close(150);
	close(e);

	/* A number reused by a pipe after close() or close_range() must read the pipe. */
	for (int how = 0; how < 2; how++) {
		int x = open_faults();
		if (how == 0)
			close(x);
		else
			syscall(SYS_close_range, x, x, 0);
		int p[2];
		if (pipe(p) != 0)
			return 1;
		int w = p[1];
		if (p[0] != x) { /* make the pipe's read end take the freed number */
			dup2(p[0], x);
			close(p[0]);
		}
		CHECK(write(w, "hello", 5) == 5, "write pipe");
		char buf[8] = {0};
		ssize_t n = read(x, buf, sizeof buf);
		CHECK(n == 5 && memcmp(buf, "hello", 5) == 0, "fd %d reused by a pipe after %s: read %zd bytes \"%.5s\"", x,
		      how ? "close_range" : "close", n, buf);
		close(x);
		close(w);
	}

	/* Threads read the same (disabled, so constant) event concurrently. */
	shared_fd = d;
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, reader, NULL);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(th[i], &r);
		CHECK(r == NULL, "thread %d saw a changing or failed read", i);
	}

	/* fork: the child reads the inherited fd (the kernel's answer), then opens and reads
	 * its own event. */
	fflush(stdout);
	pid_t c = fork();
	if (c == 0) {
		same("inherited fd in a child", d);
		int f = open_faults_on(0);
		ioctl(f, PERF_EVENT_IOC_ENABLE, 0);
		touch_pages(30);
		ioctl(f, PERF_EVENT_IOC_DISABLE, 0);
		same("child's own event", f);
		uint64_t v[3];
		CHECK(read(f, v, sizeof v) == 24 && v[0] >= 30, "child's own event counted %llu faults, want >= 30", (unsigned long long)v[0]);
		fflush(stdout);
		_exit(fails ? 1 : 0);
	}
	int st;
	waitpid(c, &st, 0);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child failed (status %#x)", st);
	same("parent after fork", d);
	close(d);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	printf("done\n");
	return fails ? 1 : 0;
}
