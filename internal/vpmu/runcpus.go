package vpmu

import (
	"fmt"
	"os/exec"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// RunCPUs runs cmd while one virtual PMU per CPU of cpus counts every task on that CPU
// (cfg.Pid, cfg.CPU and cfg.Inherit are set here; cfg.Snapshots must be nil: the read(2)
// collector reads CPU targets), all opened and started before cmd runs its first
// instruction and stepped together every interval (0: MuxInterval) until it exits. It
// returns one Result per CPU, in the order of cpus, each with the same steps' times; the
// last step is taken after the exit. A CPU's step is never idle: its events are enabled
// all the time.
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
	step := func(flush bool) error {
		for i, p := range pmus {
			var st Step
			var err error
			if flush {
				st, err = p.Flush()
			} else {
				st, err = p.Step()
			}
			if err != nil {
				return fmt.Errorf("CPU %d step %d: %w", cpus[i], p.step, err)
			}
			res[i].Steps = append(res[i].Steps, st)
		}
		return nil
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
