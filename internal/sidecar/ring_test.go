package sidecar

import (
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/ringbuf"
	"github.com/bayesperf/bayesperf/shim"
)

const testPage = 4096

// ringMem returns an 8-byte aligned mapping-like buffer: a header page and dataPages
// pages of data, with data_offset and data_size filled in as the kernel does.
func ringMem(t *testing.T, dataPages int) []byte {
	t.Helper()
	w := make([]uint64, (1+dataPages)*testPage/8)
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	if err := ringbuf.WriteMetaPage(mem, ringbuf.MetaPage{DataOffset: testPage, DataSize: uint64(dataPages * testPage)}); err != nil {
		t.Fatal(err)
	}
	return mem
}

// sampleRec is a 16-byte SAMPLE record carrying seq (sample_type 0, so the body is opaque
// to everyone but this test).
func sampleRec(seq uint64) []byte {
	b := make([]byte, 16)
	perfabi.ByteOrder.PutUint32(b[0:], uint32(ringbuf.RecordSample))
	perfabi.ByteOrder.PutUint16(b[6:], 16)
	perfabi.ByteOrder.PutUint64(b[8:], seq)
	return b
}

// drain reads every record available in a mirror as the tool would and returns the
// SAMPLE sequence numbers and the sum of LOST counts.
func drain(t *testing.T, rd *ringbuf.Reader) (seqs []uint64, lost uint64) {
	t.Helper()
	for {
		rec, err := rd.Next()
		if err != nil {
			t.Fatalf("read mirror: %v", err)
		}
		if rec == nil {
			break
		}
		switch ringbuf.RecordType(perfabi.ByteOrder.Uint32(rec)) {
		case ringbuf.RecordSample:
			seqs = append(seqs, perfabi.ByteOrder.Uint64(rec[8:]))
		case ringbuf.RecordLost:
			lost += perfabi.ByteOrder.Uint64(rec[16:])
		}
	}
	rd.Commit()
	return seqs, lost
}

// TestPumpKeepsEveryRecordOrCountsIt drives a forward ring pump with a "kernel" writer
// producing faster than the tool consumes: every record reaches the tool in order, or is
// reported in a LOST record written by the kernel side (backpressure keeps the mirror
// from dropping anything itself).
func TestPumpKeepsEveryRecordOrCountsIt(t *testing.T) {
	kmem, mmem := ringMem(t, 2), ringMem(t, 2)
	kw, err := ringbuf.NewWriter(kmem, ringbuf.WriterOptions{PageSize: testPage})
	if err != nil {
		t.Fatal(err)
	}
	r, err := newMirrorRingMem(kmem, mmem, shim.Attr{}, true)
	if err != nil {
		t.Fatal(err)
	}
	tool, err := ringbuf.NewReader(mmem, ringbuf.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var produced, got, lost uint64
	var lastSeq uint64
	for round := range 200 {
		for range rng.IntN(700) {
			produced++
			kw.Write(sampleRec(produced))
		}
		r.pump()
		if round%3 == 0 { // the tool reads only now and then
			seqs, l := drain(t, tool)
			for _, s := range seqs {
				if s <= lastSeq {
					t.Fatalf("record %d after %d: out of order or repeated", s, lastSeq)
				}
				lastSeq = s
			}
			got += uint64(len(seqs))
			lost += l
		}
	}
	for range 10 { // drain everything left
		r.pump()
		seqs, l := drain(t, tool)
		got += uint64(len(seqs))
		lost += l
	}
	lost += kw.Lost() // dropped by the kernel and not reported yet
	if got+lost != produced || r.wr.Lost() != 0 {
		t.Errorf("produced %d, delivered %d + lost %d (mirror writer dropped %d)", produced, got, lost, r.wr.Lost())
	}
	if got == 0 || lost == 0 {
		t.Errorf("delivered %d lost %d: the test should exercise both", got, lost)
	}
}

// TestPumpSurvivesLyingTail: a tool that stores garbage in the mirror's data_tail cannot
// crash the sidecar or make it write outside the ring.
func TestPumpSurvivesLyingTail(t *testing.T) {
	kmem, mmem := ringMem(t, 1), ringMem(t, 1)
	kw, _ := ringbuf.NewWriter(kmem, ringbuf.WriterOptions{PageSize: testPage})
	r, err := newMirrorRingMem(kmem, mmem, shim.Attr{}, true)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	tail := (*uint64)(unsafe.Pointer(&mmem[ringbuf.OffDataTail]))
	for i := range 2000 {
		kw.Write(sampleRec(uint64(i)))
		atomic.StoreUint64(tail, rng.Uint64())
		r.pump()
	}
	hdr := mmem[:testPage]
	if perfabi.ByteOrder.Uint64(hdr[ringbuf.OffDataOffset:]) != testPage || perfabi.ByteOrder.Uint64(hdr[ringbuf.OffDataSize:]) != testPage {
		t.Errorf("the mirror's layout fields were overwritten")
	}
}

// TestPumpBackward: a backward ring copied while paused reads, in the mirror, exactly as
// the kernel's does: newest first.
func TestPumpBackward(t *testing.T) {
	kmem, mmem := ringMem(t, 2), ringMem(t, 2)
	kw, _ := ringbuf.NewWriter(kmem, ringbuf.WriterOptions{PageSize: testPage, Backward: true, Overwrite: true})
	r, err := newMirrorRingMem(kmem, mmem, shim.Attr{Flags: perfabi.FlagWriteBackward}, false)
	if err != nil {
		t.Fatal(err)
	}
	read := func(mem []byte) []uint64 {
		rd, err := ringbuf.NewReader(mem, ringbuf.ReaderOptions{Backward: true})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := drain(t, rd)
		return s
	}
	for batch := range 3 {
		for i := range 300 { // 3 x 300 x 16 bytes: the 8 KiB ring wraps
			kw.Write(sampleRec(uint64(batch*300 + i)))
		}
		r.pumpBackward()
		k, m := read(kmem), read(mmem)
		if len(k) == 0 || len(k) != len(m) {
			t.Fatalf("batch %d: kernel ring reads %d records, mirror %d", batch, len(k), len(m))
		}
		for i := range k {
			if k[i] != m[i] {
				t.Fatalf("batch %d record %d: kernel %d, mirror %d", batch, i, k[i], m[i])
			}
		}
	}
}
