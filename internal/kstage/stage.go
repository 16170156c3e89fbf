package kstage

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/vpmu"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// Stage is a sidecar.Stage that corrects the kernel's multiplexing of each client's
// counting events from the values the sidecar reads (see the package doc).
type Stage struct {
	// Relations known between events (relation.Builtins and more), bound to each
	// target's events by perf's names.
	Relations []relation.Relation
	// Logf reports problems (the client keeps the kernel's values); nil discards.
	Logf func(format string, args ...any)
	// Unit is the kernel's multiplexing interval: slice durations are given to the
	// model in this unit (as stat and eval feed it), and Pace asks for rounds this
	// often. 0 reads perf_event_mux_interval_ms.
	Unit time.Duration
	// SelfFromKernel says the shim reads events that count the reader itself from the
	// kernel (the server's stage, this one alone, is KernelExact): targets that
	// include the tool (pid 0, a thread of the tool, a whole CPU with pid -1) are then
	// left alone, since no read would see their correction (perf stat -a on a machine
	// with many CPUs would otherwise keep a model per CPU for nothing).
	SelfFromKernel bool
	// MaxEvents is the most events of one target the model corrects (its cost grows
	// with their square; another user's client may register many); a target with more
	// keeps the kernel's values. 0 means 64.
	MaxEvents int
	// History is model.Options.History: slices whose covariances each target's model
	// keeps (memory: 8·k² bytes per slice for k events, times about 3); the smoothing
	// at each read costs O(k³) per kept slice. 0 means 256 (about a second at the
	// usual 4 ms; on the mixed workload 1024 was no more accurate and cost 0.7 s more
	// CPU per 5 s run).
	History int

	// mu guards the client map only; each client's correction (its models, the reads
	// of tracefs that naming its events may take) is under the client's own mu, so that
	// one client's slow call stalls no other client.
	mu       sync.Mutex
	clients  map[int]*client
	names    perf.Namer
	unitOnce sync.Once
	unitV    time.Duration
}

var (
	_ sidecar.Stage         = (*Stage)(nil)
	_ sidecar.CallCorrector = (*Stage)(nil)
	_ sidecar.Forgetter     = (*Stage)(nil)
	_ sidecar.Unregisterer  = (*Stage)(nil)
	_ sidecar.KernelExact   = (*Stage)(nil)
	_ sidecar.Pacer         = (*Stage)(nil)
	_ sidecar.Syncer        = (*Stage)(nil)
)

type client struct {
	mu      sync.Mutex               // guards the rest
	events  map[uint32]sidecar.Event // every live event seen, by handle
	targets map[targetKey]*target
}

// targetKey is what a perf event counts: a task (pid, cpu -1), a task on one CPU, or a
// CPU (pid -1). The kernel multiplexes each context separately, so each gets a model.
type targetKey struct{ pid, cpu int32 }

// target is the correction state of one target of one client. Per event (index j, in
// handle order): the raw values of the last round fed to the model, whether it was
// ever multiplexed, and its total estimate as of that round (base + the model's).
type target struct {
	key     targetKey
	owner   *client
	task    int // the task whose exit ends the run (0: per-CPU, none)
	handles []uint32
	index   map[uint32]int
	off     bool // too many events: the kernel's values

	last      []perf.Count   // raw values at the last round
	muxed     []bool         // ever ran less than it was enabled
	tot       []float64      // estimate of the running total through the last slice fed
	known     []bool         // the model has information on the event (its status is not not-counted)
	pub       pipeline.Floor // last value published: published values never decrease
	corrected []bool         // a value other than the kernel's was published
	md        *model.Model
	base      []float64     // totals when the model started
	fd        pipeline.Feed // gives the model its slices (durations already in intervals)
	sum       []float64     // the model's per-slice estimates summed (live: the filter's)
	final     bool          // the task is gone: tot are the smoother's final totals
	open      openSlice     // the slice being built (see segment)
	rate      []float64     // latest estimated rate per event, per ns: its share of the open slice
	clock     []bool        // a clock event of the model (pipeline.IsClock)
	roundAt   int64         // the time of the last round (the sidecar's clock, ns)
	ran       []bool        // the event counted in the last round (see span)
	lastEst   []float64     // estimate of each event in the newest slice
	// smoothed are the smoother's running totals through slice smoothedAt.
	smoothed   []float64
	smoothedAt int
	// class is each event's class of events the model's exact identities make equal
	// (model.EqualEvents), -1 for none; shared holds per class the part of the value
	// served since the last round (see publish).
	class  []int
	shared map[int]sharedPart
}

// sharedPart is what a class of equal events is served beyond its totals in the round
// that began at roundAt (final: after the run).
type sharedPart struct {
	roundAt int64
	final   bool
	v       float64
}

// Name is "kernel-mux".
func (s *Stage) Name() string { return "kernel-mux" }

// KernelExact is true: the shim may answer reads of events that count the reader
// itself (self-monitoring, perf stat -a) from the kernel, which spares a round trip per
// read but leaves those reads uncorrected (the tool scales them itself, as natively).
// Everything else a tool reads goes through Correct.
func (s *Stage) KernelExact() bool { return true }

// Forget drops a client's state.
func (s *Stage) Forget(id int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, id)
}

// watchEvery is how often the events of a target not yet multiplexed are read: a tool
// that reads only at the end (perf stat without -I) reads nothing in between, so only
// these rounds see the kernel start to multiplex.
const watchEvery = 50 * time.Millisecond

// Pace asks for rounds every multiplexing interval while one of the client's targets
// is being corrected: slices much longer than the kernel's rotation would hide it; and
// every watchEvery while a live target is not corrected yet, to see it multiplexed.
func (s *Stage) Pace(id int) time.Duration {
	c := s.lookup(id)
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var pace time.Duration
	for _, t := range c.targets {
		switch {
		case t.final || t.off:
		case t.md != nil:
			return s.unit()
		default:
			pace = watchEvery
		}
	}
	return pace
}

// Sync is true for the events of a target being corrected: their values are the
// smoother's running totals as of each read, so every read must ask for them (a
// refresh), whatever the sidecar's staleness bound.
func (s *Stage) Sync(e sidecar.Event) bool {
	c := s.lookup(e.Client)
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.targets[targetKey{e.Pid, e.CPU}]
	return t != nil && t.md != nil && !t.final && !t.off
}

// Preload reads what naming the clients' events needs ahead of the first client.
func (s *Stage) Preload() { s.names.Preload() }

func (s *Stage) unit() time.Duration {
	s.unitOnce.Do(func() {
		s.unitV = s.Unit
		if s.unitV <= 0 {
			s.unitV = vpmu.MuxInterval()
		}
	})
	return s.unitV
}

// lookup returns client id's state, nil if none.
func (s *Stage) lookup(id int) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[id]
}

func (s *Stage) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// read is one value of the call mapped to the events it carries: its members' handles
// (leader first for a group read) and their target.
type read struct {
	i   int
	t   *target
	idx []int // index of each member in t
}

// Correct is CorrectCall without the server's word on what the call is: a call with
// one event is taken for a read, one with more for a periodic round (a guess: a round
// of a client with a single live event passes one event too).
func (s *Stage) Correct(now int64, events []sidecar.Event, values []shim.Values) {
	call := sidecar.CallRound
	if len(events) == 1 {
		call = sidecar.CallRead
	}
	s.CorrectCall(now, call, events, values)
}

// CorrectCall feeds a periodic round (every live event of a client) to the clients'
// models, and so a read or registration that passes every live event of its client
// (a client with one); a read gets the smoother's running totals plus what the kernel
// counted since the last round, scaled (see publish), and so does a registration.
func (s *Stage) CorrectCall(now int64, call sidecar.Call, events []sidecar.Event, values []shim.Values) {
	if len(events) == 0 {
		return
	}
	// A call's events are all one client's (sidecar.Stage).
	s.mu.Lock()
	if s.clients == nil {
		s.clients = map[int]*client{}
	}
	c := s.clients[events[0].Client]
	if c == nil {
		c = &client{events: map[uint32]sidecar.Event{}, targets: map[targetKey]*target{}}
		s.clients[events[0].Client] = c
	}
	s.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range events {
		c.events[e.Handle] = e
	}
	// Map every value to its events, and each round's readings to the targets.
	reads := make([]read, 0, len(values))
	rounds := map[*target]map[int]perf.Count{}
	for i, e := range events {
		v := &values[i]
		if len(v.Members) == 0 {
			continue // the sidecar could not read it: the shim asks the kernel
		}
		hs := []uint32{e.Handle}
		if len(v.Members) > 1 {
			// A group read: the whole group, leader first, whichever member was read.
			lead := e.Handle
			if e.GroupHandle != 0 {
				lead = e.GroupHandle
			}
			hs = append([]uint32{lead}, c.members(lead)...)
			if len(hs) != len(v.Members) {
				continue // not the group we know: the kernel's values
			}
		}
		t := c.target(s, e)
		idx := make([]int, len(hs))
		for m, h := range hs {
			idx[m] = t.add(h)
		}
		reads = append(reads, read{i: i, t: t, idx: idx})
		if call == sidecar.CallRound || len(events) == len(c.events) {
			r := rounds[t]
			if r == nil {
				r = map[int]perf.Count{}
				rounds[t] = r
			}
			for m, j := range idx {
				r[j] = perf.Count{Value: v.Members[m].Value, Enabled: v.Enabled, Running: v.Running}
			}
		}
	}
	for t, r := range rounds {
		s.round(t, r)
		t.roundAt = now
	}
	for _, rd := range reads {
		// A read gets the values as of now even when it also fed the model (a client
		// with a single event), not the last read's.
		_, fed := rounds[rd.t]
		s.publish(now, rd.t, rd.idx, &values[rd.i], fed && call == sidecar.CallRound)
	}
}

// Unregistered drops an event the tool closed: it is in none of its client's calls from
// now on, so it leaves its target, whose model is rebuilt over the others (as for a
// late event: the totals so far become its base) or retired when none of them was
// ever multiplexed.
func (s *Stage) Unregistered(e sidecar.Event) {
	c := s.lookup(e.Client)
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.events, e.Handle)
	t := c.targets[targetKey{e.Pid, e.CPU}]
	if t == nil {
		return
	}
	j, ok := t.index[e.Handle]
	if !ok {
		return
	}
	if len(t.handles) == 1 {
		delete(c.targets, t.key)
		return
	}
	live := t.md != nil && !t.final && !t.off
	if live {
		s.closeSlice(t) // the open slice is the old model's
	}
	t.open = openSlice{}
	t.remove(j)
	if !live {
		return // no model, or one that takes no more slices: its totals stay
	}
	if !slices.Contains(t.muxed, true) {
		// What is left was never multiplexed: exact, published as it is.
		t.md, t.fd, t.smoothed, t.smoothedAt = nil, pipeline.Feed{}, nil, -1
		t.base, t.sum, t.lastEst, t.rate = nil, nil, nil, nil
		return
	}
	if err := s.start(t); err != nil {
		s.logf("kstage: target pid %d cpu %d: %v; publishing the kernel's values", t.key.pid, t.key.cpu, err)
		t.off = true
	}
}

// remove deletes event j from the target's per-event state.
func (t *target) remove(j int) {
	del := func(xs []float64) []float64 {
		if j < len(xs) {
			return slices.Delete(xs, j, j+1)
		}
		return xs
	}
	t.handles = slices.Delete(t.handles, j, j+1)
	t.index = map[uint32]int{}
	for i, h := range t.handles {
		t.index[h] = i
	}
	t.last = slices.Delete(t.last, j, j+1)
	t.muxed = slices.Delete(t.muxed, j, j+1)
	t.known = slices.Delete(t.known, j, j+1)
	t.pub = slices.Delete(t.pub, j, j+1)
	t.corrected = slices.Delete(t.corrected, j, j+1)
	t.ran = slices.Delete(t.ran, j, j+1)
	t.tot, t.base, t.sum = del(t.tot), del(t.base), del(t.sum)
	t.rate, t.lastEst, t.smoothed = del(t.rate), del(t.lastEst), del(t.smoothed)
	if j < len(t.clock) {
		t.clock = slices.Delete(t.clock, j, j+1)
	}
	t.class, t.shared = nil, nil // start finds them again
}

// members returns the handles of the events whose leader is h, in handle order.
func (c *client) members(h uint32) []uint32 {
	var out []uint32
	for hh, e := range c.events {
		if e.GroupHandle == h && hh != h {
			out = append(out, hh)
		}
	}
	slices.Sort(out)
	return out
}

// target returns the state of e's target, creating it.
func (c *client) target(s *Stage, e sidecar.Event) *target {
	k := targetKey{e.Pid, e.CPU}
	if t := c.targets[k]; t != nil {
		return t
	}
	t := &target{key: k, owner: c, index: map[uint32]int{}}
	switch {
	case e.Pid == 0:
		t.task = int(e.ClientPid)
	case e.Pid > 0:
		t.task = int(e.Pid)
	}
	t.off = s.SelfFromKernel && countsClient(e)
	c.targets[k] = t
	return t
}

// add returns handle h's index in t, adding it.
func (t *target) add(h uint32) int {
	if j, ok := t.index[h]; ok {
		return j
	}
	j := len(t.handles)
	t.index[h] = j
	t.handles = append(t.handles, h)
	t.last = append(t.last, perf.Count{})
	t.muxed = append(t.muxed, false)
	t.tot = append(t.tot, 0)
	t.known = append(t.known, false)
	t.pub = append(t.pub, 0)
	t.corrected = append(t.corrected, false)
	t.ran = append(t.ran, false)
	return j
}

// round takes one periodic round of the target's events (cumulative raw values by
// index): their deltas since the last round, cut into the kernel's slices (segment),
// feed the model.
func (s *Stage) round(t *target, cur map[int]perf.Count) {
	if t.off || t.final {
		return
	}
	if max := s.maxEvents(); len(t.handles) > max {
		s.logf("kstage: target pid %d cpu %d has %d events, more than %d: publishing the kernel's values", t.key.pid, t.key.cpu, len(t.handles), max)
		t.off = true
		return
	}
	if t.md != nil && t.md.Events() != len(t.handles) {
		// Events registered after the model started (tools open all theirs before
		// they start the workload, so this is rare): they join the rebuilt model from
		// the next round; until then their totals are the kernel's scaled values.
		for j := t.md.Events(); j < len(t.handles); j++ {
			if r, ok := cur[j]; ok {
				t.last[j], t.tot[j], t.muxed[j] = r, pipeline.Scaled(r), r.Running < r.Enabled
				delete(cur, j)
			}
		}
	}
	var en uint64
	muxed := false
	for j, r := range cur {
		en = max(en, pipeline.Sub(r.Enabled, t.last[j].Enabled))
		if r.Running < r.Enabled {
			t.muxed[j] = true
		}
		muxed = muxed || t.muxed[j]
	}
	if en == 0 {
		// The target did not run: nothing to learn. Has it exited?
		if t.md != nil && t.task > 0 && perf.TaskFinished(t.task) {
			s.finish(t)
		}
		return
	}
	if t.md == nil && !muxed {
		// Never multiplexed: every value is exact and published as it is.
		for j, r := range cur {
			t.last[j] = r
			t.tot[j] = float64(r.Value)
		}
		return
	}
	if t.md == nil || t.md.Events() != len(t.handles) {
		if t.md != nil {
			s.closeSlice(t) // the open slice belongs to the old model's events
		}
		if err := s.start(t); err != nil {
			s.logf("kstage: target pid %d cpu %d: %v; publishing the kernel's values", t.key.pid, t.key.cpu, err)
			t.off = true
			return
		}
	}
	// The slices' durations (and the count of a clock event, model.Options.Clocks) are
	// the round's span of the target's time, which only an event counting at both
	// reads knows for sure (span): the kernel brings an event's enabled time up to
	// date when it starts or stops counting, and the times of an inherited event sum
	// its children's, which lag in their own ways, so an event's enabled delta can be
	// far shorter than the round (its time stale) or far longer (caught up). Taken for
	// the span, a stale one cut a round into a slice far shorter than what the
	// counting events counted over: a rate the target never had (on the arm64
	// testbed, one slice in ten read 1.1x-19x the PMU's one instruction per ns), which
	// the model carried on into the slices where they did not count. Each event's
	// share of the round is its running time over the span.
	ref := t.span(cur)
	rd := make([]roundDelta, 0, len(cur))
	for j, r := range cur {
		p := t.last[j]
		d := roundDelta{j: j, count: pipeline.Sub(r.Value, p.Value)}
		d.frac = min(float64(pipeline.Sub(r.Running, p.Running))/float64(ref), 1)
		rd = append(rd, d)
		t.last[j] = r
	}
	sort.Slice(rd, func(a, b int) bool { return rd[a].j < rd[b].j })
	s.segment(t, float64(ref), rd)
}

// start (re)builds the target's model over its events. The totals so far become the
// base the model's totals add to: the kernel's exact values for events never
// multiplexed, the estimates for the others.
func (s *Stage) start(t *target) error {
	attrs := make([]perf.Attr, len(t.handles))
	c := t.owner
	for j, h := range t.handles {
		e := c.events[h]
		// The privilege levels are part of the name (instructions:u), which binds the
		// privilege splits between the target's events.
		attrs[j] = perf.Attr{Type: e.Attr.Type, Config: e.Attr.Config,
			Flags: e.Attr.Flags & (perfabi.FlagExcludeUser | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV)}
	}
	names := s.names.Names(attrs)
	rels := relation.BindUniverse(s.Relations, names, s.names.Universe())
	hist := s.History
	if hist <= 0 {
		hist = 256
	}
	// Marked without marks: kstage asks only for totals from the start and for the
	// newest slice, so frozen slices fold into one block and a run of any length
	// takes bounded memory.
	mc := pipeline.ModelConfig{Names: names, Relations: rels, Options: model.Options{History: hist, Marked: true}}
	t.clock = make([]bool, len(attrs))
	if t.key.pid >= 0 {
		mc.Attrs = attrs // a task target's task-clock is its clock
		for j, a := range attrs {
			t.clock[j] = pipeline.IsClock(a)
		}
	}
	md, err := pipeline.NewModel(mc)
	if err != nil {
		return err
	}
	t.class, t.shared = md.EqualEvents(), map[int]sharedPart{}
	n := len(t.handles)
	// The old model's smoothed totals stop at the last read before the rebuild: until
	// the new model has a slice, reads get the totals (base) instead.
	t.md, t.fd, t.smoothed, t.smoothedAt = md, pipeline.Feed{Estimators: []inference.Estimator{md}}, nil, -1
	t.base = make([]float64, n)
	for j := range n {
		t.base[j] = t.tot[j]
	}
	t.sum, t.lastEst = make([]float64, n), make([]float64, n)
	s.logf("kstage: target pid %d cpu %d: correcting %d events (%d relations bound)", t.key.pid, t.key.cpu, n, len(rels))
	return nil
}

// totals updates the running totals after a slice with the newest slice's filtered
// estimates: the base of a rebuilt model and, through lastEst, each event's latest
// rate. What reads get are the smoother's totals (smooth), the most accurate of the
// ways tried (docs/model.md). (A published total revised down later cannot be taken back:
// values never decrease, so a revision comes out of the following intervals.) The
// smoother's final totals come at the end (finish).
func (s *Stage) totals(t *target) {
	est := t.md.Estimate(t.fd.Slices-1, t.fd.Slices)
	mean, _ := t.md.Posterior(t.fd.Slices-1, t.fd.Slices)
	for j := range t.handles {
		if j >= len(est) {
			continue
		}
		// One slice's estimate is clipped at zero (and at what it counted): summed
		// over slices, the clipped noise of rare events would only add up.
		v := est[j].Value
		if est[j].Status == inference.StatusInferred && j < len(mean) {
			v = mean[j]
		}
		t.sum[j] += v
		t.lastEst[j] = v
		// Once informed, always: a slice whose estimate failed numerically says
		// not-counted too, and falling back to the kernel's raw value then would
		// publish less than before.
		t.known[j] = t.known[j] || est[j].Status != inference.StatusNotCounted
		if t.muxed[j] {
			t.tot[j] = t.base[j] + t.sum[j]
		} else {
			t.tot[j] = float64(t.last[j].Value)
		}
	}
}

// smooth computes the smoother's running totals given every slice so far (once per
// slice count: a tool's reads come in bursts). Its cost grows with the slices whose
// covariances the model keeps (History), older ones are sums already smoothed.
func (s *Stage) smooth(t *target) {
	if t.smoothedAt == t.fd.Slices || t.fd.Slices == 0 {
		return
	}
	est := t.md.Estimate(0, t.fd.Slices)
	t.smoothed = make([]float64, len(est))
	for j := range est {
		t.smoothed[j] = t.base[j] + est[j].Value
	}
	t.smoothedAt = t.fd.Slices
}

// finish ends the target's run: the smoother's final totals.
func (s *Stage) finish(t *target) {
	if t.final || t.md == nil {
		return
	}
	s.closeSlice(t)
	t.final = true
	t.md.Finish()
	est := t.md.Estimate(0, t.fd.Slices)
	for j := range t.handles {
		if j < len(est) && t.muxed[j] && est[j].Status != inference.StatusNotCounted {
			t.tot[j] = t.base[j] + est[j].Value
			t.known[j] = true
		}
	}
	s.logf("kstage: target pid %d cpu %d gone after %d slices: final totals", t.key.pid, t.key.cpu, t.fd.Slices)
}

// publish writes what the tool reads for one value: the kernel's when the event was
// never multiplexed (exact) or the model knows nothing of it; else the estimate of its
// running total with time_running = time_enabled, so that the tool's own scaling
// leaves it unchanged. Outside a round (a synchronous refresh), and after the run, the
// kernel's delta since the last round is added, scaled by enabled/running.
func (s *Stage) publish(now int64, t *target, idx []int, v *shim.Values, isRound bool) {
	if t.off || t.md == nil {
		t.publishKernel(idx, v)
		return
	}
	if !isRound && !t.final && t.task > 0 && perf.TaskFinished(t.task) {
		// A read after the target exited (perf stat reads once its command is
		// reaped): the final totals, even before the next round.
		s.finish(t)
	}
	muxed := false
	for _, j := range idx {
		if !t.known[j] {
			t.publishKernel(idx, v) // never counted and tied to nothing counted: <not counted> stays
			return
		}
		muxed = muxed || t.muxed[j]
	}
	if !muxed {
		t.publishKernel(idx, v) // exact: the kernel's values, bit for bit
		return
	}
	if !t.final {
		if isRound {
			// The mirror is marked MirrorSync (see Sync): no read serves this
			// publication without a refresh, so it keeps the last read's values (a
			// round's own totals could be above what a later read gets).
			for m, j := range idx {
				v.Members[m].Value = t.pub[j]
				t.corrected[j] = true
			}
			v.Running = v.Enabled
			return
		}
		s.smooth(t)
	}
	act := t.activity()
	for m, j := range idx {
		val := t.tot[j]
		if !t.final && j < len(t.smoothed) && t.muxed[j] {
			val = t.smoothed[j]
		}
		live := t.pending(j, act)
		if !isRound || t.final {
			// Since the last round: what the kernel counted, scaled by enabled/running
			// where the event ran part of the time, at its latest rate times the open
			// slice's activity where not at all.
			// An event's enabled time may be stale (see round): one that started
			// counting since has its time while it did not count caught up at once,
			// more than the target ran since the round, which is at most the time
			// since the round.
			p := t.last[j]
			dv := float64(pipeline.Sub(v.Members[m].Value, p.Value))
			de := float64(pipeline.Sub(v.Enabled, p.Enabled))
			dr := float64(pipeline.Sub(v.Running, p.Running))
			if since := now - t.roundAt; t.roundAt > 0 && since >= 0 {
				de = min(de, max(float64(since), dr))
			}
			switch {
			case dr > 0:
				live += dv * max(de, dr) / dr
			case j < len(t.rate) && !t.final:
				live += t.rate[j] * de * act
			}
		}
		if c := t.classOf(j); c >= 0 && t.muxed[j] {
			// Equal events get one increment per round, the first member's read
			// after the round: each is its own kernel counter, read one after the
			// other, so what the kernel added since the round differs between them
			// by the counts in between, and the identity would not hold in what the
			// tool reads.
			if sh, ok := t.shared[c]; ok && sh.roundAt == t.roundAt && sh.final == t.final {
				live = sh.v
			} else {
				t.shared[c] = sharedPart{t.roundAt, t.final, live}
			}
		}
		val += live
		t.corrected[j] = true
		v.Members[m].Value = t.pub.Raise(j, pipeline.Round(val))
	}
	v.Running = v.Enabled
}

// publishKernel publishes the kernel's values of events idx. What is published as the kernel gave it is a floor too: a value corrected later
// must not be below it. One never corrected follows the kernel exactly (a tool's
// PERF_EVENT_IOC_RESET included). Once a member was corrected (the target turned
// off later, a group member the model knows nothing of), the value is the
// kernel's scaled by enabled/running, as the tool would scale it, never below what
// was published, and time_running stays time_enabled: going back to the kernel's
// running time would make it decrease (perf stat -I's deltas would wrap).
func (t *target) publishKernel(idx []int, v *shim.Values) {
	corrected := false
	for _, j := range idx {
		corrected = corrected || t.corrected[j]
	}
	for m, j := range idx {
		if !corrected {
			t.pub[j] = v.Members[m].Value // the kernel's, a RESET included
			continue
		}
		u := pipeline.Round(pipeline.Scaled(perf.Count{Value: v.Members[m].Value, Enabled: v.Enabled, Running: v.Running}))
		v.Members[m].Value = t.pub.Raise(j, u)
		t.corrected[j] = true
	}
	if corrected {
		v.Running = v.Enabled
	}
}

// classOf is event j's class of equals, or -1.
func (t *target) classOf(j int) int {
	if j < len(t.class) {
		return t.class[j]
	}
	return -1
}

func (s *Stage) maxEvents() int {
	if s.MaxEvents > 0 {
		return s.MaxEvents
	}
	return 64
}

// countsClient says e counts the tool that opened it, as the shim decides it (pid 0,
// the tool or one of its threads, or every task of a CPU).
func countsClient(e sidecar.Event) bool {
	if e.Pid <= 0 || e.Pid == e.ClientPid {
		return true
	}
	_, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", e.ClientPid, e.Pid))
	return err == nil
}
