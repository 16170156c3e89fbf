package perfabi

import (
	"errors"
	"fmt"
)

// ReadSize is the number of bytes read(2) returns for read_format rf and n group members
// (n is ignored without FormatGroup).
func ReadSize(rf uint64, n int) int { return LayoutRead(rf, n).Size }

// ReadLayout is where the fields of a read(2) layout lie, in bytes from its start, for
// finding and rewriting values in place. The layouts (perf_read_one and perf_read_group
// in kernel/events/core.c) are { value, enabled, running, id, lost } for one event and
// { nr, enabled, running, { value, id, lost } x nr } for a group, each field present only
// when its bit is set.
type ReadLayout struct {
	Enabled, Running int // time_enabled and time_running, -1 when absent
	Values           int // the first value
	Stride           int // from one group member's value to the next; 0 for one event
	ID, Lost         int // id and lost from their value, -1 when absent
	Size             int // the whole layout
}

// LayoutRead returns the layout of read_format rf with n group members (n is ignored
// without FormatGroup).
func LayoutRead(rf uint64, n int) ReadLayout {
	l := ReadLayout{Enabled: -1, Running: -1, ID: -1, Lost: -1}
	entry := 8
	if rf&FormatID != 0 {
		l.ID = entry
		entry += 8
	}
	if rf&FormatLost != 0 {
		l.Lost = entry
		entry += 8
	}
	group := rf&FormatGroup != 0
	p := 8 // nr, or the value of a single event
	if rf&FormatTotalTimeEnabled != 0 {
		l.Enabled = p
		p += 8
	}
	if rf&FormatTotalTimeRunning != 0 {
		l.Running = p
		p += 8
	}
	if group {
		l.Values, l.Stride = p, entry
		p += n * entry
	} else {
		// id and lost follow the times: their offsets are still taken from the value.
		if l.ID >= 0 {
			l.ID = p
			p += 8
		}
		if l.Lost >= 0 {
			l.Lost = p
			p += 8
		}
	}
	l.Size = p
	return l
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

// ErrShortRead is wrapped by every DecodeRead error: b ends before the layout of its
// read_format.
var ErrShortRead = errors.New("perf read shorter than its read_format")

// A ReadError says where a read layout ran past its bytes; it wraps ErrShortRead.
type ReadError struct {
	Field  string // "nr", "value", "time_enabled", "time_running", "id" or "lost"
	Offset int    // of Field, or of the first group member when Members is set
	Left   int    // bytes from Offset to the end
	// Members is the group's nr when the nr members of Per bytes each do not fit in Left
	// (Field is then "nr"); 0 when a single field does not fit.
	Members uint64
	Per     int
}

func (e *ReadError) Error() string {
	if e.Members != 0 {
		return fmt.Sprintf("perf read: %d values of %d bytes exceed the %d bytes left", e.Members, e.Per, e.Left)
	}
	return fmt.Sprintf("perf read: %s at offset %d needs 8 bytes, %d left", e.Field, e.Offset, e.Left)
}

func (e *ReadError) Unwrap() error { return ErrShortRead }

// reader reads the u64 fields of a read layout in order and remembers the first that did
// not fit; later reads are no-ops, so a decoder checks once at the end.
type reader struct {
	b   []byte
	off int
	err *ReadError
}

func (d *reader) u64(field string) uint64 {
	if d.err != nil {
		return 0
	}
	if len(d.b)-d.off < 8 {
		d.err = &ReadError{Field: field, Offset: d.off, Left: len(d.b) - d.off}
		return 0
	}
	v := ByteOrder.Uint64(d.b[d.off:])
	d.off += 8
	return v
}

// DecodeRead decodes the read(2) layout of read_format rf at the start of b into r,
// reusing r.Values, and returns the number of bytes it used. It does not allocate when
// r.Values has the capacity; its errors are *ReadError. Unknown rf bits, bytes after the
// layout and bounds on the group size are the caller's rules.
func DecodeRead(b []byte, rf uint64, r *Read) (int, error) {
	r.Enabled, r.Running = 0, 0
	r.Values = r.Values[:0]
	d := reader{b: b}
	var v ReadValue
	group := rf&FormatGroup != 0
	nr := uint64(1)
	if group {
		nr = d.u64("nr")
	} else {
		v.Value = d.u64("value")
	}
	if rf&FormatTotalTimeEnabled != 0 {
		r.Enabled = d.u64("time_enabled")
	}
	if rf&FormatTotalTimeRunning != 0 {
		r.Running = d.u64("time_running")
	}
	if !group {
		if rf&FormatID != 0 {
			v.ID = d.u64("id")
		}
		if rf&FormatLost != 0 {
			v.Lost = d.u64("lost")
		}
		if d.err != nil {
			return 0, d.err
		}
		r.Values = append(r.Values, v)
		return d.off, nil
	}
	if d.err != nil {
		return 0, d.err
	}
	per := 8
	if rf&FormatID != 0 {
		per += 8
	}
	if rf&FormatLost != 0 {
		per += 8
	}
	// Checked before any member is read, so a huge nr neither allocates nor loops.
	if left := len(b) - d.off; nr > uint64(left/per) {
		return 0, &ReadError{Field: "nr", Offset: d.off, Left: left, Members: nr, Per: per}
	}
	if cap(r.Values) < int(nr) {
		r.Values = make([]ReadValue, 0, nr)
	}
	for range nr {
		v.Value = d.u64("value")
		if rf&FormatID != 0 {
			v.ID = d.u64("id")
		}
		if rf&FormatLost != 0 {
			v.Lost = d.u64("lost")
		}
		r.Values = append(r.Values, v)
	}
	return d.off, nil
}

// AppendRead appends r in the read(2) layout of read_format rf: the inverse of DecodeRead.
// A group writes every value; a single event only the first (none if Values is empty).
func AppendRead(b []byte, rf uint64, r Read) []byte {
	bo := ByteOrder
	vals := r.Values
	group := rf&FormatGroup != 0
	if group {
		b = bo.AppendUint64(b, uint64(len(vals)))
	} else if len(vals) > 1 {
		vals = vals[:1]
	}
	if !group && len(vals) > 0 {
		b = bo.AppendUint64(b, vals[0].Value)
	}
	if rf&FormatTotalTimeEnabled != 0 {
		b = bo.AppendUint64(b, r.Enabled)
	}
	if rf&FormatTotalTimeRunning != 0 {
		b = bo.AppendUint64(b, r.Running)
	}
	for _, v := range vals {
		if group {
			b = bo.AppendUint64(b, v.Value)
		}
		if rf&FormatID != 0 {
			b = bo.AppendUint64(b, v.ID)
		}
		if rf&FormatLost != 0 {
			b = bo.AppendUint64(b, v.Lost)
		}
	}
	return b
}
