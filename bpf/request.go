package bpf

import (
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Names of the collectors, as --collector takes them.
const (
	CollectorRead = "read"
	CollectorBPF  = "bpf"
	CollectorAuto = "auto"
)

// Resolve returns the collector a live run uses for the name asked for: "read" and
// "bpf" as given, "auto" "bpf" when this process can load the BPF collector (Probe) and
// "read" otherwise; for auto, why not bpf (empty when bpf).
func Resolve(name string) (coll, why string, err error) {
	switch name {
	case CollectorRead, CollectorBPF:
		return name, "", nil
	case CollectorAuto:
		if err := Probe(); err != nil {
			return CollectorRead, err.Error(), nil
		}
		return CollectorBPF, "", nil
	}
	return "", "", fmt.Errorf("collector %q: want auto, read or bpf", name)
}

// Snapshots is the snapshotting collector a virtual PMU asks for (vpmu.Config.Snapshots):
// it snapshots every event in the kernel at every slice and, with req.Inherit, follows
// the tasks the target creates, threads and child processes, as inherited events do
// (Options.Descendants: not the target's sibling threads already present), each new
// process held stopped from its fork until its events are open, so that short-lived ones
// count from their first instruction. Without req.Inherit only the target thread counts.
// Events are switched at the snapshots (Options.SwitchAtSnapshots) rather than with an
// ioctl after each: a view's copy then counts over exactly the slices its view scheduled
// it in, as on a real PMU, and a truth copy and its view copies are read as one kernel
// event. With req.EnableOnExec the events start counting at the target's next exec, as
// perf stat's own events do on the command it has forked.
//
// It fails where it cannot serve (BPF unavailable here, events other than software
// events and tracepoints), and the caller then falls back to read(2).
func Snapshots(req perf.SnapshotRequest) (perf.Collector, error) { return snapshots(req, nil) }

// snapshots is Snapshots, with the programs and maps from l when not nil.
func snapshots(req perf.SnapshotRequest, l *Loader) (perf.Collector, error) {
	if why := unsupported(req.Attrs); why != "" {
		return nil, fmt.Errorf("bpf collector: %s", why)
	}
	return buildCollector(Options{Pid: req.Pid, Threads: req.Inherit, Descendants: req.Inherit, HoldProcesses: req.Inherit,
		SwitchAtSnapshots: true, EnableOnExec: req.EnableOnExec, Events: req.Attrs, Slice: req.Slice}, l)
}

// unsupported says why Snapshots cannot serve these events, or "" if it can. With
// SwitchAtSnapshots every event counts in the kernel all the time, which is exact for
// software events and tracepoints, which the kernel never multiplexes, but would make
// the kernel itself multiplex hardware events on a real CPU (and fail for want of a
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
