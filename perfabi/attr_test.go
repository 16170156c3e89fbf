package perfabi

import (
	"reflect"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestAttrLayoutMatchesXSys(t *testing.T) {
	// x/sys/unix's PerfEventAttr is generated from the kernel headers; our Encode offsets
	// must agree with it field by field.
	var u unix.PerfEventAttr
	a := Attr{Type: 1, Size: 2, Config: 3, SamplePeriod: 4, SampleType: 5, ReadFormat: 6, Flags: 7,
		WakeupEvents: 8, BPType: 9, Config1: 10, Config2: 11, BranchSampleType: 12, SampleRegsUser: 13,
		SampleStackUser: 14, ClockID: 15, SampleRegsIntr: 16, AuxWatermark: 17, SampleMaxStack: 18,
		AuxSampleSize: 20, SigData: 22}
	b := a.Encode()
	n := min(int(unsafe.Sizeof(u)), len(b))
	copy(unsafe.Slice((*byte)(unsafe.Pointer(&u)), unsafe.Sizeof(u))[:n], b[:n])
	got := []uint64{uint64(u.Type), uint64(u.Size), u.Config, u.Sample, u.Sample_type, u.Read_format, u.Bits,
		uint64(u.Wakeup), uint64(u.Bp_type), u.Ext1, u.Ext2, u.Branch_sample_type, u.Sample_regs_user,
		uint64(u.Sample_stack_user), uint64(u.Clockid), u.Sample_regs_intr, uint64(u.Aux_watermark),
		uint64(u.Sample_max_stack), uint64(u.Aux_sample_size), u.Sig_data}
	want := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 22}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields through x/sys layout = %v, want %v", got, want)
	}
}

func TestFlagsAreXSys(t *testing.T) {
	for _, c := range []struct {
		ours, xsys uint64
	}{
		{FlagDisabled, unix.PerfBitDisabled}, {FlagInherit, unix.PerfBitInherit},
		{FlagFreq, unix.PerfBitFreq}, {FlagEnableOnExec, unix.PerfBitEnableOnExec},
		{FlagWatermark, unix.PerfBitWatermark}, {FlagSampleIDAll, unix.PerfBitSampleIDAll},
		{FlagWriteBackward, unix.PerfBitWriteBackward},
		{FlagInheritStat, unix.PerfBitInheritStat}, {FlagMmap, unix.PerfBitMmap},
		{FlagMmap2, unix.PerfBitMmap2}, {FlagMmapData, unix.PerfBitMmapData},
		{FlagComm, unix.PerfBitComm}, {FlagCommExec, unix.PerfBitCommExec},
		{FlagTask, unix.PerfBitTask}, {FlagContextSwitch, unix.PerfBitContextSwitch},
		{FlagExcludeUser, unix.PerfBitExcludeUser}, {FlagExcludeKern, unix.PerfBitExcludeKernel},
		{FlagExcludeHV, unix.PerfBitExcludeHv}, {FlagExcludeCallchainKernel, unix.PerfBitExcludeCallchainKernel},
		{FlagPinned, unix.PerfBitPinned}, {flagFDCloexec, unix.PERF_FLAG_FD_CLOEXEC},
		{FormatGroup, unix.PERF_FORMAT_GROUP}, {FormatLost, unix.PERF_FORMAT_LOST},
	} {
		if c.ours != c.xsys {
			t.Errorf("bit %#x, x/sys says %#x", c.ours, c.xsys)
		}
	}
}

func TestDecodeAttrSizes(t *testing.T) {
	const software, pageFaults = 1, 2 // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS
	a := Attr{Type: software, Size: AttrSize, Config: pageFaults, Config2: 77, Config3: 99, Flags: FlagDisabled | FlagInherit}
	got, err := DecodeAttr(a.Encode())
	if err != nil || got != a {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, a)
	}
	// Size 0 is VER0: only 64 bytes count, config2 and later are not seen.
	a.Size = 0
	got, err = DecodeAttr(a.Encode()[:64])
	if err != nil {
		t.Fatal(err)
	}
	if got.Config2 != 0 || got.Config3 != 0 || got.Config != pageFaults || got.EffectiveSize() != 64 {
		t.Fatalf("VER0 decode = %+v", got)
	}
	// Too short for the declared size.
	a.Size = AttrSizeVer1
	if _, err := DecodeAttr(a.Encode()[:64]); err == nil {
		t.Fatal("decode of 64 bytes with size 72 succeeded")
	}
	// A bigger struct with unknown non-zero tail is refused like the kernel's E2BIG.
	big := append(a.Encode(), make([]byte, 8)...)
	big[4] = byte(len(big))
	if _, err := DecodeAttr(big); err != nil {
		t.Fatalf("zero tail refused: %v", err)
	}
	big[len(big)-1] = 1
	if _, err := DecodeAttr(big); err == nil {
		t.Fatal("non-zero unknown tail accepted")
	}
	a.SetPreciseIP(2)
	if a.PreciseIP() != 2 || a.Flags&FlagInherit == 0 {
		t.Fatalf("precise_ip bits clobbered flags: %#x", a.Flags)
	}
}

func FuzzDecodeAttr(f *testing.F) {
	a := Attr{Size: AttrSize, Type: 1}
	f.Add(a.Encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeAttr(b)
		if err != nil {
			return
		}
		if int(a.EffectiveSize()) > len(b) {
			t.Fatalf("size %d from %d bytes", a.Size, len(b))
		}
		// Whatever was decoded encodes back to the bytes the kernel would have read.
		n := min(int(a.EffectiveSize()), AttrSize)
		if got := a.Encode()[:n]; string(got) != string(b[:n]) {
			t.Fatalf("re-encoding differs: % x, want % x", got, b[:n])
		}
	})
}
