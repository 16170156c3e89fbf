package shim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"
)

// ErrMalformed is wrapped by every decoding error: the bytes are not a message, an attr
// or a read buffer of the expected shape.
var ErrMalformed = errors.New("malformed")

var hdrSize = int(unsafe.Sizeof(MsgHdr{}))

// bodySize is the exact body size of every message type; a message of another size is
// malformed (both ends are built from the same header, so there is no slack to allow).
func bodySize(typ uint16) (int, bool) {
	switch typ {
	case MsgHello:
		return int(unsafe.Sizeof(Hello{})), true
	case MsgHello | MsgReply:
		return int(unsafe.Sizeof(HelloReply{})), true
	case MsgRegister:
		return int(unsafe.Sizeof(Register{})), true
	case MsgRegister | MsgReply:
		return int(unsafe.Sizeof(RegisterReply{})), true
	case MsgMap:
		return int(unsafe.Sizeof(Map{})), true
	case MsgUnregister, MsgRefresh, MsgUnmap, MsgFlush:
		return int(unsafe.Sizeof(Handle{})), true
	case MsgRefresh | MsgReply, MsgUnregister | MsgReply, MsgMap | MsgReply, MsgUnmap | MsgReply, MsgFlush | MsgReply:
		return int(unsafe.Sizeof(Status{})), true
	}
	return 0, false
}

func bodyMatches(typ uint16, body any) bool {
	switch body.(type) {
	case Hello:
		return typ == MsgHello
	case HelloReply:
		return typ == MsgHello|MsgReply
	case Register:
		return typ == MsgRegister
	case RegisterReply:
		return typ == MsgRegister|MsgReply
	case Map:
		return typ == MsgMap
	case Handle:
		return typ == MsgUnregister || typ == MsgRefresh || typ == MsgUnmap || typ == MsgFlush
	case Status:
		return typ&MsgReply != 0 && typ != MsgHello|MsgReply && typ != MsgRegister|MsgReply
	}
	return false
}

// Encode returns the wire form of one message. body must be the struct (not a pointer)
// that bayesperf_abi.h pairs with typ.
func Encode(typ uint16, seq uint32, body any) ([]byte, error) {
	want, ok := bodySize(typ)
	if !ok {
		return nil, fmt.Errorf("encode message type %#x: unknown type", typ)
	}
	if !bodyMatches(typ, body) {
		return nil, fmt.Errorf("encode message type %#x: body of type %T does not belong to it", typ, body)
	}
	if got := binary.Size(body); got != want {
		return nil, fmt.Errorf("encode message type %#x: body %T has %d bytes, want %d", typ, body, got, want)
	}
	h := MsgHdr{Magic: MsgMagic, Version: ABIVersion, Type: typ, Size: uint32(hdrSize + want), Seq: seq}
	b := make([]byte, 0, hdrSize+want)
	b, err := binary.Append(b, binary.NativeEndian, h)
	if err != nil {
		return nil, fmt.Errorf("encode message header: %w", err)
	}
	b, err = binary.Append(b, binary.NativeEndian, body)
	if err != nil {
		return nil, fmt.Errorf("encode message body: %w", err)
	}
	return b, nil
}

// Decode parses one message and returns its header and its body as the struct value of
// its type (Hello, HelloReply, Register, RegisterReply, Handle or Status).
func Decode(b []byte) (MsgHdr, any, error) {
	var h MsgHdr
	if len(b) < hdrSize {
		return h, nil, fmt.Errorf("decode message: %d bytes, shorter than the header: %w", len(b), ErrMalformed)
	}
	if _, err := binary.Decode(b, binary.NativeEndian, &h); err != nil {
		return h, nil, fmt.Errorf("decode message header: %w: %w", err, ErrMalformed)
	}
	if h.Magic != MsgMagic {
		return h, nil, fmt.Errorf("decode message: bad magic %#x: %w", h.Magic, ErrMalformed)
	}
	if h.Version != ABIVersion {
		return h, nil, fmt.Errorf("decode message: ABI version %d, want %d: %w", h.Version, ABIVersion, ErrMalformed)
	}
	if int(h.Size) != len(b) {
		return h, nil, fmt.Errorf("decode message: header says %d bytes, got %d: %w", h.Size, len(b), ErrMalformed)
	}
	want, ok := bodySize(h.Type)
	if !ok {
		return h, nil, fmt.Errorf("decode message: unknown type %#x: %w", h.Type, ErrMalformed)
	}
	if len(b)-hdrSize != want {
		return h, nil, fmt.Errorf("decode message type %#x: body %d bytes, want %d: %w", h.Type, len(b)-hdrSize, want, ErrMalformed)
	}
	var body any
	switch h.Type {
	case MsgHello:
		body = &Hello{}
	case MsgHello | MsgReply:
		body = &HelloReply{}
	case MsgRegister:
		body = &Register{}
	case MsgRegister | MsgReply:
		body = &RegisterReply{}
	case MsgMap:
		body = &Map{}
	case MsgUnregister, MsgRefresh, MsgUnmap, MsgFlush:
		body = &Handle{}
	default: // the Status replies
		body = &Status{}
	}
	if _, err := binary.Decode(b[hdrSize:], binary.NativeEndian, body); err != nil {
		return h, nil, fmt.Errorf("decode message type %#x: %w: %w", h.Type, err, ErrMalformed)
	}
	switch v := body.(type) {
	case *Hello:
		return h, *v, nil
	case *HelloReply:
		return h, *v, nil
	case *Register:
		if v.Handle == 0 {
			return h, nil, fmt.Errorf("decode register: handle 0: %w", ErrMalformed)
		}
		if v.AttrSize < AttrSizeVer0 || v.AttrSize > AttrMax {
			return h, nil, fmt.Errorf("decode register: attr size %d outside [%d, %d]: %w", v.AttrSize, AttrSizeVer0, AttrMax, ErrMalformed)
		}
		return h, *v, nil
	case *RegisterReply:
		return h, *v, nil
	case *Map:
		return h, *v, nil
	case *Handle:
		return h, *v, nil
	case *Status:
		return h, *v, nil
	}
	return h, nil, fmt.Errorf("decode message type %#x: %w", h.Type, ErrMalformed)
}

// AttrSizeVer0 is PERF_ATTR_SIZE_VER0, the size meant by attr.size == 0.
const AttrSizeVer0 = 64

// read_format bits (PERF_FORMAT_*).
const (
	FormatTotalTimeEnabled uint64 = 1 << 0
	FormatTotalTimeRunning uint64 = 1 << 1
	FormatID               uint64 = 1 << 2
	FormatGroup            uint64 = 1 << 3
	FormatLost             uint64 = 1 << 4
	formatKnown                   = FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID | FormatGroup | FormatLost
)

// Attr is the part of struct perf_event_attr the sidecar uses. Bits holds the bitfield word
// (disabled, inherit, ..., offset 40) as the kernel lays it out.
type Attr struct {
	Type         uint32
	Size         uint32 // as the caller passed it (0 means AttrSizeVer0)
	Config       uint64
	SamplePeriod uint64 // or sample_freq when the freq bit is set
	SampleType   uint64
	ReadFormat   uint64
	Bits         uint64
	Wakeup       uint32 // wakeup_events, or wakeup_watermark when AttrWatermark is set
}

// Attr bit positions the sidecar cares about.
const (
	AttrDisabled      uint64 = 1 << 0
	AttrInherit       uint64 = 1 << 1
	AttrFreq          uint64 = 1 << 10
	AttrEnableOnExec  uint64 = 1 << 12
	AttrWatermark     uint64 = 1 << 14
	AttrSampleIDAll   uint64 = 1 << 18
	AttrWriteBackward uint64 = 1 << 27
)

// ParseAttr decodes the first bytes of a perf_event_attr (at least AttrSizeVer0).
//
// It is the sidecar's decoder of the attr bytes a client sends, and reads only the fields
// of Attr. internal/perf.DecodeAttr decodes the whole attr, with the kernel's size rules,
// into perf.Attr (to reopen or compare an event). The two cannot share code: this package
// may import nothing of the module and internal/perf nothing but x/sys (internal/archtest),
// and each decodes into its own package's type.
func ParseAttr(b []byte) (Attr, error) {
	var a Attr
	if len(b) < AttrSizeVer0 {
		return a, fmt.Errorf("parse perf_event_attr: %d bytes, want at least %d: %w", len(b), AttrSizeVer0, ErrMalformed)
	}
	ne := binary.NativeEndian
	a.Type = ne.Uint32(b[0:])
	a.Size = ne.Uint32(b[4:])
	a.Config = ne.Uint64(b[8:])
	a.SamplePeriod = ne.Uint64(b[16:])
	a.SampleType = ne.Uint64(b[24:])
	a.ReadFormat = ne.Uint64(b[32:])
	a.Bits = ne.Uint64(b[40:])
	a.Wakeup = ne.Uint32(b[48:])
	if a.ReadFormat&^formatKnown != 0 {
		return a, fmt.Errorf("parse perf_event_attr: unknown read_format bits %#x: %w", a.ReadFormat&^formatKnown, ErrMalformed)
	}
	return a, nil
}

// Values is one counting read of a perf event: the kernel's read() result for a
// read_format, decoded. Members has one entry for a plain read and the whole group,
// leader first, for PERF_FORMAT_GROUP. Fields the read_format does not ask for are 0.
type Values struct {
	Enabled uint64
	Running uint64
	Members []MirrorValue
}

// ReadSize is the number of bytes read() returns for read_format with nr values.
func ReadSize(format uint64, nr int) int {
	n := 0
	if format&FormatGroup != 0 {
		n = 8 // nr
	}
	if format&FormatTotalTimeEnabled != 0 {
		n += 8
	}
	if format&FormatTotalTimeRunning != 0 {
		n += 8
	}
	per := 8
	if format&FormatID != 0 {
		per += 8
	}
	if format&FormatLost != 0 {
		per += 8
	}
	if format&FormatGroup == 0 {
		nr = 1
	}
	return n + nr*per
}

// ParseRead decodes a buffer returned by read() on a perf fd whose attr has read_format.
func ParseRead(format uint64, b []byte) (Values, error) {
	var v Values
	if format&^formatKnown != 0 {
		return v, fmt.Errorf("parse perf read: unknown read_format bits %#x: %w", format&^formatKnown, ErrMalformed)
	}
	ne := binary.NativeEndian
	off := 0
	next := func() (uint64, bool) {
		if off+8 > len(b) {
			return 0, false
		}
		x := ne.Uint64(b[off:])
		off += 8
		return x, true
	}
	short := fmt.Errorf("parse perf read: %d bytes, too short for read_format %#x: %w", len(b), format, ErrMalformed)
	nr := uint64(1)
	if format&FormatGroup != 0 {
		var ok bool
		if nr, ok = next(); !ok {
			return v, short
		}
		if nr == 0 || nr > uint64(MirrorMaxValues) {
			return v, fmt.Errorf("parse perf read: group of %d members, want 1..%d: %w", nr, MirrorMaxValues, ErrMalformed)
		}
	}
	// The kernel's layouts (perf_read_one and perf_read_group): a single event is
	// { value, enabled, running, id, lost }; a group is { nr, enabled, running,
	// { value, id, lost } x nr }. The times follow the value only in the first.
	var ok bool
	v.Members = make([]MirrorValue, nr)
	if format&FormatGroup == 0 {
		if v.Members[0].Value, ok = next(); !ok {
			return v, short
		}
	}
	if format&FormatTotalTimeEnabled != 0 {
		if v.Enabled, ok = next(); !ok {
			return v, short
		}
	}
	if format&FormatTotalTimeRunning != 0 {
		if v.Running, ok = next(); !ok {
			return v, short
		}
	}
	for i := range v.Members {
		m := &v.Members[i]
		if format&FormatGroup != 0 {
			if m.Value, ok = next(); !ok {
				return v, short
			}
		}
		if format&FormatID != 0 {
			if m.ID, ok = next(); !ok {
				return v, short
			}
		}
		if format&FormatLost != 0 {
			if m.Lost, ok = next(); !ok {
				return v, short
			}
		}
	}
	if off != len(b) {
		return v, fmt.Errorf("parse perf read: %d trailing bytes for read_format %#x: %w", len(b)-off, format, ErrMalformed)
	}
	return v, nil
}

// AppendRead appends v in the layout read() returns for format: the inverse of ParseRead
// and the same encoding the C shim performs from a mirror page.
func AppendRead(b []byte, format uint64, v Values) []byte {
	ne := binary.NativeEndian
	members := v.Members
	if format&FormatGroup != 0 {
		b = ne.AppendUint64(b, uint64(len(members)))
	} else if len(members) > 1 {
		members = members[:1]
	}
	group := format&FormatGroup != 0
	if !group && len(members) > 0 {
		b = ne.AppendUint64(b, members[0].Value)
	}
	if format&FormatTotalTimeEnabled != 0 {
		b = ne.AppendUint64(b, v.Enabled)
	}
	if format&FormatTotalTimeRunning != 0 {
		b = ne.AppendUint64(b, v.Running)
	}
	for _, m := range members {
		if group {
			b = ne.AppendUint64(b, m.Value)
		}
		if format&FormatID != 0 {
			b = ne.AppendUint64(b, m.ID)
		}
		if format&FormatLost != 0 {
			b = ne.AppendUint64(b, m.Lost)
		}
	}
	return b
}
