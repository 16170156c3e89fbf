package vstage

import (
	"math"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/vpmu"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// The tool's own windows. A program that counts its own work (stress-ng --perf, PAPI's
// PAPI_start and PAPI_stop) resets and enables its events around that work and disables
// them after it; a real PMU counts an event only while the tool has it enabled, and
// restarts its count at a reset. The virtual PMU's copies count from the moment they
// are opened, whatever the tool does with its own events: alone they would show
// everything since then (the tool's setup, its earlier windows, the shim's own
// registrations and round trips).
//
// The tool's own kernel event follows every one of its ioctls exactly, and for the
// events presented here (the kernel does not multiplex them) it counts what an
// always-on copy counts while the tool's window is open. So at each call, per event,
// the share of the truth copy's increment since the previous call that the tool's own
// event also counted (dK/dT) is the share of the view's increment (dV) that fell
// inside the tool's window. When the window was open (dK = dT) or closed (dK = 0)
// throughout the interval this is exact; only an interval in which the window opened or
// closed and the view's schedule also changed is apportioned. time_enabled is the
// tool's own; time_running is the view's running time apportioned the same way, by the
// tool's enabled time against the virtual clock's. A reset restarts the value: the
// resets the shim counts in its client page (shim.Values.Resets: a group's leader's
// stand for its members), or the tool's count going down.
//
// A read inside the window of an event that counts the reader itself is a synchronous
// refresh here (a round trip to the sidecar), which the tool's own event would count
// like any other work in the window, and so would the followed value: the shim makes
// that round trip with the reading thread's events paused (its self_pause: one prctl
// each way, which the events count as they count a native read's system call), when
// it can vouch for their switch state. Otherwise (events of that thread on another task
// or CPU, a switch state it cannot know) the round trip is counted, as before. A
// program that reads only after its window (stress-ng) is not affected either way.
//
// Only events the tool opened disabled (without enable_on_exec) or switched, reset or
// refreshed since are followed: any other counts from its start to its end, as the
// copies do (perf stat's), and keeps the view as it is.
//
// The calls are the tool's reads and the sidecar's rounds (while the tool reads): no
// round is asked for beyond those, since a round over every event of a tool that
// opened dozens is work on the target's machine that itself disturbs what the target
// counts (its context switches, under stress-ng --perf). So a tool that reads only
// after its window (stress-ng) gets one interval from its last registration to that
// read, apportioned as a whole: exact on a view that schedules the event all along,
// and otherwise the view's share of the interval spread over the window.
//
// With few counters and many events a window's counts can be missed altogether: the
// view is then 0 in the window, and so is the value served (stress-ng's 59 events on 2
// counters, whose window's system calls fall in 2 of its slices); the report's round
// gives the tool's native count beside it, and the model's estimate with its interval.
// docs/selfmon.md has the figures, and what serving the model's mean instead gave.
//
// The copy and the view are read just before the tool's count (Sample, before the
// server reads the kernel), so the tool's count is never behind them: while the window
// is open the share is 1, and what the tool counted after the copy was read is
// apportioned at the next call. Were it the other way round, the tool's count would lag
// the copy's by what the target did in between, by a different amount each time, and
// shares below 1 inside an open window would lose counts.

// window is one event's state across calls; zero until its first call.
type window struct {
	runner *vpmu.Runner // the PMU the previous values are of (a rebuild restarts)
	k, t   uint64       // the tool's count and the truth copy's, at the previous call
	en     uint64       // the tool's enabled time, at the previous call
	v      uint64       // the view's count
	c      uint64       // the virtual clock
	r      uint64       // the view's running time
	at     float64      // the copy's increments apportioned to the tool's windows since its last reset
	ac     float64      // the virtual clock's, apportioned to the tool's enabled time
	value  float64      // the view's count within the tool's windows since its last reset
	run    float64      // the view's running time within the tool's windows
	pub    uint64       // the largest value published since the last reset
	resets uint16       // the tool's resets of the event (or its group) the shim counted
	follow bool         // the tool switched or reset the event, or opened it disabled
	// The copy and the view as Sample read them from the PMU sampled just before the
	// tool's count of the current call (nil, or another PMU: read them in
	// followWindows, after it).
	sampled *vpmu.Runner
	st      uint64
	sv      perf.Count
}

// share returns how much of an increment d of a copy's count belongs to the tool's
// windows, given what the tool counted in all (total) and what was apportioned so far
// (*done, which it advances): (total - *done) / d, kept within [0, 1].
func share(total uint64, d uint64, done *float64) float64 {
	x := float64(total) - *done
	if d == 0 {
		if x > 0 {
			return 1
		}
		return 0
	}
	f := min(max(x/float64(d), 0), 1)
	*done += f * float64(d)
	return f
}

// gate turns the view's values of one event (virt: count, virtual clock as enabled,
// running) into what the tool would read on a PMU that follows its ioctls, given the
// tool's own kernel values (count k, enabled en, running run) and the truth copy's
// count (hasTruth false: apportion by time alone). It returns the count and the
// running time; the enabled time is the tool's own.
func (w *window) gate(r *vpmu.Runner, k, en, run uint64, resets uint16, virt perf.Count, truth uint64, hasTruth bool) (uint64, uint64) {
	if w.runner != r {
		// The first call since the PMU was built: its copies count from then, from 0.
		// Of the tool's count, as much as the copy holds is taken to have come since;
		// what it counted before the copies existed is not in the view (a PMU rebuilt
		// in the middle of a window restarts from there, as the view does).
		*w = window{runner: r, k: k, en: en, at: float64(k - min(k, truth)), ac: float64(en - min(en, virt.Enabled)), resets: resets}
	}
	if k < w.k || resets != w.resets {
		// A reset (PERF_EVENT_IOC_RESET): the tool's count restarted from 0.
		w.at, w.value, w.pub = 0, 0, 0
	}
	dt, dv := pipeline.Sub(truth, w.t), pipeline.Sub(virt.Value, w.v)
	dc, dr := pipeline.Sub(virt.Enabled, w.c), pipeline.Sub(virt.Running, w.r)
	te := share(en, dc, &w.ac)
	x := te * float64(dv)
	if hasTruth && run == en {
		// The kernel never multiplexed the tool's event: its count is exact. The
		// copy's increment inside the windows is what the tool counted beyond what
		// was apportioned so far, at most all of it; the view counted the share of
		// it that it was scheduled for: all of it when it ran the whole interval (so
		// that it then gets exactly the tool's count, whatever the instants its own
		// counter and the copy were read at), none when it never ran, else its
		// increment's share of the copy's.
		in := min(max(float64(k)-w.at, 0), float64(dt))
		w.at += in
		sched := 1.0
		switch {
		case dr >= dc:
		case dr == 0:
			sched = 0
		case dt > 0:
			sched = min(float64(dv)/float64(dt), 1)
		default:
			sched = float64(dr) / float64(dc)
		}
		x = in * sched
	}
	w.value += x
	w.run += te * float64(dr)
	w.k, w.en, w.t, w.v, w.c, w.r, w.resets = k, en, truth, virt.Value, virt.Enabled, virt.Running, resets
	return uint64(math.Round(w.value)), min(uint64(math.Round(w.run)), en)
}

// followWindows turns what the stage is about to publish for e into what the tool would
// read on a PMU that follows its ioctls, given the tool's own kernel values read for
// this call (counts per member, enabled, running; kern.Resets and kern.Switches, the
// shim's count of its ioctls). The virtual view is gated as above; the model's running
// totals (corrected), which refer to the whole life of the PMU, become the gated view
// times the model's correction of the view (its running total over the view's count)
// when the view was multiplexed.
// Within a window the published value never decreases. An event the tool opened
// enabled (or enabled on exec) and never switched, reset or refreshed since counts from
// its start to its end, as the copies do: it is left as it is (perf stat). It says
// whether it followed the tool's windows. c.mu is held.
func (s *Stage) followWindows(c *client, e sidecar.Event, counts []uint64, kern shim.Values, corrected bool, v *shim.Values) bool {
	if c.runner == nil || len(counts) != len(v.Members) {
		return false
	}
	if w := c.windows[e.Handle]; (w == nil || !w.follow) && !openedDisabled(e) && (!kern.Counted || kern.Resets == 0 && kern.Switches == 0) {
		return false
	}
	handles := []uint32{e.Handle}
	if len(v.Members) > 1 {
		handles = append(handles, c.members(e.Handle)...)
		if len(handles) != len(v.Members) {
			return false
		}
	}
	if c.windows == nil {
		c.windows = map[uint32]*window{}
	}
	en, run := kern.Enabled, kern.Running
	var running uint64
	for m, h := range handles {
		j, ok := c.index[h]
		if !ok {
			return false
		}
		w := c.windows[h]
		if w == nil {
			w = &window{}
			c.windows[h] = w
		}
		truth, hasTruth := w.t, c.truth
		var view perf.Count
		if w.sampled != nil && w.sampled == c.runner {
			truth, view, w.sampled = w.st, w.sv, nil
		} else {
			w.sampled = nil
			var err error
			if truth, view, err = c.sampleOne(j, truth); err != nil {
				return false
			}
		}
		val, r := w.gate(c.runner, counts[m], en, run, kern.Resets, view, truth, hasTruth)
		w.follow = true
		if corrected && view.Value > 0 && view.Running < view.Enabled {
			// Multiplexed: the model's correction of the view. (A view that counted
			// all along is exact; the model's total refers to the round's boundary,
			// a little before this read, and would only scale it down.)
			val = uint64(float64(val) * float64(v.Members[m].Value) / float64(view.Value))
		}
		w.pub = max(w.pub, val)
		v.Members[m].Value = w.pub
		if m == 0 {
			running = r
		}
	}
	if corrected {
		running = en
	}
	v.Enabled, v.Running = en, running
	return true
}

// Sample reads, for the events of a call that follow the tool's windows, the always-on
// copy and the view just before the server reads the tool's counts (sidecar.Sampler).
func (s *Stage) Sample(_ sidecar.Call, events []sidecar.Event) {
	for _, e := range events {
		s.mu.Lock()
		c := s.clients[keyOf(e)]
		s.mu.Unlock()
		if c == nil {
			continue
		}
		c.mu.Lock()
		if w := c.windows[e.Handle]; c.runner != nil && (w != nil && w.follow || openedDisabled(e)) {
			for _, h := range append([]uint32{e.Handle}, c.members(e.Handle)...) {
				j, ok := c.index[h]
				if !ok {
					continue
				}
				if c.windows == nil {
					c.windows = map[uint32]*window{}
				}
				w := c.windows[h]
				if w == nil {
					w = &window{}
					c.windows[h] = w
				}
				t, v, err := c.sampleOne(j, w.t)
				if err != nil {
					continue
				}
				w.st, w.sv, w.sampled = t, v, c.runner
			}
		}
		c.mu.Unlock()
	}
}

// restartWindows starts the followed windows of c over on its PMU just built, whose
// copies count from now, from 0: the tool's count known at the last call is taken to
// have come before them (0 for an event still disabled since the tool opened it).
// Initialising a window only at its first call on the new PMU instead would take the
// tool's count beyond the copy's then (read a moment later) for counts from before the
// copies. c.mu is held.
func (c *client) restartWindows() {
	if c.runner == nil {
		return
	}
	for h, e := range c.events {
		w := c.windows[h]
		if w == nil && !openedDisabled(e) || w != nil && !w.follow && !openedDisabled(e) {
			continue
		}
		if c.windows == nil {
			c.windows = map[uint32]*window{}
		}
		var k, en uint64
		var resets uint16
		if w != nil {
			k, en, resets = w.k, w.en, w.resets
		}
		c.windows[h] = &window{runner: c.runner, k: k, en: en, at: float64(k), ac: float64(en), resets: resets, follow: true}
	}
}

// openedDisabled says the tool opened e disabled, to enable it itself (not on exec).
func openedDisabled(e sidecar.Event) bool {
	return e.Attr.Flags&perfabi.FlagDisabled != 0 && e.Attr.Flags&perfabi.FlagEnableOnExec == 0
}

// sampleOne reads event j's always-on copy (old when there is none) and its view at one
// instant: the copy before and after the view, again while the two differ (the target
// counted in between, up to a few times), so that a view that counted all along moves
// with the copy, and the share applied to it is the copy's. c.mu is held.
func (c *client) sampleOne(j int, old uint64) (uint64, perf.Count, error) {
	if !c.truth || c.final != nil {
		v, err := c.virtual(j)
		return old, v, err
	}
	var t uint64
	var v perf.Count
	var err error
	for range 4 {
		t1, err1 := c.runner.TruthNow(j)
		if v, err = c.virtual(j); err != nil {
			return old, v, err
		}
		t2, err2 := c.runner.TruthNow(j)
		if err1 != nil || err2 != nil {
			return old, v, nil
		}
		t = t2
		if t1 == t2 {
			break
		}
	}
	return t, v, nil
}
