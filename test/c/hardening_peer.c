/* hardening_peer: connect to a sidecar socket and say HELLO, as the shim does; print
 * what happened, one word: "connect-failed:<errno name>", "refused" (the sidecar closed
 * the connection without answering) or "accepted" (a HELLO reply with status 0 and a
 * client page fd). Run as another user to check the sidecar's peer-credential check.
 *
 *   hardening_peer SOCKET_PATH */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../shim/preload/bayesperf_abi.h"
#include "sidecar_helpers.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: hardening_peer SOCKET_PATH\n");
		return 2;
	}
	int s = sidecar_dial(argv[1], 5);
	if (s < 0) {
		printf("connect-failed:%s\n", strerrorname_np(errno));
		return 0;
	}
	struct {
		struct bp_msg_hdr h;
		struct bp_hello b;
	} msg = {{BP_MSG_MAGIC, BP_ABI_VERSION, BP_MSG_HELLO, sizeof msg, 1}, {getpid(), 0}};
	if (send(s, &msg, sizeof msg, MSG_NOSIGNAL) < 0) {
		/* the sidecar may have closed the connection before we sent */
		printf("refused\n");
		return 0;
	}
	struct {
		struct bp_msg_hdr h;
		struct bp_hello_reply b;
	} rep;
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {&rep, sizeof rep};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	ssize_t n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
	if (n == 0 || (n < 0 && errno == ECONNRESET)) {
		printf("refused\n");
		return 0;
	}
	if (n < 0) {
		printf("recv-failed:%s\n", strerrorname_np(errno));
		return 0;
	}
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	if (n == sizeof rep && rep.h.type == (BP_MSG_HELLO | BP_MSG_REPLY) && rep.b.status == 0 && c && c->cmsg_type == SCM_RIGHTS)
		printf("accepted\n");
	else
		printf("bad-reply\n");
	return 0;
}
