package ringbuf

import (
	"fmt"
)

// WriterOptions configure a Writer with the attr bits the kernel's ring code looks at.
type WriterOptions struct {
	// Backward is attr.write_backward: records are written at decreasing positions and
	// data_head counts down from 0.
	Backward bool
	// Overwrite is the kernel's rb->overwrite: the reader mapped the ring read-only, so
	// data_tail is never checked and old records are overwritten.
	Overwrite bool
	// Watermark, WakeupWatermark and WakeupEvents are the attr fields of the same names.
	// With Watermark the reader is woken each time WakeupWatermark more bytes were
	// written (0: half the data area); without it, every WakeupEvents samples (0: only
	// by the default half-ring watermark).
	Watermark       bool
	WakeupWatermark uint32
	WakeupEvents    uint32
	// Format describes the event writing the ring; a LOST record takes its id and its
	// sample_id_all trailer from the record being written, as the kernel does.
	Format Format
	// EventID is written in LOST records when the record being written carries no id
	// (neither SampleID nor SampleIdentifier in the format): the event's kernel id.
	EventID uint64
	// PageSize locates the data area when the header's data_offset and data_size are
	// both zero; 0 means os.Getpagesize(). NewWriter then stores them in the header.
	PageSize int
}

// Writer produces records into a mirror ring as the kernel would
// (kernel/events/ring_buffer.c, __perf_output_begin and perf_output_put_handle). A
// Writer is used by one goroutine; readers in other processes see only the ring memory.
type Writer struct {
	ring
	opts      WriterOptions
	head      uint64 // rb->head: the next position to write (backward: counts down)
	lost      uint64 // rb->lost: records dropped since the last LOST record
	paused    bool   // rb->paused
	wakeup    uint64 // rb->wakeup: bumped on each reason to wake the reader
	events    uint32 // rb->events: samples since the last wakeup_events wakeup
	watermark uint64 // rb->watermark
	idSize    int
	lostBuf   []byte
}

// NewWriter returns a Writer over mem, the whole mirror mapping. It continues from the
// data_head already in the header (0 for a fresh page), and stores data_offset and
// data_size in the header when they were zero.
func NewWriter(mem []byte, opts WriterOptions) (*Writer, error) {
	rg, off, err := newRing(mem, opts.PageSize)
	if err != nil {
		return nil, fmt.Errorf("open ring writer: %w", err)
	}
	if bo.Uint64(mem[OffDataOffset:]) == 0 && bo.Uint64(mem[OffDataSize:]) == 0 {
		bo.PutUint64(mem[OffDataOffset:], off)
		bo.PutUint64(mem[OffDataSize:], uint64(len(rg.data)))
	}
	w := &Writer{ring: rg, opts: opts, idSize: opts.Format.IDTrailerSize()}
	w.head = loadHeadAcquire(w.ring.head) // only the producer writes data_head: no pairing needed
	// A resumed writer starts its wakeup base at the current position, as a fresh kernel
	// buffer starts both at 0, so resuming does not look like a watermark crossing.
	w.wakeup = w.head
	if opts.Backward {
		w.wakeup = -w.head
	}
	// ring_buffer_init: watermark = min(data size, wakeup_watermark) when set, else half.
	size := uint64(len(rg.data))
	if opts.Watermark && opts.WakeupWatermark != 0 {
		w.watermark = min(size, uint64(opts.WakeupWatermark))
	}
	if w.watermark == 0 {
		w.watermark = size / 2
	}
	w.lostBuf = make([]byte, 24+w.idSize)
	return w, nil
}

// DataSize is the size of the data area in bytes.
func (w *Writer) DataSize() int { return len(w.data) }

// Lost returns how many records were dropped and not yet reported by a LOST record.
func (w *Writer) Lost() uint64 { return w.lost }

// Head returns the writer's data_head.
func (w *Writer) Head() uint64 { return w.head }

// SetPaused is PERF_EVENT_IOC_PAUSE_OUTPUT: while paused every record is dropped and
// counted as lost.
func (w *Writer) SetPaused(p bool) { w.paused = p }

// Write appends one record (header included; rec's header size must equal len(rec)).
// When records were lost before, a LOST record is written first, in the same
// reservation. written is false when the record was dropped for lack of space (or while
// paused) and is now counted as lost; wake is true when the kernel would wake the reader
// now (the caller signals poll waiters). An error means rec is malformed; nothing changed.
func (w *Writer) Write(rec []byte) (written, wake bool, err error) {
	if len(rec) < HeaderSize {
		return false, false, fmt.Errorf("write record: %d bytes, less than a header: %w", len(rec), ErrTruncated)
	}
	if int(bo.Uint16(rec[6:])) != len(rec) {
		return false, false, fmt.Errorf("write record: header size %d but %d bytes given: %w", bo.Uint16(rec[6:]), len(rec), ErrCorrupt)
	}
	if w.paused {
		w.lost++
		return false, false, nil
	}
	size := uint64(len(rec))
	haveLost := w.lost != 0
	var lostRec []byte
	if haveLost {
		lostRec = w.lostRecord(rec)
		size += uint64(len(lostRec))
	}
	wakeBefore := w.wakeup          // perf_output_get_handle: handle->wakeup = rb->wakeup
	tail := loadTailAcquire(w.tail) // A: pairs with the reader's D
	if !w.opts.Overwrite && !w.hasSpace(w.head, tail, size) {
		w.lost++ // fail: local_inc(&rb->lost)
		return false, false, nil
	}
	var offset, pub uint64
	if !w.opts.Backward {
		offset = w.head
		w.head += size
		pub = w.head
	} else {
		w.head -= size
		offset = w.head
		pub = -w.head
	}
	if pub-w.wakeup > w.watermark {
		w.wakeup += w.watermark
	}
	if haveLost {
		w.copyIn(offset, lostRec)
		offset += uint64(len(lostRec))
		w.lost = 0
	}
	w.copyIn(offset, rec)
	if RecordType(bo.Uint32(rec)) == RecordSample && !w.opts.Watermark && w.opts.WakeupEvents != 0 {
		// perf_output_sample: every wakeup_events samples is one more reason to wake.
		w.events++
		if w.events >= w.opts.WakeupEvents {
			w.events -= w.opts.WakeupEvents
			w.wakeup++
		}
	}
	storeHeadRelease(w.ring.head, w.head) // B: pairs with the reader's C
	return true, w.wakeup != wakeBefore, nil
}

// hasSpace is ring_buffer_has_space: CIRC_SPACE keeps one byte free so that head == tail
// always means empty.
func (w *Writer) hasSpace(head, tail, size uint64) bool {
	if !w.opts.Backward {
		return (tail-(head+1))&w.mask >= size
	}
	return (head-(tail+1))&w.mask >= size
}

// lostRecord builds the PERF_RECORD_LOST that precedes rec: id and sample_id trailer of
// the event writing rec, as perf_event_header__init_id fills them from the same sample
// data.
func (w *Writer) lostRecord(rec []byte) []byte {
	b := w.lostBuf
	clear(b)
	bo.PutUint32(b[0:], uint32(RecordLost))
	bo.PutUint16(b[4:], 0)
	bo.PutUint16(b[6:], uint16(len(b)))
	sid, ok := idOf(rec, &w.opts.Format)
	id := w.opts.EventID
	if ok {
		switch st := w.opts.Format.SampleType; {
		case st&SampleID != 0:
			id = sid.ID
		case st&SampleIdentifier != 0:
			id = sid.Identifier
		}
	}
	bo.PutUint64(b[8:], id)
	bo.PutUint64(b[16:], w.lost)
	if w.idSize > 0 {
		// Appending to the zero-length slice at b[24:] fills lostBuf in place: its
		// capacity is exactly the trailer size.
		putSampleID(b[24:24], &w.opts.Format, &sid)
	}
	return b
}
