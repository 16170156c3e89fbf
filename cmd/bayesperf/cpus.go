package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/statfmt"
	"golang.org/x/sys/unix"
)

// targetCPUs are the CPUs -a or -C ask to count on, nil for a task target; -A needs one
// of them. Every CPU of -C must be online.
func (f *statFlags) targetCPUs() ([]int, error) {
	if f.cpuList == "" && !f.allCPUs {
		if f.perCPU {
			return nil, usageErr("-A (one line per CPU) needs -a or -C LIST")
		}
		return nil, nil
	}
	online, err := perf.OnlineCPUs()
	if err != nil {
		return nil, err
	}
	if f.cpuList == "" {
		return online, nil
	}
	cpus, err := perf.ParseCPUList(f.cpuList)
	if err != nil {
		return nil, usageErr("-C %s: %v; give CPUs as perf does, e.g. 0-3,6", f.cpuList, err)
	}
	if len(cpus) == 0 {
		return nil, usageErr("-C: no CPU given")
	}
	for _, c := range cpus {
		if !slices.Contains(online, c) {
			return nil, usageErr("-C %s: CPU %d is not online (online: %v)", f.cpuList, c, online)
		}
	}
	return cpus, nil
}

// openCPUs opens and starts the session's events on every task of each of its CPUs, one
// track per CPU.
func (s *statSession) openCPUs() error {
	for _, c := range s.cpus {
		p, err := s.open(-1, c)
		if err != nil {
			return fmt.Errorf("count on CPU %d: %w", c, err)
		}
		tr, err := s.newTrack(c, []stepper{p})
		if err != nil {
			p.Close()
			return err
		}
		tr.pin = s.pinTo(tr)
	}
	return nil
}

// pinned runs the steps of one CPU's track on a thread bound to that CPU. A read(2) or
// ioctl of a CPU's perf event from another CPU is a cross-CPU function call (an IPI)
// into it, and with 35 events on each CPU those calls were half of the CPU time of
// stat -a (bench cpus); on its own CPU the kernel serves them locally, and the CPUs'
// tracks step in parallel instead of one after the other.
type pinned struct {
	req  chan bool // a step to take (true: the flush); closed: stop
	done chan error
}

// pinTo starts tr's pinned stepper; if the thread cannot be bound (an affinity mask
// that excludes the CPU), the steps run there anyway, as read(2) from anywhere works.
// The thread also reads the CPU's busy time (perf.BusyMeter), exact only on the CPU:
// without it (no cpuidle states, no schedstat, or an unbound thread) the CPU's slices
// last their wall time, idle time included.
func (s *statSession) pinTo(tr *track) *pinned {
	p := &pinned{req: make(chan bool), done: make(chan error)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var set unix.CPUSet
		set.Set(tr.cpu)
		if unix.SchedSetaffinity(0, &set) == nil {
			if m, err := perf.OpenBusyMeter(tr.cpu); err == nil {
				tr.busy = m
				defer m.Close()
			}
		}
		for flush := range p.req {
			p.done <- s.stepTrack(tr, flush)
		}
	}()
	return p
}

// target is what the header says was counted: the command, the process, every CPU
// (perf's 'system wide') or the -C list.
func (s *statSession) target(task string) string {
	switch {
	case s.cpuList != "":
		return statfmt.ForCPUs(s.cpuList)
	case s.cpus != nil:
		return statfmt.ForSystemWide()
	}
	return task
}

// pending says some track has slices not yet reported in an interval.
func (s *statSession) pending() bool {
	for _, tr := range s.tracks {
		if len(tr.slices) > tr.ivFrom {
			return true
		}
	}
	return false
}

// lines are the lines of the current interval of every track (final: of the whole run,
// smoothed, after Finish): one line per CPU and event with -A (perf's order: every CPU
// of the first event, then of the next), else summed over the tracks. The current
// interval starts anew.
func (s *statSession) lines(final bool) []statfmt.Counter {
	per := make([][]statfmt.Counter, len(s.tracks))
	for k, tr := range s.tracks {
		from := tr.ivFrom
		if final {
			tr.bp.Finish() // totals are smoothed: later slices inform earlier ones
			from = 0
		}
		per[k] = s.counters(tr, from, len(tr.slices))
		tr.ivFrom = len(tr.slices)
	}
	if !s.perCPU {
		return sumCounters(per)
	}
	var lines []statfmt.Counter
	for i := range s.evs {
		for k := range per {
			lines = append(lines, per[k][i])
		}
	}
	return lines
}

// sumCounters adds up, event by event, the lines of tracks that share no counts (CPUs):
// values, raw counts and times add; each side of the 95% interval is the root sum of
// squares of the tracks' (their models are independent); the status is the least exact
// of the tracks that counted. A single track's lines are returned as they are.
func sumCounters(per [][]statfmt.Counter) []statfmt.Counter {
	if len(per) == 1 {
		return per[0]
	}
	if len(per) == 0 {
		return nil
	}
	rank := map[string]int{inference.StatusExact.String(): 1, inference.StatusScaled.String(): 2, inference.StatusInferred.String(): 3}
	out := make([]statfmt.Counter, len(per[0]))
	for i := range out {
		c := statfmt.Counter{Event: per[0][i].Event, Status: inference.StatusNotCounted.String()}
		var lo2, hi2 float64
		for _, cs := range per {
			t := cs[i]
			c.Count += t.Count
			c.Enabled += t.Enabled
			c.Running += t.Running
			if !t.Counted {
				continue
			}
			c.Counted = true
			c.Value += t.Value
			c.Linux += t.Linux
			lo2 += (t.Value - t.Lo) * (t.Value - t.Lo)
			hi2 += (t.Hi - t.Value) * (t.Hi - t.Value)
			if rank[t.Status] > rank[c.Status] {
				c.Status = t.Status
			}
		}
		c.Lo, c.Hi = math.Max(c.Value-math.Sqrt(lo2), 0), c.Value+math.Sqrt(hi2)
		out[i] = c
	}
	return out
}
