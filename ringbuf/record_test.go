package ringbuf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"testing"
)

// roundTrip checks decode(encode(r)) == r and encode(decode(b)) == b for one record.
func roundTrip(t *testing.T, r Record, f *Format) {
	t.Helper()
	b, err := Append(nil, r, f)
	if err != nil {
		t.Fatalf("encode %v with %+v: %v", r.Type(), *f, err)
	}
	h, _ := ParseHeader(b)
	if int(h.Size) != len(b) || h.Type != r.Type() {
		t.Fatalf("encode %v: header %+v for %d bytes", r.Type(), h, len(b))
	}
	got, err := Decode(b, f)
	if err != nil {
		t.Fatalf("decode %v with %+v: %v\n% x", r.Type(), *f, err, b)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("decode(encode(r)) != r for %v, format %+v\n got %+v\nwant %+v", r.Type(), *f, got, r)
	}
	b2, err := Append(nil, got, f)
	if err != nil {
		t.Fatalf("re-encode %v: %v", r.Type(), err)
	}
	if !bytes.Equal(b, b2) {
		t.Fatalf("encode(decode(b)) != b for %v\n got % x\nwant % x", r.Type(), b2, b)
	}
}

// TestRoundTripEveryTypeAndSampleBit covers every record type with every single
// sample_type bit, all bits at once, and no bit, crossed with every read_format and both
// sample_id_all settings.
func TestRoundTripEveryTypeAndSampleBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var sts []SampleType
	for b := SampleType(1); b <= SampleWeightStruct; b <<= 1 {
		sts = append(sts, b)
	}
	sts = append(sts, 0, SampleAll, SampleAll&^(SampleWeight|SampleWeightStruct))
	n := 0
	for _, st := range sts {
		for rf := ReadFormat(0); rf <= FormatAll; rf++ {
			for _, idAll := range []bool{false, true} {
				f := Format{SampleType: st, ReadFormat: rf, SampleIDAll: idAll, RegsUser: 0x1ff, RegsIntr: 0xf0f,
					BranchHWIndex: rf&1 == 0, BranchCounters: rf&2 == 0}
				for _, typ := range allTypes {
					roundTrip(t, genRecord(rng, &f, typ), &f)
					n++
				}
			}
		}
	}
	t.Logf("%d records round-tripped", n)
}

// TestRoundTripSampleBitPairs covers every pair of sample_type bits (300 pairs), each
// with every read_format, in SAMPLE records.
func TestRoundTripSampleBitPairs(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	n := 0
	for i := 0; i < 25; i++ {
		for j := i + 1; j < 25; j++ {
			for rf := ReadFormat(0); rf <= FormatAll; rf++ {
				f := Format{SampleType: 1<<i | 1<<j, ReadFormat: rf, RegsUser: 0x7, RegsIntr: 0x3,
					BranchHWIndex: rf&1 != 0, BranchCounters: rf&4 != 0}
				roundTrip(t, genSample(rng, &f), &f)
				n++
			}
		}
	}
	if n != 300*32 {
		t.Fatalf("%d combinations, want %d", n, 300*32)
	}
}

// TestRoundTripRandomFormats covers random sample_type combinations (the 2^25 subsets
// cannot all be enumerated; the seed is fixed so a failure reproduces).
func TestRoundTripRandomFormats(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		f := genFormat(rng)
		for _, typ := range allTypes {
			roundTrip(t, genRecord(rng, &f, typ), &f)
		}
	}
}

// TestDecodeSampleReuses checks that DecodeSample into a reused value gives the same
// fields as a fresh Decode, and stops allocating once slices have grown.
func TestDecodeSampleReuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := Format{SampleType: SampleAll &^ SampleWeightStruct, ReadFormat: FormatAll, RegsUser: 0xff, RegsIntr: 0xf, BranchHWIndex: true, BranchCounters: true}
	var s Sample
	for range 200 {
		want := genSample(rng, &f)
		b, err := Append(nil, want, &f)
		if err != nil {
			t.Fatal(err)
		}
		if err := DecodeSample(b, &f, &s); err != nil {
			t.Fatal(err)
		}
		b2, err := Append(nil, &s, &f)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("reused decode re-encodes differently (err %v)", err)
		}
	}
	big := genSample(rng, &f)
	big.Callchain = genU64s(rng, 64)
	b, _ := Append(nil, big, &f)
	if err := DecodeSample(b, &f, &s); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(100, func() { _ = DecodeSample(b, &f, &s) }); a != 0 {
		t.Fatalf("DecodeSample allocates %v times per record after warm-up", a)
	}
}

// TestDecodeErrorsSayWhere checks that truncating a valid record anywhere gives an error
// naming the record type and an offset inside the record, never a panic.
func TestDecodeErrorsSayWhere(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	f := Format{SampleType: SampleAll &^ SampleWeightStruct, ReadFormat: FormatAll | FormatGroup, SampleIDAll: true, RegsUser: 3, RegsIntr: 3, BranchHWIndex: true}
	for _, typ := range allTypes {
		if typ > RecordCallchainDeferred {
			continue
		}
		b, err := Append(nil, genRecord(rng, &f, typ), &f)
		if err != nil {
			t.Fatal(err)
		}
		for cut := HeaderSize; cut < len(b); cut++ {
			c := append([]byte(nil), b[:cut]...)
			bo.PutUint16(c[6:], uint16(cut)) // a header consistent with the shorter body
			_, err := Decode(c, &f)
			if typ == RecordSwitch && cut >= HeaderSize+f.IDTrailerSize() {
				continue
			}
			if err == nil {
				// Some cuts leave a valid record (a group with fewer values cannot, but a
				// string region can shrink to another valid length): re-encoding must
				// then reproduce the bytes.
				r, _ := Decode(c, &f)
				if b2, err := Append(nil, r, &f); err != nil || !bytes.Equal(b2, c) {
					t.Fatalf("%v cut to %d decodes but does not re-encode to itself", typ, cut)
				}
				continue
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("%v cut to %d: error %v is not a *DecodeError", typ, cut, err)
			}
			if de.Record != typ || de.Offset < 0 || de.Offset > cut || de.Field == "" {
				t.Fatalf("%v cut to %d: error does not say where: %+v", typ, cut, de)
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%v cut to %d: error %v wraps neither ErrTruncated nor ErrCorrupt", typ, cut, err)
			}
		}
		// The header announcing more bytes than given is caught before any field.
		if _, err := Decode(b[:len(b)-1], &f); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%v: short slice: got %v, want ErrTruncated", typ, err)
		}
	}
}

// TestReadBlockRewrite rewrites values and times through FindReadBlock and checks, by
// decoding, that exactly those fields changed, for every read_format, in SAMPLE and READ.
func TestReadBlockRewrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for rf := ReadFormat(0); rf <= FormatAll; rf++ {
		for range 20 {
			f := genFormat(rng)
			f.ReadFormat = rf
			f.SampleType |= SampleRead
			for _, typ := range []RecordType{RecordSample, RecordRead} {
				r := genRecord(rng, &f, typ)
				b, err := Append(nil, r, &f)
				if err != nil {
					t.Fatal(err)
				}
				blk, err := FindReadBlock(b, &f)
				if err != nil {
					t.Fatalf("%v rf=%#x: %v", typ, rf, err)
				}
				var want ReadValues
				switch r := r.(type) {
				case *Sample:
					want = r.Read
				case *Read:
					want = r.Values
				}
				if blk.Len() != len(want.Values) {
					t.Fatalf("%v rf=%#x: Len %d, want %d", typ, rf, blk.Len(), len(want.Values))
				}
				for i, cv := range want.Values {
					if blk.Value(i) != cv.Value {
						t.Fatalf("%v rf=%#x: value %d = %d, want %d", typ, rf, i, blk.Value(i), cv.Value)
					}
					if id, ok := blk.ID(i); ok != (rf&FormatID != 0) || id != cv.ID {
						t.Fatalf("%v rf=%#x: id %d = %d,%v want %d", typ, rf, i, id, ok, cv.ID)
					}
					if l, ok := blk.Lost(i); ok != (rf&FormatLost != 0) || l != cv.Lost {
						t.Fatalf("%v rf=%#x: lost %d = %d,%v want %d", typ, rf, i, l, ok, cv.Lost)
					}
				}
				if e, ok := blk.TimeEnabled(); ok != (rf&FormatTotalTimeEnabled != 0) || e != want.TimeEnabled {
					t.Fatalf("%v rf=%#x: enabled %d,%v want %d", typ, rf, e, ok, want.TimeEnabled)
				}
				if e, ok := blk.TimeRunning(); ok != (rf&FormatTotalTimeRunning != 0) || e != want.TimeRunning {
					t.Fatalf("%v rf=%#x: running %d,%v want %d", typ, rf, e, ok, want.TimeRunning)
				}
				// Rewrite: new values and times; everything else must be untouched.
				for i := range want.Values {
					want.Values[i].Value = rng.Uint64()
					blk.SetValue(i, want.Values[i].Value)
				}
				en, run := rng.Uint64(), rng.Uint64()
				blk.SetTimes(en, run)
				if rf&FormatTotalTimeEnabled != 0 {
					want.TimeEnabled = en
				}
				if rf&FormatTotalTimeRunning != 0 {
					want.TimeRunning = run
				}
				switch r := r.(type) {
				case *Sample:
					r.Read = want
				case *Read:
					r.Values = want
				}
				got, err := Decode(b, &f)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, r) {
					t.Fatalf("%v rf=%#x: after rewrite\n got %+v\nwant %+v", typ, rf, got, r)
				}
			}
		}
	}
}
