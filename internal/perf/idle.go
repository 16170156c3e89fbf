package perf

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// BusyMeter measures the time a CPU ran something (a task, the kernel on a task's
// behalf or in an interrupt) rather than idled. A CPU target's events are enabled all
// the time, idle or not, so their enabled time is wall time; the busy time is the CPU's
// analogue of a task's enabled time, the time the task ran.
//
// Two sources, the first available:
//   - the cpuidle driver's residency per idle state
//     (/sys/devices/system/cpu/cpuN/cpuidle/stateK/time, us): busy = wall - idle;
//   - the scheduler's statistics (/proc/schedstat, CONFIG_SCHEDSTATS): the time tasks
//     other than the idle task ran on the CPU (rq_cpu_time, ns).
//
// Both are accounted when the CPU switches from idle to a task (cpuidle: on leaving the
// idle state; schedstat: when a task is switched out): read from a thread running on
// that CPU, they are exact up to the read, as nothing else can be running or idling
// then; read from another CPU, a period still going on is missing. Call Busy from a
// thread bound to the CPU.
type BusyMeter struct {
	cpu   int
	idle  []*os.File // cpuidle states; nil with schedstat
	sched *os.File   // /proc/schedstat
	buf   []byte
	last  uint64 // the idle (cpuidle) or busy (schedstat) time at the last read, ns
}

// ErrNoBusyTime says a CPU has neither cpuidle states (no cpuidle driver, idle=poll)
// nor schedstat (a kernel without CONFIG_SCHEDSTATS).
var ErrNoBusyTime = errors.New("neither cpuidle states nor /proc/schedstat to tell busy time from idle time")

// OpenBusyMeter opens the busy time of cpu, read from now on.
func OpenBusyMeter(cpu int) (*BusyMeter, error) {
	m := &BusyMeter{cpu: cpu, buf: make([]byte, 64)}
	states, _ := filepath.Glob(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/cpuidle/state[0-9]*/time", cpu))
	for _, s := range states {
		f, err := os.Open(s)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("CPU %d idle time: %w", cpu, err)
		}
		m.idle = append(m.idle, f)
	}
	if len(m.idle) == 0 {
		f, err := os.Open("/proc/schedstat")
		if err != nil {
			return nil, fmt.Errorf("CPU %d: %w", cpu, ErrNoBusyTime)
		}
		m.sched, m.buf = f, make([]byte, 64<<10)
	}
	var err error
	if m.last, err = m.read(); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Source names what the meter reads: "cpuidle" or "schedstat".
func (m *BusyMeter) Source() string {
	if m.sched != nil {
		return "schedstat"
	}
	return "cpuidle"
}

// Busy returns the time the CPU was busy since the previous call (or the meter's
// opening), given the wall time wallNs elapsed meanwhile: at most wallNs.
func (m *BusyMeter) Busy(wallNs uint64) (uint64, error) {
	now, err := m.read()
	if err != nil {
		return 0, err
	}
	d := now - min(m.last, now)
	m.last = max(m.last, now)
	if m.sched != nil {
		return min(d, wallNs), nil
	}
	return wallNs - min(d, wallNs), nil
}

// read is the cumulative idle time (cpuidle) or busy time (schedstat), ns.
func (m *BusyMeter) read() (uint64, error) {
	if m.sched != nil {
		return m.readSchedstat()
	}
	var sum uint64
	for _, f := range m.idle {
		n, err := f.ReadAt(m.buf, 0) // sysfs makes the value anew at offset 0
		if n == 0 && err != nil {
			return 0, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		us, err := strconv.ParseUint(string(bytes.TrimSpace(m.buf[:n])), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", f.Name(), err)
		}
		sum += us
	}
	return sum * 1000, nil
}

// readSchedstat is the CPU's rq_cpu_time, the 7th number of its "cpuN" line.
func (m *BusyMeter) readSchedstat() (uint64, error) {
	n := 0
	for {
		k, err := m.sched.ReadAt(m.buf[n:], int64(n))
		n += k
		if err != nil || k == 0 {
			if err != nil && !errors.Is(err, io.EOF) {
				return 0, fmt.Errorf("read /proc/schedstat: %w", err)
			}
			break
		}
		if n == len(m.buf) {
			m.buf = append(m.buf, make([]byte, len(m.buf))...)
		}
	}
	return SchedstatRunNs(m.buf[:n], m.cpu)
}

// SchedstatRunNs finds cpu's rq_cpu_time (ns tasks ran on it) in /proc/schedstat's text.
func SchedstatRunNs(text []byte, cpu int) (uint64, error) {
	key := []byte(fmt.Sprintf("cpu%d ", cpu))
	for line := range bytes.Lines(text) {
		if !bytes.HasPrefix(line, key) {
			continue
		}
		f := bytes.Fields(line[len(key):])
		if len(f) < 7 {
			break
		}
		return strconv.ParseUint(string(f[6]), 10, 64)
	}
	return 0, fmt.Errorf("/proc/schedstat: no line for CPU %d with its run time", cpu)
}

// Close closes the files read.
func (m *BusyMeter) Close() error {
	var errs []error
	for _, f := range m.idle {
		errs = append(errs, f.Close())
	}
	if m.sched != nil {
		errs = append(errs, m.sched.Close())
	}
	m.idle, m.sched = nil, nil
	return errors.Join(errs...)
}
