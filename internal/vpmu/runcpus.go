package vpmu

import (
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// RunCPUs runs cmd while one virtual PMU per CPU of cpus counts every task on that CPU
// (cfg.Pid, cfg.CPU and cfg.Inherit are set here; cfg.Snapshots must be nil: the read(2)
// collector reads CPU targets), all opened and started before cmd runs its first
// instruction and stepped together every interval (0: MuxInterval) until it exits. It
// returns one Result per CPU, in the order of cpus, each with the same steps' times; the
// last step is taken after the exit. A CPU's step is never idle: its events are enabled
// all the time.
//
// Each CPU is stepped by a thread bound to it, which reads the CPU's busy time
// (perf.BusyMeter) with the step: a slice's Duration is the time the CPU ran something
// in it (SetBusy), as a task's slice lasts the time the task ran. Without a source of
// busy time (perf.ErrNoBusyTime) slices last their wall time.
func RunCPUs(cfg Config, cpus []int, cmd *exec.Cmd, interval time.Duration) ([]*Result, error) {
	if cfg.Snapshots != nil {
		return nil, fmt.Errorf("run on CPUs: a snapshotting collector follows tasks, not CPUs")
	}
	if len(cpus) == 0 {
		return nil, fmt.Errorf("run on CPUs: no CPU given")
	}
	if interval <= 0 {
		interval = MuxInterval()
	}
	cfg.Pid, cfg.Inherit, cfg.EnableOnExec = -1, false, false
	if cfg.Interval <= 0 {
		cfg.Interval = interval
	}
	pmus := make([]*PMU, 0, len(cpus))
	defer func() {
		for _, p := range pmus {
			p.Close()
		}
	}()
	err := perf.StartAttached(cmd, func(int) error {
		for _, c := range cpus {
			cfg.CPU = c
			p, err := Open(cfg)
			if err != nil {
				return fmt.Errorf("CPU %d: %w", c, err)
			}
			pmus = append(pmus, p)
			if err := p.Start(); err != nil {
				return fmt.Errorf("CPU %d: %w", c, err)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	res := make([]*Result, len(cpus))
	for i := range res {
		res[i] = &Result{Interval: interval}
	}
	start := time.Now()
	steppers := make([]*cpuStepper, len(pmus))
	for i, p := range pmus {
		steppers[i] = newCPUStepper(cpus[i], p)
		defer steppers[i].stop()
	}
	step := func(flush bool) error {
		for _, c := range steppers {
			c.req <- flush
		}
		var errs []error
		for i, c := range steppers {
			r := <-c.done
			if r.err != nil {
				errs = append(errs, fmt.Errorf("CPU %d step %d: %w", cpus[i], len(res[i].Steps), r.err))
				continue
			}
			res[i].Steps = append(res[i].Steps, r.st)
		}
		return errors.Join(errs...)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case werr := <-done:
			if err := step(true); err != nil {
				return nil, err
			}
			for _, r := range res {
				if _, err := r.finish(cmd, start, werr); err != nil {
					return nil, err
				}
			}
			return res, nil
		case <-tick.C:
			if err := step(false); err != nil {
				_ = cmd.Process.Kill()
				<-done
				return nil, err
			}
		}
	}
}

// EnabledNs is the slice's enabled time (a CPU target's: its wall time), ns, as Step
// made it its views' Duration; 0 for an idle step.
func (st *Step) EnabledNs() uint64 {
	if len(st.Views) == 0 {
		return 0
	}
	return uint64(st.Views[0].Duration)
}

// SetBusy makes the views' slices last busyNs, the time a CPU target ran something in
// the slice (perf.BusyMeter), at least 1 ns, instead of its enabled (wall) time: the
// time base of a CPU's rates, as a task's running time is a task's. The readings keep
// their enabled and running times, and so the kernel's scaling.
func (st *Step) SetBusy(busyNs uint64) {
	for v := range st.Views {
		st.Views[v].Duration = float64(max(busyNs, 1))
	}
}

// cpuStepper steps one CPU's PMU on a thread bound to that CPU: the reads and ioctls of
// its events are then local (from another CPU each is a cross-CPU call), and its idle
// time is read where no idle period can be going on.
type cpuStepper struct {
	req  chan bool // a step (true: Flush); closed: stop
	done chan cpuStep
}

type cpuStep struct {
	st  Step
	err error
}

func newCPUStepper(cpu int, p *PMU) *cpuStepper {
	c := &cpuStepper{req: make(chan bool), done: make(chan cpuStep)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		var set unix.CPUSet
		set.Set(cpu)
		var busy *perf.BusyMeter
		if unix.SchedSetaffinity(0, &set) == nil { // unbound, the steps still work
			if m, err := perf.OpenBusyMeter(cpu); err == nil {
				busy = m
				defer m.Close()
			}
		}
		for flush := range c.req {
			var r cpuStep
			if flush {
				r.st, r.err = p.Flush()
			} else {
				r.st, r.err = p.Step()
			}
			if r.err == nil && busy != nil {
				if b, err := busy.Busy(r.st.EnabledNs()); err == nil {
					r.st.SetBusy(b)
				}
			}
			c.done <- r
		}
	}()
	return c
}

func (c *cpuStepper) stop() { close(c.req) }
