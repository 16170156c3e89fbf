package ringbuf

import (
	"math/bits"
	"math/rand/v2"
)

// Generators of random formats and records, consistent with their format (fields whose
// bit is clear stay zero, counts match masks), for the round-trip and ring tests.

func genFormat(rng *rand.Rand) Format {
	return Format{
		SampleType:     SampleType(rng.Uint64()) & SampleAll,
		ReadFormat:     ReadFormat(rng.Uint64()) & FormatAll,
		SampleIDAll:    rng.IntN(2) == 0,
		RegsUser:       rng.Uint64() & 0xffff,
		RegsIntr:       rng.Uint64() & 0xffffff,
		BranchHWIndex:  rng.IntN(2) == 0,
		BranchCounters: rng.IntN(2) == 0,
	}
}

func genBytes(rng *rand.Rand, max int) []byte {
	n := rng.IntN(max + 1)
	if n == 0 {
		return nil
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func genU64s(rng *rand.Rand, n int) []uint64 {
	if n == 0 {
		return nil
	}
	v := make([]uint64, n)
	for i := range v {
		v[i] = rng.Uint64()
	}
	return v
}

func genString(rng *rand.Rand, max int) string {
	b := make([]byte, rng.IntN(max+1))
	for i := range b {
		b[i] = byte(1 + rng.IntN(255)) // no NUL: kernel strings end at the first one
	}
	return string(b)
}

func genIDFields(rng *rand.Rand, f *Format) IDFields {
	var s IDFields
	if !f.SampleIDAll {
		return s
	}
	st := f.SampleType
	if st&SampleTID != 0 {
		s.Pid, s.Tid = rng.Uint32(), rng.Uint32()
	}
	if st&SampleTime != 0 {
		s.Time = rng.Uint64()
	}
	if st&SampleID != 0 {
		s.ID = rng.Uint64()
	}
	if st&SampleStreamID != 0 {
		s.StreamID = rng.Uint64()
	}
	if st&SampleCPU != 0 {
		s.CPU, s.Res = rng.Uint32(), rng.Uint32()
	}
	if st&SampleIdentifier != 0 {
		s.Identifier = rng.Uint64()
	}
	return s
}

func genReadValues(rng *rand.Rand, rf ReadFormat, maxGroup int) ReadValues {
	var v ReadValues
	if rf&FormatTotalTimeEnabled != 0 {
		v.TimeEnabled = rng.Uint64()
	}
	if rf&FormatTotalTimeRunning != 0 {
		v.TimeRunning = rng.Uint64()
	}
	n := 1
	if rf&FormatGroup != 0 {
		n = rng.IntN(maxGroup + 1)
	}
	if n == 0 {
		return v
	}
	v.Values = make([]CounterValue, n)
	for i := range v.Values {
		v.Values[i].Value = rng.Uint64()
		if rf&FormatID != 0 {
			v.Values[i].ID = rng.Uint64()
		}
		if rf&FormatLost != 0 {
			v.Values[i].Lost = rng.Uint64()
		}
	}
	return v
}

func genSample(rng *rand.Rand, f *Format) *Sample {
	st := f.SampleType
	s := &Sample{Misc: uint16(rng.Uint32())}
	u := func(bit SampleType) uint64 {
		if st&bit != 0 {
			return rng.Uint64()
		}
		return 0
	}
	s.Identifier, s.IP = u(SampleIdentifier), u(SampleIP)
	if st&SampleTID != 0 {
		s.Pid, s.Tid = rng.Uint32(), rng.Uint32()
	}
	s.Time, s.Addr, s.ID, s.StreamID = u(SampleTime), u(SampleAddr), u(SampleID), u(SampleStreamID)
	if st&SampleCPU != 0 {
		s.CPU, s.CPURes = rng.Uint32(), rng.Uint32()
	}
	s.Period = u(SamplePeriod)
	if st&SampleRead != 0 {
		s.Read = genReadValues(rng, f.ReadFormat, 5)
	}
	if st&SampleCallchain != 0 {
		s.Callchain = genU64s(rng, rng.IntN(8))
	}
	if st&SampleRaw != 0 {
		s.Raw = genBytes(rng, 40)
	}
	if st&SampleBranchStack != 0 {
		if f.BranchHWIndex {
			s.BranchHWIndex = rng.Uint64()
		}
		if n := rng.IntN(4); n > 0 {
			s.Branches = make([]BranchEntry, n)
			for i := range s.Branches {
				s.Branches[i] = BranchEntry{rng.Uint64(), rng.Uint64(), rng.Uint64()}
			}
			if f.BranchCounters {
				s.BranchCounters = genU64s(rng, n)
			}
		}
	}
	if st&SampleRegsUser != 0 && rng.IntN(4) != 0 {
		s.RegsUserABI = 1 + uint64(rng.IntN(2))
		s.RegsUser = genU64s(rng, bits.OnesCount64(f.RegsUser))
	}
	if st&SampleStackUser != 0 {
		s.StackUser = genBytes(rng, 64)
		if len(s.StackUser) > 0 {
			s.StackUserDynSize = rng.Uint64()
		}
	}
	s.Weight = u(SampleWeight | SampleWeightStruct)
	s.DataSrc, s.Transaction = u(SampleDataSrc), u(SampleTransaction)
	if st&SampleRegsIntr != 0 && rng.IntN(4) != 0 {
		s.RegsIntrABI = 2
		s.RegsIntr = genU64s(rng, bits.OnesCount64(f.RegsIntr))
	}
	s.PhysAddr, s.Cgroup = u(SamplePhysAddr), u(SampleCgroup)
	s.DataPageSize, s.CodePageSize = u(SampleDataPageSize), u(SampleCodePageSize)
	if st&SampleAux != 0 {
		s.Aux = genBytes(rng, 32)
	}
	return s
}

// allTypes lists every record type, plus two the package does not know.
var allTypes = []RecordType{
	RecordMmap, RecordLost, RecordComm, RecordExit, RecordThrottle, RecordUnthrottle,
	RecordFork, RecordRead, RecordSample, RecordMmap2, RecordAux, RecordItraceStart,
	RecordLostSamples, RecordSwitch, RecordSwitchCPUWide, RecordNamespaces, RecordKsymbol,
	RecordBPFEvent, RecordCgroup, RecordTextPoke, RecordAuxOutputHWID,
	RecordCallchainDeferred, 99, 0x10000,
}

func genRecord(rng *rand.Rand, f *Format, t RecordType) Record {
	cm := Common{Misc: uint16(rng.Uint32()), ID: genIDFields(rng, f)}
	r32, r64 := rng.Uint32, rng.Uint64
	switch t {
	case RecordMmap:
		return &Mmap{Common: cm, Pid: r32(), Tid: r32(), Addr: r64(), Len: r64(), Pgoff: r64(), Filename: genString(rng, 30)}
	case RecordLost:
		return &Lost{Common: cm, EventID: r64(), Lost: r64()}
	case RecordComm:
		return &Comm{Common: cm, Pid: r32(), Tid: r32(), Comm: genString(rng, 16)}
	case RecordExit, RecordFork:
		return &Exit{Common: cm, IsFork: t == RecordFork, Pid: r32(), Ppid: r32(), Tid: r32(), Ptid: r32(), Time: r64()}
	case RecordThrottle, RecordUnthrottle:
		return &Throttle{Common: cm, Unthrottle: t == RecordUnthrottle, Time: r64(), EventID: r64(), StreamID: r64()}
	case RecordRead:
		return &Read{Common: cm, Pid: r32(), Tid: r32(), Values: genReadValues(rng, f.ReadFormat, 5)}
	case RecordSample:
		return genSample(rng, f)
	case RecordMmap2:
		m := &Mmap2{Common: cm, Pid: r32(), Tid: r32(), Addr: r64(), Len: r64(), Pgoff: r64(), Prot: r32(), Flags: r32(), Filename: genString(rng, 40)}
		if rng.IntN(2) == 0 {
			m.Misc |= MiscMmapBuildID
			m.BuildID = genBytes(rng, 20)
		} else {
			m.Misc &^= MiscMmapBuildID
			m.Maj, m.Min, m.Ino, m.InoGeneration = r32(), r32(), r64(), r64()
		}
		return m
	case RecordAux:
		return &Aux{Common: cm, AuxOffset: r64(), AuxSize: r64(), Flags: r64()}
	case RecordItraceStart:
		return &ItraceStart{Common: cm, Pid: r32(), Tid: r32()}
	case RecordLostSamples:
		return &LostSamples{Common: cm, Lost: r64()}
	case RecordSwitch:
		return &Switch{Common: cm}
	case RecordSwitchCPUWide:
		return &SwitchCPUWide{Common: cm, NextPrevPid: r32(), NextPrevTid: r32()}
	case RecordNamespaces:
		m := &Namespaces{Common: cm, Pid: r32(), Tid: r32()}
		if n := rng.IntN(8); n > 0 {
			m.Namespaces = make([]NamespaceLink, n)
			for i := range m.Namespaces {
				m.Namespaces[i] = NamespaceLink{r64(), r64()}
			}
		}
		return m
	case RecordKsymbol:
		return &Ksymbol{Common: cm, Addr: r64(), Len: r32(), KsymType: uint16(r32()), Flags: uint16(r32()), Name: genString(rng, 50)}
	case RecordBPFEvent:
		m := &BPFEvent{Common: cm, EventType: uint16(r32()), Flags: uint16(r32()), ProgID: r32()}
		copy(m.Tag[:], genBytes(rng, 8))
		return m
	case RecordCgroup:
		return &Cgroup{Common: cm, CgroupID: r64(), Path: genString(rng, 60)}
	case RecordTextPoke:
		return &TextPoke{Common: cm, Addr: r64(), Old: genBytes(rng, 15), New: genBytes(rng, 15)}
	case RecordAuxOutputHWID:
		return &AuxOutputHWID{Common: cm, HWID: r64()}
	case RecordCallchainDeferred:
		return &CallchainDeferred{Common: cm, Cookie: r64(), IPs: genU64s(rng, rng.IntN(6))}
	default:
		body := genBytes(rng, 48)
		return &Unknown{Header: Header{Type: t, Misc: uint16(r32()), Size: uint16(HeaderSize + len(body))}, Body: body}
	}
}
