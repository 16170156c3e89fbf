package ringbuf

import (
	"fmt"
	"sync/atomic"
)

// ReaderOptions configure a Reader.
type ReaderOptions struct {
	// Backward reads a ring written with attr.write_backward (mapped read-only, overwrite
	// mode): newest records first in memory, no data_tail. The caller should pause output
	// (PERF_EVENT_IOC_PAUSE_OUTPUT) around a read so the kernel does not overwrite the
	// records being read.
	Backward bool
	// PageSize locates the data area when the header's data_offset and data_size are
	// both zero; 0 means os.Getpagesize().
	PageSize int
}

// Reader consumes records from a perf ring buffer (the kernel's, or a mirror) with the
// borrow-then-commit protocol. A Reader is used by one goroutine.
//
// Forward rings: Next hands out records between the position of the last Commit and
// data_head; Commit stores data_tail, giving their space back to the producer.
// Backward rings: Next hands out the records written since the previous Commit, newest
// first, bounded by data_size; Commit remembers data_head as the point to stop at next
// time.
type Reader struct {
	ring
	backward  bool
	pos       uint64 // next record to hand out
	committed uint64 // forward: position of the last Commit (our data_tail)
	end       uint64 // where the current batch stops (head snapshot, or the backward bound)
	prev      uint64 // backward: data_head at the start of the last committed batch
	start     uint64 // backward: data_head at the start of the current batch
	inBatch   bool   // backward: a batch has been started since the last Commit
	scratch   []byte // copies of records that wrap the end of the data area
}

// NewReader returns a Reader over mem, the whole mapping: header page then data pages.
// A forward Reader starts at the current data_tail.
func NewReader(mem []byte, opts ReaderOptions) (*Reader, error) {
	rg, _, err := newRing(mem, opts.PageSize)
	if err != nil {
		return nil, fmt.Errorf("open ring reader: %w", err)
	}
	r := &Reader{ring: rg, backward: opts.Backward}
	if !r.backward {
		r.pos = atomic.LoadUint64(r.ring.tail) // only the reader writes data_tail: no pairing needed
		r.end, r.committed = r.pos, r.pos
	}
	return r, nil
}

// DataSize is the size of the data area in bytes.
func (r *Reader) DataSize() int { return len(r.data) }

// Next returns the next record, header included, or nil and a nil error when no complete
// record is available now. The returned slice is a view into the ring (or a copy when the
// record wraps the end of the data area) and stays valid until Commit or Discard: the
// producer may not reuse the space before data_tail moves, and since at most data_size
// bytes lie between two commits, at most one record per commit wraps and needs the
// scratch copy. Next never advances data_tail.
//
// An error means the ring is inconsistent (a size or position that cannot be right); the
// Reader does not move past it, and the caller recovers with Discard.
func (r *Reader) Next() ([]byte, error) {
	if r.backward {
		return r.nextBackward()
	}
	if r.pos == r.end {
		r.end = loadHeadAcquire(r.head) // C: pairs with the producer's B
		if r.end == r.pos {
			return nil, nil
		}
	}
	if ahead := r.end - r.committed; ahead > uint64(len(r.data)) {
		return nil, fmt.Errorf("read ring: data_head %d is %d bytes past data_tail %d, more than data_size %d: %w",
			r.end, ahead, r.committed, len(r.data), ErrCorrupt)
	}
	avail := r.end - r.pos
	if avail < HeaderSize {
		return nil, fmt.Errorf("read ring: %d bytes between position %d and data_head %d, less than a record header: %w",
			avail, r.pos, r.end, ErrCorrupt)
	}
	size := r.recordSize(r.pos)
	if size < HeaderSize || uint64(size) > avail {
		return nil, fmt.Errorf("read ring: record at position %d claims %d bytes, %d available: %w", r.pos, size, avail, ErrCorrupt)
	}
	rec := r.view(r.pos, size, &r.scratch)
	r.pos += uint64(size)
	return rec, nil
}

// recordSize reads perf_event_header.size of the record at pos, even if the header wraps
// (only a misaligned, hostile position can make it wrap).
func (r *Reader) recordSize(pos uint64) int {
	if i := pos & r.mask; i+HeaderSize <= uint64(len(r.data)) {
		return int(bo.Uint16(r.data[i+6:]))
	}
	var h [HeaderSize]byte
	r.copyOut(h[:], pos)
	return int(bo.Uint16(h[6:]))
}

func (r *Reader) nextBackward() ([]byte, error) {
	if !r.inBatch {
		r.inBatch = true
		start := loadHeadAcquire(r.head) // C
		r.start, r.pos, r.end = start, start, r.prev
		if r.end-r.pos > uint64(len(r.data)) {
			// More was written than the ring holds: the oldest records were overwritten.
			// Stop where the next record would run past data_size bytes from the head.
			r.end = r.pos + uint64(len(r.data))
		}
	}
	if r.end-r.pos < HeaderSize {
		return nil, nil
	}
	size := r.recordSize(r.pos)
	if size == 0 || uint64(size) > r.end-r.pos {
		// A zero size is never-written memory; a record crossing the bound was partly
		// overwritten by newer ones. Either way this batch ends here.
		r.end = r.pos
		return nil, nil
	}
	if size < HeaderSize {
		return nil, fmt.Errorf("read backward ring: record at position %d claims %d bytes: %w", r.pos, size, ErrCorrupt)
	}
	rec := r.view(r.pos, size, &r.scratch)
	r.pos += uint64(size)
	return rec, nil
}

// CopyNext is the copying reader on top of Next and Commit: it appends the next record
// to dst, commits at once so the producer can reuse the space, and returns the extended
// slice and whether a record was available.
func (r *Reader) CopyNext(dst []byte) ([]byte, bool, error) {
	rec, err := r.Next()
	if err != nil || rec == nil {
		return dst, false, err
	}
	dst = append(dst, rec...)
	r.Commit()
	return dst, true, nil
}

// Commit gives back the space of every record returned by Next so far: for a forward
// ring it stores data_tail; for a backward ring it marks the current batch as read.
// Records returned earlier must not be used after Commit.
func (r *Reader) Commit() {
	if r.backward {
		if r.inBatch {
			// Records between the batch's start and the old prev have been handed out
			// (or were lost to overwrite); the next batch stops where this one started.
			r.prev, r.inBatch = r.start, false
		}
		return
	}
	r.committed = r.pos
	storeTailRelease(r.ring.tail, r.pos) // D: pairs with the producer's A
}

// Discard drops everything up to the current data_head, including an inconsistent
// record that made Next fail, and commits.
func (r *Reader) Discard() {
	h := loadHeadAcquire(r.head) // C
	if r.backward {
		r.prev, r.inBatch = h, false
		return
	}
	r.pos, r.end, r.committed = h, h, h
	storeTailRelease(r.ring.tail, h) // D
}

// Pending returns how many bytes lie between the Reader's position and data_head
// (forward rings), as the producer last published it.
func (r *Reader) Pending() uint64 {
	return loadHeadAcquire(r.head) - r.pos
}
