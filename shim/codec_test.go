package shim

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/bayesperf/bayesperf/perfabi"
)

func TestEncodeDecodeRoundTrip(t *testing.T) {
	reg := Register{Handle: 7, GroupHandle: 3, Pid: 42, CPU: -1, GroupFd: 5, AttrSize: 128, Flags: 8}
	for i := range reg.Attr {
		reg.Attr[i] = byte(i * 7)
	}
	msgs := []struct {
		typ  uint16
		body any
	}{
		{MsgHello, Hello{Pid: 1234, Flags: 1}},
		{MsgHello | MsgReply, HelloReply{Status: -13, SidecarPid: 99, StaleNs: 2e6, PageSize: PageSize}},
		{MsgRegister, reg},
		{MsgRegister | MsgReply, RegisterReply{Status: 0, Handle: 7}},
		{MsgUnregister, Handle{Handle: 9}},
		{MsgRefresh, Handle{Handle: 10}},
		{MsgRefresh | MsgReply, Status{Status: -32, Handle: 10}},
		{MsgMap, Map{Handle: 3, Prot: 3, Length: 9 * 4096}},
		{MsgMap | MsgReply, Status{Status: 0, Handle: 3}},
		{MsgUnmap, Handle{Handle: 3}},
		{MsgFlush, Handle{}},
		{MsgFlush | MsgReply, Status{Handle: 0}},
	}
	for _, m := range msgs {
		b, err := Encode(m.typ, 77, m.body)
		if err != nil {
			t.Fatalf("encode %#x: %v", m.typ, err)
		}
		h, body, err := Decode(b)
		if err != nil {
			t.Fatalf("decode %#x: %v", m.typ, err)
		}
		if h.Type != m.typ || h.Seq != 77 || int(h.Size) != len(b) {
			t.Errorf("header %+v after encoding type %#x seq 77 (%d bytes)", h, m.typ, len(b))
		}
		if !reflect.DeepEqual(body, m.body) {
			t.Errorf("type %#x: decoded %+v, want %+v", m.typ, body, m.body)
		}
		// Every strict prefix and every one-byte extension is malformed.
		for n := range len(b) {
			if _, _, err := Decode(b[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("type %#x truncated to %d bytes: err %v, want ErrMalformed", m.typ, n, err)
			}
		}
		if _, _, err := Decode(append(bytes.Clone(b), 0)); !errors.Is(err, ErrMalformed) {
			t.Errorf("type %#x with a trailing byte: err %v, want ErrMalformed", m.typ, err)
		}
	}
	if _, err := Encode(MsgHello, 1, Handle{}); err == nil {
		t.Error("encoding a Handle as HELLO succeeded; want a size error")
	}
}

func TestDecodeRejectsBadRegister(t *testing.T) {
	for _, r := range []Register{{Handle: 0, AttrSize: 64}, {Handle: 1, AttrSize: 63}, {Handle: 1, AttrSize: AttrMax + 1}} {
		b, err := Encode(MsgRegister, 1, r)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Decode(b); !errors.Is(err, ErrMalformed) {
			t.Errorf("register handle %d attr_size %d: err %v, want ErrMalformed", r.Handle, r.AttrSize, err)
		}
	}
}

// TestReadRoundTrip checks ParseRead against AppendRead and ReadSize for every
// read_format combination, with random values and group sizes.
func TestReadRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for format := range uint64(32) {
		for _, nr := range []int{1, 2, 5} {
			if format&perfabi.FormatGroup == 0 && nr > 1 {
				continue
			}
			v := Values{Members: make([]MirrorValue, nr)}
			if format&perfabi.FormatTotalTimeEnabled != 0 {
				v.Enabled = rng.Uint64()
			}
			if format&perfabi.FormatTotalTimeRunning != 0 {
				v.Running = rng.Uint64()
			}
			for i := range v.Members {
				v.Members[i].Value = rng.Uint64()
				if format&perfabi.FormatID != 0 {
					v.Members[i].ID = rng.Uint64()
				}
				if format&perfabi.FormatLost != 0 {
					v.Members[i].Lost = rng.Uint64()
				}
			}
			b := AppendRead(nil, format, v)
			if len(b) != perfabi.ReadSize(format, nr) {
				t.Errorf("format %#x nr %d: encoded %d bytes, perfabi.ReadSize says %d", format, nr, len(b), perfabi.ReadSize(format, nr))
			}
			got, err := ParseRead(format, b)
			if err != nil {
				t.Fatalf("format %#x nr %d: %v", format, nr, err)
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("format %#x nr %d: parsed %+v, want %+v", format, nr, got, v)
			}
			if _, err := ParseRead(format, b[:len(b)-1]); !errors.Is(err, ErrMalformed) {
				t.Errorf("format %#x nr %d: short buffer accepted", format, nr)
			}
		}
	}
}

func TestParseAttr(t *testing.T) {
	b := make([]byte, 64)
	b[0] = 1  // PERF_TYPE_SOFTWARE
	b[8] = 2  // config
	b[32] = 3 // read_format enabled|running
	b[40] = 1 // disabled
	a, err := ParseAttr(b)
	if err != nil {
		t.Fatal(err)
	}
	if a.Type != 1 || a.Config != 2 || a.ReadFormat != 3 || a.Flags&perfabi.FlagDisabled == 0 {
		t.Errorf("parsed %+v", a)
	}
	b[32] = 0x40
	if _, err := ParseAttr(b); !errors.Is(err, ErrMalformed) {
		t.Errorf("unknown read_format bit accepted: %v", err)
	}
	if _, err := ParseAttr(b[:63]); !errors.Is(err, ErrMalformed) {
		t.Errorf("63-byte attr accepted: %v", err)
	}
	// The size field does not bound what is decoded: the kernel has checked it, and the
	// shim forwards at most AttrMax bytes of a longer attr.
	b[32] = 3
	for _, size := range []uint32{0, 1, perfabi.AttrSize + 8, AttrMax + 64} {
		perfabi.ByteOrder.PutUint32(b[4:], size)
		a, err := ParseAttr(b)
		if err != nil || a.Size != size || a.Config != 2 || a.ReadFormat != 3 {
			t.Errorf("size %d: parsed %+v, %v", size, a, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	for _, typ := range []uint16{MsgHello, MsgRegister, MsgRefresh | MsgReply} {
		var body any
		switch typ {
		case MsgHello:
			body = Hello{Pid: 1}
		case MsgRegister:
			body = Register{Handle: 1, AttrSize: 64}
		default:
			body = Status{}
		}
		b, _ := Encode(typ, 1, body)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, body, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		// A message that decodes re-encodes to the same bytes.
		again, err := Encode(h.Type, h.Seq, body)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", h, err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs")
		}
	})
}

func FuzzParseRead(f *testing.F) {
	f.Add(uint64(3), AppendRead(nil, 3, Values{Enabled: 1, Running: 2, Members: []MirrorValue{{Value: 3}}}))
	f.Add(uint64(15), AppendRead(nil, 15, Values{Members: []MirrorValue{{Value: 1, ID: 2}, {Value: 3, ID: 4}}}))
	f.Fuzz(func(t *testing.T, format uint64, b []byte) {
		v, err := ParseRead(format, b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if again := AppendRead(nil, format, v); !bytes.Equal(again, b) {
			t.Fatalf("format %#x: re-encoding differs", format)
		}
	})
}

func FuzzParseAttr(f *testing.F) {
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := ParseAttr(b); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("error does not wrap ErrMalformed: %v", err)
		}
	})
}

// TestReadLayoutIsTheKernels pins ParseRead and AppendRead to the layouts the kernel
// writes (perf_read_one and perf_read_group in kernel/events/core.c, documented in
// perf_event_open(2)): a single event is { value, enabled, running, id, lost }, a group
// { nr, enabled, running, { value, id, lost } x nr }. A round trip alone cannot catch a
// consistent mis-order, which would hand a correction stage times instead of values.
func TestReadLayoutIsTheKernels(t *testing.T) {
	all := uint64(perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning | perfabi.FormatID | perfabi.FormatLost)
	cases := []struct {
		name   string
		format uint64
		words  []uint64
		want   Values
	}{
		{"single", all, []uint64{7, 100, 50, 9, 2},
			Values{Enabled: 100, Running: 50, Members: []MirrorValue{{Value: 7, ID: 9, Lost: 2}}}},
		{"single value+running", perfabi.FormatTotalTimeRunning, []uint64{7, 50},
			Values{Running: 50, Members: []MirrorValue{{Value: 7}}}},
		{"group", all | perfabi.FormatGroup, []uint64{2, 100, 50, 7, 9, 2, 8, 10, 3},
			Values{Enabled: 100, Running: 50, Members: []MirrorValue{{Value: 7, ID: 9, Lost: 2}, {Value: 8, ID: 10, Lost: 3}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b []byte
			for _, w := range c.words {
				b = binary.NativeEndian.AppendUint64(b, w)
			}
			got, err := ParseRead(c.format, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ParseRead = %+v, want %+v", got, c.want)
			}
			if again := AppendRead(nil, c.format, c.want); !bytes.Equal(again, b) {
				t.Fatalf("AppendRead = %v, want %v", again, b)
			}
		})
	}
}
