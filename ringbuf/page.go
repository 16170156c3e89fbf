package ringbuf

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/bayesperf/bayesperf/perfabi"
)

// Byte offsets of the fields of struct perf_event_mmap_page (<linux/perf_event.h>).
// TestPageLayoutMatchesC checks every one against the C compiler.
const (
	OffVersion       = 0
	OffCompatVersion = 4
	OffLock          = 8 // seqlock guarding index, offset, time_* (the self-monitoring fields)
	OffIndex         = 12
	OffOffset        = 16
	OffTimeEnabled   = 24
	OffTimeRunning   = 32
	OffCapabilities  = 40
	OffPMCWidth      = 48
	OffTimeShift     = 50
	OffTimeMult      = 52
	OffTimeOffset    = 56
	OffTimeZero      = 64
	OffSize          = 72
	OffReserved1     = 76
	OffTimeCycles    = 80
	OffTimeMask      = 88
	OffReserved      = 96 // __u8 __reserved[116*8], pads the self-monitoring part to 1 KiB
	OffDataHead      = 1024
	OffDataTail      = 1032
	OffDataOffset    = 1040
	OffDataSize      = 1048
	OffAuxHead       = 1056
	OffAuxTail       = 1064
	OffAuxOffset     = 1072
	OffAuxSize       = 1080

	// MetaPageSize is sizeof(struct perf_event_mmap_page).
	MetaPageSize = 1088
	// MetaPageSizeField is what the kernel stores in the size field: the header size up
	// to __reserved (offsetof(struct perf_event_mmap_page, __reserved)).
	MetaPageSizeField = OffReserved
)

// Bits of perf_event_mmap_page.capabilities.
const (
	CapBit0              = 1 << 0 // always 0 in current kernels
	CapBit0IsDeprecated  = 1 << 1 // set: bit 0 means nothing, use the bits below
	CapUserRdpmc         = 1 << 2 // RDPMC can read the counter from user space
	CapUserTime          = 1 << 3 // time_shift, time_mult, time_offset are valid
	CapUserTimeZero      = 1 << 4 // time_zero is valid
	CapUserTimeShort     = 1 << 5 // time_cycles, time_mask are valid
	capReservedMaskShift = 6
)

// MetaPage is a decoded copy of struct perf_event_mmap_page, field by field, for tests,
// diagnostics and initialising mirror pages. Live rings are accessed through [Reader]
// and [Writer], which load and store data_head/data_tail atomically in place.
type MetaPage struct {
	Version       uint32 // version of this structure (0 today)
	CompatVersion uint32 // lowest version this is compatible with
	Lock          uint32 // seqlock for the fields below: odd while the kernel updates them
	Index         uint32 // hardware counter index + 1 for rdpmc, 0 when not on a counter
	Offset        int64  // add to the rdpmc value to get the count
	TimeEnabled   uint64 // ns the event has been enabled
	TimeRunning   uint64 // ns the event has been on a counter
	Capabilities  uint64 // Cap* bits
	PMCWidth      uint16 // bit width of the rdpmc value
	TimeShift     uint16 // cycles to ns: ns = time_offset + (cyc * time_mult) >> time_shift
	TimeMult      uint32
	TimeOffset    uint64
	TimeZero      uint64 // TSC value at perf clock zero (CapUserTimeZero)
	Size          uint32 // header size up to __reserved
	Reserved1     uint32
	TimeCycles    uint64 // CapUserTimeShort: cyc = time_cycles + ((cyc - time_cycles) & time_mask)
	TimeMask      uint64
	DataHead      uint64 // producer position in the data area (free running)
	DataTail      uint64 // consumer position, written by the reader of a writable mapping
	DataOffset    uint64 // where the data area starts, from the start of the mapping
	DataSize      uint64 // bytes in the data area, a power of two
	AuxHead       uint64
	AuxTail       uint64
	AuxOffset     uint64
	AuxSize       uint64
}

// bo is the byte order of the ring and its records: the host's, as for all of the perf ABI.
var bo = perfabi.ByteOrder

// ReadMetaPage copies the header page at the start of mem into a MetaPage. It reads
// data_head and data_tail with plain loads: use it for diagnostics, not to drive a ring.
func ReadMetaPage(mem []byte) (MetaPage, error) {
	if len(mem) < MetaPageSize {
		return MetaPage{}, fmt.Errorf("read meta page: %d bytes, need %d: %w", len(mem), MetaPageSize, ErrTruncated)
	}
	return MetaPage{
		Version:       bo.Uint32(mem[OffVersion:]),
		CompatVersion: bo.Uint32(mem[OffCompatVersion:]),
		Lock:          bo.Uint32(mem[OffLock:]),
		Index:         bo.Uint32(mem[OffIndex:]),
		Offset:        int64(bo.Uint64(mem[OffOffset:])),
		TimeEnabled:   bo.Uint64(mem[OffTimeEnabled:]),
		TimeRunning:   bo.Uint64(mem[OffTimeRunning:]),
		Capabilities:  bo.Uint64(mem[OffCapabilities:]),
		PMCWidth:      bo.Uint16(mem[OffPMCWidth:]),
		TimeShift:     bo.Uint16(mem[OffTimeShift:]),
		TimeMult:      bo.Uint32(mem[OffTimeMult:]),
		TimeOffset:    bo.Uint64(mem[OffTimeOffset:]),
		TimeZero:      bo.Uint64(mem[OffTimeZero:]),
		Size:          bo.Uint32(mem[OffSize:]),
		Reserved1:     bo.Uint32(mem[OffReserved1:]),
		TimeCycles:    bo.Uint64(mem[OffTimeCycles:]),
		TimeMask:      bo.Uint64(mem[OffTimeMask:]),
		DataHead:      bo.Uint64(mem[OffDataHead:]),
		DataTail:      bo.Uint64(mem[OffDataTail:]),
		DataOffset:    bo.Uint64(mem[OffDataOffset:]),
		DataSize:      bo.Uint64(mem[OffDataSize:]),
		AuxHead:       bo.Uint64(mem[OffAuxHead:]),
		AuxTail:       bo.Uint64(mem[OffAuxTail:]),
		AuxOffset:     bo.Uint64(mem[OffAuxOffset:]),
		AuxSize:       bo.Uint64(mem[OffAuxSize:]),
	}, nil
}

// WriteMetaPage stores every field of p into the header page at the start of mem with
// plain stores; the reserved bytes are zeroed. Use it to initialise a mirror page
// before any reader maps it.
func WriteMetaPage(mem []byte, p MetaPage) error {
	if len(mem) < MetaPageSize {
		return fmt.Errorf("write meta page: %d bytes, need %d: %w", len(mem), MetaPageSize, ErrTruncated)
	}
	bo.PutUint32(mem[OffVersion:], p.Version)
	bo.PutUint32(mem[OffCompatVersion:], p.CompatVersion)
	bo.PutUint32(mem[OffLock:], p.Lock)
	bo.PutUint32(mem[OffIndex:], p.Index)
	bo.PutUint64(mem[OffOffset:], uint64(p.Offset))
	bo.PutUint64(mem[OffTimeEnabled:], p.TimeEnabled)
	bo.PutUint64(mem[OffTimeRunning:], p.TimeRunning)
	bo.PutUint64(mem[OffCapabilities:], p.Capabilities)
	bo.PutUint16(mem[OffPMCWidth:], p.PMCWidth)
	bo.PutUint16(mem[OffTimeShift:], p.TimeShift)
	bo.PutUint32(mem[OffTimeMult:], p.TimeMult)
	bo.PutUint64(mem[OffTimeOffset:], p.TimeOffset)
	bo.PutUint64(mem[OffTimeZero:], p.TimeZero)
	bo.PutUint32(mem[OffSize:], p.Size)
	bo.PutUint32(mem[OffReserved1:], p.Reserved1)
	bo.PutUint64(mem[OffTimeCycles:], p.TimeCycles)
	bo.PutUint64(mem[OffTimeMask:], p.TimeMask)
	clear(mem[OffReserved:OffDataHead])
	bo.PutUint64(mem[OffDataHead:], p.DataHead)
	bo.PutUint64(mem[OffDataTail:], p.DataTail)
	bo.PutUint64(mem[OffDataOffset:], p.DataOffset)
	bo.PutUint64(mem[OffDataSize:], p.DataSize)
	bo.PutUint64(mem[OffAuxHead:], p.AuxHead)
	bo.PutUint64(mem[OffAuxTail:], p.AuxTail)
	bo.PutUint64(mem[OffAuxOffset:], p.AuxOffset)
	bo.PutUint64(mem[OffAuxSize:], p.AuxSize)
	return nil
}

// word returns the naturally aligned uint64 at mem[off:], for atomic access. Callers
// have checked that mem is 8-byte aligned and long enough.
func word(mem []byte, off int) *uint64 {
	return (*uint64)(unsafe.Pointer(&mem[off]))
}

// aligned8 reports whether the first byte of mem is 8-byte aligned.
func aligned8(mem []byte) bool {
	return len(mem) > 0 && uintptr(unsafe.Pointer(&mem[0]))%8 == 0
}

// Barrier C: pairs with the producer's store of data_head after its data stores (B).
func loadHeadAcquire(p *uint64) uint64 { return atomic.LoadUint64(p) }

// Barrier D: pairs with the producer's load of data_tail before it reuses space (A).
func storeTailRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// Barrier A: pairs with the reader's store-release of data_tail (D); the space check
// that depends on it orders the data stores that follow.
func loadTailAcquire(p *uint64) uint64 { return atomic.LoadUint64(p) }

// Barrier B: pairs with the reader's load-acquire of data_head (C); orders the record's
// data stores before the new head is visible.
func storeHeadRelease(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
