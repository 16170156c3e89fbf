package vstage

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/baseline"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/vpmu"
	"github.com/bayesperf/bayesperf/shim"
)

// correction is the state behind Infer and Truth for one client's virtual PMU: the model
// fed with every slice, the truth totals, and the tool's reads, grouped in rounds (one
// round per perf stat -I interval), for the report.
//
// The tool's reads set the instants values refer to. With Infer, the first read of a
// round ends the current slice there (Runner.SplitNow), the model is given every slice
// so far, and every read of the round gets the posterior mean of the event's running
// total up to that boundary, with time_running = time_enabled = the virtual enabled time
// up to it; the truth of the round is the truth total at the same boundary. (The split
// does not rotate the schedule: which events count when is the schedule's alone.) Without
// Infer the tool gets the virtual PMU's live view and the truth is read at the instant of
// each read. A round begins at a read of an event already read in the current round.
type correction struct {
	client   int
	target   int
	names    []string
	infer    bool
	sched    string
	coll     string              // the collector of the client's virtual PMU
	md       *model.Model        // nil without Infer
	lx       *baseline.Estimator // the kernel's scaling over the same slices
	lxKernel *baseline.Estimator // the kernel's scaling on the kernel's round robin (Baseline), nil else
	unit     float64             // multiplexing interval in ns: the unit of slice durations
	slices   int                 // slices given to the estimators
	enabled  uint64              // virtual enabled ns up to the last slice given
	truthAt  []uint64            // truth totals up to the last slice given
	finished bool
	never    []bool // per event: in a group that never fits, so never counted (not inferred)

	est      []inference.Estimate // running totals at the current round's boundary
	estEn    uint64
	estTruth []uint64
	pub      []uint64 // last value published per event: published values never decrease
	pubEn    uint64
	readSet  map[int]bool
	rounds   []round
}

// round is one burst of reads by the tool.
type round struct {
	slice int // slices given to the estimators when it began (Infer: its boundary)
	reads map[int]readPoint
}

// readPoint is what the tool was given for one event, and the truth at the instant the
// value refers to.
type readPoint struct {
	value, enabled, running uint64
	truth                   uint64
	hasTruth                bool
}

func (s *Stage) newCorrection(descs []perf.EventDesc, names []string, rels []relation.Relation, target int) (*correction, error) {
	if !s.Infer && !s.Truth {
		return nil, nil
	}
	iv := s.Interval
	if iv <= 0 {
		iv = vpmu.MuxInterval()
	}
	k := &correction{target: target, names: names, infer: s.Infer, sched: s.Schedule,
		lx: baseline.New(baseline.Linux, len(descs)), unit: float64(iv.Nanoseconds()),
		truthAt: make([]uint64, len(descs)), pub: make([]uint64, len(descs)), readSet: map[int]bool{}}
	if k.sched == "" {
		k.sched = "kernel"
	}
	if s.Infer {
		md, err := model.New(names, rels, model.Options{Clocks: clockEvents(descs, names)})
		if err != nil {
			return nil, fmt.Errorf("build bayesperf model: %w", err)
		}
		k.md = md
	}
	return k, nil
}

// clockEvents names the events that count their target's running time: task-clock,
// unless it excludes user or kernel time (perf stat sets exclude_guest, which a task's
// own clock does not care about). The virtual PMU's targets are tasks, and a task event's
// time_enabled advances only while the task runs, so the enabled time of every slice
// is task-clock's count whether a virtual counter held it or not (the tool's own
// scaling of a multiplexed task-clock relies on the same fact). Telling the model
// makes task-clock known in every slice, which also gives the other events an
// activity to scale with (model.Options.Clocks).
func clockEvents(descs []perf.EventDesc, names []string) []string {
	var out []string
	for i, d := range descs {
		if i < len(names) && d.Attr.Type == perf.TypeSoftware && d.Attr.Config == perf.SWTaskClock && d.Attr.Flags&(perf.FlagExcludeUser|perf.FlagExcludeKern) == 0 {
			out = append(out, names[i])
		}
	}
	return out
}

// feed gives the estimators the slices of steps and adds up the truth.
func (k *correction) feed(steps []vpmu.Step) error {
	var errs []error
	for _, st := range steps {
		if st.Idle || len(st.Views) == 0 {
			continue
		}
		for i, d := range st.Truth {
			if i < len(k.truthAt) {
				k.truthAt[i] += d
			}
		}
		sl := st.Views[0]
		var en uint64
		empty := true
		for _, r := range sl.Readings {
			en = max(en, r.Enabled)
			if r.Enabled != 0 || r.Count != 0 {
				empty = false
			}
		}
		if empty {
			continue // a final slice in which the target did not run says nothing
		}
		k.enabled += en
		sl.Index = k.slices
		sl.Duration /= k.unit // in multiplexing intervals, as stat and eval feed the model
		if k.md != nil {
			c := sl
			c.Readings = slices.Clone(sl.Readings)
			if err := k.md.Observe(c); err != nil && !errors.Is(err, model.ErrNumerical) {
				errs = append(errs, fmt.Errorf("feed bayesperf slice %d: %w", sl.Index, err))
				continue
			}
		}
		c := sl
		c.Readings = slices.Clone(sl.Readings)
		if err := k.lx.Observe(c); err != nil {
			errs = append(errs, fmt.Errorf("feed linux slice %d: %w", sl.Index, err))
		}
		if k.lxKernel != nil && len(st.Views) > 1 {
			c := st.Views[1]
			c.Index, c.Duration = sl.Index, sl.Duration
			c.Readings = slices.Clone(c.Readings)
			if err := k.lxKernel.Observe(c); err != nil {
				errs = append(errs, fmt.Errorf("feed linux slice %d of the kernel's schedule: %w", sl.Index, err))
			}
		}
		k.slices++
	}
	return errors.Join(errs...)
}

// snapshot takes the running totals at the current boundary.
func (k *correction) snapshot() {
	k.estEn = k.enabled
	k.estTruth = slices.Clone(k.truthAt)
	k.est = nil
	if k.md != nil && k.slices > 0 {
		k.est = k.md.Estimate(0, k.slices)
		// A real PMU reports such a group <not counted>; so does the model, rather than
		// an inference from relations that the tool could not get from the hardware.
		for j := range k.est {
			if j < len(k.never) && k.never[j] {
				k.est[j] = inference.Estimate{Status: inference.StatusNotCounted}
			}
		}
	}
}

// finish ends the client's PMU once its target is gone: the last slice, the smoother's
// final pass, the final totals.
func (s *Stage) finish(c *client) {
	k := c.corr
	if k.finished {
		return
	}
	k.finished = true
	steps, err := c.runner.Stop()
	if err != nil {
		s.logf("vstage: client %d: final step: %v", k.client, err)
	}
	if err := k.feed(steps); err != nil {
		s.logf("vstage: client %d: %v", k.client, err)
	}
	if k.md != nil {
		k.md.Finish()
	}
	k.lx.Finish()
	if k.lxKernel != nil {
		k.lxKernel.Finish()
	}
	k.snapshot()
	// Keep what the client would read from now on and close the copies at once: while
	// the tool still has its own events open (it reads them after its command exits)
	// closing ours is cheap, whereas the last user of a tracepoint to close it waits for
	// an RCU grace period, 18 of them for 18 tracepoints, seconds on a loaded machine.
	final := make([]perf.Count, len(k.names))
	for i := range final {
		v, err := c.runner.Virtual(0, i)
		if err != nil {
			s.logf("vstage: client %d: final virtual value of event %d: %v", k.client, i, err)
			return // keep the PMU open: reads go on reading it
		}
		final[i] = v
	}
	c.final = final
	s.closeLater(c.pmu)
	c.pmu = nil
}

// correctInfer serves one event of a client with a correction: a read by the tool
// (read) or a periodic round.
func (s *Stage) correctInfer(c *client, e sidecar.Event, v *shim.Values, read bool) {
	k := c.corr
	idx, ok := c.index[e.Handle]
	if !ok {
		return
	}
	idxs := []int{idx}
	if len(v.Members) > 1 {
		for _, h := range c.members(e.Handle) {
			j, ok := c.index[h]
			if !ok {
				return
			}
			idxs = append(idxs, j)
		}
		if len(idxs) != len(v.Members) {
			return // not the group we know: leave the kernel's values
		}
	}
	if read {
		if len(k.readSet) == 0 || k.readSet[idx] {
			// The end of the target is looked for at the start of a round only, so
			// that every read of a round refers to the same boundary: a tool reads
			// once more after its command exits (perf stat does), and that round
			// gets the final totals.
			if !k.finished && perf.TaskFinished(k.target) {
				s.finish(c)
			}
			if !k.finished {
				if k.infer {
					if err := c.runner.SplitNow(); err != nil {
						s.logf("vstage: client %d: step at read: %v", k.client, err)
					}
				}
				if err := k.feed(c.runner.Drain()); err != nil {
					s.logf("vstage: client %d: %v", k.client, err)
				}
			}
			k.snapshot()
			k.rounds = append(k.rounds, round{slice: k.slices, reads: map[int]readPoint{}})
			clear(k.readSet)
		}
		k.readSet[idx] = true
	} else if !k.finished {
		if err := k.feed(c.runner.Drain()); err != nil {
			s.logf("vstage: client %d: %v", k.client, err)
		}
	}

	corrected := k.infer && k.est != nil
	for _, j := range idxs {
		// Never scheduled and nothing relates it: the model cannot improve on the
		// virtual PMU's view (perf prints <not counted>).
		if !corrected || j >= len(k.est) || k.est[j].Status == inference.StatusNotCounted {
			corrected = false
		}
	}
	if corrected {
		for m, j := range idxs {
			val := uint64(math.Round(k.est[j].Value))
			val = max(val, k.pub[j])
			k.pub[j] = val
			v.Members[m].Value = val
		}
		k.pubEn = max(k.pubEn, k.estEn)
		v.Enabled, v.Running = k.pubEn, k.pubEn
	} else {
		s.correctOne(c, e, v)
		if k.infer {
			// The same tool may read this event corrected later: keep both monotonic.
			for m, j := range idxs {
				k.pub[j] = max(k.pub[j], v.Members[m].Value)
			}
			k.pubEn = max(k.pubEn, v.Enabled)
		}
	}
	if !read || len(k.rounds) == 0 {
		return
	}
	r := k.rounds[len(k.rounds)-1]
	for m, j := range idxs {
		p := readPoint{value: v.Members[m].Value, enabled: v.Enabled, running: v.Running}
		switch {
		case corrected || k.finished:
			// The value refers to the round's boundary (or the end): so does the truth.
			if j < len(k.estTruth) && s.Truth {
				p.truth, p.hasTruth = k.estTruth[j], true
			}
		case s.Truth:
			if t, err := c.runner.TruthNow(j); err == nil {
				p.truth, p.hasTruth = t, true
			}
		}
		r.reads[j] = p
	}
}
