package perfabi

import "errors"

// ReadSize is the number of bytes read(2) returns for read_format rf and n group members
// (n is ignored without FormatGroup). The layouts (perf_read_one and perf_read_group in
// kernel/events/core.c) are { value, enabled, running, id, lost } for one event and
// { nr, enabled, running, { value, id, lost } x nr } for a group, each field present only
// when its bit is set.
func ReadSize(rf uint64, n int) int {
	per := 8
	if rf&FormatID != 0 {
		per += 8
	}
	if rf&FormatLost != 0 {
		per += 8
	}
	hdr := 0
	if rf&FormatTotalTimeEnabled != 0 {
		hdr += 8
	}
	if rf&FormatTotalTimeRunning != 0 {
		hdr += 8
	}
	if rf&FormatGroup != 0 {
		return 8 + hdr + n*per
	}
	return hdr + per
}

// ReadValue is one counter of a read(2) block: its count and, per read_format, its id and
// lost count.
type ReadValue struct {
	Value, ID, Lost uint64
}

// Read is a decoded read(2) of an event: the (group leader's) enabled and running ns, and
// one value, or one per group member with FormatGroup. Fields the read_format does not
// ask for are 0.
type Read struct {
	Enabled, Running uint64
	Values           []ReadValue
}

// ErrShortRead is DecodeRead's only error: b ends before the layout of its read_format.
var ErrShortRead = errors.New("perf read shorter than its read_format")

// DecodeRead decodes the read(2) layout of read_format rf at the start of b into r,
// reusing r.Values, and returns the number of bytes it used. It does not allocate when
// r.Values has the capacity, and fails only with ErrShortRead. Unknown rf bits, bytes
// after the layout and bounds on the group size are the caller's rules.
func DecodeRead(b []byte, rf uint64, r *Read) (int, error) {
	r.Enabled, r.Running = 0, 0
	r.Values = r.Values[:0]
	per, times := 8, 0
	if rf&FormatID != 0 {
		per += 8
	}
	if rf&FormatLost != 0 {
		per += 8
	}
	if rf&FormatTotalTimeEnabled != 0 {
		times += 8
	}
	if rf&FormatTotalTimeRunning != 0 {
		times += 8
	}
	bo := ByteOrder
	off := 0
	next := func() uint64 {
		v := bo.Uint64(b[off:])
		off += 8
		return v
	}
	group := rf&FormatGroup != 0
	nr := uint64(1)
	if group {
		if len(b) < 8 {
			return 0, ErrShortRead
		}
		nr = next()
	}
	// Every bound is checked here, once, so the reads below cannot run past b.
	if len(b)-off < times || nr > uint64(len(b)-off-times)/uint64(per) {
		return 0, ErrShortRead
	}
	var v ReadValue
	if !group {
		v.Value = next()
	}
	if rf&FormatTotalTimeEnabled != 0 {
		r.Enabled = next()
	}
	if rf&FormatTotalTimeRunning != 0 {
		r.Running = next()
	}
	for range nr {
		if group {
			v.Value = next()
		}
		if rf&FormatID != 0 {
			v.ID = next()
		}
		if rf&FormatLost != 0 {
			v.Lost = next()
		}
		r.Values = append(r.Values, v)
	}
	return off, nil
}
