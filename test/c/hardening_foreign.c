/* hardening_foreign: another user's raw protocol client of a root sidecar started with
 * --allow-uid (TestHardeningRootSidecarOtherUser, test/hardening_privilege_test.go). It
 * speaks the socket protocol itself (no shim) and tries what the shim never does:
 *
 *   hardening_foreign SOCKET_PATH NOFILE
 *
 * lowers its RLIMIT_NOFILE to NOFILE, says HELLO, then registers page-faults events on
 * itself one after another, closing its own fd (and the mirror's) after each, so that
 * only the sidecar's copies keep them alive; stops at the first refusal. Then asks the
 * sidecar to MAP the first event's ring. Prints
 *   "registered N status S map M"
 * (S: the status of the refused REGISTER, M: the MAP's status). A sidecar that capped
 * the client's events at its own limit registers NOFILE and refuses with -EMFILE, and
 * declines the MAP with -EOPNOTSUPP. */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "perf_helpers.h"

#include "../../shim/preload/bayesperf_abi.h"
#include "sidecar_helpers.h"

static int sock;
static uint32_t seq;

/* call sends a request (with fd attached when fd >= 0) and reads the reply into rep,
 * closing any fd that comes with it. Returns the reply's size, or -1. */
static ssize_t call(uint16_t type, const void *body, size_t len, int fd, void *rep, size_t replen)
{
	char msg[sizeof(struct bp_msg_hdr) + sizeof(struct bp_register)];
	struct bp_msg_hdr h = {BP_MSG_MAGIC, BP_ABI_VERSION, type, (uint32_t)(sizeof h + len), ++seq};
	memcpy(msg, &h, sizeof h);
	memcpy(msg + sizeof h, body, len);
	struct iovec iov = {msg, sizeof h + len};
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (fd >= 0) {
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof cbuf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0)
		return -1;
	char in[256];
	struct iovec riov = {in, sizeof in};
	struct msghdr rh = {.msg_iov = &riov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	ssize_t n = recvmsg(sock, &rh, MSG_CMSG_CLOEXEC);
	if (n < (ssize_t)sizeof h)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&rh); c != NULL; c = CMSG_NXTHDR(&rh, c))
		if (c->cmsg_type == SCM_RIGHTS) {
			int got;
			memcpy(&got, CMSG_DATA(c), sizeof got);
			close(got);
		}
	memcpy(rep, in + sizeof h, replen < (size_t)n - sizeof h ? replen : (size_t)n - sizeof h);
	return n - (ssize_t)sizeof h;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: hardening_foreign SOCKET_PATH NOFILE\n");
		return 2;
	}
	int lim = atoi(argv[2]);
	struct rlimit rl = {(rlim_t)lim, (rlim_t)lim};
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		perror("setrlimit");
		return 2;
	}
	sock = sidecar_dial(argv[1], 10);
	if (sock < 0) {
		printf("connect-failed:%s\n", strerrorname_np(errno));
		return 0;
	}
	struct bp_hello hello = {getpid(), 0};
	struct bp_hello_reply hr;
	if (call(BP_MSG_HELLO, &hello, sizeof hello, -1, &hr, sizeof hr) < 0 || hr.status != 0) {
		printf("hello-failed\n");
		return 0;
	}
	int registered = 0, status = 0;
	for (int i = 1; i <= lim + 100 && status == 0; i++) {
		struct perf_event_attr pa;
		sw_attr(&pa, PERF_COUNT_SW_PAGE_FAULTS);
		pa.exclude_kernel = 1; /* perf_event_paranoid 2: user space only */
		pa.exclude_hv = 1;
		int fd = perf_open(&pa, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			printf("perf_event_open-failed:%s\n", strerrorname_np(errno));
			return 0;
		}
		struct bp_register r;
		memset(&r, 0, sizeof r);
		r.handle = (uint32_t)i;
		r.cpu = -1;
		r.group_fd = -1;
		r.attr_size = sizeof pa;
		memcpy(r.attr, &pa, sizeof pa);
		struct bp_register_reply rr;
		if (call(BP_MSG_REGISTER, &r, sizeof r, fd, &rr, sizeof rr) < 0) {
			printf("register-failed:%s\n", strerrorname_np(errno));
			return 0;
		}
		close(fd);
		status = rr.status;
		if (status == 0)
			registered++;
	}
	long pg = sysconf(_SC_PAGESIZE);
	struct bp_map m = {1, PROT_READ | PROT_WRITE, (uint64_t)(1 + 8) * pg};
	struct bp_status ms = {0, 0};
	if (call(BP_MSG_MAP, &m, sizeof m, -1, &ms, sizeof ms) < 0) {
		printf("map-failed:%s\n", strerrorname_np(errno));
		return 0;
	}
	printf("registered %d status %d map %d\n", registered, status, ms.status);
	return 0;
}
