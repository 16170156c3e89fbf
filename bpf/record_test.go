package bpf

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
)

func TestDecodeRecord(t *testing.T) {
	want := record{TimeNs: 123456789, Tid: 42, Slot: 3, Kind: kindTick, CPU: 1, Errs: 1, Err: -2,
		Vals: []perf.Count{{Value: 1, Enabled: 2, Running: 3}, {Value: 1 << 60, Enabled: 5, Running: 4}}}
	b := encodeRecord(want)
	if len(b) != headerSize+2*valueSize {
		t.Fatalf("encoded %d bytes", len(b))
	}
	// The ring buffer pads to 8 bytes; a longer buffer must decode the same.
	for _, buf := range [][]byte{b, append(slices.Clone(b), 0, 0, 0, 0, 0, 0, 0, 0)} {
		got, err := decodeRecord(buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Vals, want.Vals) {
			t.Fatalf("values %+v, want %+v", got.Vals, want.Vals)
		}
		gh, wh := got, want
		gh.Vals, wh.Vals = nil, nil
		if !reflect.DeepEqual(gh, wh) {
			t.Fatalf("header %+v, want %+v", gh, wh)
		}
	}
	for _, n := range []int{0, headerSize - 1, len(b) - 1} {
		if _, err := decodeRecord(b[:n], nil); !errors.Is(err, errShortRecord) {
			t.Errorf("decode %d of %d bytes: %v, want errShortRecord", n, len(b), err)
		}
	}
	bad := slices.Clone(b)
	bad[16] = 9 // kind
	if _, err := decodeRecord(bad, nil); err == nil {
		t.Error("unknown kind decoded")
	}
	for _, k := range []uint16{kindFork, kindGone, kindHeld, kindRound} {
		notice := encodeRecord(record{Kind: k, Tid: 7, Slot: 6, Vals: []perf.Count{{}}})
		if _, err := decodeRecord(notice, nil); err == nil {
			t.Errorf("notice of kind %d with values decoded", k)
		}
		if r, err := decodeRecord(encodeRecord(record{Kind: k, Tid: 7, Slot: 6}), nil); err != nil || r.Tid != 7 || r.Kind != k {
			t.Errorf("notice of kind %d: %+v, %v", k, r, err)
		}
	}
	sw := encodeRecord(record{Kind: kindSwitch, Tid: 7, Slot: 6, Vals: want.Vals})
	if r, err := decodeRecord(sw, nil); err != nil || !slices.Equal(r.Vals, want.Vals) {
		t.Errorf("switch snapshot: %+v, %v", r, err)
	}
}

// FuzzDecodeRecord: any bytes decode or fail without panicking, and what decodes
// re-encodes to the bytes it came from.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(record{TimeNs: 1, Tid: 2, Slot: 3, Kind: kindTick, Vals: []perf.Count{{Value: 4, Enabled: 5, Running: 6}}}))
	f.Add(encodeRecord(record{Kind: kindFork, Tid: 10, Slot: 9}))
	f.Add(encodeRecord(record{Kind: kindExit, Vals: make([]perf.Count, maxEvents)}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b, nil)
		if err != nil {
			return
		}
		if len(r.Vals) > maxEvents {
			t.Fatalf("%d values", len(r.Vals))
		}
		re := encodeRecord(r)
		// Every byte of the header and values round-trips; only the ring's padding after
		// them is not part of the record.
		if !bytes.Equal(re, b[:len(re)]) {
			t.Fatalf("re-encoded %x from %x", re, b[:len(re)])
		}
	})
}

const forkFormat = `name: sched_process_fork
ID: 366
format:
	field:unsigned short common_type;	offset:0;	size:2;	signed:0;
	field:unsigned char common_flags;	offset:2;	size:1;	signed:0;
	field:unsigned char common_preempt_count;	offset:3;	size:1;	signed:0;
	field:int common_pid;	offset:4;	size:4;	signed:1;

	field:__data_loc char[] parent_comm;	offset:8;	size:4;	signed:0;
	field:pid_t parent_pid;	offset:12;	size:4;	signed:1;
	field:__data_loc char[] child_comm;	offset:16;	size:4;	signed:0;
	field:pid_t child_pid;	offset:20;	size:4;	signed:1;
`

// The layout of kernels before 6.x, with the comms inline.
const forkFormatOld = `	field:char parent_comm[16];	offset:8;	size:16;	signed:1;
	field:pid_t parent_pid;	offset:24;	size:4;	signed:1;
	field:char child_comm[16];	offset:28;	size:16;	signed:1;
	field:pid_t child_pid;	offset:44;	size:4;	signed:1;
`

func TestFieldOffset(t *testing.T) {
	for _, tc := range []struct {
		format, field string
		want          uint32
	}{
		{forkFormat, "child_pid", 20},
		{forkFormat, "parent_pid", 12},
		{forkFormat, "common_pid", 4},
		{forkFormatOld, "child_pid", 44},
	} {
		got, err := fieldOffset([]byte(tc.format), tc.field)
		if err != nil || got != tc.want {
			t.Errorf("offset of %s: %d, %v; want %d", tc.field, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "field:pid_t child_pid;", "field:pid_t child_pid;\toffset:x;", "field:pid_t child_pid2;\toffset:4;"} {
		if off, err := fieldOffset([]byte(bad), "child_pid"); err == nil {
			t.Errorf("fieldOffset(%q) = %d, want an error", bad, off)
		}
	}
	// And the kernel we run on: the program reads the child's tid at this offset.
	if off, err := forkChildOffset(); err != nil || off == 0 {
		t.Fatalf("forkChildOffset on this kernel (requires tracefs, as root): %d, %v", off, err)
	}
}

func FuzzFieldOffset(f *testing.F) {
	f.Add([]byte(forkFormat), "child_pid")
	f.Add([]byte(forkFormatOld), "parent_pid")
	f.Fuzz(func(t *testing.T, format []byte, name string) {
		off, err := fieldOffset(format, name)
		if err == nil && off > 0xffff {
			t.Fatalf("offset %d out of range", off)
		}
	})
}
