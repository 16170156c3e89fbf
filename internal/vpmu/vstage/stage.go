package vstage

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/bayesperf/bayesperf/inference/graph"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/schedule"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/vpmu"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// Stage is a sidecar.Stage backed by one virtual PMU per client.
type Stage struct {
	Counters int // programmable counters of the virtual PMU
	// Auto (with Counters 0) schedules only a client's hardware events, and only when
	// they are more than the PMU's counters can hold at once: the budget is measured per
	// client (vpmu.Budget), the truth copies' counters taken from it; software events
	// and tracepoints always count, and a client whose hardware events all fit keeps the
	// kernel's values.
	Auto     bool
	Interval time.Duration // multiplexing interval; 0 means the kernel's
	// Fixed lists events that sit on fixed counters and always count (as cycles and
	// instructions do on real CPUs): a client event with the same type and config as
	// one of them is never multiplexed. Build it with FixedEvents.
	Fixed []perf.Attr
	// Logf reports problems (the client keeps the kernel's values); nil discards.
	Logf func(format string, args ...any)
	// Infer publishes bayesperf's corrected values instead of the virtual PMU's raw
	// multiplexed view (see correct.go); `--correct bayesperf`.
	Infer bool
	// Schedule is the virtual PMU's schedule: "kernel" (the kernel's round robin, the
	// default) or "bayesperf" (the overlap schedule over Relations; the kernel's when
	// no relation links the client's events).
	Schedule string
	// Relations known between events (relation.Builtins and more), bound to each
	// client's events by name: they feed the model and the bayesperf schedule.
	Relations []relation.Relation
	// Truth keeps a hidden always-on copy of every event, reported by TruthTotals and
	// Report.
	Truth bool
	// Intervals keeps, for Report, a record of every round of reads (`--report`: the
	// report's intervals), about 50 bytes per event per round. Without it a client's
	// memory does not grow with its lifetime, and Report has its totals only.
	Intervals bool
	// Baseline also enforces the kernel's round robin on a second copy of the events
	// when the schedule is bayesperf's, so that the report's "linux" values are those
	// Linux would give on a real CPU, measured in the same run (as eval does).
	Baseline bool
	// Snapshots, when set, is how each client's virtual PMU reads its copies
	// (vpmu.Config.Snapshots: bpf.Snapshots); a client whose PMU
	// cannot be opened with it (BPF unavailable, hardware events, ...) falls back to
	// read(2), and the log says why. Nil: read(2) for every client.
	Snapshots func(perf.SnapshotRequest) (perf.Collector, error)
	// ReadWhy says why Snapshots is nil (--collector read, or BPF unavailable), for the
	// log line that names each client's collector.
	ReadWhy string

	// mu guards the client map and what the clients share (retired, used); it is
	// never held across a system call, nor while taking a client's mu. Each client's
	// work (building its PMU, reading it, its model) is under the client's own mu, so
	// that one client's PMU being built stalls no other client.
	mu      sync.Mutex
	clients map[clientKey]*client
	names   perf.Namer
	closing sync.WaitGroup // PMUs being closed in the background
	retired []ClientReport // reports of clients and targets that are finished
	used    map[string]int // virtual PMUs built, by collector
}

// clientKey is one virtual PMU: a client's events on one target task, or on one CPU
// (pid -1). A tool that counts several targets (perf stat --per-thread -p, one target
// per thread; perf stat -r, a new child per repetition; perf stat -a, one per CPU) gets
// one each, as a real CPU has a PMU each.
type clientKey struct {
	id  int
	pid int32
	cpu int32 // -1 for a task target
}

type client struct {
	mu     sync.Mutex               // guards the rest
	events map[uint32]sidecar.Event // every event seen and not unregistered, by handle
	order  []uint32                 // handles of the virtualised events, in PMU order
	index  map[uint32]int           // handle -> index in the PMU
	pmu    *vpmu.PMU
	runner *vpmu.Runner
	failed bool         // building failed for this set of events: do not retry every round
	corr   *correction  // per-PMU correction and report state
	final  []perf.Count // once finished: the virtual values at the end (the PMU is closed)
	logged string       // the last collector line logged for the client
	past   *pastReport  // the report of the PMUs rebuilt before the current one
	never  int          // events never counted (unfit groups) when last logged
	budget [2]int       // with Auto: the hardware events and counters when last logged
	// windows follows the tool's own enable, disable and reset of each event (window.go),
	// by handle.
	windows map[uint32]*window
	truth   bool // the PMU keeps always-on copies (Stage.Truth, or events that cost none)
}

var (
	_ sidecar.Stage         = (*Stage)(nil)
	_ sidecar.CallCorrector = (*Stage)(nil)
	_ sidecar.Unregisterer  = (*Stage)(nil)
	_ sidecar.Forgetter     = (*Stage)(nil)
	_ sidecar.Sampler       = (*Stage)(nil)
)

// Name is "vpmu".
func (s *Stage) Name() string { return "vpmu" }

func (s *Stage) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// Correct replaces the values of every virtualised event by its virtual counterpart. It
// takes a call that passes one event of a client for a read (see CorrectCall).
func (s *Stage) Correct(_ int64, events []sidecar.Event, values []shim.Values) {
	s.correct(0, events, values)
}

// CorrectCall is Correct told by the server what the call is: a round of a client
// left with one live event is then a round, not a read.
func (s *Stage) CorrectCall(_ int64, call sidecar.Call, events []sidecar.Event, values []shim.Values) {
	s.correct(call, events, values)
}

// correct serves a call; call 0 is unknown: a call with one event of a client is then
// taken for a read.
func (s *Stage) correct(call sidecar.Call, events []sidecar.Event, values []shim.Values) {
	// A call's events are one sidecar client's, on one or more targets: one virtual PMU
	// each, in the order first seen.
	var keys []clientKey
	byKey := map[clientKey][]int{} // indices into events
	for i, e := range events {
		k := keyOf(e)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	// A synchronous refresh passes only the event being read: a read by the tool, the
	// instant its values must refer to. A periodic round passes every live event (the
	// server says which, CorrectCall; without its word one event of a client is taken
	// for a read). A client whose virtual PMU has one event, or whose events have just
	// grown, is served as in a round, read or not, as before the server said.
	read := len(events) == 1
	if call != 0 {
		read = call == sidecar.CallRead
	}
	for _, k := range keys {
		c := s.client(k)
		c.mu.Lock()
		s.correctClient(k, c, byKey[k], read, events, values)
		c.mu.Unlock()
	}
}

// client returns the virtual PMU state of k, created empty if new.
func (s *Stage) client(k clientKey) *client {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clients == nil {
		s.clients = map[clientKey]*client{}
	}
	c := s.clients[k]
	if c == nil {
		c = &client{events: map[uint32]sidecar.Event{}}
		s.clients[k] = c
	}
	return c
}

// correctClient serves the events at idx (all of k's) of a call; c.mu is held.
func (s *Stage) correctClient(k clientKey, c *client, idx []int, read bool, events []sidecar.Event, values []shim.Values) {
	// Learn the events first, so the PMU is built once for all of them.
	grown := false
	for _, i := range idx {
		e := events[i]
		if _, ok := c.events[e.Handle]; !ok {
			c.events[e.Handle] = e
			grown = true
		}
	}
	if grown {
		t0 := time.Now()
		s.rebuild(k.id, c)
		c.restartWindows()
		if c.runner != nil {
			s.logf("vstage: client %d: virtual PMU of %d events of %s built in %v", k.id, len(c.index), targetName(int(k.pid), int(k.cpu)), time.Since(t0).Round(time.Microsecond))
		}
	}
	if c.runner == nil {
		return
	}
	read = read && len(c.index) > 1 && !grown
	for _, i := range idx {
		kern := values[i]
		counts := make([]uint64, len(values[i].Members))
		for m, mv := range values[i].Members {
			counts[m] = mv.Value
		}
		corrected := false
		if c.corr == nil {
			s.correctOne(c, events[i], &values[i])
		} else {
			corrected = s.correctInfer(c, events[i], &values[i], read)
		}
		if s.followWindows(c, events[i], counts, kern, corrected, &values[i]) && c.corr != nil && read {
			c.corr.served(c, events[i], values[i], counts)
		}
	}
}

// keyOf is the virtual PMU an event belongs to: its client's, on its target (a group's
// members share their leader's).
func keyOf(e sidecar.Event) clientKey { return clientKey{e.Client, e.Pid, e.CPU} }

// virtualises says the stage presents e through a virtual PMU: an event of a task on
// any CPU, or with --virtual-counters of every task on one CPU (perf stat -a). With
// Auto, a CPU's events keep the kernel's schedule (and kstage's correction after this
// stage), as before the virtual PMU followed CPUs.
func (s *Stage) virtualises(e sidecar.Event) bool {
	return e.CPU == -1 && e.Pid >= 0 || !s.Auto && e.Pid == -1 && e.CPU >= 0
}

// targetName names a virtual PMU's target in the log: "pid N" or "CPU N".
func targetName(pid, cpu int) string {
	if pid == -1 {
		return fmt.Sprintf("CPU %d", cpu)
	}
	return fmt.Sprintf("pid %d", pid)
}

// Unregistered forgets an event the tool closed. Once a target's events are all closed
// (perf stat -r after each repetition), its virtual PMU is finished and closed, and its
// report kept; a PMU that keeps other events keeps counting the closed one's copies
// until the client's events grow again.
func (s *Stage) Unregistered(e sidecar.Event) {
	k := keyOf(e)
	s.mu.Lock()
	c := s.clients[k]
	s.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.events, e.Handle)
	if len(c.events) == 0 {
		s.drop(c)
		s.mu.Lock()
		delete(s.clients, k)
		s.mu.Unlock()
	}
}

// Forget finishes and closes the virtual PMUs of a client that is gone, keeping their
// reports.
func (s *Stage) Forget(id int) {
	s.mu.Lock()
	var gone []*client
	for k, c := range s.clients {
		if k.id == id {
			gone = append(gone, c)
			delete(s.clients, k)
		}
	}
	s.mu.Unlock()
	for _, c := range gone {
		c.mu.Lock()
		s.drop(c)
		c.mu.Unlock()
	}
}

// drop finishes c's PMU, keeps its report and closes its copies in the background;
// c.mu is held.
func (s *Stage) drop(c *client) {
	if c.runner == nil {
		s.keep(c) // the PMUs before a rebuild that failed
		return
	}
	s.retire(c, false)
	s.closeLater(c.pmu)
	c.runner, c.pmu = nil, nil
}

func (s *Stage) correctOne(c *client, e sidecar.Event, v *shim.Values) {
	idx, ok := c.index[e.Handle]
	if !ok {
		return
	}
	handles := []uint32{e.Handle}
	if len(v.Members) > 1 {
		// A group read: the leader, then its members in the order they were opened.
		handles = append(handles, c.members(e.Handle)...)
		if len(handles) != len(v.Members) {
			return // not the group we know: leave the kernel's values
		}
	}
	lead, err := c.virtual(idx)
	if err != nil {
		s.logf("vstage: read virtual count of client %d event %d: %v", e.Client, e.Handle, err)
		return
	}
	vals := make([]uint64, len(handles))
	vals[0] = lead.Value
	for k, h := range handles[1:] {
		j, ok := c.index[h]
		if !ok {
			return
		}
		m, err := c.virtual(j)
		if err != nil {
			return
		}
		vals[k+1] = m.Value
	}
	for k := range v.Members {
		v.Members[k].Value = vals[k]
	}
	v.Enabled, v.Running = lead.Enabled, lead.Running
}

// virtual is what the client reads for event i through the virtual PMU: live, or once
// its PMU is finished and closed, the values it had then.
func (c *client) virtual(i int) (perf.Count, error) {
	if c.final != nil {
		if i < 0 || i >= len(c.final) {
			return perf.Count{}, fmt.Errorf("read final virtual count: event %d out of range", i)
		}
		return c.final[i], nil
	}
	return c.runner.Virtual(0, i)
}

// closeLater closes p in the background (Close waits for it), or at once when it holds
// pinned copies of hardware events (vpmu.PMU.Pins), which its successor needs the
// counters of.
func (s *Stage) closeLater(p *vpmu.PMU) {
	if p == nil {
		return
	}
	if p.Pins() {
		p.Close()
		return
	}
	s.closing.Add(1)
	go func() {
		defer s.closing.Done()
		p.Close()
	}()
}

// members returns the handles of the events whose leader is h, in handle order.
func (c *client) members(h uint32) []uint32 {
	var out []uint32
	for _, hh := range c.order {
		if c.events[hh].GroupHandle == h && hh != h {
			out = append(out, hh)
		}
	}
	return out
}

// rebuild (re)opens the client's virtual PMU over all its task-bound events; c.mu is
// held.
func (s *Stage) rebuild(id int, c *client) {
	if c.runner != nil {
		s.retire(c, true)
		// Closing inherited tracepoints waits for RCU grace periods: hundreds of
		// milliseconds for a few dozen events on a loaded machine, while the tool
		// waits for its registration to be answered. The old copies are no longer
		// read: close them in the background.
		s.closeLater(c.pmu)
		c.runner, c.pmu, c.corr, c.final = nil, nil, nil, nil
	}
	var hs []uint32
	for h, e := range c.events {
		if s.virtualises(e) {
			hs = append(hs, h)
		}
	}
	sort.Slice(hs, func(i, j int) bool { return hs[i] < hs[j] })
	if len(hs) == 0 {
		return
	}
	descs, first, target, onExec, inherit := c.descriptions(id, hs)
	counters, fixed, ok := s.budget(id, c, descs)
	if !ok {
		return
	}
	attrs := make([]perf.Attr, len(descs))
	for i, d := range descs {
		attrs[i] = d.Attr
	}
	var names []string
	var rels []relation.Relation
	if s.Infer || s.Truth || s.Schedule == "bayesperf" {
		// Only the model, the bayesperf schedule and the report need perf's names.
		names = s.names.Names(attrs)
		rels = relation.BindUniverse(s.Relations, names, s.names.Universe())
	}
	views, never, ok := s.views(id, c, descs, counters, fixed, names, rels)
	if !ok {
		return
	}
	corr, err := s.newCorrection(descs, names, rels, target, int(first.CPU))
	if err != nil {
		s.logf("vstage: correction for client %d: %v; publishing the virtual PMU's values", id, err)
	}
	if corr != nil {
		corr.never = make([]bool, len(descs))
		for _, e := range never {
			corr.never[e] = true
		}
		corr.sched = views[0].Name
		corr.handles = slices.Clone(c.order)
		if len(views) > 1 {
			l := newLinuxSums(len(descs))
			corr.lxKernel = &l
		}
	}
	truth := s.Truth || c.windowTruth(hs, descs)
	c.truth = truth
	cfg := vpmu.Config{Events: descs, Views: views, Pid: target, CPU: perf.AnyCPU,
		Inherit: inherit, EnableOnExec: onExec && notExecd(target, int(first.ClientPid)), Truth: truth}
	if target == -1 {
		// Every task on one CPU: nothing to inherit or exec.
		cfg.CPU, cfg.Inherit, cfg.EnableOnExec = int(first.CPU), false, false
	}
	p, coll, why, err := s.open(cfg)
	if err != nil {
		s.logf("vstage: open virtual PMU for client %d: %v", id, err)
		return
	}
	r, err := vpmu.NewRunner(p, s.Interval, corr != nil)
	if err != nil {
		p.Close()
		s.logf("vstage: start virtual PMU for client %d: %v", id, err)
		return
	}
	// One line per client: perf stat registers its events one by one, each a rebuild.
	if line := "collector " + coll + why; line != c.logged {
		s.logf("vstage: client %d: %s", id, line)
		c.logged = line
	}
	s.mu.Lock()
	if s.used == nil {
		s.used = map[string]int{}
	}
	s.used[coll]++
	s.mu.Unlock()
	if corr != nil {
		corr.coll = coll
	}
	c.pmu, c.runner, c.corr = p, r, corr
	if corr != nil {
		corr.client = id
		// The steps wait in the runner for the tool's next read, which may be hours
		// away (perf stat without -I): the sidecar calls the stage only when a tool
		// reads, so the runner says when they pile up.
		r.NotifyBacklog(backlogSteps, func() { s.drainBacklog(c, r) })
	}
}

// descriptions describes the client's events hs (in handle order) that count the first
// one's target, for one virtual PMU, and sets c.index and c.order to them; it returns
// the target (the client itself for pid 0; -1 for a CPU, first.CPU) and whether any is
// enabled on exec or inherited.
func (c *client) descriptions(id int, hs []uint32) (descs []perf.EventDesc, first sidecar.Event, target int, onExec, inherit bool) {
	// One target per PMU: the first event's (perf stat opens all on the same one).
	first = c.events[hs[0]]
	target = int(first.Pid)
	if target == 0 {
		target = int(first.ClientPid)
	}
	c.index = map[uint32]int{}
	c.order = c.order[:0]
	for _, h := range hs {
		e := c.events[h]
		if e.Pid != first.Pid || e.CPU != first.CPU {
			continue
		}
		a := perf.Attr{Type: e.Attr.Type, Size: perfabi.AttrSize, Config: e.Attr.Config,
			Flags: e.Attr.Flags & (perfabi.FlagExcludeUser | perfabi.FlagExcludeKern | perfabi.FlagExcludeHV | perfabi.FlagExcludeIdle | perfabi.FlagExcludeHost | perfabi.FlagExcludeGuest)}
		onExec = onExec || e.Attr.Flags&perfabi.FlagEnableOnExec != 0
		inherit = inherit || e.Attr.Flags&perfabi.FlagInherit != 0
		group := int(h)
		grouped := false
		if e.GroupHandle != 0 {
			group, grouped = int(e.GroupHandle), true
		} else {
			for _, o := range c.events {
				if o.GroupHandle == h {
					grouped = true
				}
			}
		}
		c.index[h] = len(descs)
		c.order = append(c.order, h)
		descs = append(descs, perf.EventDesc{Name: fmt.Sprintf("client%d/%d", id, h), Attr: a, Group: group, Grouped: grouped})
	}
	return descs, first, target, onExec, inherit
}

// budget is the number of programmable counters the client's PMU schedules over, and
// which of descs sit on fixed counters; false when the kernel's own values are to be
// published (with Auto: nothing to multiplex, or no counter left).
func (s *Stage) budget(id int, c *client, descs []perf.EventDesc) (int, []int, bool) {
	counters := s.Counters
	var fixed []int
	if s.Auto {
		var hw []perf.Attr
		for i, d := range descs {
			if vpmu.Derivable(d.Attr) {
				fixed = append(fixed, i)
			} else {
				hw = append(hw, d.Attr)
			}
		}
		if len(hw) == 0 {
			return 0, nil, false // the kernel never multiplexes software events and tracepoints
		}
		n, err := vpmu.Budget(hw, s.Truth)
		switch {
		case err != nil:
			s.logf("vstage: client %d: counter budget: %v; the kernel's values", id, err)
			return 0, nil, false
		case n >= len(hw):
			return 0, nil, false // they all fit: the kernel will not multiplex them
		case n < 1:
			s.logf("vstage: client %d: no counter left for %d hardware events (truth copies take the rest); the kernel's values", id, len(hw))
			return 0, nil, false
		}
		if b := [2]int{len(hw), n}; b != c.budget {
			s.logf("vstage: client %d: %d hardware events, %d counters free: scheduling them itself", id, len(hw), n)
			c.budget = b
		}
		counters = n
	}
	for i, d := range descs {
		for _, f := range s.Fixed {
			if d.Attr.Type == f.Type && d.Attr.Config == f.Config && !d.Grouped {
				fixed = append(fixed, i)
				break
			}
		}
	}
	return counters, fixed, true
}

// views are the schedules the client's PMU follows (the first is what the tool reads)
// and the events they never count (members of groups larger than the counters); false
// when no schedule can be built.
func (s *Stage) views(id int, c *client, descs []perf.EventDesc, counters int, fixed []int, names []string, rels []relation.Relation) ([]vpmu.View, []schedule.EventID, bool) {
	// Members of a group follow their leader (handle order), as the schedule needs.
	sp := vpmu.Spec(descs, counters, fixed)
	// A group with more events than counters is never counted, as on a real PMU (perf
	// prints <not counted>); the events beside it stay virtualised.
	sp.KeepUnfit = true
	var own *schedule.Schedule
	var err error
	if s.Schedule == "bayesperf" {
		if own, err = schedule.Overlap(sp, graph.FromRelations(names, rels), schedule.OverlapOptions{}); err != nil {
			s.logf("vstage: bayesperf schedule for client %d: %v; using the kernel's", id, err)
			own = nil
		}
	}
	ks, err := schedule.Kernel(sp)
	if err != nil {
		s.logf("vstage: schedule client %d: %v", id, err)
		return nil, nil, false
	}
	views := []vpmu.View{{Name: "kernel", Schedule: ks}}
	if own != nil {
		views[0] = vpmu.View{Name: "bayesperf", Schedule: own}
		if s.Baseline {
			views = append(views, vpmu.View{Name: "kernel", Schedule: ks})
		}
	}
	never := views[0].Schedule.Never(len(descs))
	if len(never) != c.never {
		c.never = len(never)
		s.logf("vstage: client %d: %d events in groups larger than the %d virtual counters are never counted, as on a real PMU", id, len(never), s.Counters)
	}
	return views, never, true
}

// windowTruth reports whether following the tool's windows (window.go) needs always-on
// copies of the events although Truth is off: when the tool opened an event disabled, to
// enable it itself, and the events are all software events or tracepoints, whose
// always-on copies cost no counter (with read(2) they are the copies the views are
// derived from anyway; with BPF one more copy each, which perf stat's PMUs, rebuilt at
// each registration, are spared).
func (c *client) windowTruth(hs []uint32, descs []perf.EventDesc) bool {
	truth := false
	for _, h := range hs {
		truth = truth || openedDisabled(c.events[h])
	}
	for _, d := range descs {
		truth = truth && vpmu.Derivable(d.Attr)
	}
	return truth
}

// backlogSteps is how many of a client's steps may wait for a read before they are given
// to its estimators anyway: about a second of the target running.
const backlogSteps = 256

// drainBacklog gives the estimators of client c the steps its runner r kept, unless r
// is no longer the client's or its correction has finished.
func (s *Stage) drainBacklog(c *client, r *vpmu.Runner) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runner != r || c.corr == nil || c.corr.finished {
		return
	}
	if err := c.corr.feed(r.Drain()); err != nil {
		s.logf("vstage: client %d: %v", c.corr.client, err)
	}
}

// open opens the client's virtual PMU with the Snapshots collector when there is one,
// else, or if that fails, with read(2). It returns the collector used ("bpf" or "read")
// and, for read, why not bpf (" (why)").
func (s *Stage) open(cfg vpmu.Config) (*vpmu.PMU, string, string, error) {
	why := s.ReadWhy
	if cfg.Pid == -1 {
		why = "a CPU target: the snapshotting collector follows tasks"
	} else if s.Snapshots != nil {
		cfg.Snapshots = s.Snapshots
		p, err := vpmu.Open(cfg)
		if err == nil {
			return p, "bpf", "", nil
		}
		why = err.Error()
		cfg.Snapshots = nil
	}
	if why == "" {
		why = "no snapshotting collector"
	}
	p, err := vpmu.Open(cfg)
	if err != nil {
		return nil, "", "", err
	}
	return p, "read", " (" + why + ")", nil
}

// Collector says which collector the clients' virtual PMUs read their copies with: "bpf"
// if every one built so far used the bpf collector, "read" if any used read(2) (a
// fallback), and with none built yet, what a client would get: "bpf" with Snapshots set,
// else "read".
func (s *Stage) Collector() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.used["read"] > 0:
		return "read"
	case s.used["bpf"] > 0 || s.Snapshots != nil:
		return "bpf"
	}
	return "read"
}

// FixedEvents resolves --fixed-counters names (perf syntax) into Stage.Fixed.
func FixedEvents(list string) ([]perf.Attr, error) {
	if list == "" {
		return nil, nil
	}
	evs, err := perf.ParseEvents(list)
	if err != nil {
		return nil, fmt.Errorf("resolve fixed counters: %w", err)
	}
	out := make([]perf.Attr, len(evs))
	for i, e := range evs {
		out[i] = e.Attr
	}
	return out, nil
}

// notExecd says the target still runs the client's binary, as a child the client forked
// does until it execs its command.
func notExecd(target, clientPid int) bool {
	a, err1 := os.Readlink(fmt.Sprintf("/proc/%d/exe", target))
	b, err2 := os.Readlink(fmt.Sprintf("/proc/%d/exe", clientPid))
	return err1 == nil && err2 == nil && a == b
}

// Close stops and closes every client's virtual PMU.
func (s *Stage) Close() error {
	s.mu.Lock()
	var all []*client
	for k, c := range s.clients {
		all = append(all, c)
		delete(s.clients, k)
	}
	s.mu.Unlock()
	for _, c := range all {
		c.mu.Lock()
		if c.runner != nil {
			s.retire(c, false)
			if c.pmu != nil {
				c.pmu.Close()
			}
		}
		s.keep(c)
		c.mu.Unlock()
	}
	s.closing.Wait()
	return nil
}

// Preload reads what naming the clients' events needs (every tracepoint id in tracefs)
// ahead of the first client, whose registration would otherwise wait for it.
func (s *Stage) Preload() { s.names.Preload() }
