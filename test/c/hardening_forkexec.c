/* hardening_forkexec: a measured program that forks and execs, for the concurrency test
 * (test/hardening_forkexec_test.go): perf stat -I counts it with inherit.
 *
 *   hardening_forkexec CHILDREN WORKLOAD STATUS
 *
 * Starts CHILDREN children, at most 4 at a time: even ones touch 300 fresh pages and
 * _exit(0); odd ones exec WORKLOAD 300 0 0 (test/c/workload.c: 300 page faults). Every
 * child also forks a grandchild that touches 50 pages and exits. Reaps them all,
 * requires status 0 from each, and exits with STATUS (1 if a child failed). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static void touch(long pages)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, pages * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(2);
	for (long i = 0; i < pages; i++)
		p[i * pg] = 1;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: hardening_forkexec CHILDREN WORKLOAD STATUS\n");
		return 2;
	}
	int n = atoi(argv[1]), running = 0, failed = 0;
	for (int k = 0; k < n || running > 0;) {
		if (k < n && running < 4) {
			pid_t pid = fork();
			if (pid < 0)
				return 1;
			if (pid == 0) {
				pid_t g = fork();
				if (g == 0) {
					touch(50);
					_exit(0);
				}
				int st;
				if (g < 0 || waitpid(g, &st, 0) != g || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
					_exit(3);
				if (k % 2 == 1) {
					execl(argv[2], argv[2], "300", "0", "0", (char *)NULL);
					_exit(4);
				}
				touch(300);
				_exit(0);
			}
			k++;
			running++;
			continue;
		}
		int st;
		if (wait(&st) < 0)
			return 1;
		running--;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed++;
	}
	return failed ? 1 : atoi(argv[3]);
}
