/*
 * bayesperf_abi.h: the ONE binary interface between the C shim (libbayesperf.so) and the
 * Go sidecar. Go mirrors every struct and constant of this file in package shim
 * (shim/abi.go); shim/abi_test.go compiles a C program against this header at test time
 * and checks every size and offset against the Go view, so the two cannot drift.
 *
 * Both ends run on the same host: integers are in host byte order, every struct has
 * explicit padding and no implicit holes.
 *
 * Transport: a SOCK_SEQPACKET Unix socket whose path is in $BAYESPERF_SOCKET. One message
 * per packet: a bp_msg_hdr followed by the body of its type. File descriptors travel as
 * SCM_RIGHTS ancillary data (at most one per message). Every request is answered, in
 * order, on the same connection.
 *
 * Shared memory: the sidecar creates every page below in a memfd sealed with
 * F_SEAL_SHRINK|F_SEAL_GROW (mirror pages also F_SEAL_FUTURE_WRITE, so the shim can only
 * map them read-only) and hands it over with SCM_RIGHTS.
 */
#ifndef BAYESPERF_ABI_H
#define BAYESPERF_ABI_H

#include <stdint.h>

#define BP_ENV_SOCKET "BAYESPERF_SOCKET"   /* path of the sidecar's socket */
#define BP_ENV_VERBOSE "BAYESPERF_VERBOSE" /* "1": the shim logs to stderr */

#define BP_MSG_MAGIC 0x50594142u /* "BAYP" in little-endian memory order */
#define BP_ABI_VERSION 1u

/* Message types. Replies are the request type | BP_MSG_REPLY. */
enum {
	BP_MSG_HELLO = 1,      /* shim -> sidecar: bp_hello; reply bp_hello_reply + client page fd */
	BP_MSG_REGISTER = 2,   /* shim -> sidecar: bp_register + perf fd; reply bp_register_reply + mirror fd */
	BP_MSG_UNREGISTER = 3, /* shim -> sidecar: bp_handle; reply bp_status once the sidecar has
	                          closed its copy of the fd (so close() frees the kernel event,
	                          e.g. a breakpoint slot, as without us) */
	BP_MSG_REFRESH = 4,    /* shim -> sidecar: bp_handle; reply bp_status after the mirror is republished */
	BP_MSG_MAP = 5,        /* shim -> sidecar: bp_map; reply bp_status + the mirror ring's memfd
	                          when status is 0 (else the shim maps the kernel's ring) */
	BP_MSG_UNMAP = 6,      /* shim -> sidecar: bp_handle; reply bp_status once the sidecar has
	                          unmapped the kernel's ring (so it can be mapped again) */
	BP_MSG_FLUSH = 7,      /* shim -> sidecar: bp_handle (0: every ring of the client); reply
	                          bp_status once every record the kernel's forward rings hold
	                          that fits is in the mirror rings (backward rings: only the
	                          handle's, and only with BP_FLUSH_PAUSED) */
	BP_MSG_REPLY = 0x8000,
};

struct bp_msg_hdr {
	uint32_t magic;   /* BP_MSG_MAGIC */
	uint16_t version; /* BP_ABI_VERSION */
	uint16_t type;    /* BP_MSG_* */
	uint32_t size;    /* whole message, header included */
	uint32_t seq;     /* chosen by the requester, echoed in the reply */
};

struct bp_hello {
	int32_t pid; /* getpid() of the client; checked against SO_PEERCRED */
	uint32_t flags;
};

struct bp_hello_reply {
	int32_t status;      /* 0 or -errno */
	int32_t sidecar_pid;
	uint64_t stale_ns;   /* a mirror older than this must be refreshed before it is served;
	                        judged on CLOCK_MONOTONIC_COARSE with a margin of two of its
	                        ticks first, so at least two ticks plus the republish period */
	uint32_t page_size;  /* size of the client page and of every mirror page */
	uint32_t flags;      /* BP_HELLO_F_* */
};

/* The sidecar's stage lets reads of events that count the reader itself keep the
 * kernel's values (identity correction, or the correction of the kernel's multiplexing,
 * which leaves them): the shim may answer them straight from the kernel, which is exact
 * and costs no round trip. Without it, such reads refresh the mirror synchronously. */
#define BP_HELLO_F_KERNEL_EXACT 1u

#define BP_ATTR_MAX 256 /* largest perf_event_attr the shim forwards (kernel 6.x: 136) */

struct bp_register {
	uint32_t handle;       /* chosen by the shim, unique per connection, never 0 */
	uint32_t group_handle; /* handle of the group leader, 0 if none or not registered */
	int32_t pid;           /* perf_event_open arguments, as the caller passed them */
	int32_t cpu;
	int32_t group_fd;
	uint32_t attr_size;    /* bytes of attr that are valid (attr.size, 64 when it was 0) */
	uint64_t flags;
	uint8_t attr[BP_ATTR_MAX];
};

struct bp_register_reply {
	int32_t status; /* 0: mirror fd attached; <0: -errno, the shim passes this fd through */
	uint32_t handle;
};

/* A sampling mirror: the tool mmap()ed a registered fd at offset 0. */
struct bp_map {
	uint32_t handle;
	int32_t prot;    /* the tool's PROT_* (PROT_WRITE: forward ring with data_tail) */
	uint64_t length; /* header page + 2^n data pages, as the tool asked */
};

struct bp_handle {
	uint32_t handle;
	uint32_t flags; /* FLUSH: BP_FLUSH_PAUSED; 0 otherwise */
};

/* FLUSH of a handle whose ring the tool has just paused (PERF_EVENT_IOC_PAUSE_OUTPUT):
 * the kernel does not write it now, so a backward (overwrite) ring, which has no
 * data_tail to hold the kernel back, can be copied consistently. */
#define BP_FLUSH_PAUSED 1u

struct bp_status {
	int32_t status;
	uint32_t handle;
};

/* The client page: one per connection, written by the shim (relaxed atomic adds, and
 * single-writer adds to its thread's shard). */
#define BP_CLIENT_MAGIC 0x544e4c43u /* "CLNT" */
#define BP_CLIENT_SHARDS 256u
#define BP_CLIENT_IOCTLS 480u
struct bp_client_page {
	uint32_t magic;
	uint32_t version;
	uint64_t mirror_reads;      /* read()s answered from a mirror page */
	uint64_t passthrough_reads; /* read()s on registered fds that went to the kernel because no
	                               mirror could serve them (sidecar gone, page not usable) */
	uint64_t sync_refreshes;    /* mirror reads that had to ask for a refresh first */
	uint64_t ring_flushes;      /* synchronous FLUSH requests */
	uint64_t self_reads;        /* read()s of events that count the reader itself, answered by
	                               the kernel (a mirror could be older than what the reader
	                               just did) */
	uint64_t precise_clock_reads; /* mirror reads whose freshness the coarse clock could not
	                                 decide, so that the shim read CLOCK_MONOTONIC */
	uint64_t self_pauses;       /* refreshes for reads of self-counting events made with the
	                               reading thread's own events paused (read.c) */
	/* More mirror_reads, one shard per reading thread (the first BP_CLIENT_SHARDS threads
	 * of the process; later ones add to mirror_reads): a shard has a single writer, which
	 * counts with a plain (unlocked) add, so the fast read path has no atomic
	 * read-modify-write. The total is mirror_reads plus every shard. */
	uint64_t mirror_read_shards[BP_CLIENT_SHARDS];
	/* ioctls[h]: the perf ioctls the tool made that change what the event with handle h
	 * counts (its own, or its group leader's with PERF_IOC_FLAG_GROUP), for handles
	 * below BP_CLIENT_IOCTLS: the low 16 bits count PERF_EVENT_IOC_RESET, the high 16
	 * bits ENABLE, DISABLE and REFRESH. Relaxed atomic adds, no system call (the tool's
	 * own events may be counting this very moment). A stage that follows an event's
	 * count across calls learns from it that the tool switched the event or restarted
	 * its count, even when the tool counted past its old value before the sidecar
	 * looked. */
	uint32_t ioctls[BP_CLIENT_IOCTLS];
};

/*
 * A counting mirror page: one per registered event, written only by the sidecar under a
 * seqlock. Writer: seq += 1 (odd), store fields, seq += 1 (even), every store a sequentially
 * consistent atomic. Reader: load-acquire seq (retry while odd), copy, acquire fence, reload
 * seq and retry if it moved. values[] holds nr entries: one for a plain read, the whole
 * group (leader first) when read_format has PERF_FORMAT_GROUP. enabled and running are those
 * of the read (the leader's for a group read).
 */
#define BP_MIRROR_MAGIC 0x5252494du /* "MIRR" */
#define BP_PAGE_SIZE 4096u

enum {
	BP_MIRROR_EMPTY = 0, /* never published: the shim reads the kernel */
	BP_MIRROR_OK = 1,    /* values are valid */
	BP_MIRROR_KERNEL = 2,/* the sidecar cannot serve this event (read error, EOF, too many
	                        members): the shim reads the kernel, which gives the same answer */
};

/* flags */
#define BP_MIRROR_F_FINAL 1u /* target gone or event disabled: values will not change */
#define BP_MIRROR_F_SYNC 2u  /* the values are a correcting stage's estimate as of the read
                                that asked for them: refresh before every read */

struct bp_mirror_value {
	uint64_t value;
	uint64_t id;
	uint64_t lost;
};

struct bp_mirror_hdr {
	uint32_t seq;
	uint32_t magic;
	uint32_t state;       /* BP_MIRROR_* */
	uint32_t flags;       /* BP_MIRROR_F_* */
	uint64_t update_ns;   /* CLOCK_MONOTONIC time of the kernel read behind these values */
	uint64_t read_format; /* the attr's read_format, for the shim's layout */
	uint64_t enabled;
	uint64_t running;
	uint32_t nr;          /* entries valid in values[] */
	uint32_t pad;
	uint64_t generation;  /* publishes so far */
};

#define BP_MIRROR_MAX_VALUES ((BP_PAGE_SIZE - sizeof(struct bp_mirror_hdr)) / sizeof(struct bp_mirror_value))

struct bp_mirror_page {
	struct bp_mirror_hdr hdr;
	struct bp_mirror_value values[BP_MIRROR_MAX_VALUES];
};

_Static_assert(sizeof(struct bp_client_page) <= BP_PAGE_SIZE, "the client page is one page");

#endif /* BAYESPERF_ABI_H */
