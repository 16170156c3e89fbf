package ringbuf

import (
	"fmt"
	"math/bits"
)

// DecodeSample decodes a PERF_RECORD_SAMPLE (header included) into s, reusing the
// slices s already holds so that a loop over a ring allocates nothing once they have
// grown. Byte slices in s alias rec. On error s holds partial values.
func DecodeSample(rec []byte, f *Format, s *Sample) error {
	h, err := ParseHeader(rec)
	if err != nil {
		return err
	}
	if h.Type != RecordSample {
		return &DecodeError{Record: h.Type, Field: "header.type", Offset: 0, Err: fmt.Errorf("not a SAMPLE: %w", ErrCorrupt)}
	}
	if int(h.Size) < HeaderSize || int(h.Size) > len(rec) {
		return &DecodeError{Record: h.Type, Field: "header.size", Offset: 6, Err: fmt.Errorf("size %d with %d bytes: %w", h.Size, len(rec), ErrTruncated)}
	}
	return decodeSample(rec[:h.Size:h.Size], f, s, false)
}

// decodeSample decodes rec (exactly one SAMPLE record) into s. With fresh, empty slices
// are nil (as in a zero Sample); otherwise s's slices are reused. It is long because it
// reads one field per sample_type bit in the order the kernel writes them
// (perf_output_sample), so that it can be checked against the ABI line by line; it is
// also the hot path of a ring drain (docs/latency.md).
func decodeSample(rec []byte, f *Format, s *Sample, fresh bool) error {
	c := cursor{b: rec, off: HeaderSize, end: len(rec), typ: RecordSample}
	st := f.SampleType
	// Keep only the slices for reuse: copying the whole Sample costs more than decoding
	// a small record.
	keep := struct {
		Callchain, RegsUser, RegsIntr, BranchCounters []uint64
		Branches                                      []BranchEntry
	}{s.Callchain, s.RegsUser, s.RegsIntr, s.BranchCounters, s.Branches}
	values := s.Read.Values
	*s = Sample{Misc: bo.Uint16(rec[4:])}
	if !fresh {
		s.Read.Values = values[:0]
	}
	if st&SampleIdentifier != 0 {
		s.Identifier = c.u64("identifier")
	}
	if st&SampleIP != 0 {
		s.IP = c.u64("ip")
	}
	if st&SampleTID != 0 {
		s.Pid, s.Tid = c.u32("pid"), c.u32("tid")
	}
	if st&SampleTime != 0 {
		s.Time = c.u64("time")
	}
	if st&SampleAddr != 0 {
		s.Addr = c.u64("addr")
	}
	if st&SampleID != 0 {
		s.ID = c.u64("id")
	}
	if st&SampleStreamID != 0 {
		s.StreamID = c.u64("stream_id")
	}
	if st&SampleCPU != 0 {
		s.CPU, s.CPURes = c.u32("cpu"), c.u32("res")
	}
	if st&SamplePeriod != 0 {
		s.Period = c.u64("period")
	}
	if st&SampleRead != 0 {
		decodeReadValues(&c, f.ReadFormat, &s.Read)
	}
	if st&SampleCallchain != 0 {
		s.Callchain = c.u64s(reuse(keep.Callchain, fresh), c.count(8, "callchain.nr"), "callchain.ips")
	}
	if st&SampleRaw != 0 {
		n := c.u32("raw.size")
		s.Raw = c.bytes(uint64(n), "raw.data")
	}
	if st&SampleBranchStack != 0 {
		per := 24
		if f.BranchCounters {
			per += 8
		}
		nrOff := c.off
		nr := c.u64("branch_stack.nr")
		if f.BranchHWIndex {
			s.BranchHWIndex = c.u64("branch_stack.hw_idx")
		}
		if c.err == nil && nr > uint64(c.end-c.off)/uint64(per) {
			c.off = nrOff
			c.fail("branch_stack.nr", fmt.Errorf("%d entries of %d bytes exceed the %d bytes left: %w", nr, per, c.end-c.off, ErrTruncated))
		}
		if c.err == nil && nr > 0 {
			s.Branches = grow(reuse(keep.Branches, fresh), int(nr))
			for i := range s.Branches {
				s.Branches[i] = BranchEntry{From: c.u64("lbr.from"), To: c.u64("lbr.to"), Flags: c.u64("lbr.flags")}
			}
			if f.BranchCounters {
				s.BranchCounters = c.u64s(reuse(keep.BranchCounters, fresh), int(nr), "branch_stack.counters")
			}
		} else if !fresh {
			s.Branches = keep.Branches[:0]
			s.BranchCounters = keep.BranchCounters[:0]
		}
	}
	if st&SampleRegsUser != 0 {
		s.RegsUserABI = c.u64("regs_user.abi")
		if s.RegsUserABI != 0 {
			s.RegsUser = c.u64s(reuse(keep.RegsUser, fresh), bits.OnesCount64(f.RegsUser), "regs_user.regs")
		}
	}
	if st&SampleStackUser != 0 {
		n := c.u64("stack_user.size")
		s.StackUser = c.bytes(n, "stack_user.data")
		if n != 0 {
			s.StackUserDynSize = c.u64("stack_user.dyn_size")
		}
	}
	if st&(SampleWeight|SampleWeightStruct) != 0 {
		s.Weight = c.u64("weight")
	}
	if st&SampleDataSrc != 0 {
		s.DataSrc = c.u64("data_src")
	}
	if st&SampleTransaction != 0 {
		s.Transaction = c.u64("transaction")
	}
	if st&SampleRegsIntr != 0 {
		s.RegsIntrABI = c.u64("regs_intr.abi")
		if s.RegsIntrABI != 0 {
			s.RegsIntr = c.u64s(reuse(keep.RegsIntr, fresh), bits.OnesCount64(f.RegsIntr), "regs_intr.regs")
		}
	}
	if st&SamplePhysAddr != 0 {
		s.PhysAddr = c.u64("phys_addr")
	}
	if st&SampleCgroup != 0 {
		s.Cgroup = c.u64("cgroup")
	}
	if st&SampleDataPageSize != 0 {
		s.DataPageSize = c.u64("data_page_size")
	}
	if st&SampleCodePageSize != 0 {
		s.CodePageSize = c.u64("code_page_size")
	}
	if st&SampleAux != 0 {
		n := c.u64("aux.size")
		s.Aux = c.bytes(n, "aux.data")
	}
	if fresh {
		nilEmpty(&s.Callchain)
		nilEmpty(&s.Branches)
		nilEmpty(&s.BranchCounters)
		nilEmpty(&s.RegsUser)
		nilEmpty(&s.RegsIntr)
		nilEmpty(&s.Read.Values)
	}
	return c.done()
}

func reuse[T any](s []T, fresh bool) []T {
	if fresh {
		return nil
	}
	return s[:0]
}

func nilEmpty[T any](s *[]T) {
	if len(*s) == 0 {
		*s = nil
	}
}

// appendSample encodes s per f after dst (header included). Like decodeSample it is one
// field per sample_type bit in the kernel's order, and long for that reason.
func appendSample(dst []byte, s *Sample, f *Format) ([]byte, error) {
	start := len(dst)
	dst = appendHeader(dst, RecordSample, s.Misc)
	st := f.SampleType
	if st&SampleIdentifier != 0 {
		dst = bo.AppendUint64(dst, s.Identifier)
	}
	if st&SampleIP != 0 {
		dst = bo.AppendUint64(dst, s.IP)
	}
	if st&SampleTID != 0 {
		dst = bo.AppendUint32(bo.AppendUint32(dst, s.Pid), s.Tid)
	}
	if st&SampleTime != 0 {
		dst = bo.AppendUint64(dst, s.Time)
	}
	if st&SampleAddr != 0 {
		dst = bo.AppendUint64(dst, s.Addr)
	}
	if st&SampleID != 0 {
		dst = bo.AppendUint64(dst, s.ID)
	}
	if st&SampleStreamID != 0 {
		dst = bo.AppendUint64(dst, s.StreamID)
	}
	if st&SampleCPU != 0 {
		dst = bo.AppendUint32(bo.AppendUint32(dst, s.CPU), s.CPURes)
	}
	if st&SamplePeriod != 0 {
		dst = bo.AppendUint64(dst, s.Period)
	}
	if st&SampleRead != 0 {
		var err error
		if dst, err = appendReadValues(dst, &s.Read, f.ReadFormat); err != nil {
			return dst[:start], err
		}
	}
	if st&SampleCallchain != 0 {
		dst = appendU64s(bo.AppendUint64(dst, uint64(len(s.Callchain))), s.Callchain)
	}
	if st&SampleRaw != 0 {
		if len(s.Raw) > 0xffff {
			return dst[:start], fmt.Errorf("encode SAMPLE: raw data of %d bytes: %w", len(s.Raw), ErrNoSpace)
		}
		dst = append(bo.AppendUint32(dst, uint32(len(s.Raw))), s.Raw...)
	}
	if st&SampleBranchStack != 0 {
		dst = bo.AppendUint64(dst, uint64(len(s.Branches)))
		if f.BranchHWIndex {
			dst = bo.AppendUint64(dst, s.BranchHWIndex)
		}
		for _, b := range s.Branches {
			dst = bo.AppendUint64(bo.AppendUint64(bo.AppendUint64(dst, b.From), b.To), b.Flags)
		}
		if f.BranchCounters {
			if len(s.BranchCounters) != len(s.Branches) {
				return dst[:start], fmt.Errorf("encode SAMPLE: %d branch counters for %d branches: %w", len(s.BranchCounters), len(s.Branches), ErrCorrupt)
			}
			dst = appendU64s(dst, s.BranchCounters)
		}
	}
	if st&SampleRegsUser != 0 {
		var err error
		if dst, err = appendRegs(dst, s.RegsUserABI, s.RegsUser, f.RegsUser, "regs_user"); err != nil {
			return dst[:start], err
		}
	}
	if st&SampleStackUser != 0 {
		dst = append(bo.AppendUint64(dst, uint64(len(s.StackUser))), s.StackUser...)
		if len(s.StackUser) != 0 {
			dst = bo.AppendUint64(dst, s.StackUserDynSize)
		}
	}
	if st&(SampleWeight|SampleWeightStruct) != 0 {
		dst = bo.AppendUint64(dst, s.Weight)
	}
	if st&SampleDataSrc != 0 {
		dst = bo.AppendUint64(dst, s.DataSrc)
	}
	if st&SampleTransaction != 0 {
		dst = bo.AppendUint64(dst, s.Transaction)
	}
	if st&SampleRegsIntr != 0 {
		var err error
		if dst, err = appendRegs(dst, s.RegsIntrABI, s.RegsIntr, f.RegsIntr, "regs_intr"); err != nil {
			return dst[:start], err
		}
	}
	if st&SamplePhysAddr != 0 {
		dst = bo.AppendUint64(dst, s.PhysAddr)
	}
	if st&SampleCgroup != 0 {
		dst = bo.AppendUint64(dst, s.Cgroup)
	}
	if st&SampleDataPageSize != 0 {
		dst = bo.AppendUint64(dst, s.DataPageSize)
	}
	if st&SampleCodePageSize != 0 {
		dst = bo.AppendUint64(dst, s.CodePageSize)
	}
	if st&SampleAux != 0 {
		dst = append(bo.AppendUint64(dst, uint64(len(s.Aux))), s.Aux...)
	}
	return finishRecord(dst, start)
}

func appendRegs(dst []byte, abi uint64, regs []uint64, mask uint64, field string) ([]byte, error) {
	dst = bo.AppendUint64(dst, abi)
	if abi == 0 {
		if len(regs) != 0 {
			return dst, fmt.Errorf("encode SAMPLE: %s: %d registers with abi 0: %w", field, len(regs), ErrCorrupt)
		}
		return dst, nil
	}
	if len(regs) != bits.OnesCount64(mask) {
		return dst, fmt.Errorf("encode SAMPLE: %s: %d registers for a mask of %d: %w", field, len(regs), bits.OnesCount64(mask), ErrCorrupt)
	}
	return appendU64s(dst, regs), nil
}
