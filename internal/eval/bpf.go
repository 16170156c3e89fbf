package eval

import (
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

// BPFSnapshots lets the virtual PMU read its copies through package bpf's collector,
// which snapshots them in the kernel at every slice and follows the target's threads. The
// views' copies are switched at the snapshots (bpf.Options.SwitchAtSnapshots) rather than
// with an ioctl after each: a copy then counts over exactly the slices its view scheduled
// it in, as on a real PMU, where switching after the snapshot misplaced 5-33% of single
// events' counts; and a truth copy and its view copies are read as one kernel event.
func BPFSnapshots(attrs []perf.Attr, pid int, slice time.Duration) (vpmu.Switchable, error) {
	ua := make([]unix.PerfEventAttr, len(attrs))
	for i, a := range attrs {
		ua[i] = toUnix(a)
	}
	return bpf.NewCollector(bpf.Options{Pid: pid, Threads: true, HoldProcesses: true, SwitchAtSnapshots: true, Events: ua, Slice: slice})
}

// toUnix converts an attr to x/sys's type through the kernel byte layout both mirror.
func toUnix(a perf.Attr) unix.PerfEventAttr {
	var u unix.PerfEventAttr
	b := a.Encode()
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&u)), unsafe.Sizeof(u))
	copy(dst, b)
	u.Size = uint32(min(len(b), len(dst)))
	return u
}

// ResolveCollector returns the collector a live run uses for the name asked for: "read"
// and "bpf" as given, "auto" "bpf" when this process can load the BPF collector
// (bpf.Probe: root or CAP_BPF+CAP_PERFMON, a kernel with the BPF ring buffer) and "read"
// otherwise. BPF snapshots every copy in the kernel at the slice boundary, exactly, and
// its estimates are at least as good (test/bpf_eval_test.go); read(2) works everywhere.
func ResolveCollector(name string) (string, error) {
	switch name {
	case "read", "bpf":
		return name, nil
	case "auto":
		if bpf.Probe() == nil {
			return "bpf", nil
		}
		return "read", nil
	}
	return "", fmt.Errorf("collector %q: want auto, read or bpf", name)
}
