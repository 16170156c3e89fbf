package ringbuf

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func fuzzFormat(st, rf uint64, flags uint8) Format {
	return Format{
		SampleType:     SampleType(st) & SampleAll,
		ReadFormat:     ReadFormat(rf) & FormatAll,
		SampleIDAll:    flags&1 != 0,
		BranchHWIndex:  flags&2 != 0,
		BranchCounters: flags&4 != 0,
		RegsUser:       uint64(flags >> 3 & 3),
		RegsIntr:       uint64(flags >> 5 & 7),
	}
}

// FuzzDecode feeds arbitrary bytes and formats to every decoding entry point: none may
// panic; whatever decodes must re-encode to a record of the same size that decodes to
// the same value; a found READ block must be readable and writable in bounds.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(21, 22))
	for range 40 {
		fm := genFormat(rng)
		for _, typ := range allTypes {
			b, err := Append(nil, genRecord(rng, &fm, typ), &fm)
			if err != nil {
				f.Fatal(err)
			}
			flags := uint8(0)
			if fm.SampleIDAll {
				flags |= 1
			}
			if fm.BranchHWIndex {
				flags |= 2
			}
			if fm.BranchCounters {
				flags |= 4
			}
			fm.RegsUser, fm.RegsIntr = uint64(flags>>3&3), uint64(flags>>5&7)
			if typ == RecordSample || typ == RecordRead {
				// Re-encode with the masks fuzzFormat will use, so the seed is valid.
				b, _ = Append(nil, genRecord(rng, &fm, typ), &fm)
			}
			f.Add(b, uint64(fm.SampleType), uint64(fm.ReadFormat), flags)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte, st, rf uint64, flags uint8) {
		fm := fuzzFormat(st, rf, flags)
		r, err := Decode(b, &fm)
		if err == nil {
			size := int(bo.Uint16(b[6:]))
			enc, err := Append(nil, r, &fm)
			if err != nil {
				t.Fatalf("decoded %v does not re-encode: %v", r.Type(), err)
			}
			if len(enc) != size {
				t.Fatalf("%v: re-encoded to %d bytes, was %d", r.Type(), len(enc), size)
			}
			r2, err := Decode(enc, &fm)
			if err != nil || !reflect.DeepEqual(r, r2) {
				t.Fatalf("%v: decode(encode(decode(b))) != decode(b): %v", r.Type(), err)
			}
		}
		var s Sample
		_ = DecodeSample(b, &fm, &s)
		if blk, err := FindReadBlock(b, &fm); err == nil {
			for i := range blk.Len() {
				blk.SetValue(i, blk.Value(i)+1)
				blk.ID(i)
				blk.Lost(i)
			}
			blk.TimeEnabled()
			blk.TimeRunning()
			blk.SetTimes(1, 1)
		}
		_, _ = DecodeRaw(b)
		_, _ = Identifier(b)
	})
}

// FuzzReader runs the Reader (forward and backward) and the Writer over a ring whose
// bytes, data_head, data_tail, data_offset and data_size are hostile: no panic, every
// record handed out is whole and within the data area, and a forward batch never hands
// out more than data_size bytes.
func FuzzReader(f *testing.F) {
	f.Add([]byte{9, 0, 0, 0, 0, 0, 16, 0, 1, 2, 3, 4, 5, 6, 7, 8}, uint64(16), uint64(0), uint64(0), uint64(0), uint8(4), false)
	f.Add([]byte{9, 0, 0, 0, 0, 0, 0, 1}, uint64(1<<63), uint64(5), uint64(4096), uint64(64), uint8(6), true)
	f.Add([]byte{}, uint64(0), uint64(0), uint64(8), uint64(8), uint8(3), false)
	f.Fuzz(func(t *testing.T, data []byte, head, tail, off, size uint64, shift uint8, backward bool) {
		dataSize := 8 << (shift % 10)
		mem := newMem(dataSize)
		copy(mem[testPage:], data)
		bo.PutUint64(mem[OffDataHead:], head)
		bo.PutUint64(mem[OffDataTail:], tail)
		if off != 0 || size != 0 {
			bo.PutUint64(mem[OffDataOffset:], off)
			bo.PutUint64(mem[OffDataSize:], size)
		}
		r, err := NewReader(mem, ReaderOptions{Backward: backward, PageSize: testPage})
		if err == nil {
			total := 0
			for range 3 {
				for range 2000 {
					rec, err := r.Next()
					if err != nil || rec == nil {
						break
					}
					if len(rec) < HeaderSize || int(bo.Uint16(rec[6:])) != len(rec) {
						t.Fatalf("record of %d bytes with header size %d", len(rec), bo.Uint16(rec[6:]))
					}
					total += len(rec)
					if total > r.DataSize() {
						t.Fatalf("a batch handed out %d bytes from a %d-byte ring", total, r.DataSize())
					}
				}
				r.Commit()
				total = 0
				r.Discard()
			}
			r.Pending()
		}
		w, err := NewWriter(mem, WriterOptions{Backward: backward, Overwrite: shift&0x80 != 0, PageSize: testPage,
			Format: Format{SampleType: SampleID | SampleTID, SampleIDAll: true}})
		if err == nil {
			for i := range 20 {
				b := rec(RecordType(1+i%12), 8*(1+i%5), uint64(i))
				w.Write(b)
			}
		}
	})
}
