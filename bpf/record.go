package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Record kinds, as in snapshot.c.
const (
	kindTick   = 1 // periodic snapshot of a running thread (or CPU)
	kindExit   = 2 // last snapshot of a thread, from its exit path
	kindFork   = 3 // a tracked thread created task Tid; Slot is the parent's tid
	kindGone   = 4 // a pending thread exited before its events were opened
	kindHeld   = 5 // as kindFork, for a new process held stopped until it is continued
	kindSwitch = 6 // snapshot of a thread leaving its CPU (not a slice boundary)
	kindRound  = 7 // a tick found no tracked thread running, but one ran since the last: a slice boundary without values
	// kindHeldEarly: as kindHeld, for a process stopped on its first way to user space
	// (Slot 0), after its kindFork notice.
	kindHeldEarly = 8
)

// maxEvents is MAX_EVENTS in snapshot.c: the most events per thread or CPU.
const maxEvents = 128

// slotPending is SLOT_PENDING in snapshot.c.
const slotPending = 0xffffffff

const (
	headerSize = 32 // struct header
	valueSize  = 24 // struct bpf_perf_event_value
)

// record is a decoded ring-buffer record. Vals aliases the caller's buffer.
type record struct {
	TimeNs uint64
	Tid    uint32
	Slot   uint32
	Kind   uint16
	CPU    uint32
	Errs   uint32 // values that could not be read (they are all zero)
	Err    int32  // first read error, negative errno
	Vals   []perf.Count
}

var errShortRecord = errors.New("short record")

// decodeRecord parses one record as written by snapshot.c, reusing vals. It checks every
// length against the bytes received: the kernel is trusted to write what the program asks,
// but a mismatched object or a bug must give an error, not a panic.
func decodeRecord(b []byte, vals []perf.Count) (record, error) {
	if len(b) < headerSize {
		return record{}, fmt.Errorf("decode record of %d bytes: %w", len(b), errShortRecord)
	}
	le := binary.LittleEndian
	r := record{
		TimeNs: le.Uint64(b[0:]),
		Tid:    le.Uint32(b[8:]),
		Slot:   le.Uint32(b[12:]),
		Kind:   le.Uint16(b[16:]),
		CPU:    le.Uint32(b[20:]),
		Errs:   le.Uint32(b[24:]),
		Err:    int32(le.Uint32(b[28:])),
	}
	nr := int(le.Uint16(b[18:]))
	switch r.Kind {
	case kindTick, kindExit, kindSwitch:
	case kindFork, kindGone, kindHeld, kindRound, kindHeldEarly:
		if nr != 0 {
			return record{}, fmt.Errorf("decode notice of kind %d: has %d values", r.Kind, nr)
		}
	default:
		return record{}, fmt.Errorf("decode record: unknown kind %d", r.Kind)
	}
	if nr > maxEvents {
		return record{}, fmt.Errorf("decode record: %d values, at most %d", nr, maxEvents)
	}
	// The ring buffer pads records to 8 bytes, so only a shortfall is an error.
	if need := headerSize + nr*valueSize; len(b) < need {
		return record{}, fmt.Errorf("decode record of %d values from %d bytes: %w", nr, len(b), errShortRecord)
	}
	vals = vals[:0]
	for i := range nr {
		o := headerSize + i*valueSize
		vals = append(vals, perf.Count{Value: le.Uint64(b[o:]), Enabled: le.Uint64(b[o+8:]), Running: le.Uint64(b[o+16:])})
	}
	r.Vals = vals
	return r, nil
}

// encodeRecord is decodeRecord's inverse, for tests.
func encodeRecord(r record) []byte {
	b := make([]byte, headerSize+len(r.Vals)*valueSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], r.TimeNs)
	le.PutUint32(b[8:], r.Tid)
	le.PutUint32(b[12:], r.Slot)
	le.PutUint16(b[16:], r.Kind)
	le.PutUint16(b[18:], uint16(len(r.Vals)))
	le.PutUint32(b[20:], r.CPU)
	le.PutUint32(b[24:], r.Errs)
	le.PutUint32(b[28:], uint32(r.Err))
	for i, v := range r.Vals {
		o := headerSize + i*valueSize
		le.PutUint64(b[o:], v.Value)
		le.PutUint64(b[o+8:], v.Enabled)
		le.PutUint64(b[o+16:], v.Running)
	}
	return b
}
