package ringbuf

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/sys/unix"
)

// whyRoot is why the parity tests need root.
const whyRoot = "system-wide perf events and tracepoints with perf_event_paranoid=2"

// Kernel parity: real rings written by this kernel, decoded and re-encoded byte for byte,
// and copied through the mirror Writer into rings that are byte-identical to the
// kernel's. Requires root (perf_event_paranoid is 2 here; system-wide events and
// tracepoints need CAP_PERFMON) and software events/tracepoints, which this machine has.

// attr bits beyond those x/sys names (include/uapi/linux/perf_event.h).
const (
	bitNamespaces = 1 << 28
	bitKsymbol    = 1 << 29
	bitBPFEvent   = 1 << 30
	bitCgroup     = 1 << 32
	bitBuildID    = 1 << 34
)

type kring struct {
	name     string
	fds      []int // fds[0] owns the ring
	mem      []byte
	f        Format
	backward bool
	buildIDs int // MMAP2 records in the build-id form
}

func openEvent(t *testing.T, attr *perfabi.Attr, pid, cpu, group int) int {
	t.Helper()
	attr.Size = perfabi.AttrSize
	fd, err := perfabi.Open(attr, pid, cpu, group)
	if err != nil {
		t.Fatalf("perf_event_open type %d config %d pid %d cpu %d: %v", attr.Type, attr.Config, pid, cpu, err)
	}
	return fd
}

func formatOf(a *perfabi.Attr) Format {
	return Format{
		SampleType:    SampleType(a.SampleType),
		ReadFormat:    ReadFormat(a.ReadFormat),
		SampleIDAll:   a.Flags&perfabi.FlagSampleIDAll != 0,
		RegsUser:      a.SampleRegsUser,
		RegsIntr:      a.SampleRegsIntr,
		BranchHWIndex: a.BranchSampleType&unix.PERF_SAMPLE_BRANCH_HW_INDEX != 0,
	}
}

func mapRing(t *testing.T, k *kring, pages int) {
	t.Helper()
	mem, err := Map(k.fds[0], pages, !k.backward)
	if err != nil {
		t.Fatal(err)
	}
	k.mem = mem
	t.Cleanup(func() {
		Unmap(mem)
		for _, fd := range k.fds {
			unix.Close(fd)
		}
	})
}

func disable(k *kring) {
	for _, fd := range k.fds {
		unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_DISABLE, 0)
	}
}

func tracepointID(t *testing.T, name string) uint64 {
	t.Helper()
	var b []byte
	var err error
	for _, root := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if b, err = os.ReadFile(root + "/events/" + name + "/id"); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("tracepoint %s (tracefs must be mounted at /sys/kernel/tracing): %v", name, err)
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// workload faults pages, sleeps (context switches), calls getpid and runs a child
// process (fork, exec, comm, mmap, exit), all on the calling (locked) thread.
func workload(t *testing.T) {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, 512*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(mem); i += 4096 {
		mem[i] = 1
	}
	unix.Munmap(mem)
	for range 5 {
		unix.Getpid()
		time.Sleep(time.Millisecond)
	}
	if out, err := exec.Command("/bin/sh", "-c", "ls /usr/bin > /dev/null; cat /proc/self/stat > /dev/null").CombinedOutput(); err != nil {
		t.Fatalf("workload child: %v %s", err, out)
	}
}

// checkForward reads a forward kernel ring from the start: every record must decode as
// its known type, re-encode to the same bytes, and, copied through a mirror Writer of the
// same size, give a data area and data_head identical to the kernel's.
func checkForward(t *testing.T, k *kring) map[RecordType]int {
	t.Helper()
	r, err := NewReader(k.mem, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dataSize := r.DataSize()
	mirror := newMemPage(dataSize)
	w, err := NewWriter(mirror, WriterOptions{Format: k.f})
	if err != nil {
		t.Fatal(err)
	}
	mr, err := NewReader(mirror, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[RecordType]int{}
	for rec := range allRecords(t, r) {
		checkRecord(t, k, rec, seen)
		if ok, _, err := w.Write(rec); !ok || err != nil {
			t.Fatalf("%s: mirror write: %v %v", k.name, ok, err)
		}
		// Consume the mirror in lockstep so it never fills, as a tool would.
		for b, _ := mr.Next(); b != nil; b, _ = mr.Next() {
		}
		mr.Commit()
	}
	r.Commit()
	kh := bo.Uint64(k.mem[OffDataHead:])
	if w.Head() != kh {
		t.Fatalf("%s: mirror data_head %d, kernel %d", k.name, w.Head(), kh)
	}
	off := bo.Uint64(k.mem[OffDataOffset:])
	if !bytes.Equal(mirror[os.Getpagesize():], k.mem[off:off+uint64(dataSize)]) {
		t.Fatalf("%s: mirror data area differs from the kernel's", k.name)
	}
	t.Logf("%s: %d bytes, records %v", k.name, kh, seen)
	return seen
}

// checkBackward reads a backward (overwrite) ring newest-first, checks every record, and
// replays the records oldest-first into a backward mirror Writer: the data area and
// data_head must equal the kernel's.
func checkBackward(t *testing.T, k *kring) map[RecordType]int {
	t.Helper()
	r, err := NewReader(k.mem, ReaderOptions{Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	kh := bo.Uint64(k.mem[OffDataHead:])
	if -kh > uint64(r.DataSize()) {
		t.Fatalf("%s: the backward ring wrapped (%d bytes written, %d-byte ring): enlarge it", k.name, -kh, r.DataSize())
	}
	seen := map[RecordType]int{}
	var recs [][]byte
	for rec := range allRecords(t, r) {
		checkRecord(t, k, rec, seen)
		recs = append(recs, append([]byte(nil), rec...))
	}
	r.Commit()
	mirror := newMemPage(r.DataSize())
	w, err := NewWriter(mirror, WriterOptions{Format: k.f, Backward: true, Overwrite: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if ok, _, err := w.Write(recs[i]); !ok || err != nil {
			t.Fatalf("%s: mirror write: %v %v", k.name, ok, err)
		}
	}
	if w.Head() != kh {
		t.Fatalf("%s: mirror data_head %d, kernel %d", k.name, int64(w.Head()), int64(kh))
	}
	off := bo.Uint64(k.mem[OffDataOffset:])
	if !bytes.Equal(mirror[os.Getpagesize():], k.mem[off:off+uint64(r.DataSize())]) {
		t.Fatalf("%s: backward mirror data area differs from the kernel's", k.name)
	}
	t.Logf("%s: %d bytes backward, records %v", k.name, -kh, seen)
	return seen
}

func checkRecord(t *testing.T, k *kring, rec []byte, seen map[RecordType]int) {
	t.Helper()
	d, err := Decode(rec, &k.f)
	if err != nil {
		t.Fatalf("%s: decode: %v\n% x", k.name, err, rec)
	}
	if u, ok := d.(*Unknown); ok && known(u.Header.Type) {
		t.Fatalf("%s: known type %v decoded as Unknown", k.name, u.Header.Type)
	}
	b, err := Append(nil, d, &k.f)
	if err != nil {
		t.Fatalf("%s: re-encode %v: %v", k.name, d.Type(), err)
	}
	if !bytes.Equal(b, rec) {
		t.Fatalf("%s: %v re-encodes differently\n got % x\nwant % x", k.name, d.Type(), b, rec)
	}
	if d.Type() == RecordSample && k.f.SampleType&SampleRead != 0 {
		blk, err := FindReadBlock(rec, &k.f)
		s := d.(*Sample)
		if err != nil || blk.Len() != len(s.Read.Values) || (blk.Len() > 0 && blk.Value(0) != s.Read.Values[0].Value) {
			t.Fatalf("%s: read block %v disagrees with the decoded sample", k.name, err)
		}
	}
	if m, ok := d.(*Mmap2); ok && m.Misc&MiscMmapBuildID != 0 {
		k.buildIDs++
	}
	seen[d.Type()]++
}

// newMemPage is newMem with the real page size, for mirrors of kernel rings.
func newMemPage(dataSize int) []byte {
	ps := os.Getpagesize()
	words := make([]uint64, (ps+dataSize)/8)
	return unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
}

func need(t *testing.T, name string, seen map[RecordType]int, types ...RecordType) {
	t.Helper()
	for _, typ := range types {
		if seen[typ] == 0 {
			t.Errorf("%s: no %v record seen (got %v)", name, typ, seen)
		}
	}
}

// pageFaultSampler locks t to its OS thread for the rest of the test and returns the
// attr of a software event that samples every page fault with sample type st; the
// caller sets the rest.
func pageFaultSampler(t *testing.T, st SampleType) perfabi.Attr {
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	return perfabi.Attr{
		Type:         unix.PERF_TYPE_SOFTWARE,
		Config:       unix.PERF_COUNT_SW_PAGE_FAULTS,
		SamplePeriod: 1,
		SampleType:   uint64(st),
	}
}

// TestKernelParityPerThread: page-fault samples with callchain and READ on this thread
// and its children (inherit, inherit_stat), with mmap/comm/task/namespaces side-band
// records and context switches.
func TestKernelParityPerThread(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	attr := pageFaultSampler(t, SampleIdentifier|SampleIP|SampleTID|SampleTime|SampleAddr|SampleID|
		SampleStreamID|SampleCPU|SamplePeriod|SampleRead|SampleCallchain|SampleDataPageSize|SampleCodePageSize)
	attr.ReadFormat = uint64(FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID | FormatLost)
	attr.Flags = perfabi.FlagDisabled | perfabi.FlagInherit | perfabi.FlagInheritStat | perfabi.FlagMmap | perfabi.FlagMmap2 |
		perfabi.FlagMmapData | perfabi.FlagComm | perfabi.FlagCommExec | perfabi.FlagTask |
		perfabi.FlagContextSwitch | perfabi.FlagSampleIDAll | bitNamespaces | perfabi.FlagExcludeKern |
		perfabi.FlagExcludeCallchainKernel
	// An inherited per-task event cannot be mmapped with cpu == -1: one event and ring per
	// CPU, as perf record does.
	var rings []*kring
	for cpu := range runtime.NumCPU() {
		k := &kring{name: fmt.Sprintf("page-faults inherit cpu%d", cpu), f: formatOf(&attr)}
		k.fds = []int{openEvent(t, &attr, 0, cpu, -1)}
		mapRing(t, k, 256)
		rings = append(rings, k)
	}
	for _, k := range rings {
		unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0)
	}
	workload(t)
	all := map[RecordType]int{}
	for _, k := range rings {
		disable(k)
	}
	for _, k := range rings {
		for typ, n := range checkForward(t, k) {
			all[typ] += n
		}
	}
	need(t, "per thread", all, RecordSample, RecordMmap2, RecordComm, RecordFork, RecordExit, RecordSwitch, RecordRead, RecordNamespaces)
}

// TestKernelParitySystemWide: per-CPU cpu-clock sampling with callchains and a group
// READ (cpu-clock leader, page-faults member), cpu-wide context switches, and the
// sched:sched_switch tracepoint with RAW data in rings of its own.
func TestKernelParitySystemWide(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	tp := tracepointID(t, "sched/sched_switch")
	var rings []*kring
	for cpu := range runtime.NumCPU() {
		lead := perfabi.Attr{
			Type:         unix.PERF_TYPE_SOFTWARE,
			Config:       unix.PERF_COUNT_SW_CPU_CLOCK,
			SamplePeriod: 1000000, // 1 ms of cpu-clock
			SampleType: uint64(SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleID | SampleCPU |
				SamplePeriod | SampleRead | SampleCallchain),
			ReadFormat: uint64(FormatGroup | FormatID | FormatTotalTimeEnabled | FormatTotalTimeRunning),
			Flags: perfabi.FlagDisabled | perfabi.FlagSampleIDAll | perfabi.FlagContextSwitch | perfabi.FlagComm |
				perfabi.FlagMmap | perfabi.FlagMmap2 | perfabi.FlagTask | bitKsymbol | bitBPFEvent | bitCgroup | bitBuildID,
		}
		member := perfabi.Attr{
			Type:       unix.PERF_TYPE_SOFTWARE,
			Config:     unix.PERF_COUNT_SW_PAGE_FAULTS,
			ReadFormat: lead.ReadFormat,
			SampleType: lead.SampleType,
			Flags:      perfabi.FlagSampleIDAll,
		}
		k := &kring{name: fmt.Sprintf("cpu-clock group cpu%d", cpu), f: formatOf(&lead)}
		k.fds = []int{openEvent(t, &lead, -1, cpu, -1)}
		k.fds = append(k.fds, openEvent(t, &member, -1, cpu, k.fds[0]))
		mapRing(t, k, 512)
		rings = append(rings, k)

		sw := perfabi.Attr{
			Type:         unix.PERF_TYPE_TRACEPOINT,
			Config:       tp,
			SamplePeriod: 1,
			SampleType:   uint64(SampleIP | SampleTID | SampleTime | SampleCPU | SamplePeriod | SampleRaw | SampleIdentifier),
			Flags:        perfabi.FlagDisabled | perfabi.FlagSampleIDAll,
		}
		kt := &kring{name: fmt.Sprintf("sched_switch cpu%d", cpu), f: formatOf(&sw)}
		kt.fds = []int{openEvent(t, &sw, -1, cpu, -1)}
		mapRing(t, kt, 512)
		rings = append(rings, kt)
	}
	for _, k := range rings {
		unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0)
	}
	runtime.LockOSThread()
	workload(t)
	runtime.UnlockOSThread()
	sideBand(t)
	for _, k := range rings {
		disable(k)
	}
	all := map[RecordType]int{}
	raw := 0
	for _, k := range rings {
		for typ, n := range checkForward(t, k) {
			all[typ] += n
		}
		if strings.HasPrefix(k.name, "sched_switch") {
			raw += countRaw(t, k)
		}
	}
	need(t, "system-wide", all, RecordSample, RecordSwitchCPUWide, RecordComm, RecordMmap2, RecordFork, RecordExit,
		RecordKsymbol, RecordBPFEvent, RecordCgroup)
	buildIDs := 0
	for _, k := range rings {
		buildIDs += k.buildIDs
	}
	if buildIDs == 0 {
		t.Error("no MMAP2 record in the build-id form (attr.build_id)")
	}
	t.Logf("%d MMAP2 records in the build-id form", buildIDs)
	if raw == 0 {
		t.Error("no sched_switch sample with RAW data")
	}
}

// sideBand makes the kernel emit the rarer side-band records: loading (and unloading) a
// BPF program gives KSYMBOL and BPF_EVENT, creating a cgroup gives CGROUP.
func sideBand(t *testing.T) {
	t.Helper()
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.SocketFilter,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	if err != nil {
		t.Fatalf("load a BPF program (root, JIT): %v", err)
	}
	prog.Close()
	dir := fmt.Sprintf("%s/bayesperf-ringbuf-test-%d", cgroup2Mount(t), os.Getpid())
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("create a cgroup: %v", err)
	}
	if err := os.Remove(dir); err != nil {
		t.Errorf("remove test cgroup %s: %v", dir, err)
	}
}

// cgroup2Mount finds where the cgroup2 hierarchy is mounted (/sys/fs/cgroup on pure v2
// systems, /sys/fs/cgroup/unified on hybrid ones).
func cgroup2Mount(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[2] == "cgroup2" {
			return f[1]
		}
	}
	t.Fatal("no cgroup2 hierarchy mounted: CGROUP records cannot be produced")
	return ""
}

// countRaw counts the SAMPLEs of a drained ring whose RAW data starts with the
// tracepoint's common_type, i.e. whose RAW block decoded where it should.
func countRaw(t *testing.T, k *kring) int {
	t.Helper()
	tp := tracepointID(t, "sched/sched_switch")
	// The ring was committed: read the whole data area from position 0 again.
	bo.PutUint64(k.mem[OffDataTail:], 0)
	r, err := NewReader(k.mem, ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var s Sample
	for rec, _ := r.Next(); rec != nil; rec, _ = r.Next() {
		if RecordType(bo.Uint32(rec)) != RecordSample {
			continue
		}
		if err := DecodeSample(rec, &k.f, &s); err != nil {
			t.Fatal(err)
		}
		if len(s.Raw) >= 2 && uint64(bo.Uint16(s.Raw)) == tp {
			n++
		}
	}
	return n
}

// TestKernelParityBackward: a write_backward ring mapped read-only (overwrite mode),
// page-fault samples and context switches of this thread.
func TestKernelParityBackward(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	attr := pageFaultSampler(t, SampleIP|SampleTID|SampleTime|SampleAddr|SampleCPU|SamplePeriod|SampleID)
	attr.Flags = perfabi.FlagDisabled | perfabi.FlagWriteBackward | perfabi.FlagSampleIDAll | perfabi.FlagContextSwitch |
		perfabi.FlagMmap | perfabi.FlagMmap2 | perfabi.FlagMmapData
	k := &kring{name: "page-faults backward", f: formatOf(&attr), backward: true}
	k.fds = []int{openEvent(t, &attr, 0, -1, -1)}
	mapRing(t, k, 128)
	unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0)
	workload(t)
	disable(k)
	unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_PAUSE_OUTPUT, 1)
	seen := checkBackward(t, k)
	need(t, k.name, seen, RecordSample, RecordSwitch, RecordMmap2)
}

// TestKernelParityWakeups checks the Writer's wakeup decisions against the kernel's:
// page-fault samples of this thread are produced one page touch at a time, and after
// each touch poll() says whether the kernel woke the reader (perf_poll consumes
// rb->poll). Replaying the same records through a mirror Writer must report a wakeup in
// exactly the touches where the kernel's poll saw one, for wakeup_events and for
// wakeup_watermark.
func TestKernelParityWakeups(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	for _, tc := range []struct {
		name string
		opts WriterOptions
	}{
		{"wakeup_events=3", WriterOptions{WakeupEvents: 3}},
		{"wakeup_events=1", WriterOptions{WakeupEvents: 1}},
		{"wakeup_watermark=200", WriterOptions{Watermark: true, WakeupWatermark: 200}},
		{"default watermark", WriterOptions{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := pageFaultSampler(t, SampleIP|SampleTID|SampleTime|SampleAddr)
			attr.Flags = perfabi.FlagDisabled
			attr.WakeupEvents = tc.opts.WakeupEvents
			if tc.opts.Watermark {
				attr.Flags |= perfabi.FlagWatermark
				attr.WakeupEvents = tc.opts.WakeupWatermark
			}
			const pages = 2 // a 8 KiB ring makes the default (half-ring) watermark reachable
			k := &kring{name: tc.name, f: formatOf(&attr)}
			k.fds = []int{openEvent(t, &attr, 0, -1, -1)}
			mapRing(t, k, pages)
			area, err := unix.Mmap(-1, 0, 400*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(area)
			r, err := NewReader(k.mem, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mirror := newMemPage(r.DataSize())
			w, err := NewWriter(mirror, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			mr, _ := NewReader(mirror, ReaderOptions{})
			pfd := []unix.PollFd{{Fd: int32(k.fds[0]), Events: unix.POLLIN}}
			unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0)
			// Preallocated: a growing slice would fault fresh heap pages between the poll
			// and the drain, and those samples would be attributed to the wrong touch.
			kernelWoke := make([]bool, 0, len(area)/4096)
			skipped, carry, matchedWakes := 0, false, 0
			for i := 0; i < len(area); i += 4096 {
				area[i] = 1
				h := atomic.LoadUint64(word(k.mem, OffDataHead))
				n, err := unix.Poll(pfd, 0)
				if err != nil {
					t.Fatal(err)
				}
				h2 := atomic.LoadUint64(word(k.mem, OffDataHead))
				woke := n == 1 && pfd[0].Revents&unix.POLLIN != 0
				kernelWoke = append(kernelWoke, woke)
				pfd[0].Revents = 0
				// Copy the records published before the poll into the mirror (its head
				// tracks the kernel's byte for byte) and note whether it asked for a
				// wakeup. Records that appeared during the poll make this touch
				// ambiguous: they are copied too, and the comparison is skipped.
				mirrorWoke := copyUpTo(t, r, w, h2)
				r.Commit()
				mr.Discard()
				// A wakeup caused by a record written during the poll may be reported by
				// this poll or the next one: after an ambiguous touch in which the mirror
				// woke, the next touch is ambiguous too.
				ambiguous := h != h2 || carry
				carry = h != h2 && mirrorWoke
				if ambiguous {
					skipped++
					continue
				}
				if mirrorWoke != woke {
					t.Fatalf("touch %d: kernel woke=%v, mirror woke=%v (head %d)", i/4096, woke, mirrorWoke, w.Head())
				}
				if woke {
					matchedWakes++
				}
			}
			if skipped > len(kernelWoke)/10 {
				t.Fatalf("%d of %d touches were ambiguous", skipped, len(kernelWoke))
			}
			disable(k)
			wakes := 0
			for _, b := range kernelWoke {
				if b {
					wakes++
				}
			}
			if matchedWakes == 0 {
				t.Fatalf("no unambiguous kernel wakeup in %d touches (%d in all): the test proves nothing", len(kernelWoke), wakes)
			}
			t.Logf("%d touches, %d wakeups, all matched (%d ambiguous touches skipped)", len(kernelWoke), wakes, skipped)
		})
	}
}

// copyUpTo copies r's records into w until w's head is head and says whether a write
// asked for a wakeup.
func copyUpTo(t *testing.T, r *Reader, w *Writer, head uint64) bool {
	t.Helper()
	woke := false
	for w.Head() != head {
		rec, err := r.Next()
		if err != nil || rec == nil {
			t.Fatalf("kernel ring ended before data_head %d: %v", head, err)
		}
		ok, wake, err := w.Write(rec)
		if !ok || err != nil {
			t.Fatalf("mirror write: %v %v", ok, err)
		}
		woke = woke || wake
	}
	return woke
}

// TestKernelParityLost overflows a one-page kernel ring so the kernel drops samples,
// consumes it, and triggers more samples: the kernel then writes PERF_RECORD_LOST in front
// of the next sample. The LOST record the mirror Writer builds for that same sample and
// count must be byte-identical: same id (from the sample, or the event's id when the
// sample carries none) and the same sample_id_all trailer.
func TestKernelParityLost(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	for _, tc := range []struct {
		name string
		st   SampleType
	}{
		{"id in sample", SampleIdentifier | SampleIP | SampleTID | SampleTime | SampleID | SampleStreamID | SampleCPU},
		{"no id in sample", SampleIP | SampleTID | SampleTime | SampleCPU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			attr := pageFaultSampler(t, tc.st)
			attr.Flags = perfabi.FlagDisabled | perfabi.FlagSampleIDAll | perfabi.FlagExcludeKern
			k := &kring{name: tc.name, f: formatOf(&attr)}
			k.fds = []int{openEvent(t, &attr, 0, -1, -1)}
			mapRing(t, k, 1)
			eventID, err := unix.IoctlGetInt(k.fds[0], unix.PERF_EVENT_IOC_ID)
			if err != nil {
				t.Fatalf("PERF_EVENT_IOC_ID: %v", err)
			}
			area, err := unix.Mmap(-1, 0, 600*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Munmap(area)
			unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0)
			for i := 0; i < 300*4096; i += 4096 { // far more than one page of samples
				area[i] = 1
			}
			r, err := NewReader(k.mem, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for rec, _ := r.Next(); rec != nil; rec, _ = r.Next() {
			}
			r.Commit()
			for i := 300 * 4096; i < len(area); i += 4096 {
				area[i] = 1
			}
			disable(k)
			var lost, next []byte
			for rec, err := r.Next(); rec != nil || err != nil; rec, err = r.Next() {
				if err != nil {
					t.Fatal(err)
				}
				if RecordType(bo.Uint32(rec)) == RecordLost && lost == nil {
					lost = append([]byte(nil), rec...)
					if next, err = r.Next(); err != nil || next == nil {
						t.Fatalf("LOST is the last record: %v", err)
					}
					next = append([]byte(nil), next...)
				}
			}
			if lost == nil {
				t.Fatal("the kernel wrote no LOST record: the ring did not overflow")
			}
			count := bo.Uint64(lost[16:])
			mirror := newMemPage(4096)
			w, err := NewWriter(mirror, WriterOptions{Format: k.f, EventID: uint64(eventID)})
			if err != nil {
				t.Fatal(err)
			}
			w.lost = count // the drops the kernel counted, as if they had happened here
			if ok, _, err := w.Write(next); !ok || err != nil {
				t.Fatalf("mirror write: %v %v", ok, err)
			}
			mr, _ := NewReader(mirror, ReaderOptions{})
			got, _ := mr.Next()
			if !bytes.Equal(got, lost) {
				t.Fatalf("mirror LOST differs from the kernel's\n got % x\nwant % x", got, lost)
			}
			after, _ := mr.Next()
			if !bytes.Equal(after, next) {
				t.Fatal("the record after LOST differs")
			}
			t.Logf("kernel LOST of %d samples reproduced byte for byte (%d bytes)", count, len(lost))
		})
	}
}

// TestKernelParityWrap drains a one-page kernel ring while it is being written, so the
// kernel wraps it many times (records straddling the end are copied out by the Reader),
// and mirrors it in lockstep: at the end the mirror's data area and data_head equal the
// kernel's, and every record decoded and re-encoded exactly.
func TestKernelParityWrap(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	attr := pageFaultSampler(t, SampleIP|SampleTID|SampleTime|SampleAddr|SampleCallchain)
	attr.Flags = perfabi.FlagDisabled | perfabi.FlagSampleIDAll | perfabi.FlagExcludeKern
	k := &kring{name: "page-faults wrapping", f: formatOf(&attr)}
	k.fds = []int{openEvent(t, &attr, 0, -1, -1)}
	mapRing(t, k, 1)
	area, err := unix.Mmap(-1, 0, 2000*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(area)
	r, _ := NewReader(k.mem, ReaderOptions{})
	mirror := newMemPage(r.DataSize())
	w, _ := NewWriter(mirror, WriterOptions{Format: k.f})
	mr, _ := NewReader(mirror, ReaderOptions{})
	seen := map[RecordType]int{}
	drain := func() {
		for rec := range allRecords(t, r) {
			checkRecord(t, k, rec, seen)
			if ok, _, err := w.Write(rec); !ok || err != nil {
				t.Fatalf("mirror write: %v %v", ok, err)
			}
			mr.Discard()
		}
		r.Commit()
	}
	unix.IoctlSetInt(k.fds[0], unix.PERF_EVENT_IOC_ENABLE, 0)
	for i := 0; i < len(area); i += 4096 {
		area[i] = 1
		if i%(20*4096) == 0 {
			drain()
		}
	}
	disable(k)
	drain()
	kh := bo.Uint64(k.mem[OffDataHead:])
	if kh < 10*uint64(r.DataSize()) {
		t.Fatalf("only %d bytes written: the ring did not wrap enough", kh)
	}
	if w.Head() != kh {
		t.Fatalf("mirror data_head %d, kernel %d", w.Head(), kh)
	}
	off := bo.Uint64(k.mem[OffDataOffset:])
	if !bytes.Equal(mirror[os.Getpagesize():], k.mem[off:off+uint64(r.DataSize())]) {
		t.Fatal("mirror data area differs from the kernel's")
	}
	t.Logf("%d bytes through a %d-byte ring (%d laps), records %v", kh, r.DataSize(), kh/uint64(r.DataSize()), seen)
}
