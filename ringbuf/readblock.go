package ringbuf

import (
	"fmt"
	"math/bits"

	"github.com/bayesperf/bayesperf/perfabi"
)

// ReadBlock is the location of a struct read_format inside a record (a SAMPLE with
// SampleRead, or a READ record), for reading and rewriting its counter values and times
// in place without re-encoding the rest of the record. It aliases the record bytes and is
// valid as long as they are; it holds no pointers besides the slice and costs nothing
// to find or copy.
type ReadBlock struct {
	rec     []byte
	values  int // offset of the first value
	stride  int // bytes per value entry
	n       int
	enabled int // offset of time_enabled, -1 when absent
	running int // offset of time_running, -1 when absent
	id      int // offset of id within an entry, -1 when absent
	lost    int // offset of lost within an entry, -1 when absent
}

// FindReadBlock locates the read_format block of rec (header included), a SAMPLE whose
// format has SampleRead or a READ record. It checks that the whole block lies inside
// the record.
func FindReadBlock(rec []byte, f *Format) (ReadBlock, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return ReadBlock{}, err
	}
	if int(h.Size) < HeaderSize || int(h.Size) > len(rec) {
		return ReadBlock{}, &DecodeError{Record: h.Type, Field: "header.size", Offset: 6, Err: fmt.Errorf("size %d with %d bytes: %w", h.Size, len(rec), ErrTruncated)}
	}
	rec = rec[:h.Size]
	var off int
	switch h.Type {
	case RecordSample:
		if f.SampleType&SampleRead == 0 {
			return ReadBlock{}, &DecodeError{Record: h.Type, Field: "read", Offset: HeaderSize, Err: fmt.Errorf("format has no SampleRead: %w", ErrCorrupt)}
		}
		// Every field before READ is 8 bytes wide.
		before := f.SampleType & (SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleAddr | SampleID | SampleStreamID | SampleCPU | SamplePeriod)
		off = HeaderSize + 8*bits.OnesCount64(uint64(before))
	case RecordRead:
		off = HeaderSize + 8 // pid, tid
	default:
		return ReadBlock{}, &DecodeError{Record: h.Type, Field: "header.type", Offset: 0, Err: fmt.Errorf("no read_format block in this record type: %w", ErrCorrupt)}
	}
	rf := uint64(f.ReadFormat)
	n := 1
	if rf&perfabi.FormatGroup != 0 {
		if off+8 > len(rec) {
			return ReadBlock{}, &DecodeError{Record: h.Type, Field: "read_format.nr", Offset: off, Err: ErrTruncated}
		}
		nr := bo.Uint64(rec[off:])
		if nr > uint64(len(rec)) {
			return ReadBlock{}, &DecodeError{Record: h.Type, Field: "read_format.nr", Offset: off, Err: fmt.Errorf("%d values: %w", nr, ErrTruncated)}
		}
		n = int(nr)
	}
	l := perfabi.LayoutRead(rf, n)
	if off+l.Size > len(rec) {
		return ReadBlock{}, &DecodeError{Record: h.Type, Field: "read_format", Offset: off, Err: fmt.Errorf("block of %d bytes runs past the %d-byte record: %w", l.Size, len(rec), ErrTruncated)}
	}
	at := func(rel int) int {
		if rel < 0 {
			return -1
		}
		return off + rel
	}
	b := ReadBlock{rec: rec, values: off + l.Values, stride: l.Stride, n: n,
		enabled: at(l.Enabled), running: at(l.Running), id: l.ID, lost: l.Lost}
	return b, nil
}

// Len is the number of counter values (1 without FormatGroup).
func (b ReadBlock) Len() int { return b.n }

func (b ReadBlock) at(i int) int { return b.values + i*b.stride }

// Value returns the i-th counter value, 0 <= i < Len().
func (b ReadBlock) Value(i int) uint64 { return bo.Uint64(b.rec[b.at(i):]) }

// SetValue overwrites the i-th counter value in place.
func (b ReadBlock) SetValue(i int, v uint64) { bo.PutUint64(b.rec[b.at(i):], v) }

// ID returns the i-th value's id, if the format has FormatID.
func (b ReadBlock) ID(i int) (uint64, bool) {
	if b.id < 0 {
		return 0, false
	}
	return bo.Uint64(b.rec[b.at(i)+b.id:]), true
}

// Lost returns the i-th value's lost count, if the format has FormatLost.
func (b ReadBlock) Lost(i int) (uint64, bool) {
	if b.lost < 0 {
		return 0, false
	}
	return bo.Uint64(b.rec[b.at(i)+b.lost:]), true
}

// TimeEnabled returns time_enabled, if the format has FormatTotalTimeEnabled.
func (b ReadBlock) TimeEnabled() (uint64, bool) {
	if b.enabled < 0 {
		return 0, false
	}
	return bo.Uint64(b.rec[b.enabled:]), true
}

// TimeRunning returns time_running, if the format has FormatTotalTimeRunning.
func (b ReadBlock) TimeRunning() (uint64, bool) {
	if b.running < 0 {
		return 0, false
	}
	return bo.Uint64(b.rec[b.running:]), true
}

// SetTimes overwrites time_enabled and time_running where the format has them. Setting
// running equal to enabled tells a tool the value needs no scaling: the correction stage
// does this when it writes a corrected count.
func (b ReadBlock) SetTimes(enabled, running uint64) {
	if b.enabled >= 0 {
		bo.PutUint64(b.rec[b.enabled:], enabled)
	}
	if b.running >= 0 {
		bo.PutUint64(b.rec[b.running:], running)
	}
}
