package sidecar

import (
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/ringbuf"
	"github.com/bayesperf/bayesperf/shim"
)

// mirrorRing is the sampling mirror of one event: the sidecar reads the kernel's ring
// (mapped from its copy of the fd) and writes the same records into a ring of the same
// size in a memfd that the tool has mapped in place of the kernel's.
//
// Backpressure: a record is taken from the kernel's ring only when it fits in the mirror
// (one record may wait in held), so when the tool does not keep up the kernel's ring
// fills and the kernel itself drops records and writes PERF_RECORD_LOST, which reaches
// the tool like any other record. A mirror mapped read-only (only backward rings are:
// a read-only forward ring is left to the kernel) is in overwrite mode, like
// the kernel's.
//
// Fields are used under the pub lock of the event's client only.
type mirrorRing struct {
	kmem, mmem []byte
	rd         *ringbuf.Reader
	wr         *ringbuf.Writer
	tail       *uint64 // data_tail of the mirror, stored by the tool
	mask       uint64
	overwrite  bool
	backward   bool // write_backward: copied only while the tool has the ring paused
	held       []byte
	batch      [][]byte // backward: records of one batch, newest first
	heldBuf    []byte
}

// newMirrorRing maps the kernel's ring of e and creates its mirror; it returns the
// mirror's memfd for the tool. An error carries the errno the shim reports (it then maps
// the kernel's ring itself, and gets the kernel's own answer).
func newMirrorRing(e *event, m shim.Map) (*mirrorRing, int, error) {
	page := uint64(os.Getpagesize())
	n := m.Length / page
	switch {
	case e.info.Attr.Flags&perfabi.FlagWriteBackward != 0 && m.Prot&unix.PROT_WRITE != 0:
		return nil, -1, fmt.Errorf("mirror a writable backward ring: %w", unix.EOPNOTSUPP)
	case e.info.Attr.Flags&perfabi.FlagWriteBackward == 0 && m.Prot&unix.PROT_WRITE == 0:
		// A forward ring mapped read-only is in overwrite mode: it has no data_tail to
		// give space back with (the Reader's Commit would store into a read-only
		// mapping and kill the sidecar), and the kernel may overwrite records while
		// they are copied. The shim maps the kernel's ring, which is exact.
		return nil, -1, fmt.Errorf("mirror a read-only forward ring: %w", unix.EOPNOTSUPP)
	case m.Length%page != 0 || n < 2 || (n-1)&(n-2) != 0 || m.Length > 1<<30:
		return nil, -1, fmt.Errorf("mirror a ring of %d bytes: not a header page plus 2^n data pages: %w", m.Length, unix.EINVAL)
	}
	writable := m.Prot&unix.PROT_WRITE != 0
	prot := unix.PROT_READ
	if writable {
		prot |= unix.PROT_WRITE
	}
	kmem, err := unix.Mmap(e.fd, 0, int(m.Length), prot, unix.MAP_SHARED)
	if err != nil {
		return nil, -1, fmt.Errorf("map the kernel's ring: %w", err)
	}
	fail := func(err error) (*mirrorRing, int, error) {
		unix.Munmap(kmem)
		return nil, -1, err
	}
	fd, err := unix.MemfdCreate("bayesperf-ring", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return fail(fmt.Errorf("create ring memfd: %w", err))
	}
	if err := unix.Ftruncate(fd, int64(m.Length)); err != nil {
		unix.Close(fd)
		return fail(fmt.Errorf("size ring memfd: %w", err))
	}
	mmem, err := unix.Mmap(fd, 0, int(m.Length), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return fail(fmt.Errorf("map ring memfd: %w", err))
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Munmap(mmem)
		unix.Close(fd)
		return fail(fmt.Errorf("seal ring memfd: %w", err))
	}
	r, err := newMirrorRingMem(kmem, mmem, e.info.Attr, writable)
	if err != nil {
		unix.Munmap(mmem)
		unix.Close(fd)
		return fail(fmt.Errorf("set up mirror ring: %w: %w", err, unix.EINVAL))
	}
	return r, fd, nil
}

// newMirrorRingMem sets up the pump between a kernel ring kmem and a fresh mirror mmem
// of the same size (plain memory in tests).
func newMirrorRingMem(kmem, mmem []byte, a shim.Attr, writable bool) (*mirrorRing, error) {
	// The mirror's header is the kernel's, but with no counter to read with rdpmc:
	// self-monitoring readers fall back to read(), which the shim serves.
	mp, err := ringbuf.ReadMetaPage(kmem)
	if err == nil {
		mp.Lock, mp.Index, mp.Offset = 0, 0, 0
		mp.Capabilities &^= ringbuf.CapUserRdpmc
		mp.DataHead, mp.DataTail = 0, 0
		err = ringbuf.WriteMetaPage(mmem, mp)
	}
	var rd *ringbuf.Reader
	var wr *ringbuf.Writer
	backward := a.Flags&perfabi.FlagWriteBackward != 0
	if err == nil {
		rd, err = ringbuf.NewReader(kmem, ringbuf.ReaderOptions{Backward: backward})
	}
	if err == nil {
		wr, err = ringbuf.NewWriter(mmem, ringbuf.WriterOptions{
			Backward:        backward,
			Overwrite:       !writable,
			Watermark:       a.Flags&perfabi.FlagWatermark != 0,
			WakeupWatermark: a.WakeupEvents,
			WakeupEvents:    a.WakeupEvents,
			Format: ringbuf.Format{
				SampleType:  ringbuf.SampleType(a.SampleType),
				ReadFormat:  ringbuf.ReadFormat(a.ReadFormat),
				SampleIDAll: a.Flags&perfabi.FlagSampleIDAll != 0,
			},
		})
	}
	if err != nil {
		return nil, err
	}
	return &mirrorRing{
		kmem: kmem, mmem: mmem, rd: rd, wr: wr,
		tail:      (*uint64)(unsafe.Pointer(&mmem[ringbuf.OffDataTail])),
		mask:      uint64(wr.DataSize() - 1),
		overwrite: !writable,
		backward:  backward,
	}, nil
}

func (r *mirrorRing) close() {
	unix.Munmap(r.kmem)
	unix.Munmap(r.mmem)
}

// fits reports whether size more bytes fit in the mirror now (ring_buffer_has_space).
func (r *mirrorRing) fits(size int) bool {
	tail := atomic.LoadUint64(r.tail) // pairs with the tool's store-release of data_tail
	return (tail-(r.wr.Head()+1))&r.mask >= uint64(size)
}

// pumpBackward copies the records the kernel wrote backward since the last batch. The
// kernel's ring must be paused (the tool paused it): a backward ring has no data_tail to
// stop the kernel from overwriting the records being copied. The Reader hands them out
// newest first; writing them oldest first with a backward Writer lays them out as the
// kernel did.
func (r *mirrorRing) pumpBackward() (moved, lost uint64) {
	r.batch = r.batch[:0]
	for {
		rec, err := r.rd.Next()
		if err != nil {
			r.rd.Discard()
			return 0, 0
		}
		if rec == nil {
			break
		}
		r.batch = append(r.batch, append([]byte(nil), rec...))
	}
	r.rd.Commit()
	for i := len(r.batch) - 1; i >= 0; i-- {
		rec := r.batch[i]
		if written, _, err := r.wr.Write(rec); err != nil || !written {
			continue
		}
		moved++
		if h, err := ringbuf.ParseHeader(rec); err == nil && h.Type == ringbuf.RecordLost && len(rec) >= 24 {
			lost += perfabi.ByteOrder.Uint64(rec[16:])
		}
	}
	return moved, lost
}

// pump moves every record that fits from the kernel's ring to the mirror and returns how
// many records it moved and how many losses the LOST records among them reported.
func (r *mirrorRing) pump() (moved, lost uint64) {
	for {
		rec := r.held
		if rec == nil {
			k, err := r.rd.Next()
			if err != nil {
				// The kernel's ring cannot be inconsistent; if it ever is, skip to its
				// head rather than stall the tool.
				r.rd.Discard()
				break
			}
			if k == nil {
				break
			}
			rec = k
		}
		if !r.overwrite && !r.fits(len(rec)) {
			if r.held == nil {
				r.heldBuf = append(r.heldBuf[:0], rec...)
				r.held = r.heldBuf
			}
			break
		}
		written, _, err := r.wr.Write(rec)
		r.held = nil
		// Give the record's kernel space back at once: if the sidecar dies now, the shim
		// (which pumps from then on) neither misses nor repeats it, but for the few
		// instructions between the mirror's data_head store and this one.
		r.rd.Commit()
		if err != nil || !written {
			continue
		}
		moved++
		if h, err := ringbuf.ParseHeader(rec); err == nil && h.Type == ringbuf.RecordLost && len(rec) >= 24 {
			lost += perfabi.ByteOrder.Uint64(rec[16:])
		}
	}
	r.rd.Commit()
	return moved, lost
}
