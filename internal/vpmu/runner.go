package vpmu

import (
	"errors"
	"sync"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Runner steps a PMU every interval in its own goroutine, for a server (the sidecar) that
// serves clients' reads while the target runs. Unlike PMU, its methods are safe for
// concurrent use.
type Runner struct {
	mu    sync.Mutex
	p     *PMU
	keep  bool
	steps []Step
	err   error
	quit  chan struct{}
	done  chan struct{}
}

// NewRunner starts p (Start) and steps it every interval (0: MuxInterval). With keep set,
// the non-idle steps are kept for Stop to return.
func NewRunner(p *PMU, interval time.Duration, keep bool) (*Runner, error) {
	if interval <= 0 {
		interval = MuxInterval()
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	r := &Runner{p: p, keep: keep, quit: make(chan struct{}), done: make(chan struct{})}
	go r.loop(interval)
	return r, nil
}

func (r *Runner) loop(iv time.Duration) {
	defer close(r.done)
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-r.quit:
			return
		case <-t.C:
			r.mu.Lock()
			st, err := r.p.Step()
			if err != nil {
				r.err = err
				r.mu.Unlock()
				return
			}
			if r.keep && !st.Idle {
				r.steps = append(r.steps, st)
			}
			r.mu.Unlock()
		}
	}
}

// Virtual is PMU.Virtual, safe while the runner steps.
func (r *Runner) Virtual(view, i int) (perf.Count, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return perf.Count{}, r.err
	}
	return r.p.Virtual(view, i)
}

// SplitNow ends the current slice now, between two ticks, without rotating (PMU.Split:
// for a reader that wants a slice boundary at the instant it reads), and keeps the step
// as the ticker's are. An idle step (the target did not run since the last one) records
// nothing.
func (r *Runner) SplitNow() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	st, err := r.p.Split()
	if err != nil {
		r.err = err
		return err
	}
	if r.keep && !st.Idle {
		r.steps = append(r.steps, st)
	}
	return nil
}

// Drain returns the steps kept since the last Drain (keep must be set) and forgets them,
// so that a long run does not keep every step.
func (r *Runner) Drain() []Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.steps
	r.steps = nil
	return out
}

// TruthNow is PMU.TruthNow, safe while the runner steps.
func (r *Runner) TruthNow(i int) (uint64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	return r.p.TruthNow(i)
}

// Stop ends the stepping, takes the last slice (Flush), and returns the kept steps (those
// not drained yet) and
// the first stepping error. It does not close the PMU.
func (r *Runner) Stop() ([]Step, error) {
	select {
	case <-r.quit:
		return nil, errors.New("stop virtual PMU runner: already stopped")
	default:
	}
	close(r.quit)
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.steps, r.err
	}
	st, err := r.p.Flush()
	if err != nil {
		return r.steps, err
	}
	if r.keep {
		r.steps = append(r.steps, st)
	}
	return r.steps, nil
}
