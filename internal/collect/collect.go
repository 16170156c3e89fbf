// Package collect chooses how the virtual PMU reads its copies of a target's events, for
// `bayesperf eval` (internal/eval) and the drop-in sidecar (`bayesperf run` and
// `bayesperf sidecar`, through internal/vpmu/vstage): with read(2) at every slice
// (internal/vpmu's own backend), or through package bpf's collector, which snapshots
// every copy in the kernel at the slice boundary (vpmu.Config.Snapshots). It sits above
// both vpmu and bpf so that neither imports the other, and so that the command and eval
// make the same choice.
//
// Resolve turns --collector auto|read|bpf into the collector used: auto is bpf when this
// process can load the BPF collector (bpf.Probe: root or CAP_BPF+CAP_PERFMON, a kernel
// with the BPF ring buffer), else read. Neither is clearly better: eval's estimates
// through bpf are as good as through read(2) within the spread of pooled runs
// (test/bpf_eval_test.go: median WAPE ratio bpf/read 0.67-1.14), and the drop-in's
// corrected totals as good or somewhat worse, never by 2x (test/dropin_collector_test.go:
// geometric mean of bpf/read 0.97-1.71 over 10 repetitions). read(2) works everywhere.
//
// Snapshots is the vpmu.Config.Snapshots of the bpf collector. It fails where the bpf
// collector cannot serve (BPF unavailable here, events other than software events and
// tracepoints, a kernel without what holding new processes needs), and the caller then
// falls back to read(2).
package collect

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/vpmu"
)

// Names of the collectors.
const (
	Read = "read"
	BPF  = "bpf"
	Auto = "auto"
)

// Resolve returns the collector a live run uses for the name asked for: "read" and "bpf"
// as given, "auto" "bpf" when this process can load the BPF collector and "read"
// otherwise; for auto, why not bpf (empty when bpf).
func Resolve(name string) (coll, why string, err error) {
	switch name {
	case Read, BPF:
		return name, "", nil
	case Auto:
		if err := bpf.Probe(); err != nil {
			return Read, err.Error(), nil
		}
		return BPF, "", nil
	}
	return "", "", fmt.Errorf("collector %q: want auto, read or bpf", name)
}

// Snapshots is the vpmu.Config.Snapshots of the bpf collector: it snapshots every copy in
// the kernel at every slice and, with req.Inherit, follows the tasks the target creates,
// threads and child processes, as inherited events do (bpf.Options.Descendants: not the
// target's sibling threads already present), each new process held stopped from its
// fork until its events are open, so that short-lived ones count from their first
// instruction. Without req.Inherit only the target thread counts. The views'
// copies are switched at the snapshots (bpf.Options.SwitchAtSnapshots) rather than with an
// ioctl after each: a copy then counts over exactly the slices its view scheduled it in,
// as on a real PMU, where switching after the snapshot misplaced 5-33% of single events'
// counts; and a truth copy and its view copies are read as one kernel event. With
// req.EnableOnExec the copies start counting at the target's next exec, as perf stat's
// own events do on the command it has forked.
func Snapshots(req vpmu.SnapshotRequest) (vpmu.Switchable, error) {
	if why := unsupported(req.Attrs); why != "" {
		return nil, fmt.Errorf("bpf collector: %s", why)
	}
	ua := make([]unix.PerfEventAttr, len(req.Attrs))
	for i, a := range req.Attrs {
		ua[i] = toUnix(a)
	}
	return bpf.NewCollector(bpf.Options{Pid: req.Pid, Threads: req.Inherit, Descendants: req.Inherit, HoldProcesses: req.Inherit,
		SwitchAtSnapshots: true, EnableOnExec: req.EnableOnExec, Events: ua, Slice: req.Slice})
}

// unsupported says why the bpf collector cannot serve a virtual PMU of these copies, or ""
// if it can (Snapshots then fails, and the caller falls back to read(2)). Every copy counts in the kernel all the time with SwitchAtSnapshots, which is
// exact for software events and tracepoints, which the kernel never multiplexes, but would
// make the kernel itself multiplex hardware events on a real CPU (and fail for want of a
// debug register for breakpoints): those need the read(2) backend's view copies,
// switched by ioctl.
func unsupported(attrs []perf.Attr) string {
	for _, a := range attrs {
		if a.Type != perf.TypeSoftware && a.Type != perf.TypeTracepoint {
			return fmt.Sprintf("an event of type %d (config %#x) is not a software event or tracepoint: its view copies must be switched by ioctl", a.Type, a.Config)
		}
	}
	return ""
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
