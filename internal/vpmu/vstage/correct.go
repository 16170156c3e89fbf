package vstage

import (
	"errors"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/model"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
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
	target   int // the task, or -1 for every task on cpu
	cpu      int // -1 for a task target
	names    []string
	handles  []uint32 // the client's handle of each event, in the order of names
	infer    bool
	sched    string
	coll     string       // the collector of the client's virtual PMU
	md       *model.Model // nil without Infer
	lx       linuxSums    // the kernel's scaling over the same slices
	lxKernel *linuxSums   // the kernel's scaling on the kernel's round robin (Baseline), nil else
	// fd gives the model its slices (none without Infer), durations in multiplexing
	// intervals; its Slices count the slices given to the estimators.
	fd       pipeline.Feed
	enabled  uint64   // virtual enabled ns up to the last slice given
	truthAt  []uint64 // truth totals up to the last slice given
	finished bool
	never    []bool // per event: in a group that never fits, so never counted (not inferred)

	est      []inference.Estimate // running totals at the current round's boundary
	estEn    uint64
	estTruth []uint64
	pub      pipeline.Floor // last value published per event: published values never decrease
	pubEn    uint64
	readSet  map[int]bool
	// intervals keeps rounds for the report (Stage.Intervals); without it nothing here
	// grows with the client's lifetime.
	intervals bool
	rounds    []round
}

// round is one burst of reads by the tool.
type round struct {
	slice   int         // slices given to the estimators when it began (Infer: its boundary)
	lx, lxK []float64   // the kernel's scaling's sums at slice (linuxSums.at)
	reads   []readPoint // per event; has is false for an event the tool did not read
}

// readPoint is what the tool was given for one event, and the truth at the instant the
// value refers to.
type readPoint struct {
	value, enabled, running uint64
	truth                   uint64
	hasTruth, has           bool
}

// linuxSums is the kernel's scaling, count·enabled/running, of each event over spans of
// slices: the running sums of the raw deltas, from which a span's are the difference of
// the sums at its ends (taken at each round, linuxSums.at), so that a client's memory
// does not grow with its slices. Per slice it adds what baseline.Linux would: an event
// without a reading was enabled for the slice's duration and never ran.
type linuxSums struct {
	sums []float64 // per event: count, enabled, running
}

func newLinuxSums(n int) linuxSums { return linuxSums{sums: make([]float64, 3*n)} }

func (l *linuxSums) observe(sl inference.Slice) {
	n := len(l.sums) / 3
	seen := make([]bool, n)
	for _, r := range sl.Readings {
		if e := int(r.Event); e >= 0 && e < n {
			l.sums[3*e] += float64(r.Count)
			l.sums[3*e+1] += float64(r.Enabled)
			l.sums[3*e+2] += float64(r.Running)
			seen[e] = true
		}
	}
	for e, ok := range seen {
		if !ok {
			l.sums[3*e+1] += sl.Duration
		}
	}
}

// at is a copy of the running sums, one end of a span.
func (l *linuxSums) at() []float64 { return slices.Clone(l.sums) }

// linuxBetween is the kernel's scaling of event e between the sums a and b (a nil: the
// start).
func linuxBetween(a, b []float64, e int) inference.Estimate {
	d := func(j int) float64 {
		if a == nil {
			return b[3*e+j]
		}
		return b[3*e+j] - a[3*e+j]
	}
	c, en, r := d(0), d(1), d(2)
	if r <= 0 {
		return inference.Estimate{Status: inference.StatusNotCounted}
	}
	st := inference.StatusScaled
	if r == en {
		st = inference.StatusExact
	}
	return inference.Estimate{Value: c * en / r, Status: st}
}

func (s *Stage) newCorrection(descs []perf.EventDesc, names []string, rels []relation.Relation, target, cpu int) (*correction, error) {
	if !s.Infer && !s.Truth {
		return nil, nil
	}
	iv := s.Interval
	if iv <= 0 {
		iv = vpmu.MuxInterval()
	}
	k := &correction{target: target, cpu: cpu, names: names, infer: s.Infer, sched: s.Schedule,
		lx: newLinuxSums(len(descs)), fd: pipeline.Feed{Unit: float64(iv.Nanoseconds())}, intervals: s.Intervals,
		truthAt: make([]uint64, len(descs)), pub: make(pipeline.Floor, len(descs)), readSet: map[int]bool{}}
	if k.sched == "" {
		k.sched = "kernel"
	}
	if s.Infer {
		attrs := make([]perf.Attr, len(descs))
		for i, d := range descs {
			attrs[i] = d.Attr
		}
		// A task target's task-clock is a clock; a CPU's events have none
		// (pipeline.IsClock).
		if target == -1 {
			attrs = nil
		}
		md, err := pipeline.NewModel(pipeline.ModelConfig{Names: names, Relations: rels, Attrs: attrs,
			Options: model.Options{History: history(len(descs)), Marked: true}})
		if err != nil {
			return nil, err
		}
		k.md = md
		k.fd.Estimators = []inference.Estimator{md}
	}
	return k, nil
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
		var en uint64
		for _, r := range st.Views[0].Readings {
			en = max(en, r.Enabled)
		}
		sl, ok := pipeline.Merge(0, len(k.names), st.Views[:1])
		if !ok {
			continue // a final slice in which the target did not run says nothing
		}
		k.enabled += en
		sl, err := k.fd.Add(sl)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		k.lx.observe(sl)
		if k.lxKernel != nil && len(st.Views) > 1 {
			c := st.Views[1]
			c.Duration = sl.Duration
			k.lxKernel.observe(c)
		}
	}
	return errors.Join(errs...)
}

// snapshot takes the running totals at the current boundary.
func (k *correction) snapshot() {
	k.estEn = k.enabled
	k.estTruth = slices.Clone(k.truthAt)
	k.est = nil
	if k.md != nil && k.fd.Slices > 0 {
		k.est = k.md.Estimate(0, k.fd.Slices)
		// A real PMU reports such a group <not counted>; so does the model, rather than
		// an inference from relations that the tool could not get from the hardware.
		for j := range k.est {
			if j < len(k.never) && k.never[j] {
				k.est[j] = inference.Estimate{Status: inference.StatusNotCounted}
			}
		}
	}
}

// finish ends the client's PMU: the last slice, the smoother's final pass, the final
// totals. gone says its target has ended (or the tool is done with it), which is logged
// once per client and target; a PMU finished because it is being rebuilt (the tool
// registered one more event) is not an end.
func (s *Stage) finish(c *client, gone bool) {
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
	if gone {
		slices := k.fd.Slices
		if c.past != nil {
			slices += c.past.report.Slices
		}
		s.logf("vstage: client %d: target %s gone after %d slices: final totals", k.client, targetName(k.target, k.cpu), slices)
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
// (read) or a periodic round. It says whether it published the model's running totals
// (else the virtual view).
func (s *Stage) correctInfer(c *client, e sidecar.Event, v *shim.Values, read bool) bool {
	k := c.corr
	idx, ok := c.index[e.Handle]
	if !ok {
		return false
	}
	idxs := []int{idx}
	if len(v.Members) > 1 {
		for _, h := range c.members(e.Handle) {
			j, ok := c.index[h]
			if !ok {
				return false
			}
			idxs = append(idxs, j)
		}
		if len(idxs) != len(v.Members) {
			return false // not the group we know: leave the kernel's values
		}
	}
	if read {
		if len(k.readSet) == 0 || k.readSet[idx] {
			s.startRound(c)
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
			v.Members[m].Value = k.pub.Raise(j, pipeline.Round(k.est[j].Value))
		}
		k.pubEn = max(k.pubEn, k.estEn)
		v.Enabled, v.Running = k.pubEn, k.pubEn
	} else {
		s.correctOne(c, e, v)
		if k.infer {
			// The same tool may read this event corrected later: keep both monotonic.
			for m, j := range idxs {
				k.pub.Raise(j, v.Members[m].Value)
			}
			k.pubEn = max(k.pubEn, v.Enabled)
		}
	}
	if !read || len(k.rounds) == 0 {
		return corrected
	}
	r := k.rounds[len(k.rounds)-1]
	for m, j := range idxs {
		p := readPoint{value: v.Members[m].Value, enabled: v.Enabled, running: v.Running, has: true}
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
		if j < len(r.reads) {
			r.reads[j] = p
		}
	}
	return corrected
}

// startRound begins a round of reads of a corrected client: a read of an event the
// current round has read already begins the next.
func (s *Stage) startRound(c *client) {
	k := c.corr
	// The end of the target is looked for at the start of a round only, so
	// that every read of a round refers to the same boundary: a tool reads
	// once more after its command exits (perf stat does), and that round
	// gets the final totals.
	if !k.finished && k.target != -1 && perf.TaskFinished(k.target) {
		s.finish(c, true)
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
	if k.intervals {
		r := round{slice: k.fd.Slices, lx: k.lx.at(), reads: make([]readPoint, len(k.names))}
		if k.lxKernel != nil {
			r.lxK = k.lxKernel.at()
		}
		k.rounds = append(k.rounds, r)
		if k.md != nil {
			// The report asks for the span from this round to the next.
			k.md.Mark(k.fd.Slices)
		}
	}
}

// history is the model's Options.History for a client of n events: the slices whose
// covariances are kept, and smoothed again at every round of reads (O(k³) each). 1024
// slices (4 s at the usual 4 ms) unless their three k×k buffers would pass 16 MiB,
// never below 256. Older slices are merged between rounds (Options.Marked), so the
// model's memory is bounded whatever the client's lifetime; a run longer than this
// keeps the first filtering pass for its final values (the model's refilter needs the
// whole run).
func history(n int) int {
	return max(256, min(1024, (16<<20)/(24*max(n*n, 1))))
}
