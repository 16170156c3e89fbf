package shim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/bayesperf/bayesperf/perfabi"
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
		if v.AttrSize < perfabi.AttrSizeVer0 || v.AttrSize > AttrMax {
			return h, nil, fmt.Errorf("decode register: attr size %d outside [%d, %d]: %w", v.AttrSize, perfabi.AttrSizeVer0, AttrMax, ErrMalformed)
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

// Attr is struct perf_event_attr, as the shim forwards it (package perfabi).
type Attr = perfabi.Attr

// ParseAttr decodes the attr bytes a client registers (at least perfabi.AttrSizeVer0).
//
// Only the VER0 prefix is decoded, whatever the size field says: the kernel has already
// accepted the whole attr when the shim opened the event, the shim forwards at most
// AttrMax bytes of it, and every field the sidecar uses lies in the prefix. The kernel's
// size rules (perfabi.DecodeAttr) would decline a newer tool's longer attr instead.
func ParseAttr(b []byte) (Attr, error) {
	if len(b) < perfabi.AttrSizeVer0 {
		return Attr{}, fmt.Errorf("parse perf_event_attr: %d bytes, want at least %d: %w", len(b), perfabi.AttrSizeVer0, ErrMalformed)
	}
	var ver0 [perfabi.AttrSizeVer0]byte
	copy(ver0[:], b)
	size := perfabi.ByteOrder.Uint32(ver0[4:])
	perfabi.ByteOrder.PutUint32(ver0[4:], 0) // size 0 is VER0: exactly these bytes are read
	a, err := perfabi.DecodeAttr(ver0[:])
	if err != nil {
		return a, fmt.Errorf("parse perf_event_attr: %w: %w", err, ErrMalformed)
	}
	a.Size = size
	if a.ReadFormat&^perfabi.FormatKnown != 0 {
		return a, fmt.Errorf("parse perf_event_attr: unknown read_format bits %#x: %w", a.ReadFormat&^perfabi.FormatKnown, ErrMalformed)
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
	// Ioctls is not part of a read: the sidecar sets it to the perf ioctls of the event
	// that the shim counted in its client page (ClientIoctlCount: resets, and switches
	// on or off), for a stage that follows the count across calls; Counted says the
	// shim counts them for this event. Publish ignores both.
	Resets, Switches uint16
	Counted          bool
}

// ParseRead decodes a buffer returned by read() on a perf fd whose attr has read_format.
// Beyond the layout (perfabi.DecodeRead) it demands known read_format bits, a group of
// 1..MirrorMaxValues members (what a mirror page holds) and no trailing bytes.
func ParseRead(format uint64, b []byte) (Values, error) {
	var v Values
	if format&^perfabi.FormatKnown != 0 {
		return v, fmt.Errorf("parse perf read: unknown read_format bits %#x: %w", format&^perfabi.FormatKnown, ErrMalformed)
	}
	short := fmt.Errorf("parse perf read: %d bytes, too short for read_format %#x: %w", len(b), format, ErrMalformed)
	nr := uint64(1)
	if format&perfabi.FormatGroup != 0 {
		if len(b) < 8 {
			return v, short
		}
		if nr = perfabi.ByteOrder.Uint64(b); nr == 0 || nr > uint64(MirrorMaxValues) {
			return v, fmt.Errorf("parse perf read: group of %d members, want 1..%d: %w", nr, MirrorMaxValues, ErrMalformed)
		}
	}
	r := perfabi.Read{Values: make([]MirrorValue, 0, nr)}
	n, err := perfabi.DecodeRead(b, format, &r)
	v = Values{Enabled: r.Enabled, Running: r.Running, Members: r.Values}
	if err != nil {
		return v, short
	}
	if n != len(b) {
		return v, fmt.Errorf("parse perf read: %d trailing bytes for read_format %#x: %w", len(b)-n, format, ErrMalformed)
	}
	return v, nil
}

// AppendRead appends v in the layout read() returns for format: the inverse of ParseRead
// and the same encoding the C shim performs from a mirror page.
func AppendRead(b []byte, format uint64, v Values) []byte {
	return perfabi.AppendRead(b, format, perfabi.Read{Enabled: v.Enabled, Running: v.Running, Values: v.Members})
}
