package ringbuf

import (
	"fmt"
	"strings"

	"github.com/bayesperf/bayesperf/perfabi"
)

// withCommon is a record type with a Common part: all but Sample and Unknown.
type withCommon interface{ common() *Common }

func (c *Common) common() *Common { return c }

// Append encodes r per f after dst, header included, and returns the extended slice.
// Non-SAMPLE records get the sample_id_all trailer when f.SampleIDAll is set. On error
// dst is returned unchanged (in length). It is long because it is one case per record
// type, each the mirror of Decode's, so that the two can be read side by side.
func Append(dst []byte, r Record, f *Format) ([]byte, error) {
	start := len(dst)
	switch r := r.(type) {
	case nil:
		return dst, fmt.Errorf("encode record: unsupported Go type %T: %w", r, ErrCorrupt)
	case *Sample:
		return appendSample(dst, r, f)
	case *Unknown:
		if HeaderSize+len(r.Body) > 0xffff {
			return dst, fmt.Errorf("encode %v record: %d-byte body: %w", r.Header.Type, len(r.Body), ErrNoSpace)
		}
		dst = appendHeader(dst, r.Header.Type, r.Header.Misc)
		return finishRecord(append(dst, r.Body...), start)
	}
	// Every other record has a Common part: the header here, the body by type, then
	// the sample_id_all trailer.
	dst = appendHeader(dst, r.Type(), r.HeaderMisc())
	switch r := r.(type) {
	case *Mmap:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Tid)
		dst = bo.AppendUint64(bo.AppendUint64(bo.AppendUint64(dst, r.Addr), r.Len), r.Pgoff)
		dst = appendString(dst, r.Filename)
	case *Lost:
		dst = bo.AppendUint64(bo.AppendUint64(dst, r.EventID), r.Lost)
	case *Comm:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Tid)
		dst = appendString(dst, r.Comm)
	case *Exit:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Ppid)
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Tid), r.Ptid)
		dst = bo.AppendUint64(dst, r.Time)
	case *Throttle:
		dst = bo.AppendUint64(bo.AppendUint64(bo.AppendUint64(dst, r.Time), r.EventID), r.StreamID)
	case *Read:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Tid)
		var err error
		if dst, err = appendReadValues(dst, &r.Values, f.ReadFormat); err != nil {
			return dst[:start], err
		}
	case *Mmap2:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Tid)
		dst = bo.AppendUint64(bo.AppendUint64(bo.AppendUint64(dst, r.Addr), r.Len), r.Pgoff)
		if r.Misc&MiscMmapBuildID != 0 {
			if len(r.BuildID) > 20 {
				return dst[:start], fmt.Errorf("encode MMAP2 record: build id of %d bytes, at most 20: %w", len(r.BuildID), ErrCorrupt)
			}
			var u [24]byte
			u[0] = byte(len(r.BuildID))
			copy(u[4:], r.BuildID)
			dst = append(dst, u[:]...)
		} else {
			if len(r.BuildID) != 0 {
				return dst[:start], fmt.Errorf("encode MMAP2 record: build id without MiscMmapBuildID: %w", ErrCorrupt)
			}
			dst = bo.AppendUint32(bo.AppendUint32(dst, r.Maj), r.Min)
			dst = bo.AppendUint64(bo.AppendUint64(dst, r.Ino), r.InoGeneration)
		}
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Prot), r.Flags)
		dst = appendString(dst, r.Filename)
	case *Aux:
		dst = bo.AppendUint64(bo.AppendUint64(bo.AppendUint64(dst, r.AuxOffset), r.AuxSize), r.Flags)
	case *ItraceStart:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Tid)
	case *LostSamples:
		dst = bo.AppendUint64(dst, r.Lost)
	case *Switch:
	case *SwitchCPUWide:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.NextPrevPid), r.NextPrevTid)
	case *Namespaces:
		dst = bo.AppendUint32(bo.AppendUint32(dst, r.Pid), r.Tid)
		dst = bo.AppendUint64(dst, uint64(len(r.Namespaces)))
		for _, n := range r.Namespaces {
			dst = bo.AppendUint64(bo.AppendUint64(dst, n.Dev), n.Inode)
		}
	case *Ksymbol:
		dst = bo.AppendUint32(bo.AppendUint64(dst, r.Addr), r.Len)
		dst = bo.AppendUint16(bo.AppendUint16(dst, r.KsymType), r.Flags)
		dst = appendString(dst, r.Name)
	case *BPFEvent:
		dst = bo.AppendUint16(bo.AppendUint16(dst, r.EventType), r.Flags)
		dst = append(bo.AppendUint32(dst, r.ProgID), r.Tag[:]...)
	case *Cgroup:
		dst = appendString(bo.AppendUint64(dst, r.CgroupID), r.Path)
	case *TextPoke:
		if len(r.Old) > 0xffff || len(r.New) > 0xffff {
			return dst[:start], fmt.Errorf("encode TEXT_POKE record: %d old and %d new bytes: %w", len(r.Old), len(r.New), ErrNoSpace)
		}
		dst = bo.AppendUint64(dst, r.Addr)
		dst = bo.AppendUint16(bo.AppendUint16(dst, uint16(len(r.Old))), uint16(len(r.New)))
		dst = append(append(dst, r.Old...), r.New...)
		n := 4 + len(r.Old) + len(r.New)
		dst = append(dst, make([]byte, align8(n)-n)...)
	case *AuxOutputHWID:
		dst = bo.AppendUint64(dst, r.HWID)
	case *CallchainDeferred:
		dst = bo.AppendUint64(bo.AppendUint64(dst, r.Cookie), uint64(len(r.IPs)))
		dst = appendU64s(dst, r.IPs)
	default:
		return dst[:start], fmt.Errorf("encode record: unsupported Go type %T: %w", r, ErrCorrupt)
	}
	if f.SampleIDAll {
		dst = putSampleID(dst, f, &r.(withCommon).common().ID) // every type above embeds Common
	}
	out, err := finishRecord(dst, start)
	if err != nil {
		return dst[:start], err
	}
	return out, nil
}

func appendHeader(dst []byte, t RecordType, misc uint16) []byte {
	dst = bo.AppendUint32(dst, uint32(t))
	dst = bo.AppendUint16(dst, misc)
	return bo.AppendUint16(dst, 0) // size, patched by finishRecord
}

// finishRecord stores the size of the record that starts at dst[start:].
func finishRecord(dst []byte, start int) ([]byte, error) {
	n := len(dst) - start
	if n > 0xffff {
		return dst[:start], fmt.Errorf("encode %v record: %d bytes exceed the 65535-byte header size: %w",
			RecordType(bo.Uint32(dst[start:])), n, ErrNoSpace)
	}
	bo.PutUint16(dst[start+6:], uint16(n))
	return dst, nil
}

func appendU64s(dst []byte, v []uint64) []byte {
	for _, x := range v {
		dst = bo.AppendUint64(dst, x)
	}
	return dst
}

// appendString appends s, a NUL and NUL padding to a multiple of 8. A NUL inside s would
// not survive decoding, so s is cut there (the kernel's strings cannot contain one).
func appendString(dst []byte, s string) []byte {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	dst = append(dst, s...)
	n := align8(len(s) + 1)
	for range n - len(s) {
		dst = append(dst, 0)
	}
	return dst
}

// putSampleID appends the sample_id_all trailer for f.
func putSampleID(dst []byte, f *Format, s *IDFields) []byte {
	st := f.SampleType
	if st&SampleTID != 0 {
		dst = bo.AppendUint32(bo.AppendUint32(dst, s.Pid), s.Tid)
	}
	if st&SampleTime != 0 {
		dst = bo.AppendUint64(dst, s.Time)
	}
	if st&SampleID != 0 {
		dst = bo.AppendUint64(dst, s.ID)
	}
	if st&SampleStreamID != 0 {
		dst = bo.AppendUint64(dst, s.StreamID)
	}
	if st&SampleCPU != 0 {
		dst = bo.AppendUint32(bo.AppendUint32(dst, s.CPU), s.Res)
	}
	if st&SampleIdentifier != 0 {
		dst = bo.AppendUint64(dst, s.Identifier)
	}
	return dst
}

// appendReadValues encodes a struct read_format per rf (perfabi.AppendRead), refusing a
// single-event format with other than one value.
func appendReadValues(dst []byte, v *ReadValues, rf ReadFormat) ([]byte, error) {
	if rf&FormatGroup == 0 && len(v.Values) != 1 {
		return dst, fmt.Errorf("encode read_format: %d values without FormatGroup, want 1: %w", len(v.Values), ErrCorrupt)
	}
	return perfabi.AppendRead(dst, uint64(rf), perfabi.Read{Enabled: v.TimeEnabled, Running: v.TimeRunning, Values: v.Values}), nil
}
