package perfabi

import (
	"errors"
	"reflect"
	"testing"
)

func u64s(vs ...uint64) []byte {
	var b []byte
	for _, v := range vs {
		b = ByteOrder.AppendUint64(b, v)
	}
	return b
}

// TestDecodeReadLayouts pins DecodeRead to the kernel's layouts (perf_read_one and
// perf_read_group): the times follow the value of a single event but the nr of a group.
func TestDecodeReadLayouts(t *testing.T) {
	all := FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID | FormatLost
	for _, c := range []struct {
		name string
		rf   uint64
		b    []byte
		want Read
	}{
		{"single", all, u64s(7, 100, 50, 9, 2), Read{Enabled: 100, Running: 50, Values: []ReadValue{{Value: 7, ID: 9, Lost: 2}}}},
		{"single running", FormatTotalTimeRunning, u64s(7, 50), Read{Running: 50, Values: []ReadValue{{Value: 7}}}},
		{"group", all | FormatGroup, u64s(2, 100, 50, 7, 9, 2, 8, 10, 3),
			Read{Enabled: 100, Running: 50, Values: []ReadValue{{Value: 7, ID: 9, Lost: 2}, {Value: 8, ID: 10, Lost: 3}}}},
	} {
		var r Read
		n, err := DecodeRead(append(c.b, 0xff), c.rf, &r)
		if err != nil || n != len(c.b) || !reflect.DeepEqual(r, c.want) {
			t.Errorf("%s: %+v, %d bytes, %v; want %+v, %d bytes", c.name, r, n, err, c.want, len(c.b))
		}
		if got := AppendRead(nil, c.rf, c.want); string(got) != string(c.b) {
			t.Errorf("%s: AppendRead = % x, want % x", c.name, got, c.b)
		}
		if n != ReadSize(c.rf, len(r.Values)) {
			t.Errorf("%s: used %d bytes, ReadSize says %d", c.name, n, ReadSize(c.rf, len(r.Values)))
		}
		if _, err := DecodeRead(c.b[:len(c.b)-1], c.rf, &r); !errors.Is(err, ErrShortRead) {
			t.Errorf("%s: one byte short: %v", c.name, err)
		}
	}
}

func TestDecodeReadDoesNotAllocate(t *testing.T) {
	rf := FormatGroup | FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID
	b := u64s(3, 100, 50, 1, 11, 2, 12, 3, 13)
	r := Read{Values: make([]ReadValue, 0, 3)}
	if n := testing.AllocsPerRun(100, func() { DecodeRead(b, rf, &r) }); n != 0 {
		t.Fatalf("%v allocations per decode, want 0", n)
	}
}

func FuzzDecodeRead(f *testing.F) {
	f.Add(FormatGroup|FormatID, u64s(2, 1, 11, 2, 12))
	f.Add(FormatTotalTimeEnabled|FormatLost, u64s(7, 100, 3))
	f.Fuzz(func(t *testing.T, rf uint64, b []byte) {
		var r Read
		n, err := DecodeRead(b, rf, &r)
		if err != nil {
			if !errors.Is(err, ErrShortRead) {
				t.Fatalf("error %v does not wrap ErrShortRead", err)
			}
			return
		}
		if n > len(b) || n != ReadSize(rf, len(r.Values)) {
			t.Fatalf("used %d of %d bytes for %d values, ReadSize says %d", n, len(b), len(r.Values), ReadSize(rf, len(r.Values)))
		}
		if again := AppendRead(nil, rf, r); string(again) != string(b[:n]) {
			t.Fatalf("re-encoding differs: % x, want % x", again, b[:n])
		}
	})
}

// TestLayoutReadFindsTheFields checks every offset LayoutRead gives against the bytes
// AppendRead writes, for every read_format.
func TestLayoutReadFindsTheFields(t *testing.T) {
	for rf := range FormatKnown + 1 {
		for _, n := range []int{0, 1, 3} {
			if rf&FormatGroup == 0 && n != 1 {
				continue
			}
			r := Read{Enabled: 1001, Running: 1002}
			for i := range n {
				r.Values = append(r.Values, ReadValue{Value: uint64(10 * i), ID: uint64(10*i + 1), Lost: uint64(10*i + 2)})
			}
			b := AppendRead(nil, rf, r)
			l := LayoutRead(rf, n)
			if l.Size != len(b) || ReadSize(rf, n) != len(b) {
				t.Errorf("rf %#x n %d: size %d, ReadSize %d, encoded %d", rf, n, l.Size, ReadSize(rf, n), len(b))
				continue
			}
			at := func(off int) uint64 { return ByteOrder.Uint64(b[off:]) }
			if (rf&FormatTotalTimeEnabled != 0) != (l.Enabled >= 0) || l.Enabled >= 0 && at(l.Enabled) != 1001 {
				t.Errorf("rf %#x n %d: enabled at %d", rf, n, l.Enabled)
			}
			if (rf&FormatTotalTimeRunning != 0) != (l.Running >= 0) || l.Running >= 0 && at(l.Running) != 1002 {
				t.Errorf("rf %#x n %d: running at %d", rf, n, l.Running)
			}
			for i, v := range r.Values {
				base := l.Values + i*l.Stride
				if at(base) != v.Value || l.ID >= 0 && at(base+l.ID) != v.ID || l.Lost >= 0 && at(base+l.Lost) != v.Lost {
					t.Errorf("rf %#x n %d: value %d misplaced (%+v)", rf, n, i, l)
				}
			}
		}
	}
}
