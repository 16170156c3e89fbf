package ringbuf

import (
	"bytes"
	"errors"
	"iter"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"
)

const testPage = 4096

// allRecords yields the records r has until the ring is empty, failing tb on a corrupt
// one. The caller commits.
func allRecords(tb testing.TB, r *Reader) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		for {
			rec, err := r.Next()
			if err != nil {
				tb.Fatalf("read the ring: %v", err)
			}
			if rec == nil || !yield(rec) {
				return
			}
		}
	}
}

// newMem returns an 8-byte aligned mapping stand-in: one header page and dataSize bytes.
func newMem(dataSize int) []byte {
	words := make([]uint64, (testPage+dataSize)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

// rec builds a record of the given type and total size whose body is a recognisable
// pattern derived from seq.
func rec(t RecordType, size int, seq uint64) []byte {
	b := make([]byte, size)
	bo.PutUint32(b, uint32(t))
	bo.PutUint16(b[6:], uint16(size))
	for i := HeaderSize; i+8 <= size; i += 8 {
		bo.PutUint64(b[i:], seq*1000+uint64(i))
	}
	return b
}

// sampleRec builds a SAMPLE for Format{TID|TIME|ID|CPU, SampleIDAll} with distinct fields.
func sampleRec(f *Format, seq uint64, extra int) []byte {
	s := &Sample{Pid: uint32(seq), Tid: uint32(seq + 1), Time: seq * 10, ID: 100 + seq%3, CPU: uint32(seq % 4), Raw: make([]byte, 4+extra)}
	b, err := Append(nil, s, f)
	if err != nil {
		panic(err)
	}
	return b
}

// TestMirrorPropertiesPlainMemory drives a Writer and a Reader over one small ring in a
// random interleaving and checks: every record written is read back in order and byte
// for byte (so nothing unconsumed was overwritten, also across the wrap); a record is
// dropped exactly when CIRC_SPACE is short; each drop run is reported by one LOST record,
// placed just before the next written record, with the count of drops and the id and
// sample_id fields of that record.
func TestMirrorPropertiesPlainMemory(t *testing.T) {
	f := Format{SampleType: SampleTID | SampleTime | SampleID | SampleCPU | SampleRaw, SampleIDAll: true}
	lostSize := 24 + f.IDTrailerSize()
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 99))
		dataSize := 256 << rng.IntN(3)
		mem := newMem(dataSize)
		w, err := NewWriter(mem, WriterOptions{Format: f, PageSize: testPage})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(mem, ReaderOptions{PageSize: testPage})
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte // expected records, in order, LOST included
		dropped, totalDropped, totalLostReported := uint64(0), uint64(0), uint64(0)
		wraps := 0
		for step := range 4000 {
			if rng.IntN(3) != 0 {
				b := sampleRec(&f, uint64(step), 8*rng.IntN(12))
				head, tail := w.Head(), bo.Uint64(mem[OffDataTail:])
				need := uint64(len(b))
				if dropped > 0 {
					need += uint64(lostSize)
				}
				free := (tail - (head + 1)) & uint64(dataSize-1)
				ok, _, err := w.Write(b)
				if err != nil {
					t.Fatal(err)
				}
				if ok != (free >= need) {
					t.Fatalf("seed %d step %d: written=%v with %d free for %d bytes", seed, step, ok, free, need)
				}
				if !ok {
					dropped++
					totalDropped++
					continue
				}
				if (head&uint64(dataSize-1))+need > uint64(dataSize) {
					wraps++
				}
				if dropped > 0 {
					sid, _ := idOf(b, &f)
					l, err := Append(nil, &Lost{Common: Common{ID: sid}, EventID: sid.ID, Lost: dropped}, &f)
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, l)
					dropped = 0
				}
				want = append(want, b)
				continue
			}
			for k := rng.IntN(6); k > 0; k-- {
				got, err := r.Next()
				if err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
				if got == nil {
					if len(want) != 0 {
						t.Fatalf("seed %d step %d: ring empty with %d records expected", seed, step, len(want))
					}
					break
				}
				if len(want) == 0 {
					t.Fatalf("seed %d step %d: unexpected record % x", seed, step, got)
				}
				if !bytes.Equal(got, want[0]) {
					t.Fatalf("seed %d step %d: read\n% x\nwant\n% x", seed, step, got, want[0])
				}
				if RecordType(bo.Uint32(got)) == RecordLost {
					totalLostReported += bo.Uint64(got[16:])
				}
				want = want[1:]
			}
			r.Commit()
		}
		if totalDropped == 0 || wraps == 0 {
			t.Fatalf("seed %d: the interleaving never dropped (%d) or never wrapped (%d): test is too weak", seed, totalDropped, wraps)
		}
		for {
			got, err := r.Next()
			if err != nil || got == nil {
				break
			}
			if len(want) == 0 || !bytes.Equal(got, want[0]) {
				t.Fatalf("seed %d: draining read an unexpected record", seed)
			}
			if RecordType(bo.Uint32(got)) == RecordLost {
				totalLostReported += bo.Uint64(got[16:])
			}
			want = want[1:]
		}
		if len(want) != 0 || totalLostReported+dropped != totalDropped {
			t.Fatalf("seed %d: %d records unread; %d drops, %d reported by LOST, %d pending", seed, len(want), totalDropped, totalLostReported, dropped)
		}
	}
}

// TestConcurrentConservation runs the Writer and the Reader in two goroutines over a
// small ring: every record is either read back in sequence or counted by a LOST record.
func TestConcurrentConservation(t *testing.T) {
	mem := newMem(1024)
	w, err := NewWriter(mem, WriterOptions{EventID: 7, PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(mem, ReaderOptions{PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	const total = 200000
	var extraLost atomic.Uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		b := rec(RecordSample, 48, 0)
		for i := uint64(1); i <= total; i++ {
			bo.PutUint64(b[8:], i)
			if _, _, err := w.Write(b); err != nil {
				t.Error(err)
				return
			}
		}
		// Flush the pending LOST count with a terminator record, waiting for room. Each
		// failed attempt is itself counted as lost, as in the kernel.
		end := rec(RecordExit, 48, 0)
		for {
			if ok, _, _ := w.Write(end); ok {
				break
			}
			extraLost.Add(1)
		}
		close(done)
	}()
	var got, lost, last uint64
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for b := range allRecords(t, r) {
			switch RecordType(bo.Uint32(b)) {
			case RecordLost:
				if bo.Uint64(b[8:]) != 7 {
					t.Fatalf("LOST id %d, want 7", bo.Uint64(b[8:]))
				}
				lost += bo.Uint64(b[16:])
			case RecordSample:
				seq := bo.Uint64(b[8:])
				if seq <= last {
					t.Fatalf("sample %d after %d", seq, last)
				}
				last = seq
				got++
			}
		}
		r.Commit()
	}
	wg.Wait()
	if got+lost != total+extraLost.Load() {
		t.Fatalf("read %d + lost %d != written %d + %d failed terminators", got, lost, total, extraLost.Load())
	}
	t.Logf("read %d, lost %d", got, lost)
}

// TestBackwardOverwrite writes more than the ring holds in backward overwrite mode and
// checks that the Reader returns exactly the newest records that fit in data_size,
// newest first, and after Commit only the ones written since.
func TestBackwardOverwrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 50 {
		const dataSize = 512
		mem := newMem(dataSize)
		w, err := NewWriter(mem, WriterOptions{Backward: true, Overwrite: true, PageSize: testPage})
		if err != nil {
			t.Fatal(err)
		}
		r, err := NewReader(mem, ReaderOptions{Backward: true, PageSize: testPage})
		if err != nil {
			t.Fatal(err)
		}
		var written [][]byte
		seq := uint64(0)
		for round := range 4 {
			n := rng.IntN(30)
			start := len(written)
			for range n {
				seq++
				b := rec(RecordSample, 8*(2+rng.IntN(10)), seq)
				if ok, _, err := w.Write(b); !ok || err != nil {
					t.Fatalf("overwrite write failed: %v %v", ok, err)
				}
				written = append(written, b)
			}
			if int64(w.Head()) > 0 {
				t.Fatalf("backward head %d is positive", int64(w.Head()))
			}
			// Expected: newest first, while they fit in dataSize bytes, only since start.
			var want [][]byte
			used := 0
			for i := len(written) - 1; i >= start; i-- {
				if used+len(written[i]) > dataSize {
					break
				}
				used += len(written[i])
				want = append(want, written[i])
			}
			for i, wb := range want {
				got, err := r.Next()
				if err != nil || !bytes.Equal(got, wb) {
					t.Fatalf("trial %d round %d record %d: got % x (%v)\nwant % x", trial, round, i, got, err, wb)
				}
			}
			if got, err := r.Next(); got != nil || err != nil {
				t.Fatalf("trial %d round %d: extra record % x (%v)", trial, round, got, err)
			}
			r.Commit()
		}
	}
}

// TestBackwardWithTail checks the non-overwrite backward ring (write_backward with a
// writable mapping): space is checked against data_tail going downwards.
func TestBackwardWithTail(t *testing.T) {
	mem := newMem(256)
	w, err := NewWriter(mem, WriterOptions{Backward: true, PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		ok, _, _ := w.Write(rec(RecordSample, 32, uint64(n)))
		if !ok {
			break
		}
		n++
	}
	// 256 bytes with one byte kept free hold 7 records of 32 bytes.
	if n != 7 || w.Lost() != 1 {
		t.Fatalf("wrote %d records, lost %d; want 7 and 1", n, w.Lost())
	}
}

// TestWakeupWatermark: with attr.watermark the reader is woken each time data_head
// passes one more wakeup_watermark bytes (strictly), per __perf_output_begin.
func TestWakeupWatermark(t *testing.T) {
	mem := newMem(4096)
	w, err := NewWriter(mem, WriterOptions{Watermark: true, WakeupWatermark: 256, Overwrite: true, PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	var wakes []int
	for i := 1; i <= 40; i++ {
		_, wake, err := w.Write(rec(RecordSample, 32, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		if wake {
			wakes = append(wakes, i)
		}
	}
	// head = 32*i: wakes when 32*i - 256*k > 256, i.e. i = 9, 17, 25, 33.
	want := []int{9, 17, 25, 33}
	if !equalInts(wakes, want) {
		t.Fatalf("woken after records %v, want %v", wakes, want)
	}
}

// TestWakeupEvents: without attr.watermark, every wakeup_events-th SAMPLE wakes the
// reader; other record types do not count; the half-ring watermark still applies.
func TestWakeupEvents(t *testing.T) {
	mem := newMem(4096)
	w, err := NewWriter(mem, WriterOptions{WakeupEvents: 3, Overwrite: true, PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	var wakes []int
	for i := 1; i <= 40; i++ {
		typ := RecordSample
		if i%4 == 0 {
			typ = RecordComm
		}
		_, wake, err := w.Write(rec(typ, 32, uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		if wake {
			wakes = append(wakes, i)
		}
	}
	// Samples are the i not divisible by 4: 1 2 3 | 5 6 7 | 9 10 11 | ...: every third
	// sample is i = 3, 7, 11, ... (i%4 == 3). The watermark (2048 bytes) is passed at
	// i = 65, beyond this run.
	var want []int
	for i := 3; i <= 40; i += 4 {
		want = append(want, i)
	}
	if !equalInts(wakes, want) {
		t.Fatalf("woken after records %v, want %v", wakes, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReaderRejectsHostileRing: positions and sizes that cannot be right give
// ErrCorrupt, the reader does not move past them, and Discard recovers.
func TestReaderRejectsHostileRing(t *testing.T) {
	mem := newMem(256)
	r, err := NewReader(mem, ReaderOptions{PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	bo.PutUint64(mem[OffDataHead:], 1000) // more than data_size ahead of the tail
	if _, err := r.Next(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("head far ahead: %v", err)
	}
	r.Discard()
	if tail := bo.Uint64(mem[OffDataTail:]); tail != 1000 {
		t.Fatalf("Discard left data_tail at %d", tail)
	}
	bo.PutUint64(mem[OffDataHead:], 1016) // 16 bytes, but the record claims 0
	if _, err := r.Next(); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("zero-size record: %v", err)
	}
	copy(mem[testPage+1000%256:], rec(RecordSample, 16, 1))
	b, err := r.Next()
	if err != nil || len(b) != 16 {
		t.Fatalf("valid record after a corrupt read: % x, %v", b, err)
	}
	if _, err := NewReader(make([]byte, 100), ReaderOptions{}); err == nil {
		t.Fatal("accepted a mapping smaller than the header page")
	}
	bad := newMem(256)
	bo.PutUint64(bad[OffDataOffset:], testPage)
	bo.PutUint64(bad[OffDataSize:], 300)
	if _, err := NewReader(bad, ReaderOptions{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("data_size not a power of two: %v", err)
	}
	bo.PutUint64(bad[OffDataSize:], 1<<20)
	if _, err := NewReader(bad, ReaderOptions{}); !errors.Is(err, ErrTruncated) {
		t.Fatalf("data area beyond the mapping: %v", err)
	}
}

// TestWrapCopy checks that a record straddling the end of the data area is handed out
// as a contiguous copy equal to what was written.
func TestWrapCopy(t *testing.T) {
	mem := newMem(256)
	w, _ := NewWriter(mem, WriterOptions{PageSize: testPage})
	r, _ := NewReader(mem, ReaderOptions{PageSize: testPage})
	for i := range 5 { // 5*40 = 200 bytes; the next 48-byte record wraps at 256
		w.Write(rec(RecordSample, 40, uint64(i)))
		r.Next()
	}
	r.Commit()
	want := rec(RecordSample, 96, 77)
	if ok, _, _ := w.Write(want); !ok {
		t.Fatal("write dropped")
	}
	got, err := r.Next()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("wrapped record: % x (%v)\nwant % x", got, err, want)
	}
	if &got[0] == &mem[testPage+200] {
		t.Fatal("wrapped record was not copied out")
	}
}

// TestCopyNextAndIdentifier: CopyNext returns the records in order and gives their space
// back at once; Identifier finds PERF_SAMPLE_IDENTIFIER in SAMPLE and non-SAMPLE records.
func TestCopyNextAndIdentifier(t *testing.T) {
	f := Format{SampleType: SampleIdentifier | SampleTID | SampleTime, SampleIDAll: true}
	mem := newMem(256)
	w, _ := NewWriter(mem, WriterOptions{Format: f, PageSize: testPage})
	r, _ := NewReader(mem, ReaderOptions{PageSize: testPage})
	var want []uint64
	for i := range uint64(40) { // 40 records of 32-40 bytes: several laps of a 256-byte ring
		var b []byte
		var err error
		if i%2 == 0 {
			b, err = Append(nil, &Sample{Identifier: 1000 + i, Pid: 1, Time: i}, &f)
		} else {
			b, err = Append(nil, &Comm{Common: Common{ID: IDFields{Identifier: 1000 + i}}, Comm: "x"}, &f)
		}
		if err != nil {
			t.Fatal(err)
		}
		if ok, _, _ := w.Write(b); !ok {
			t.Fatalf("record %d dropped: CopyNext did not give the space back", i)
		}
		want = append(want, 1000+i)
		got, ok, err := r.CopyNext(nil)
		if err != nil || !ok || !bytes.Equal(got, b) {
			t.Fatalf("record %d: %v %v", i, ok, err)
		}
		if id, ok := Identifier(got); !ok || id != 1000+i {
			t.Fatalf("record %d: Identifier = %d, %v", i, id, ok)
		}
	}
	if _, ok, _ := r.CopyNext(nil); ok {
		t.Fatal("record after the last one")
	}
}

// TestWriterPauseAndResume: records written while paused are lost and reported by one
// LOST record before the next record after resuming; a Writer reopened over a ring with
// data continues at its data_head without a spurious wakeup.
func TestWriterPauseAndResume(t *testing.T) {
	mem := newMem(1024)
	w, _ := NewWriter(mem, WriterOptions{EventID: 5, PageSize: testPage})
	r, _ := NewReader(mem, ReaderOptions{PageSize: testPage})
	w.Write(rec(RecordSample, 32, 1))
	w.SetPaused(true)
	for i := range 7 {
		if ok, _, _ := w.Write(rec(RecordSample, 32, uint64(2+i))); ok {
			t.Fatal("a paused Writer wrote")
		}
	}
	w.SetPaused(false)
	w2, err := NewWriter(mem, WriterOptions{EventID: 5, PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	if w2.Head() != 32 {
		t.Fatalf("reopened Writer at %d, want 32", w2.Head())
	}
	if _, wake, _ := w2.Write(rec(RecordSample, 32, 100)); wake {
		t.Fatal("reopened Writer woke the reader on its first small record")
	}
	w.head = w2.Head() // the first Writer continues after the second (one producer at a time)
	w.Write(rec(RecordSample, 32, 9))
	var types []RecordType
	var lost uint64
	for b, _ := r.Next(); b != nil; b, _ = r.Next() {
		types = append(types, RecordType(bo.Uint32(b)))
		if types[len(types)-1] == RecordLost {
			lost = bo.Uint64(b[16:])
			if id := bo.Uint64(b[8:]); id != 5 {
				t.Fatalf("LOST id %d, want 5", id)
			}
		}
	}
	want := []RecordType{RecordSample, RecordSample, RecordLost, RecordSample}
	if len(types) != len(want) || lost != 7 {
		t.Fatalf("records %v with %d lost; want %v with 7", types, lost, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("records %v; want %v", types, want)
		}
	}
}

// TestBorrowedBatchValidUntilCommit borrows every record of a full ring, one of which
// wraps, and checks them all only after the batch: views and the wrapped copy must all
// still hold their records.
func TestBorrowedBatchValidUntilCommit(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := range 100 {
		mem := newMem(512)
		w, _ := NewWriter(mem, WriterOptions{PageSize: testPage})
		r, _ := NewReader(mem, ReaderOptions{PageSize: testPage})
		// Move the start to a random place so that some record wraps.
		for range rng.IntN(20) {
			w.Write(rec(RecordComm, 8*(1+rng.IntN(6)), 0))
			r.Next()
			r.Commit()
		}
		var want, got [][]byte
		for seq := uint64(1); ; seq++ {
			b := rec(RecordSample, 8*(2+rng.IntN(8)), seq)
			if ok, _, _ := w.Write(b); !ok {
				break
			}
			want = append(want, b)
		}
		for b, err := r.Next(); b != nil || err != nil; b, err = r.Next() {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, b)
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: borrowed %d records, wrote %d", trial, len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("trial %d: borrowed record %d changed before Commit", trial, i)
			}
		}
		r.Commit()
	}
}
