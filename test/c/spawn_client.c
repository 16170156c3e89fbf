/* spawn_client: a perf client that starts its workload without perf's fork-then-open
 * order, for the exec tests of the shim (a perf client's workload carries nothing of
 * bayesperf).
 *
 *   spawn_client spawn CMD [ARGS...]          open a software event on itself, then
 *                                             posix_spawnp CMD and wait for it (the
 *                                             event does not count CMD)
 *   spawn_client spawn-inherit CMD [ARGS...]  the same with an inherited event, which
 *                                             counts CMD
 *   spawn_client exec CMD [ARGS...]           open a software event on itself
 *                                             (enable_on_exec, not close-on-exec: it
 *                                             counts CMD), then execvp CMD in its place
 *
 * Exits with CMD's status (spawn), or 127 when CMD cannot be started. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "perf_helpers.h"

extern char **environ;

int main(int argc, char **argv)
{
	int exec = argc >= 3 && strcmp(argv[1], "exec") == 0;
	int inherit = argc >= 3 && strcmp(argv[1], "spawn-inherit") == 0;
	if (argc < 3 || (!exec && !inherit && strcmp(argv[1], "spawn") != 0)) {
		fprintf(stderr, "usage: spawn_client spawn|spawn-inherit|exec CMD [ARGS...]\n");
		return 2;
	}
	struct perf_event_attr a;
	sw_attr(&a, PERF_COUNT_SW_TASK_CLOCK);
	a.disabled = exec;
	a.enable_on_exec = exec;
	a.inherit = inherit;
	if (perf_open(&a, 0, -1, -1, exec ? 0 : PERF_FLAG_FD_CLOEXEC) < 0) {
		perror("spawn_client: perf_event_open");
		return 1;
	}
	if (exec) {
		execvp(argv[2], argv + 2);
		perror("spawn_client: execvp");
		return 127;
	}
	pid_t pid;
	int err = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
	if (err != 0) {
		fprintf(stderr, "spawn_client: posix_spawnp: %s\n", strerror(err));
		return 127;
	}
	int st;
	if (waitpid(pid, &st, 0) < 0) {
		perror("spawn_client: waitpid");
		return 1;
	}
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
