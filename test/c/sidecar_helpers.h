/* sidecar_helpers.h: how the hostile C test clients reach the sidecar. Header-only
 * (static inline), so that each program still builds from its one .c file. */
#ifndef BAYESPERF_TEST_SIDECAR_HELPERS_H
#define BAYESPERF_TEST_SIDECAR_HELPERS_H

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

/* sidecar_dial connects to the sidecar's socket at path as the shim does (a close-on-exec
 * SOCK_SEQPACKET socket) and bounds each receive by timeout_s seconds: the socket, or -1
 * with errno set. */
static inline int sidecar_dial(const char *path, int timeout_s)
{
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	strncpy(a.sun_path, path, sizeof a.sun_path - 1);
	if (connect(s, (struct sockaddr *)&a, sizeof a) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	struct timeval tv = {.tv_sec = timeout_s};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return s;
}

#endif
