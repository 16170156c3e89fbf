package vpmu

import (
	"errors"
	"io"
	"sync"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// Runner steps a PMU every interval in its own goroutine, for a server (the sidecar) that
// serves clients' reads while the target runs. Unlike PMU, its methods are safe for
// concurrent use.
//
// With a snapshotting collector (Config.Snapshots) the collector paces the steps: the
// goroutine waits for its next snapshot without the lock (a target that does not run
// gives none for as long as it sleeps, and reads must not wait for it), then takes the
// lock and steps, so that a read, a split or Stop never sees a snapshot taken from the
// collector but not yet applied.
type Runner struct {
	mu      sync.Mutex
	p       *PMU
	keep    bool
	steps   []Step
	err     error
	stopped bool
	quit    chan struct{}
	done    chan struct{}
	// backlog and onBacklog: see NotifyBacklog.
	backlog   int
	onBacklog func()
}

// NotifyBacklog has f called, in a goroutine of its own, each time the steps kept and
// not drained reach n, so that a consumer that drains them only when asked (a server
// whose tool reads rarely) can drain them before they pile up: the steps of a target
// that runs for hours between two reads would otherwise all be kept. f may call any
// method of the Runner.
func (r *Runner) NotifyBacklog(n int, f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.backlog, r.onBacklog = n, f
}

// keepStep keeps st (r.mu held) and calls the backlog notification when due.
func (r *Runner) keepStep(st Step) {
	if !r.keep || st.Idle {
		return
	}
	r.steps = append(r.steps, st)
	if r.onBacklog != nil && len(r.steps) == r.backlog {
		go r.onBacklog()
	}
}

// NewRunner starts p (Start) and steps it every interval (0: MuxInterval; with a
// snapshotting collector, at its snapshots). With keep set, the non-idle steps are kept
// for Stop to return.
func NewRunner(p *PMU, interval time.Duration, keep bool) (*Runner, error) {
	if interval <= 0 {
		interval = MuxInterval()
	}
	if err := p.Start(); err != nil {
		return nil, err
	}
	r := &Runner{p: p, keep: keep, quit: make(chan struct{}), done: make(chan struct{})}
	if p.paced {
		go r.snapLoop()
	} else {
		go r.loop(interval)
	}
	return r, nil
}

// snapLoop steps at the collector's snapshots until the target's final one (io.EOF),
// a failure, or Stop.
func (r *Runner) snapLoop() {
	defer close(r.done)
	for {
		werr := r.p.bc.Wait()
		select {
		case <-r.quit:
			return
		default:
		}
		r.mu.Lock()
		if r.stopped {
			r.mu.Unlock()
			return
		}
		st, err := r.p.Step()
		if errors.Is(err, io.EOF) {
			r.mu.Unlock()
			return // the final snapshot was the previous step; Stop's Flush adds nothing
		}
		if err == nil && werr != nil {
			err = werr
		}
		ok := r.settle(st, err)
		r.mu.Unlock()
		if !ok {
			return
		}
	}
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
			ok := r.settle(st, err)
			r.mu.Unlock()
			if !ok {
				return
			}
		}
	}
}

// settle keeps st, the result of a step that failed with err unless nil; a failure is
// kept instead, for Stop and the reads to report, and ends the stepping (false). r.mu
// is held.
func (r *Runner) settle(st Step, err error) bool {
	if err != nil {
		r.err = err
		return false
	}
	r.keepStep(st)
	return true
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
	r.keepStep(st)
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
// not drained yet) and the first stepping error. It does not close the PMU. With a
// snapshotting collector it does not wait for the stepping goroutine, which may be
// waiting for a snapshot of a target that sleeps: that goroutine steps no more, and
// returns at the next snapshot or when the PMU is closed.
func (r *Runner) Stop() ([]Step, error) {
	select {
	case <-r.quit:
		return nil, errors.New("stop virtual PMU runner: already stopped")
	default:
	}
	close(r.quit)
	if !r.p.paced {
		<-r.done
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopped = true
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
