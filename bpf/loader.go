package bpf

import (
	"runtime"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// A Loader serves Snapshots with the BPF programs and maps of each collector loaded ahead,
// in a goroutine of its own, so that a tool's start does not wait for them.
//
// Loading them (the verifier, the maps, a 1 MiB ring buffer) is most of what a collector
// costs to build: 2.5-10ms on the 2-core VMs, against 0.5ms to open the events, attach
// the programs and start the timers once loaded. A virtual PMU builds a collector each
// time a client's events grow, and perf stat registers its events one by one, each
// registration waiting for its build: so the tool's start waited for one load per event.
// The programs' load-time constants (the number of events per task, the slots) depend on
// the request, so one load cannot serve every build; the Loader predicts them instead. It
// loads, as soon as it is made, what the first registrations of a tool need (NewLoader),
// and after each build of n kernel events, in the background, one of n+1 (the tool's
// next event) and, for the first builds of a PMU, another of n (the next target: perf
// stat -r's next repetition, the next tool), the latter only once builds have paused
// for laterDelay (the tool has started). Loads run at normal priority, and at nice -10
// while a build waits for one (see run). A build takes a loaded set when one is
// ready, waits for it when it is being loaded or queued (for what remains of that load
// only), and loads its own when none was predicted (LoaderStats says how many of each).
// Values do not depend on it: a preloaded set is exactly what the build would have
// loaded, never used before.
//
// At most maxPrepared sets are kept (each holds a ring buffer of 1 MiB of kernel memory
// and about ten fds); the least recently prepared one is closed to make room. Nothing runs
// while no build happens: the loading goroutines exit when the queue is empty.
type Loader struct {
	mu      sync.Mutex
	closed  bool
	sets    []*prepared // ready, loading or queued, oldest first
	queue   []*prepared // queued, not yet loading, next first
	running int         // loading goroutines running
	stats   LoaderStats
	built   time.Time     // the last build's start
	kick    chan struct{} // wakes a loading goroutine waiting to load a later set
	tid     int           // the loading goroutine's thread, 0 when none runs
	waiting int           // builds waiting for a set being loaded
}

// LoaderStats counts how the Loader's builds got their programs and maps.
type LoaderStats struct {
	// Ready builds took a set loaded ahead, without waiting.
	Ready int `json:"ready"`
	// Waited builds found their set being loaded (or queued) ahead, and waited for the
	// rest of that load.
	Waited int `json:"waited"`
	// Loaded builds found nothing predicted, and loaded their programs on the tool's path.
	Loaded int `json:"loaded"`
	// Prepared sets were loaded ahead in all; Discarded of them were closed unused (to
	// make room, or by Close).
	Prepared  int `json:"prepared"`
	Discarded int `json:"discarded"`
}

// maxPrepared bounds the sets a Loader keeps, loadWorkers the sets it loads at once.
// Sets of at most firstNr kernel events (a PMU's first four builds) are loaded again
// after they are taken, for the next target, once builds have paused for laterDelay.
const (
	maxPrepared = 6
	loadWorkers = 1
	firstNr     = 5
	laterDelay  = 100 * time.Millisecond
)

// loadKey is what load depends on besides the event attributes: sets with the same key are
// interchangeable.
type loadKey struct {
	nr, nslots        int
	systemWide, forks bool
	hold              bool
	ringBytes         int
}

// prepared is one set of programs and maps: a Collector on which only load has run.
type prepared struct {
	key  loadKey
	c    *Collector    // set once loaded without error
	done chan struct{} // closed when the load is over
	busy bool          // being loaded
	// later: for a later target (a replacement of a set just taken), loaded only once
	// builds have paused for laterDelay, at normal priority: the builds of the tool
	// starting now need the CPU more.
	later bool
}

// NewLoader returns a Loader that starts loading, in the background, what a virtual PMU's
// first builds need: PMUs of one to firstNr-1 events on a task and its descendants
// (inherited events, as perf stat opens them one by one: its default software events
// are four), in that order, then of one event on one task (a program counting itself,
// as stress-ng --perf does).
func NewLoader() *Loader {
	l := &Loader{kick: make(chan struct{}, 1)}
	l.prepare(snapshotsKey(1, false), false)
	for n := firstNr - 1; n >= 1; n-- {
		l.prepare(snapshotsKey(n, true), false) // the newest is loaded first
	}
	return l
}

// Snapshots is bpf.Snapshots with the collector's programs and maps loaded ahead when
// predicted.
func (l *Loader) Snapshots(req perf.SnapshotRequest) (perf.Collector, error) {
	return snapshots(req, l)
}

// Stats returns how the builds so far got their programs.
func (l *Loader) Stats() LoaderStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Close frees the sets not taken and stops loading more; a build under way still gets its
// programs (its own, if its set was not loaded yet). It waits for a load in progress.
func (l *Loader) Close() {
	l.mu.Lock()
	l.closed = true
	queued, sets := l.queue, l.sets
	l.queue, l.sets = nil, nil
	l.mu.Unlock()
	l.wake()
	for _, p := range queued {
		close(p.done) // never loaded: a build waiting for it loads its own
	}
	for _, p := range sets {
		<-p.done
		l.discard(p)
	}
}

// discard frees p, a set no build will take, once its load is over.
func (l *Loader) discard(p *prepared) {
	if p.c == nil {
		return
	}
	p.c.release()
	l.mu.Lock()
	l.stats.Discarded++
	l.mu.Unlock()
}

// Default options of NewCollector, which Snapshots uses.
const (
	defaultMaxThreads = 1024
	defaultRingBytes  = 1 << 20
)

// snapshotsKey is the key of what Snapshots loads for a virtual PMU of n distinct events
// (the PMU's clock, a dummy event, is one more), inherited or not.
func snapshotsKey(n int, inherit bool) loadKey {
	nslots := 1
	if inherit {
		nslots = defaultMaxThreads
	}
	return loadKey{nr: n + 1, nslots: nslots, forks: inherit, hold: inherit, ringBytes: defaultRingBytes}
}

// keyOf is the key of what c.load(nslots, systemWide) loads.
func keyOf(c *Collector, nslots int, systemWide bool) loadKey {
	return loadKey{nr: c.nr, nslots: nslots, systemWide: systemWide, forks: c.opts.Threads && !systemWide,
		hold: c.opts.HoldProcesses, ringBytes: c.opts.RingBytes}
}

// bare is a Collector with only what load reads set, for k.
func bare(k loadKey) *Collector {
	return &Collector{nr: k.nr, opts: Options{Threads: k.forks, HoldProcesses: k.hold, RingBytes: k.ringBytes, MaxThreads: k.nslots}}
}

// load gives c its programs and maps, as c.load(nslots, systemWide) would: a set prepared
// ahead when there is one (waiting for the rest of its load if it is being loaded or
// queued: a queued one goes first), else its own. Then it prepares, in the background,
// the sets the next builds are likely to need: one with an event more and, for a PMU's
// first builds, one like it.
func (l *Loader) load(c *Collector, nslots int, systemWide bool) error {
	k := keyOf(c, nslots, systemWide)
	l.mu.Lock()
	l.built = time.Now()
	p := l.find(k)
	promoted := false
	if p != nil {
		l.remove(p) // claimed: no eviction nor Close frees it now
		if l.unqueue(p) {
			p.later, promoted = false, true
			l.queue = append([]*prepared{p}, l.queue...)
		}
	}
	l.mu.Unlock()
	if promoted {
		l.wake() // a loading goroutine may be waiting for builds to pause
	}
	defer func() {
		if k.nr <= firstNr {
			l.prepare(k, true) // the next target's first builds
		}
		if k.nr < maxEvents {
			g := k
			g.nr++
			l.prepare(g, false) // the tool's next event: loaded first
		}
	}()
	if p != nil {
		waited := false
		select {
		case <-p.done:
		default:
			waited = true
			l.mu.Lock()
			l.waiting++
			tid := l.tid
			l.mu.Unlock()
			if tid != 0 {
				// The tool waits for this load now: see run.
				_ = unix.Setpriority(unix.PRIO_PROCESS, tid, -10)
			}
			<-p.done
			l.mu.Lock()
			l.waiting--
			l.mu.Unlock()
		}
		if p.c != nil {
			c.adopt(p.c)
			l.mu.Lock()
			if waited {
				l.stats.Waited++
			} else {
				l.stats.Ready++
			}
			l.mu.Unlock()
			return nil
		}
	}
	l.mu.Lock()
	l.stats.Loaded++
	l.mu.Unlock()
	return c.load(nslots, systemWide)
}

// adopt takes the programs and maps of b, a bare collector that load has run on.
func (c *Collector) adopt(b *Collector) {
	c.array, c.coll, c.thrMap, c.heldMap, c.stats, c.rd, c.early = b.array, b.coll, b.thrMap, b.heldMap, b.stats, b.rd, b.early
}

// find returns the set of key k kept (ready, loading or queued), or nil; l.mu is held.
func (l *Loader) find(k loadKey) *prepared {
	for _, p := range l.sets {
		if p.key == k {
			return p
		}
	}
	return nil
}

// remove takes p out of the kept sets; l.mu is held.
func (l *Loader) remove(p *prepared) {
	if i := slices.Index(l.sets, p); i >= 0 {
		l.sets = slices.Delete(l.sets, i, i+1)
	}
}

// unqueue takes p out of the queue and reports whether it was there; l.mu is held.
func (l *Loader) unqueue(p *prepared) bool {
	i := slices.Index(l.queue, p)
	if i < 0 {
		return false
	}
	l.queue = slices.Delete(l.queue, i, i+1)
	return true
}

// prepare queues the loading of a set of key k unless one is kept, making room if needed
// by dropping the oldest set not being loaded. The newest request is loaded first (it is
// the build likely to come next), except a later one, loaded last.
func (l *Loader) prepare(k loadKey, later bool) {
	var evict []*prepared
	l.mu.Lock()
	if l.closed || l.find(k) != nil {
		l.mu.Unlock()
		return
	}
	for len(l.sets) >= maxPrepared {
		i := slices.IndexFunc(l.sets, func(p *prepared) bool { return !p.busy })
		if i < 0 {
			l.mu.Unlock()
			return
		}
		old := l.sets[i]
		l.sets = slices.Delete(l.sets, i, i+1)
		if l.unqueue(old) {
			close(old.done) // never loaded
		} else {
			evict = append(evict, old)
		}
	}
	p := &prepared{key: k, done: make(chan struct{}), later: later}
	l.sets = append(l.sets, p)
	if later {
		l.queue = append(l.queue, p)
	} else {
		l.queue = append([]*prepared{p}, l.queue...)
	}
	start := l.running < loadWorkers
	if start {
		l.running++
	}
	l.mu.Unlock()
	for _, old := range evict {
		l.discard(old) // loaded: not busy, not queued
	}
	if start {
		go l.run()
	} else if !later {
		l.wake()
	}
}

// wake wakes a loading goroutine waiting to load a later set.
func (l *Loader) wake() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// run loads queued sets, one at a time, until the queue is empty (loadWorkers of them
// run at once at most: one, so that a load the next build needs is not slowed down by
// one it may not need, on a machine of 2 CPUs).
func (l *Loader) run() {
	// The loads run on their own OS thread at normal priority: ahead of the builds,
	// they should not take the CPU from the tool starting meanwhile (perf's own start
	// is on its path too). But a registration that comes before its set is loaded
	// waits for it, and on a loaded machine a load at normal priority took 20-170ms of
	// wall time for its 2.5ms of CPU: so a build that waits raises the thread to nice
	// -10 (when allowed: root), as the collector's consumer runs, until no build waits.
	// The thread dies with the goroutine (it never unlocks), so no other goroutine
	// inherits the priority.
	runtime.LockOSThread()
	tid := unix.Gettid()
	l.mu.Lock()
	l.tid = tid
	l.mu.Unlock()
	for {
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.running--
			l.tid = 0
			l.mu.Unlock()
			return
		}
		p := l.queue[0]
		if wait := laterDelay - time.Since(l.built); p.later && wait > 0 {
			l.mu.Unlock()
			select {
			case <-l.kick:
			case <-time.After(wait):
			}
			continue
		}
		l.queue = l.queue[1:]
		p.busy = true
		nice := 0
		if l.waiting > 0 {
			nice = -10
		}
		l.mu.Unlock()
		_ = unix.Setpriority(unix.PRIO_PROCESS, tid, nice)
		c := bare(p.key)
		if err := c.load(p.key.nslots, p.key.systemWide); err != nil {
			// The build that wants it loads its own, and reports the error.
			c.release()
			c = nil
		}
		l.mu.Lock()
		p.c, p.busy = c, false
		if c != nil {
			l.stats.Prepared++
		}
		// A build that claimed it adopts it; Close, if it removed it, frees it.
		close(p.done)
		l.mu.Unlock()
	}
}
