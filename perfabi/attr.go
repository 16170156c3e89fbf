package perfabi

import (
	"encoding/binary"
	"fmt"
)

// ByteOrder is the byte order of every perf ABI structure: the host's.
var ByteOrder = binary.NativeEndian

// read_format bits (PERF_FORMAT_*): which fields read(2) returns.
const (
	FormatTotalTimeEnabled uint64 = 1 << 0
	FormatTotalTimeRunning uint64 = 1 << 1
	FormatID               uint64 = 1 << 2
	FormatGroup            uint64 = 1 << 3
	FormatLost             uint64 = 1 << 4
	// FormatKnown is every read_format bit defined so far.
	FormatKnown = FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID | FormatGroup | FormatLost
)

// Flag bits of the perf_event_attr bitfield word (offset 40), in the kernel's order.
const (
	FlagDisabled     uint64 = 1 << 0  // start disabled; enable with an ioctl or enable_on_exec
	FlagInherit      uint64 = 1 << 1  // children (threads and forks) created later are counted too
	FlagPinned       uint64 = 1 << 2  // must always be on the PMU (error state otherwise)
	FlagExclusive    uint64 = 1 << 3  // only group on the PMU when scheduled
	FlagExcludeUser  uint64 = 1 << 4  // do not count user mode (:k)
	FlagExcludeKern  uint64 = 1 << 5  // do not count kernel mode (:u)
	FlagExcludeHV    uint64 = 1 << 6  // do not count hypervisor (:u, :k)
	FlagExcludeIdle  uint64 = 1 << 7  // do not count when idle
	FlagMmap         uint64 = 1 << 8  // emit PERF_RECORD_MMAP
	FlagComm         uint64 = 1 << 9  // emit PERF_RECORD_COMM
	FlagFreq         uint64 = 1 << 10 // sample_freq instead of sample_period
	FlagInheritStat  uint64 = 1 << 11
	FlagEnableOnExec uint64 = 1 << 12 // enable at the target's next exec
	FlagTask         uint64 = 1 << 13
	FlagWatermark    uint64 = 1 << 14 // wakeup_watermark instead of wakeup_events
	// precise_ip occupies bits 15-16; use PreciseIP.
	FlagMmapData               uint64 = 1 << 17
	FlagSampleIDAll            uint64 = 1 << 18
	FlagExcludeHost            uint64 = 1 << 19 // :G
	FlagExcludeGuest           uint64 = 1 << 20 // :H
	FlagExcludeCallchainKernel uint64 = 1 << 21
	FlagExcludeCallchainUser   uint64 = 1 << 22
	FlagMmap2                  uint64 = 1 << 23
	FlagCommExec               uint64 = 1 << 24
	FlagUseClockID             uint64 = 1 << 25
	FlagContextSwitch          uint64 = 1 << 26
	FlagWriteBackward          uint64 = 1 << 27
	FlagNamespaces             uint64 = 1 << 28
	FlagKsymbol                uint64 = 1 << 29
	FlagBPFEvent               uint64 = 1 << 30
	FlagAuxOutput              uint64 = 1 << 31
	FlagCgroup                 uint64 = 1 << 32
	FlagTextPoke               uint64 = 1 << 33
	FlagBuildID                uint64 = 1 << 34
	FlagInheritThread          uint64 = 1 << 35
	FlagRemoveOnExec           uint64 = 1 << 36
	FlagSigtrap                uint64 = 1 << 37
)

const preciseShift = 15

// Sizes of published versions of perf_event_attr. A size of 0 means VER0: the kernel reads
// only the first 64 bytes, so every field from Config2 on is taken as zero.
const (
	AttrSizeVer0 = 64
	AttrSizeVer1 = 72  // + config2
	AttrSizeVer2 = 80  // + branch_sample_type
	AttrSizeVer3 = 96  // + sample_regs_user, sample_stack_user, clockid
	AttrSizeVer4 = 104 // + sample_regs_intr
	AttrSizeVer5 = 112 // + aux_watermark, sample_max_stack
	AttrSizeVer6 = 120 // + aux_sample_size
	AttrSizeVer7 = 128 // + sig_data
	AttrSizeVer8 = 136 // + config3
	// AttrSize is the size this package encodes: the newest layout it knows.
	AttrSize = AttrSizeVer8
)

// Attr mirrors struct perf_event_attr field by field, in the kernel's order and layout
// (Encode and DecodeAttr use exactly that byte layout, in ByteOrder).
type Attr struct {
	Type uint32 // major type: PERF_TYPE_HARDWARE, _SOFTWARE, _TRACEPOINT, a PMU's sysfs type...
	// Size is the byte size of the structure the caller speaks, for forward and backward
	// compatibility. 0 means AttrSizeVer0. The kernel rejects (E2BIG) a larger size with
	// non-zero bytes it does not know.
	Size   uint32
	Config uint64 // type-specific event selector
	// SamplePeriod is sample_period, or sample_freq when FlagFreq is set; 0 = counting only.
	SamplePeriod uint64
	SampleType   uint64 // PERF_SAMPLE_* bits: what each sample record holds
	ReadFormat   uint64 // Format* bits: what read(2) returns
	Flags        uint64 // Flag* bits and precise_ip (the kernel's bitfield word)
	// WakeupEvents is wakeup_events, or wakeup_watermark (bytes) when FlagWatermark is set.
	WakeupEvents uint32
	BPType       uint32 // breakpoint type
	Config1      uint64 // bp_addr, kprobe_func, uprobe_path, or config1 (extension of Config)
	Config2      uint64 // bp_len, kprobe_addr, probe_offset, or config2
	// BranchSampleType selects branches for PERF_SAMPLE_BRANCH_STACK.
	BranchSampleType uint64
	SampleRegsUser   uint64 // user registers to dump in samples
	SampleStackUser  uint32 // bytes of user stack to dump in samples
	ClockID          int32  // clock for timestamps when FlagUseClockID is set
	SampleRegsIntr   uint64 // registers at the interrupt to dump in samples
	AuxWatermark     uint32 // wakeup watermark for the AUX area
	SampleMaxStack   uint16 // maximum callchain depth
	Reserved2        uint16 // must be zero
	AuxSampleSize    uint32 // bytes of AUX data to put in samples
	AuxAction        uint32 // AUX actions (reserved in older kernels: must be zero there)
	SigData          uint64 // user data delivered with SIGTRAP
	Config3          uint64 // extension of Config2
}

// EffectiveSize is the size the kernel will read: Size, with 0 meaning AttrSizeVer0.
func (a *Attr) EffectiveSize() uint32 {
	if a.Size == 0 {
		return AttrSizeVer0
	}
	return a.Size
}

// PreciseIP returns the skid constraint (0-3) stored in bits 15-16 of Flags.
func (a *Attr) PreciseIP() uint8 { return uint8(a.Flags>>preciseShift) & 3 }

// SetPreciseIP stores the skid constraint p (0-3, higher bits dropped).
func (a *Attr) SetPreciseIP(p uint8) {
	a.Flags = a.Flags&^(3<<preciseShift) | uint64(p&3)<<preciseShift
}

// Encode returns the AttrSize-byte kernel layout of a (whatever a.Size says; Size itself
// is written as is).
func (a *Attr) Encode() []byte {
	b := make([]byte, AttrSize)
	o := ByteOrder
	o.PutUint32(b[0:], a.Type)
	o.PutUint32(b[4:], a.Size)
	o.PutUint64(b[8:], a.Config)
	o.PutUint64(b[16:], a.SamplePeriod)
	o.PutUint64(b[24:], a.SampleType)
	o.PutUint64(b[32:], a.ReadFormat)
	o.PutUint64(b[40:], a.Flags)
	o.PutUint32(b[48:], a.WakeupEvents)
	o.PutUint32(b[52:], a.BPType)
	o.PutUint64(b[56:], a.Config1)
	o.PutUint64(b[64:], a.Config2)
	o.PutUint64(b[72:], a.BranchSampleType)
	o.PutUint64(b[80:], a.SampleRegsUser)
	o.PutUint32(b[88:], a.SampleStackUser)
	o.PutUint32(b[92:], uint32(a.ClockID))
	o.PutUint64(b[96:], a.SampleRegsIntr)
	o.PutUint32(b[104:], a.AuxWatermark)
	o.PutUint16(b[108:], a.SampleMaxStack)
	o.PutUint16(b[110:], a.Reserved2)
	o.PutUint32(b[112:], a.AuxSampleSize)
	o.PutUint32(b[116:], a.AuxAction)
	o.PutUint64(b[120:], a.SigData)
	o.PutUint64(b[128:], a.Config3)
	return b
}

// DecodeAttr reads an attr as the kernel would from b (for example bytes a tool passed to
// perf_event_open): the declared size, 0 meaning AttrSizeVer0, bounds what is read; fields
// past it are zero. It fails when b is shorter than the declared size or the size is below
// VER0; bytes past AttrSize must be zero, as the kernel demands (E2BIG otherwise).
func DecodeAttr(b []byte) (Attr, error) {
	var a Attr
	if len(b) < 8 {
		return a, fmt.Errorf("decode perf_event_attr: %d bytes, need at least 8", len(b))
	}
	o := ByteOrder
	size := o.Uint32(b[4:])
	eff := size
	if eff == 0 {
		eff = AttrSizeVer0
	}
	if eff < AttrSizeVer0 {
		return a, fmt.Errorf("decode perf_event_attr: size %d below the minimum %d", size, AttrSizeVer0)
	}
	if uint64(len(b)) < uint64(eff) {
		return a, fmt.Errorf("decode perf_event_attr: size %d but only %d bytes", size, len(b))
	}
	if eff > AttrSize {
		for i := AttrSize; i < int(eff); i++ {
			if b[i] != 0 {
				return a, fmt.Errorf("decode perf_event_attr: unknown non-zero byte at offset %d (size %d)", i, size)
			}
		}
	}
	var full [AttrSize]byte
	copy(full[:], b[:min(int(eff), AttrSize)])
	f := full[:]
	a.Type = o.Uint32(f[0:])
	a.Size = size
	a.Config = o.Uint64(f[8:])
	a.SamplePeriod = o.Uint64(f[16:])
	a.SampleType = o.Uint64(f[24:])
	a.ReadFormat = o.Uint64(f[32:])
	a.Flags = o.Uint64(f[40:])
	a.WakeupEvents = o.Uint32(f[48:])
	a.BPType = o.Uint32(f[52:])
	a.Config1 = o.Uint64(f[56:])
	a.Config2 = o.Uint64(f[64:])
	a.BranchSampleType = o.Uint64(f[72:])
	a.SampleRegsUser = o.Uint64(f[80:])
	a.SampleStackUser = o.Uint32(f[88:])
	a.ClockID = int32(o.Uint32(f[92:]))
	a.SampleRegsIntr = o.Uint64(f[96:])
	a.AuxWatermark = o.Uint32(f[104:])
	a.SampleMaxStack = o.Uint16(f[108:])
	a.Reserved2 = o.Uint16(f[110:])
	a.AuxSampleSize = o.Uint32(f[112:])
	a.AuxAction = o.Uint32(f[116:])
	a.SigData = o.Uint64(f[120:])
	a.Config3 = o.Uint64(f[128:])
	return a, nil
}
