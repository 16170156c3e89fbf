package shim

import (
	"unsafe"

	"github.com/bayesperf/bayesperf/perfabi"
)

// Names of the environment variables the shim reads.
const (
	EnvSocket  = "BAYESPERF_SOCKET"  // path of the sidecar's socket
	EnvVerbose = "BAYESPERF_VERBOSE" // "1": the shim logs to stderr
)

// Message framing constants (bayesperf_abi.h).
const (
	MsgMagic   uint32 = 0x50594142
	ABIVersion uint16 = 1
)

// Message types; a reply has the request's type | MsgReply.
const (
	MsgHello      uint16 = 1
	MsgRegister   uint16 = 2
	MsgUnregister uint16 = 3
	MsgRefresh    uint16 = 4
	MsgMap        uint16 = 5
	MsgUnmap      uint16 = 6
	MsgFlush      uint16 = 7
	MsgReply      uint16 = 0x8000
)

// AttrMax is the largest perf_event_attr prefix the shim forwards.
const AttrMax = 256

// PageSize is the size of the client page and of every mirror page.
const PageSize = 4096

// Magic numbers of the shared pages.
const (
	ClientMagic uint32 = 0x544e4c43
	MirrorMagic uint32 = 0x5252494d
)

// Mirror states (bp_mirror_hdr.state).
const (
	MirrorEmpty  uint32 = 0 // never published: the shim reads the kernel
	MirrorOK     uint32 = 1 // values valid
	MirrorKernel uint32 = 2 // the sidecar cannot serve this event; the shim reads the kernel
)

// MirrorFinal is set in bp_mirror_hdr.flags when the values will not change any more.
const MirrorFinal uint32 = 1

// MirrorSync is set in bp_mirror_hdr.flags when the values are a correcting stage's
// estimate as of the read that asked for them: the shim refreshes before every read,
// whatever the staleness bound (sidecar.Syncer).
const MirrorSync uint32 = 2

// MsgHdr is struct bp_msg_hdr.
type MsgHdr struct {
	Magic   uint32
	Version uint16
	Type    uint16
	Size    uint32 // whole message, header included
	Seq     uint32
}

// Hello is struct bp_hello.
type Hello struct {
	Pid   int32
	Flags uint32
}

// HelloReply is struct bp_hello_reply.
type HelloReply struct {
	Status     int32
	SidecarPid int32
	StaleNs    uint64
	PageSize   uint32
	Flags      uint32 // HelloKernelExact
}

// HelloKernelExact in HelloReply.Flags: the sidecar's stage lets reads of
// self-counting events keep the kernel's values (sidecar.KernelExact: identity, or
// internal/kstage, which leaves them), so the shim may read them from the kernel
// directly.
const HelloKernelExact uint32 = 1

// Register is struct bp_register: one perf_event_open the shim performed, as the caller
// asked for it.
type Register struct {
	Handle      uint32
	GroupHandle uint32
	Pid         int32
	CPU         int32
	GroupFd     int32
	AttrSize    uint32
	Flags       uint64
	Attr        [AttrMax]byte
}

// RegisterReply is struct bp_register_reply.
type RegisterReply struct {
	Status int32
	Handle uint32
}

// Map is struct bp_map: the tool mmap()ed a registered fd at offset 0.
type Map struct {
	Handle uint32
	Prot   int32
	Length uint64
}

// Handle is struct bp_handle (body of UNREGISTER, REFRESH, UNMAP and FLUSH).
type Handle struct {
	Handle uint32
	Flags  uint32 // FLUSH: FlushPaused; 0 otherwise
}

// FlushPaused marks a FLUSH sent right after the tool paused the handle's ring.
const FlushPaused uint32 = 1

// Status is struct bp_status (body of the REFRESH reply).
type Status struct {
	Status int32
	Handle uint32
}

// ClientPage is struct bp_client_page: per-connection counters the shim increments.
type ClientPage struct {
	Magic            uint32
	Version          uint32
	MirrorReads      uint64
	PassthroughReads uint64
	SyncRefreshes    uint64
	RingFlushes      uint64
	SelfReads        uint64
	// PreciseClockReads counts mirror reads whose freshness the coarse clock could not
	// decide (the shim then read CLOCK_MONOTONIC).
	PreciseClockReads uint64
	// SelfPauses counts synchronous refreshes for reads of self-counting events made
	// with the reading thread's own events paused (see the shim's self_pause).
	SelfPauses uint64
	// MirrorReadShards count more mirror reads, one shard per reading thread (single
	// writer, no atomic read-modify-write on the shim's fast path); the total is
	// MirrorReads plus every shard (ClientCounters adds them up).
	MirrorReadShards [ClientShards]uint64
	// Ioctls counts, by handle (below ClientIoctls), the perf ioctls of each event that
	// change what it counts: PERF_EVENT_IOC_RESET in the low 16 bits, ENABLE, DISABLE
	// and REFRESH in the high 16 (ClientIoctlCount splits them).
	Ioctls [ClientIoctls]uint32
}

// ClientShards is BP_CLIENT_SHARDS: the per-thread shards of mirror_reads.
const ClientShards = 256

// ClientIoctls is BP_CLIENT_IOCTLS: handles whose ioctls the client page counts.
const ClientIoctls = 480

// MirrorValue is struct bp_mirror_value: one counter of a read in the kernel's order
// { value, id, lost }, which is perfabi.ReadValue (so reads decode straight into it).
type MirrorValue = perfabi.ReadValue

// MirrorHdr is struct bp_mirror_hdr.
type MirrorHdr struct {
	Seq        uint32
	Magic      uint32
	State      uint32
	Flags      uint32
	UpdateNs   uint64
	ReadFormat uint64
	Enabled    uint64
	Running    uint64
	Nr         uint32
	Pad        uint32
	Generation uint64
}

// MirrorMaxValues is how many values (group members) one mirror page holds.
const MirrorMaxValues = (PageSize - int(unsafe.Sizeof(MirrorHdr{}))) / int(unsafe.Sizeof(MirrorValue{}))

// MirrorPage is struct bp_mirror_page.
type MirrorPage struct {
	Hdr    MirrorHdr
	Values [MirrorMaxValues]MirrorValue
}
