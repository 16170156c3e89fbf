package ringbuf

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/bayesperf/bayesperf/perfabi"
)

// cursor reads little-endian fields from a record body. The first failure sticks: later
// reads return zero values and the error names the first field that did not fit.
type cursor struct {
	b   []byte // the whole record, header included, so offsets are record offsets
	off int
	end int // reads stop here (the start of the sample_id_all trailer)
	typ RecordType
	err error
}

func (c *cursor) fail(field string, err error) {
	if c.err == nil {
		c.err = &DecodeError{Record: c.typ, Field: field, Offset: c.off, Err: err}
	}
}

func (c *cursor) need(n int, field string) bool {
	if c.err != nil {
		return false
	}
	if n < 0 || n > c.end-c.off {
		c.fail(field, fmt.Errorf("need %d bytes, %d left: %w", n, c.end-c.off, ErrTruncated))
		return false
	}
	return true
}

func (c *cursor) u64(field string) uint64 {
	if !c.need(8, field) {
		return 0
	}
	v := bo.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *cursor) u32(field string) uint32 {
	if !c.need(4, field) {
		return 0
	}
	v := bo.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

func (c *cursor) u16(field string) uint16 {
	if !c.need(2, field) {
		return 0
	}
	v := bo.Uint16(c.b[c.off:])
	c.off += 2
	return v
}

// bytes returns n bytes aliasing the record (nil when n is 0).
func (c *cursor) bytes(n uint64, field string) []byte {
	if n > uint64(c.end-c.off) {
		c.need(c.end-c.off+1, field) // records the truncation
		return nil
	}
	if !c.need(int(n), field) || n == 0 {
		return nil
	}
	v := c.b[c.off : c.off+int(n) : c.off+int(n)]
	c.off += int(n)
	return v
}

// count reads a u64 element count and checks that count*elemSize bytes remain, so a
// hostile count cannot make the decoder allocate.
func (c *cursor) count(elemSize int, field string) int {
	n := c.u64(field)
	if c.err != nil {
		return 0
	}
	if n > uint64(c.end-c.off)/uint64(elemSize) {
		c.off -= 8
		c.fail(field, fmt.Errorf("count %d of %d-byte entries exceeds the %d bytes left: %w", n, elemSize, c.end-c.off-8, ErrTruncated))
		return 0
	}
	return int(n)
}

func (c *cursor) u64s(dst []uint64, n int, field string) []uint64 {
	if n == 0 || !c.need(8*n, field) {
		return dst[:0]
	}
	dst = grow(dst, n)
	for i := range dst {
		dst[i] = bo.Uint64(c.b[c.off:])
		c.off += 8
	}
	return dst
}

// str reads a NUL-terminated string padded with NULs to a multiple of 8 that fills the
// rest of the body: the layout the kernel always produces.
func (c *cursor) str(field string) string {
	if c.err != nil {
		return ""
	}
	region := c.b[c.off:c.end]
	n := bytes.IndexByte(region, 0)
	if n < 0 {
		c.fail(field, fmt.Errorf("no NUL terminator in %d bytes: %w", len(region), ErrCorrupt))
		return ""
	}
	if want := align8(n + 1); want != len(region) {
		c.fail(field, fmt.Errorf("string of %d bytes occupies %d bytes, want %d: %w", n, len(region), want, ErrCorrupt))
		return ""
	}
	c.off = c.end
	return string(region[:n])
}

// done checks that the body was consumed exactly.
func (c *cursor) done() error {
	if c.err == nil && c.off != c.end {
		c.fail("end", fmt.Errorf("%d unexpected bytes before the end of the body: %w", c.end-c.off, ErrCorrupt))
	}
	return c.err
}

func align8(n int) int { return (n + 7) &^ 7 }

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// Decode decodes one record, header included, laid out per f. len(rec) may exceed the
// header's size; the excess is ignored. Byte slices in the result alias rec.
func Decode(rec []byte, f *Format) (Record, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return nil, err
	}
	if int(h.Size) < HeaderSize {
		return nil, &DecodeError{Record: h.Type, Field: "header.size", Offset: 6, Err: fmt.Errorf("size %d: %w", h.Size, ErrCorrupt)}
	}
	if int(h.Size) > len(rec) {
		return nil, &DecodeError{Record: h.Type, Field: "header.size", Offset: 6, Err: fmt.Errorf("size %d but %d bytes: %w", h.Size, len(rec), ErrTruncated)}
	}
	rec = rec[:h.Size:h.Size]
	if h.Type == RecordSample {
		s := new(Sample)
		if err := decodeSample(rec, f, s, true); err != nil {
			return nil, err
		}
		return s, nil
	}
	if !known(h.Type) {
		return &Unknown{Header: h, Body: body(rec)}, nil
	}
	c := cursor{b: rec, off: HeaderSize, end: len(rec), typ: h.Type}
	var cm Common
	cm.Misc = h.Misc
	if idSize := f.IDTrailerSize(); idSize > 0 {
		if len(rec)-HeaderSize < idSize {
			return nil, &DecodeError{Record: h.Type, Field: "sample_id", Offset: HeaderSize,
				Err: fmt.Errorf("body of %d bytes is shorter than the %d-byte sample_id trailer: %w", len(rec)-HeaderSize, idSize, ErrTruncated)}
		}
		c.end = len(rec) - idSize
		cm.ID = parseSampleID(rec[c.end:], f)
	}
	r := decodeBody(&c, h, cm, f)
	if err := c.done(); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeBody decodes the fields of a record of a known type other than a sample, from
// c, which spans the body without its sample_id trailer (cm's ID).
func decodeBody(c *cursor, h Header, cm Common, f *Format) Record {
	var r Record
	switch h.Type {
	case RecordMmap:
		m := &Mmap{Common: cm}
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		m.Addr, m.Len, m.Pgoff = c.u64("addr"), c.u64("len"), c.u64("pgoff")
		m.Filename = c.str("filename")
		r = m
	case RecordLost:
		r = &Lost{Common: cm, EventID: c.u64("id"), Lost: c.u64("lost")}
	case RecordComm:
		m := &Comm{Common: cm}
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		m.Comm = c.str("comm")
		r = m
	case RecordExit, RecordFork:
		m := &Exit{Common: cm, IsFork: h.Type == RecordFork}
		m.Pid, m.Ppid, m.Tid, m.Ptid = c.u32("pid"), c.u32("ppid"), c.u32("tid"), c.u32("ptid")
		m.Time = c.u64("time")
		r = m
	case RecordThrottle, RecordUnthrottle:
		r = &Throttle{Common: cm, Unthrottle: h.Type == RecordUnthrottle, Time: c.u64("time"), EventID: c.u64("id"), StreamID: c.u64("stream_id")}
	case RecordRead:
		m := &Read{Common: cm}
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		decodeReadValues(c, f.ReadFormat, &m.Values)
		r = m
	case RecordMmap2:
		r = decodeMmap2(c, h, cm)
	case RecordAux:
		r = &Aux{Common: cm, AuxOffset: c.u64("aux_offset"), AuxSize: c.u64("aux_size"), Flags: c.u64("flags")}
	case RecordItraceStart:
		m := &ItraceStart{Common: cm}
		m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
		r = m
	case RecordLostSamples:
		r = &LostSamples{Common: cm, Lost: c.u64("lost")}
	case RecordSwitch:
		r = &Switch{Common: cm}
	case RecordSwitchCPUWide:
		m := &SwitchCPUWide{Common: cm}
		m.NextPrevPid, m.NextPrevTid = c.u32("next_prev_pid"), c.u32("next_prev_tid")
		r = m
	case RecordNamespaces:
		r = decodeNamespaces(c, cm)
	case RecordKsymbol:
		m := &Ksymbol{Common: cm}
		m.Addr, m.Len = c.u64("addr"), c.u32("len")
		m.KsymType, m.Flags = c.u16("ksym_type"), c.u16("flags")
		m.Name = c.str("name")
		r = m
	case RecordBPFEvent:
		m := &BPFEvent{Common: cm}
		m.EventType, m.Flags, m.ProgID = c.u16("type"), c.u16("flags"), c.u32("id")
		copy(m.Tag[:], c.bytes(8, "tag"))
		r = m
	case RecordCgroup:
		m := &Cgroup{Common: cm, CgroupID: c.u64("id")}
		m.Path = c.str("path")
		r = m
	case RecordTextPoke:
		r = decodeTextPoke(c, cm)
	case RecordAuxOutputHWID:
		r = &AuxOutputHWID{Common: cm, HWID: c.u64("hw_id")}
	case RecordCallchainDeferred:
		m := &CallchainDeferred{Common: cm, Cookie: c.u64("cookie")}
		m.IPs = c.u64s(nil, c.count(8, "nr"), "ips")
		if len(m.IPs) == 0 {
			m.IPs = nil
		}
		r = m
	}
	return r
}

func decodeMmap2(c *cursor, h Header, cm Common) *Mmap2 {
	m := &Mmap2{Common: cm}
	m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
	m.Addr, m.Len, m.Pgoff = c.u64("addr"), c.u64("len"), c.u64("pgoff")
	if h.Misc&MiscMmapBuildID != 0 {
		start := c.off
		if c.need(24, "build_id") {
			n := int(c.b[c.off])
			if n > 20 {
				c.fail("build_id_size", fmt.Errorf("build id of %d bytes, at most 20: %w", n, ErrCorrupt))
			} else if !allZero(c.b[c.off+1:c.off+4]) || !allZero(c.b[c.off+4+n:c.off+24]) {
				c.fail("build_id", fmt.Errorf("non-zero reserved or padding bytes: %w", ErrCorrupt))
			} else {
				if n > 0 {
					m.BuildID = c.b[c.off+4 : c.off+4+n : c.off+4+n]
				}
				c.off = start + 24
			}
		}
	} else {
		m.Maj, m.Min = c.u32("maj"), c.u32("min")
		m.Ino, m.InoGeneration = c.u64("ino"), c.u64("ino_generation")
	}
	m.Prot, m.Flags = c.u32("prot"), c.u32("flags")
	m.Filename = c.str("filename")
	return m
}

func decodeNamespaces(c *cursor, cm Common) *Namespaces {
	m := &Namespaces{Common: cm}
	m.Pid, m.Tid = c.u32("pid"), c.u32("tid")
	n := c.count(16, "nr_namespaces")
	if n > 0 {
		m.Namespaces = make([]NamespaceLink, n)
		for i := range m.Namespaces {
			m.Namespaces[i] = NamespaceLink{Dev: c.u64("link_info.dev"), Inode: c.u64("link_info.ino")}
		}
	}
	return m
}

// decodeTextPoke checks the padding too: the kernel pads old+new bytes with zeros to a
// multiple of 8.
func decodeTextPoke(c *cursor, cm Common) *TextPoke {
	m := &TextPoke{Common: cm, Addr: c.u64("addr")}
	oldLen, newLen := c.u16("old_len"), c.u16("new_len")
	m.Old = c.bytes(uint64(oldLen), "bytes(old)")
	m.New = c.bytes(uint64(newLen), "bytes(new)")
	pad := align8(4+int(oldLen)+int(newLen)) - (4 + int(oldLen) + int(newLen))
	if p := c.bytes(uint64(pad), "padding"); c.err == nil && !allZero(p) {
		c.fail("padding", fmt.Errorf("non-zero padding: %w", ErrCorrupt))
	}
	return m
}

// DecodeRaw splits one record into header and body without interpreting the body.
func DecodeRaw(rec []byte) (*Unknown, error) {
	h, err := ParseHeader(rec)
	if err != nil {
		return nil, err
	}
	if int(h.Size) < HeaderSize || int(h.Size) > len(rec) {
		return nil, &DecodeError{Record: h.Type, Field: "header.size", Offset: 6, Err: fmt.Errorf("size %d with %d bytes: %w", h.Size, len(rec), ErrTruncated)}
	}
	return &Unknown{Header: h, Body: body(rec[:h.Size:h.Size])}, nil
}

// body returns the bytes after the header, nil when there are none.
func body(rec []byte) []byte {
	if len(rec) == HeaderSize {
		return nil
	}
	return rec[HeaderSize:]
}

func known(t RecordType) bool { return t >= RecordMmap && t <= RecordCallchainDeferred }

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// parseSampleID decodes a sample_id_all trailer; b has exactly IDTrailerSize bytes.
func parseSampleID(b []byte, f *Format) IDFields {
	var s IDFields
	st := f.SampleType
	i := 0
	if st&SampleTID != 0 {
		s.Pid, s.Tid = bo.Uint32(b[i:]), bo.Uint32(b[i+4:])
		i += 8
	}
	if st&SampleTime != 0 {
		s.Time = bo.Uint64(b[i:])
		i += 8
	}
	if st&SampleID != 0 {
		s.ID = bo.Uint64(b[i:])
		i += 8
	}
	if st&SampleStreamID != 0 {
		s.StreamID = bo.Uint64(b[i:])
		i += 8
	}
	if st&SampleCPU != 0 {
		s.CPU, s.Res = bo.Uint32(b[i:]), bo.Uint32(b[i+4:])
		i += 8
	}
	if st&SampleIdentifier != 0 {
		s.Identifier = bo.Uint64(b[i:])
	}
	return s
}

// idOf returns the sample_id fields of rec as the kernel would put them in a LOST
// record written just before rec: for a SAMPLE from its leading fields, else from its
// trailer. ok is false when rec does not carry them.
func idOf(rec []byte, f *Format) (IDFields, bool) {
	var s IDFields
	if len(rec) < HeaderSize {
		return s, false
	}
	if RecordType(bo.Uint32(rec)) != RecordSample {
		n := f.IDTrailerSize()
		if n == 0 || len(rec)-HeaderSize < n {
			return s, false
		}
		return parseSampleID(rec[len(rec)-n:], f), true
	}
	c := cursor{b: rec, off: HeaderSize, end: len(rec), typ: RecordSample}
	st := f.SampleType
	if st&SampleIdentifier != 0 {
		s.Identifier = c.u64("identifier")
	}
	if st&SampleIP != 0 {
		c.u64("ip")
	}
	if st&SampleTID != 0 {
		s.Pid, s.Tid = c.u32("pid"), c.u32("tid")
	}
	if st&SampleTime != 0 {
		s.Time = c.u64("time")
	}
	if st&SampleAddr != 0 {
		c.u64("addr")
	}
	if st&SampleID != 0 {
		s.ID = c.u64("id")
	}
	if st&SampleStreamID != 0 {
		s.StreamID = c.u64("stream_id")
	}
	if st&SampleCPU != 0 {
		s.CPU, s.Res = c.u32("cpu"), c.u32("res")
	}
	return s, c.err == nil
}

// decodeReadValues decodes a struct read_format per rf into v, reusing v.Values; the
// layout is perfabi.DecodeRead's, its errors become the cursor's.
func decodeReadValues(c *cursor, rf ReadFormat, v *ReadValues) {
	*v = ReadValues{Values: v.Values[:0]}
	if c.err != nil {
		return
	}
	r := perfabi.Read{Values: v.Values}
	n, err := perfabi.DecodeRead(c.b[c.off:c.end], uint64(rf), &r)
	v.TimeEnabled, v.TimeRunning, v.Values = r.Enabled, r.Running, r.Values
	if err != nil {
		var re *perfabi.ReadError
		if !errors.As(err, &re) {
			c.fail("read_format", err)
			return
		}
		c.off += re.Offset
		if re.Members != 0 {
			c.fail("read_format.nr", fmt.Errorf("%d values of %d bytes exceed the %d bytes left: %w", re.Members, re.Per, re.Left, ErrTruncated))
		} else {
			c.fail("read_format."+re.Field, fmt.Errorf("need %d bytes, %d left: %w", 8, re.Left, ErrTruncated))
		}
		return
	}
	c.off += n
}

// Identifier returns the PERF_SAMPLE_IDENTIFIER value of rec without decoding it, for
// rings shared by several events (PERF_EVENT_IOC_SET_OUTPUT) whose records must be matched
// to their event's Format first. It requires that every event writing the ring has
// SampleIdentifier in its sample_type and, for non-SAMPLE records, sample_id_all: then the
// id is the first body word of a SAMPLE and the last word of any other record. ok is
// false for records too short to hold it.
func Identifier(rec []byte) (id uint64, ok bool) {
	if len(rec) < HeaderSize {
		return 0, false
	}
	size := int(bo.Uint16(rec[6:]))
	if size < HeaderSize+8 || size > len(rec) {
		return 0, false
	}
	if RecordType(bo.Uint32(rec)) == RecordSample {
		return bo.Uint64(rec[HeaderSize:]), true
	}
	return bo.Uint64(rec[size-8:]), true
}
