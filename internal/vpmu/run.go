package vpmu

import (
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Result is a whole run of a command under the virtual PMU.
type Result struct {
	Steps    []Step
	Interval time.Duration
	WallNs   int64
	ExitErr  error // the command's own failure (non-zero exit), if any
}

// RunCommand starts cmd, opens the virtual PMU on it (cfg.Pid and cfg.CPU are set here;
// Inherit is forced so its threads and children count) before it runs its first
// instruction, steps every interval (0: MuxInterval) until it exits, and returns every
// step, the last one taken after the exit so nothing counted is left out.
func RunCommand(cfg Config, cmd *exec.Cmd, interval time.Duration) (*Result, error) {
	if interval <= 0 {
		interval = MuxInterval()
	}
	cfg.CPU = perf.AnyCPU
	cfg.Inherit = true
	if cfg.Interval <= 0 {
		cfg.Interval = interval
	}
	var p *PMU
	err := perf.StartAttached(cmd, func(pid int) error {
		cfg.Pid = pid
		var err error
		if p, err = Open(cfg); err != nil {
			return err
		}
		return p.Start()
	})
	if err != nil {
		if p != nil {
			p.Close()
		}
		return nil, err
	}
	defer p.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	res := &Result{Interval: interval}
	start := time.Now()
	if p.paced {
		// The collector paces the slices and says when the target is gone.
		for {
			st, err := p.Step()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				_ = cmd.Process.Kill()
				<-done
				return nil, err
			}
			if !st.Idle { // a snapshot that found the target not run since the last one
				res.Steps = append(res.Steps, st)
			}
		}
		return res.finish(cmd, start, <-done)
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			st, serr := p.Flush()
			if serr != nil {
				return nil, fmt.Errorf("final step %d: %w", p.step, serr)
			}
			res.Steps = append(res.Steps, st)
			return res.finish(cmd, start, err)
		case <-tick.C:
			st, err := p.Step()
			if err != nil {
				_ = cmd.Process.Kill()
				<-done
				return nil, err
			}
			if !st.Idle {
				res.Steps = append(res.Steps, st)
			}
		}
	}
}

// finish completes the result of cmd, started at start, whose Wait returned werr: the
// command's own failure (an exit status) is part of the result, any other is an error.
func (res *Result) finish(cmd *exec.Cmd, start time.Time, werr error) (*Result, error) {
	res.WallNs = time.Since(start).Nanoseconds()
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return nil, fmt.Errorf("wait for %s: %w", cmd.Path, werr)
	}
	res.ExitErr = werr
	return res, nil
}
