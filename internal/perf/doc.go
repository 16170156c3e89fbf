// Package perf is the project's thin layer over perf_event_open(2): opening, enabling and
// reading events, and perf's event-name syntax resolved through sysfs and tracefs. The
// ABI itself (Attr, the flag and read_format bits, the read layouts) is package perfabi.
//
// Typical use:
//
//	evs, err := perf.ParseEvents("task-clock,{page-faults,minor-faults},syscalls:sys_enter_*")
//	// each EventDesc holds an Attr ready to open (ReadFormat = enabled|running)
//	e, err := perf.Open(evs[0].Attr, pid, perf.AnyCPU, nil)
//	c, err := e.ReadCount() // raw (value, enabled, running), never scaled
//
// Event names follow perf's -e syntax: generic hardware and software names and their
// aliases (cycles, page-faults/faults, cs...), cache events (L1-dcache-load-misses),
// tracepoints subsys:name with globs, pmu/term=value,.../ resolved through
// /sys/bus/event_source/devices/PMU/{type,format,events}, raw rNNNN, modifiers :u :k :h
// :G :H :I :p :P :D :e, and {a,b} groups. ParseList only checks syntax (pure, fuzzed);
// Resolver turns Specs into attrs; an unknown name's error names close matches.
//
// Namer names opened attrs back (perf's generic and tracepoint names; with
// SetCoreEventNames, the vendor's names of the CPU's core PMU events, inst_retired on
// Arm), the names relations are written in.
//
// Collector is the one contract of the project's collectors: snapshots per slice, a
// Peek between them, events switched on and off. ReadCollector implements it with
// read(2), one read per group where the events were opened as a group with FormatGroup;
// package bpf's collector implements it with in-kernel snapshots. StartAttached starts
// a command stopped after
// its execve so events can be opened on it before it runs.
//
// Errors are wrapped with the action that failed; syscalls and parsers never panic on
// kernel or user input. Types are not safe for concurrent use unless stated otherwise.
package perf
