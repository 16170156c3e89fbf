package bpf

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// tracefsRoots are where tracefs is found, newest convention first.
var tracefsRoots = []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}

// forkChildOffset returns the offset of child_pid in the sched_process_fork tracepoint
// record. It changed in 6.x (the comm fields became __data_loc), so it is read from tracefs
// rather than compiled in.
func forkChildOffset() (uint32, error) {
	var firstErr error
	for _, root := range tracefsRoots {
		b, err := os.ReadFile(root + "/events/sched/sched_process_fork/format")
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		return fieldOffset(b, "child_pid")
	}
	return 0, fmt.Errorf("read sched_process_fork format: %w", firstErr)
}

// fieldOffset finds "field:<type> <name>;\toffset:N;" in a tracefs format file.
func fieldOffset(format []byte, name string) (uint32, error) {
	for line := range bytes.Lines(format) {
		s := strings.TrimSpace(string(line))
		if !strings.HasPrefix(s, "field:") {
			continue
		}
		parts := strings.Split(s, ";")
		if len(parts) < 2 {
			continue
		}
		decl := strings.Fields(strings.TrimPrefix(parts[0], "field:"))
		if len(decl) == 0 || decl[len(decl)-1] != name {
			continue
		}
		for _, p := range parts[1:] {
			p = strings.TrimSpace(p)
			if v, ok := strings.CutPrefix(p, "offset:"); ok {
				off, err := strconv.ParseUint(v, 10, 16)
				if err != nil {
					return 0, fmt.Errorf("parse offset of field %s: %w", name, err)
				}
				return uint32(off), nil
			}
		}
		return 0, fmt.Errorf("find offset of field %s: no offset", name)
	}
	return 0, fmt.Errorf("find field %s in tracepoint format: not found", name)
}

// listThreads returns the tids of process pid.
func listThreads(pid int) ([]int, error) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return nil, fmt.Errorf("list threads of %d: %w", pid, err)
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}
