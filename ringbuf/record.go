package ringbuf

import (
	"errors"
	"fmt"

	"github.com/bayesperf/bayesperf/perfabi"
)

// Errors wrapped by everything this package returns, for errors.Is.
var (
	// ErrTruncated: the bytes end before the record or field they announce.
	ErrTruncated = errors.New("truncated")
	// ErrCorrupt: a size, position or count is impossible (record smaller than its
	// header, data_head ahead of data_tail by more than the ring, ...).
	ErrCorrupt = errors.New("corrupt")
	// ErrNoSpace: the record can never fit the ring (larger than data_size).
	ErrNoSpace = errors.New("no space")
)

// RecordType is perf_event_header.type.
type RecordType uint32

// PERF_RECORD_* values from <linux/perf_event.h>.
const (
	RecordMmap              RecordType = 1
	RecordLost              RecordType = 2
	RecordComm              RecordType = 3
	RecordExit              RecordType = 4
	RecordThrottle          RecordType = 5
	RecordUnthrottle        RecordType = 6
	RecordFork              RecordType = 7
	RecordRead              RecordType = 8
	RecordSample            RecordType = 9
	RecordMmap2             RecordType = 10
	RecordAux               RecordType = 11
	RecordItraceStart       RecordType = 12
	RecordLostSamples       RecordType = 13
	RecordSwitch            RecordType = 14
	RecordSwitchCPUWide     RecordType = 15
	RecordNamespaces        RecordType = 16
	RecordKsymbol           RecordType = 17
	RecordBPFEvent          RecordType = 18
	RecordCgroup            RecordType = 19
	RecordTextPoke          RecordType = 20
	RecordAuxOutputHWID     RecordType = 21
	RecordCallchainDeferred RecordType = 22
)

var recordNames = [...]string{
	1: "MMAP", 2: "LOST", 3: "COMM", 4: "EXIT", 5: "THROTTLE", 6: "UNTHROTTLE", 7: "FORK",
	8: "READ", 9: "SAMPLE", 10: "MMAP2", 11: "AUX", 12: "ITRACE_START", 13: "LOST_SAMPLES",
	14: "SWITCH", 15: "SWITCH_CPU_WIDE", 16: "NAMESPACES", 17: "KSYMBOL", 18: "BPF_EVENT",
	19: "CGROUP", 20: "TEXT_POKE", 21: "AUX_OUTPUT_HW_ID", 22: "CALLCHAIN_DEFERRED",
}

func (t RecordType) String() string {
	if int(t) < len(recordNames) && t > 0 {
		return recordNames[t]
	}
	return fmt.Sprintf("RECORD_%d", uint32(t))
}

// Bits of perf_event_header.misc.
const (
	MiscCPUModeMask   = 7
	MiscKernel        = 1
	MiscUser          = 2
	MiscHypervisor    = 3
	MiscGuestKernel   = 4
	MiscGuestUser     = 5
	MiscProcMapParse  = 1 << 12 // MMAP/MMAP2 of a proc map parse timeout
	MiscMmapData      = 1 << 13 // MMAP/MMAP2: non-executable mapping
	MiscCommExec      = 1 << 13 // COMM: the comm changed because of exec
	MiscForkExec      = 1 << 13 // FORK: the task is the result of an exec
	MiscSwitchOut     = 1 << 13 // SWITCH: switch out rather than in
	MiscExactIP       = 1 << 14 // SAMPLE: ip points at the instruction that caused it
	MiscSwitchPreempt = 1 << 14 // SWITCH out: the task was preempted
	MiscMmapBuildID   = 1 << 14 // MMAP2: the build-id form of the union
	MiscExtReserved   = 1 << 15
)

// HeaderSize is sizeof(struct perf_event_header).
const HeaderSize = 8

// Header is struct perf_event_header.
type Header struct {
	Type RecordType
	Misc uint16
	Size uint16 // bytes in the whole record, header included
}

// ParseHeader reads the header at the start of b.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("parse record header: %d bytes: %w", len(b), ErrTruncated)
	}
	return Header{Type: RecordType(bo.Uint32(b)), Misc: bo.Uint16(b[4:]), Size: bo.Uint16(b[6:])}, nil
}

// SampleType is perf_event_attr.sample_type.
type SampleType uint64

// PERF_SAMPLE_* bits.
const (
	SampleIP           SampleType = 1 << 0
	SampleTID          SampleType = 1 << 1
	SampleTime         SampleType = 1 << 2
	SampleAddr         SampleType = 1 << 3
	SampleRead         SampleType = 1 << 4
	SampleCallchain    SampleType = 1 << 5
	SampleID           SampleType = 1 << 6
	SampleCPU          SampleType = 1 << 7
	SamplePeriod       SampleType = 1 << 8
	SampleStreamID     SampleType = 1 << 9
	SampleRaw          SampleType = 1 << 10
	SampleBranchStack  SampleType = 1 << 11
	SampleRegsUser     SampleType = 1 << 12
	SampleStackUser    SampleType = 1 << 13
	SampleWeight       SampleType = 1 << 14
	SampleDataSrc      SampleType = 1 << 15
	SampleIdentifier   SampleType = 1 << 16
	SampleTransaction  SampleType = 1 << 17
	SampleRegsIntr     SampleType = 1 << 18
	SamplePhysAddr     SampleType = 1 << 19
	SampleAux          SampleType = 1 << 20
	SampleCgroup       SampleType = 1 << 21
	SampleDataPageSize SampleType = 1 << 22
	SampleCodePageSize SampleType = 1 << 23
	SampleWeightStruct SampleType = 1 << 24

	// SampleAll is every bit this package decodes.
	SampleAll SampleType = 1<<25 - 1
	// sampleIDAllMask is the bits that also appear in the sample_id_all trailer.
	sampleIDAllMask = SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU | SampleIdentifier
)

// ReadFormat is perf_event_attr.read_format.
type ReadFormat uint64

// PERF_FORMAT_* bits, typed (their values are perfabi's).
const (
	FormatTotalTimeEnabled = ReadFormat(perfabi.FormatTotalTimeEnabled)
	FormatTotalTimeRunning = ReadFormat(perfabi.FormatTotalTimeRunning)
	FormatID               = ReadFormat(perfabi.FormatID)
	FormatGroup            = ReadFormat(perfabi.FormatGroup)
	FormatLost             = ReadFormat(perfabi.FormatLost)

	// FormatAll is every bit this package decodes.
	FormatAll = ReadFormat(perfabi.FormatKnown)
)

// Format is what decoding needs to know about the event that wrote a record: the parts
// of its perf_event_attr that change the layout. The zero Format decodes records of an
// event with no sample_type bits and no sample_id_all.
type Format struct {
	SampleType  SampleType
	ReadFormat  ReadFormat
	SampleIDAll bool   // attr.sample_id_all: non-SAMPLE records carry a SampleID trailer
	RegsUser    uint64 // attr.sample_regs_user: one u64 per set bit when abi != 0
	RegsIntr    uint64 // attr.sample_regs_intr
	// BranchHWIndex is attr.branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX: the branch
	// stack carries hw_idx after nr.
	BranchHWIndex bool
	// BranchCounters is attr.branch_sample_type & PERF_SAMPLE_BRANCH_COUNTERS (6.8+):
	// the branch stack carries one counters word per entry after the entries.
	BranchCounters bool
}

// IDTrailerSize is the size of the sample_id_all trailer (the kernel's id_header_size),
// 0 when f.SampleIDAll is false.
func (f *Format) IDTrailerSize() int {
	if !f.SampleIDAll {
		return 0
	}
	n := 0
	st := f.SampleType
	for _, b := range []SampleType{SampleTID, SampleTime, SampleID, SampleStreamID, SampleCPU, SampleIdentifier} {
		if st&b != 0 {
			n += 8
		}
	}
	return n
}

// IDFields is the sample_id_all trailer of non-SAMPLE records (and the same fields at
// the start of a SAMPLE). Fields whose sample_type bit is clear are zero.
type IDFields struct {
	Pid, Tid   uint32 // SampleTID
	Time       uint64 // SampleTime
	ID         uint64 // SampleID
	StreamID   uint64 // SampleStreamID
	CPU, Res   uint32 // SampleCPU
	Identifier uint64 // SampleIdentifier
}

// Record is one decoded PERF_RECORD_*. The concrete types are pointers: *Mmap, *Lost,
// *Comm, *Exit, *Throttle, *Fork, *Read, *Sample, *Mmap2, *Aux, *ItraceStart,
// *LostSamples, *Switch, *SwitchCPUWide, *Namespaces, *Ksymbol, *BPFEvent, *Cgroup,
// *TextPoke, *AuxOutputHWID, *CallchainDeferred and *Unknown.
type Record interface {
	// Type is the header's type (for Throttle and Fork/Exit, the one that was decoded).
	Type() RecordType
	// HeaderMisc is the header's misc field.
	HeaderMisc() uint16
}

// Common holds what every decoded record has besides its body: header misc bits and the
// sample_id_all trailer (zero when the format has none).
type Common struct {
	Misc uint16
	ID   IDFields
}

// HeaderMisc returns the header's misc field.
func (c *Common) HeaderMisc() uint16 { return c.Misc }

// Mmap is PERF_RECORD_MMAP: an executable mapping.
type Mmap struct {
	Common
	Pid, Tid         uint32
	Addr, Len, Pgoff uint64
	Filename         string
}

// Lost is PERF_RECORD_LOST: Lost records of event ID were dropped because the ring was full.
type Lost struct {
	Common
	EventID uint64
	Lost    uint64
}

// Comm is PERF_RECORD_COMM: a task's comm changed (MiscCommExec: by exec).
type Comm struct {
	Common
	Pid, Tid uint32
	Comm     string
}

// Exit is PERF_RECORD_EXIT or PERF_RECORD_FORK (IsFork), which share a layout.
type Exit struct {
	Common
	IsFork    bool
	Pid, Ppid uint32
	Tid, Ptid uint32
	Time      uint64
}

// Fork is an alias kept for readability at call sites; PERF_RECORD_FORK decodes to
// *Exit with IsFork set.
type Fork = Exit

// Throttle is PERF_RECORD_THROTTLE or PERF_RECORD_UNTHROTTLE (Unthrottle).
type Throttle struct {
	Common
	Unthrottle bool
	Time       uint64
	EventID    uint64
	StreamID   uint64
}

// CounterValue is one counter in a read_format block: its value and, per the format,
// its id (FormatID) and lost count (FormatLost).
type CounterValue = perfabi.ReadValue

// ReadValues is a decoded struct read_format. Without FormatGroup, Values has exactly one
// entry.
type ReadValues struct {
	TimeEnabled uint64 // FormatTotalTimeEnabled
	TimeRunning uint64 // FormatTotalTimeRunning
	Values      []CounterValue
}

// Read is PERF_RECORD_READ (inherit_stat child counts at exit).
type Read struct {
	Common
	Pid, Tid uint32
	Values   ReadValues
}

// BranchEntry is struct perf_branch_entry; Flags holds the packed bit fields.
type BranchEntry struct {
	From, To, Flags uint64
}

// Sample is PERF_RECORD_SAMPLE. Fields whose sample_type bit is clear are zero or nil.
// Byte slices alias the decoded record.
type Sample struct {
	Misc             uint16
	Identifier       uint64 // SampleIdentifier
	IP               uint64 // SampleIP
	Pid, Tid         uint32 // SampleTID
	Time             uint64 // SampleTime
	Addr             uint64 // SampleAddr
	ID               uint64 // SampleID
	StreamID         uint64 // SampleStreamID
	CPU, CPURes      uint32 // SampleCPU
	Period           uint64 // SamplePeriod
	Read             ReadValues
	Callchain        []uint64 // SampleCallchain: ips, including PERF_CONTEXT_* markers
	Raw              []byte   // SampleRaw: exactly size bytes (the kernel's padding included)
	BranchHWIndex    uint64   // SampleBranchStack with Format.BranchHWIndex
	Branches         []BranchEntry
	BranchCounters   []uint64 // Format.BranchCounters: one per branch
	RegsUserABI      uint64   // SampleRegsUser; regs present only when != 0
	RegsUser         []uint64
	StackUser        []byte // SampleStackUser: size bytes
	StackUserDynSize uint64 // present only when StackUser is non-empty
	Weight           uint64 // SampleWeight or SampleWeightStruct (see WeightStruct)
	DataSrc          uint64
	Transaction      uint64
	RegsIntrABI      uint64
	RegsIntr         []uint64
	PhysAddr         uint64
	Cgroup           uint64
	DataPageSize     uint64
	CodePageSize     uint64
	Aux              []byte // SampleAux
}

// WeightStruct splits Weight per union perf_sample_weight (SampleWeightStruct).
func (s *Sample) WeightStruct() (var1 uint32, var2, var3 uint16) {
	return uint32(s.Weight), uint16(s.Weight >> 32), uint16(s.Weight >> 48)
}

// HeaderMisc returns the header's misc field.
func (s *Sample) HeaderMisc() uint16 { return s.Misc }

// Mmap2 is PERF_RECORD_MMAP2. With MiscMmapBuildID in Misc the inode fields are replaced
// by BuildID; otherwise BuildID is empty.
type Mmap2 struct {
	Common
	Pid, Tid         uint32
	Addr, Len, Pgoff uint64
	Maj, Min         uint32
	Ino              uint64
	InoGeneration    uint64
	BuildID          []byte // up to 20 bytes; the 24-byte union's unused bytes are zero
	Prot, Flags      uint32
	Filename         string
}

// Aux is PERF_RECORD_AUX: new data in the AUX area.
type Aux struct {
	Common
	AuxOffset, AuxSize, Flags uint64
}

// ItraceStart is PERF_RECORD_ITRACE_START.
type ItraceStart struct {
	Common
	Pid, Tid uint32
}

// LostSamples is PERF_RECORD_LOST_SAMPLES: samples the PMU (not the ring) dropped.
type LostSamples struct {
	Common
	Lost uint64
}

// Switch is PERF_RECORD_SWITCH (MiscSwitchOut, MiscSwitchPreempt in Misc).
type Switch struct {
	Common
}

// SwitchCPUWide is PERF_RECORD_SWITCH_CPU_WIDE.
type SwitchCPUWide struct {
	Common
	NextPrevPid, NextPrevTid uint32
}

// NamespaceLink is struct perf_ns_link_info.
type NamespaceLink struct {
	Dev, Inode uint64
}

// Namespaces is PERF_RECORD_NAMESPACES.
type Namespaces struct {
	Common
	Pid, Tid   uint32
	Namespaces []NamespaceLink
}

// Ksymbol is PERF_RECORD_KSYMBOL.
type Ksymbol struct {
	Common
	Addr     uint64
	Len      uint32
	KsymType uint16
	Flags    uint16
	Name     string
}

// BPFEvent is PERF_RECORD_BPF_EVENT.
type BPFEvent struct {
	Common
	EventType uint16
	Flags     uint16
	ProgID    uint32
	Tag       [8]byte
}

// Cgroup is PERF_RECORD_CGROUP.
type Cgroup struct {
	Common
	CgroupID uint64
	Path     string
}

// TextPoke is PERF_RECORD_TEXT_POKE: kernel text at Addr changed from Old to New.
type TextPoke struct {
	Common
	Addr     uint64
	Old, New []byte
}

// AuxOutputHWID is PERF_RECORD_AUX_OUTPUT_HW_ID.
type AuxOutputHWID struct {
	Common
	HWID uint64
}

// CallchainDeferred is PERF_RECORD_CALLCHAIN_DEFERRED (6.17+): a user callchain
// delivered after the sample that asked for it, matched by Cookie.
type CallchainDeferred struct {
	Common
	Cookie uint64
	IPs    []uint64
}

// Unknown is a record of a type this package does not know, or any record decoded with
// [DecodeRaw]: the header and the body (everything after the header) untouched.
type Unknown struct {
	Header Header
	Body   []byte
}

// HeaderMisc returns the header's misc field.
func (u *Unknown) HeaderMisc() uint16 { return u.Header.Misc }

func (*Mmap) Type() RecordType        { return RecordMmap }
func (*Lost) Type() RecordType        { return RecordLost }
func (*Comm) Type() RecordType        { return RecordComm }
func (*Read) Type() RecordType        { return RecordRead }
func (*Sample) Type() RecordType      { return RecordSample }
func (*Mmap2) Type() RecordType       { return RecordMmap2 }
func (*Aux) Type() RecordType         { return RecordAux }
func (*ItraceStart) Type() RecordType { return RecordItraceStart }
func (*LostSamples) Type() RecordType { return RecordLostSamples }
func (*Switch) Type() RecordType      { return RecordSwitch }
func (*SwitchCPUWide) Type() RecordType {
	return RecordSwitchCPUWide
}
func (*Namespaces) Type() RecordType        { return RecordNamespaces }
func (*Ksymbol) Type() RecordType           { return RecordKsymbol }
func (*BPFEvent) Type() RecordType          { return RecordBPFEvent }
func (*Cgroup) Type() RecordType            { return RecordCgroup }
func (*TextPoke) Type() RecordType          { return RecordTextPoke }
func (*AuxOutputHWID) Type() RecordType     { return RecordAuxOutputHWID }
func (*CallchainDeferred) Type() RecordType { return RecordCallchainDeferred }
func (u *Unknown) Type() RecordType         { return u.Header.Type }

// Type is RecordFork when IsFork is set, else RecordExit.
func (e *Exit) Type() RecordType {
	if e.IsFork {
		return RecordFork
	}
	return RecordExit
}

// Type is RecordUnthrottle when Unthrottle is set, else RecordThrottle.
func (t *Throttle) Type() RecordType {
	if t.Unthrottle {
		return RecordUnthrottle
	}
	return RecordThrottle
}

// DecodeError says which record and field could not be decoded, and at which byte
// offset within the record.
type DecodeError struct {
	Record RecordType
	Field  string
	Offset int
	Err    error // ErrTruncated or ErrCorrupt, possibly wrapped with detail
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("decode %v record: field %s at byte %d: %v", e.Record, e.Field, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }
