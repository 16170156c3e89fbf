package ringbuf

import (
	"fmt"
	"os"
)

// ring is the part shared by Reader and Writer: the header words and the data area of
// a caller-provided mapping, validated once.
type ring struct {
	head *uint64 // &data_head in the header page
	tail *uint64 // &data_tail in the header page
	data []byte  // the data area, len a power of two
	mask uint64  // len(data) - 1
}

// layout locates the data area of mem. The kernel fills data_offset and data_size
// (since 4.1); when both are zero (a fresh mirror page) the data area is assumed to
// start after the first page of pageSize bytes (os.Getpagesize when 0) and to fill the rest.
func layout(mem []byte, pageSize int) (off, size uint64, err error) {
	if len(mem) < MetaPageSize {
		return 0, 0, fmt.Errorf("locate data area: mapping of %d bytes is smaller than the %d-byte header page: %w", len(mem), MetaPageSize, ErrTruncated)
	}
	if !aligned8(mem) {
		return 0, 0, fmt.Errorf("locate data area: mapping is not 8-byte aligned: %w", ErrCorrupt)
	}
	off, size = bo.Uint64(mem[OffDataOffset:]), bo.Uint64(mem[OffDataSize:])
	if off == 0 && size == 0 {
		if pageSize <= 0 {
			pageSize = os.Getpagesize()
		}
		if len(mem) <= pageSize {
			return 0, 0, fmt.Errorf("locate data area: mapping of %d bytes has no data pages after the %d-byte header page: %w", len(mem), pageSize, ErrTruncated)
		}
		off, size = uint64(pageSize), uint64(len(mem)-pageSize)
	}
	switch {
	case off < MetaPageSize || off%8 != 0:
		return 0, 0, fmt.Errorf("locate data area: data_offset %d overlaps the header or is misaligned: %w", off, ErrCorrupt)
	case size < HeaderSize || size&(size-1) != 0:
		return 0, 0, fmt.Errorf("locate data area: data_size %d is not a power of two of at least %d: %w", size, HeaderSize, ErrCorrupt)
	case off > uint64(len(mem)) || size > uint64(len(mem))-off:
		return 0, 0, fmt.Errorf("locate data area: data_offset %d + data_size %d exceed the %d-byte mapping: %w", off, size, len(mem), ErrTruncated)
	}
	return off, size, nil
}

func newRing(mem []byte, pageSize int) (ring, uint64, error) {
	off, size, err := layout(mem, pageSize)
	if err != nil {
		return ring{}, 0, err
	}
	return ring{
		head: word(mem, OffDataHead),
		tail: word(mem, OffDataTail),
		data: mem[off : off+size : off+size],
		mask: size - 1,
	}, off, nil
}

// copyOut copies len(dst) bytes starting at ring position pos, wrapping at the end.
func (r *ring) copyOut(dst []byte, pos uint64) {
	i := pos & r.mask
	n := copy(dst, r.data[i:])
	copy(dst[n:], r.data)
}

// copyIn copies src into the ring starting at position pos, wrapping at the end.
func (r *ring) copyIn(pos uint64, src []byte) {
	i := pos & r.mask
	n := copy(r.data[i:], src)
	copy(r.data, src[n:])
}

// view returns n bytes at position pos: a slice of the ring when they are contiguous,
// else a copy in *scratch (grown as needed).
func (r *ring) view(pos uint64, n int, scratch *[]byte) []byte {
	i := pos & r.mask
	if i+uint64(n) <= uint64(len(r.data)) {
		return r.data[i : i+uint64(n) : i+uint64(n)]
	}
	if cap(*scratch) < n {
		*scratch = make([]byte, n, max(n, 2*cap(*scratch)))
	}
	b := (*scratch)[:n]
	r.copyOut(b, pos)
	return b
}
