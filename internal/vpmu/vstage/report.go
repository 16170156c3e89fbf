package vstage

import (
	"math"
	"slices"
	"sort"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/pipeline"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/shim"
)

// Report is what `bayesperf run --report` writes: per client, per event, the corrected
// value with its 95% interval, the kernel's scaled value, the truth and the status, for
// the whole run and for every round of reads (perf stat -I intervals).
type Report struct {
	Clients []ClientReport `json:"clients"`
}

// ClientReport is one client's virtual PMUs on one target: a task, or a CPU.
type ClientReport struct {
	Client   int    `json:"client"`
	Pid      int    `json:"pid"`      // the target task; -1 for every task on CPU
	CPU      int    `json:"cpu"`      // the target CPU; -1 for a task on any
	Correct  string `json:"correct"`  // bayesperf or none: what the tool was given
	Schedule string `json:"schedule"` // kernel or bayesperf
	// Collector is how the virtual PMU read its copies: bpf (in-kernel snapshots at
	// every slice) or read (read(2)).
	Collector string `json:"collector"`
	Slices    int    `json:"slices"`
	// Totals are the whole run: the smoother's final totals.
	Totals []EventReport `json:"totals"`
	// Intervals are the spans between the tool's rounds of reads, the first from the
	// start: with perf stat -I, the intervals perf prints.
	Intervals []IntervalReport `json:"intervals"`
}

// IntervalReport is the span from the previous round of reads to this one.
type IntervalReport struct {
	Index int `json:"index"`
	// FromSlice and ToSlice delimit the slices of the span (with --correct bayesperf
	// the rounds end slices; without, reads fall inside slices and the span is only
	// approximately these slices).
	FromSlice int           `json:"from_slice"`
	ToSlice   int           `json:"to_slice"`
	Events    []EventReport `json:"events"`
}

// EventReport is one event over a span.
type EventReport struct {
	Event string `json:"event"`
	// Value is bayesperf's estimate (smoothed given the whole run) with its 95%
	// interval; without the model (--correct none) the kernel's scaled value.
	Value float64  `json:"value"`
	Lo    *float64 `json:"lo"`
	Hi    *float64 `json:"hi"`
	// Linux is the kernel's scaled value: count * enabled / running over the span, on
	// the kernel's round robin (with --schedule bayesperf, of a second copy of the
	// events that the sidecar multiplexes as the kernel would, in the same run).
	Linux float64 `json:"linux"`
	// Tool is what the tool computed from the values it was given (its own scaling
	// of the deltas of its reads): what perf stat -I prints. Absent in totals.
	Tool *float64 `json:"tool,omitempty"`
	// Truth is the hidden always-on copy's count over the span (with --stats or
	// --report), taken at the instants the tool's values refer to; in an interval,
	// for an event the tool counts in windows of its own (ENABLE..DISABLE, window.go),
	// what its own kernel event counted in them: its native count.
	Truth  *uint64 `json:"truth,omitempty"`
	Status string  `json:"status"`
}

// retire finishes a client's PMU that is being discarded, rebuilt (the tool registered
// one more event) or closed (its target, or the client, is gone), and merges its report
// into the client's (pastReport): one entry per client and target, over every PMU it
// was rebuilt into, kept once the PMU is closed. A PMU rebuilt before its target ran
// adds nothing. c.mu is held.
func (s *Stage) retire(c *client, rebuilt bool) {
	if c.corr == nil {
		c.runner.Stop()
	} else {
		s.finish(c, !rebuilt)
		if c.corr.fd.Slices > 0 || !rebuilt {
			// A PMU rebuilt before its target ran (the tool was still opening events)
			// has nothing to report, even if the tool read its events meanwhile (with the
			// BPF collector a read round could land there, and the report listed an
			// empty client).
			c.past = c.past.merge(s.clientReport(c.corr), c.corr.handles)
		}
	}
	if !rebuilt {
		s.keep(c)
	}
}

// keep moves the report of a client and target that is done into the stage's. c.mu is
// held.
func (s *Stage) keep(c *client) {
	if c.past == nil {
		return
	}
	s.mu.Lock()
	s.retired = append(s.retired, c.past.report)
	s.mu.Unlock()
	c.past = nil
}

// Report finishes every client's PMU (their targets must be gone: the sidecar calls it
// at exit) and returns the report of every client and target seen, one entry each.
func (s *Stage) Report() Report {
	s.mu.Lock()
	keys := make([]clientKey, 0, len(s.clients))
	live := map[clientKey]*client{}
	for k, c := range s.clients {
		keys = append(keys, k)
		live[k] = c
	}
	s.mu.Unlock()
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		return a.id < b.id || a.id == b.id && (a.pid < b.pid || a.pid == b.pid && a.cpu < b.cpu)
	})
	var reports []ClientReport
	for _, k := range keys {
		c := live[k]
		c.mu.Lock()
		past := c.past
		if c.corr != nil && c.runner != nil {
			s.finish(c, true)
			past = past.merge(s.clientReport(c.corr), c.corr.handles)
		}
		if past != nil {
			reports = append(reports, past.report)
		}
		c.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return Report{Clients: append(append([]ClientReport(nil), s.retired...), reports...)}
}

// pastReport is the report of a client's PMUs on one target so far, merged: perf stat
// and stress-ng register their events one by one, each registration a rebuild, and a
// PMU's counts start from zero, so the client's report is the sum of its PMUs'.
type pastReport struct {
	report  ClientReport
	handles []uint32 // the client's handle of each of report.Totals
}

// merge returns p (nil: nothing yet) followed by the report cr of the next PMU, whose
// events have the client's handles; p is left as it was. An event's totals are summed
// over the PMUs that counted it (matched by handle): values, the kernel's scaling and
// truths add up (the PMUs follow each other in time), and so do the intervals' half
// widths, in quadrature (each PMU has a model of its own); the status is the least
// direct of its parts', a part that was not counted making an exact total scaled. The
// intervals follow each other, their slices numbered on from the PMUs before.
func (p *pastReport) merge(cr ClientReport, handles []uint32) *pastReport {
	if p == nil {
		return &pastReport{report: cr, handles: slices.Clone(handles)}
	}
	old := p.report
	out := &pastReport{report: cr}
	r := &out.report
	r.Slices = old.Slices + cr.Slices
	if old.Collector != cr.Collector && (old.Collector == "read" || cr.Collector == "read") {
		r.Collector = "read" // as Stage.Collector: any read(2) fallback
	}
	byHandle := map[uint32]EventReport{}
	for i, h := range p.handles {
		if i < len(old.Totals) {
			byHandle[h] = old.Totals[i]
		}
	}
	for i, h := range handles {
		if i >= len(cr.Totals) {
			continue
		}
		if e, ok := byHandle[h]; ok {
			byHandle[h] = addEvents(e, cr.Totals[i])
		} else {
			byHandle[h] = cr.Totals[i]
		}
	}
	out.handles = make([]uint32, 0, len(byHandle))
	for h := range byHandle {
		out.handles = append(out.handles, h)
	}
	slices.Sort(out.handles)
	r.Totals = make([]EventReport, len(out.handles))
	for i, h := range out.handles {
		r.Totals[i] = byHandle[h]
	}
	r.Intervals = append(make([]IntervalReport, 0, len(old.Intervals)+len(cr.Intervals)), old.Intervals...)
	for _, iv := range cr.Intervals {
		iv.Index += len(old.Intervals)
		iv.FromSlice += old.Slices
		iv.ToSlice += old.Slices
		r.Intervals = append(r.Intervals, iv)
	}
	return out
}

// statusRank orders statuses from the most direct.
var statusRank = map[string]int{
	inference.StatusExact.String():    1,
	inference.StatusScaled.String():   2,
	inference.StatusInferred.String(): 3,
}

// addEvents is one event's totals over two consecutive spans.
func addEvents(a, b EventReport) EventReport {
	out := EventReport{Event: b.Event, Value: a.Value + b.Value, Linux: a.Linux + b.Linux}
	if a.Lo != nil || b.Lo != nil {
		half := func(e EventReport, lo bool) float64 {
			switch {
			case e.Lo == nil || e.Hi == nil:
				return 0
			case lo:
				return e.Value - *e.Lo
			}
			return *e.Hi - e.Value
		}
		lo := out.Value - math.Hypot(half(a, true), half(b, true))
		hi := out.Value + math.Hypot(half(a, false), half(b, false))
		out.Lo, out.Hi = &lo, &hi
	}
	if a.Truth != nil || b.Truth != nil {
		var t uint64
		for _, e := range []EventReport{a, b} {
			if e.Truth != nil {
				t += *e.Truth
			}
		}
		out.Truth = &t
	}
	ra, rb := statusRank[a.Status], statusRank[b.Status]
	out.Status = a.Status
	if rb > ra {
		out.Status = b.Status
	}
	if (ra == 0) != (rb == 0) && max(ra, rb) == statusRank[inference.StatusExact.String()] {
		out.Status = inference.StatusScaled.String()
	}
	return out
}

// TruthTotals sums the truth of every event over every client, by event name (nil without
// Truth). It finishes every client's PMU, as Report does.
func (s *Stage) TruthTotals() map[string]uint64 {
	if !s.Truth {
		return nil
	}
	out := map[string]uint64{}
	for _, c := range s.Report().Clients {
		for _, e := range c.Totals {
			if e.Truth != nil {
				out[e.Event] += *e.Truth
			}
		}
	}
	return out
}

// clientReport builds the report of a finished correction.
func (s *Stage) clientReport(k *correction) ClientReport {
	cr := ClientReport{Client: k.client, Pid: k.target, CPU: k.cpu, Correct: "none", Schedule: k.sched, Collector: k.coll, Slices: k.fd.Slices}
	if k.infer {
		cr.Correct = "bayesperf"
	}
	var truth0 []uint64 // truth at the start: zero
	if s.Truth {
		truth0 = make([]uint64, len(k.names))
	}
	lxEnd := k.lx.at()
	var lxKEnd []float64
	if k.lxKernel != nil {
		lxKEnd = k.lxKernel.at()
	}
	cr.Totals = k.span(0, k.fd.Slices, nil, lxEnd, nil, lxKEnd, truth0, k.truthAt)
	prev := make([]readPoint, len(k.names))
	from := 0
	var lxFrom, lxKFrom []float64
	for i, r := range k.rounds {
		ir := IntervalReport{Index: i, FromSlice: from, ToSlice: r.slice}
		if k.infer {
			ir.Events = k.span(from, r.slice, lxFrom, r.lx, lxKFrom, r.lxK, nil, nil)
		} else {
			ir.Events = make([]EventReport, len(k.names))
			for j := range ir.Events {
				ir.Events[j] = EventReport{Event: k.names[j], Status: inference.StatusNotCounted.String()}
			}
		}
		keep := ir.Events[:0]
		for j, e := range ir.Events {
			if j >= len(r.reads) || !r.reads[j].has {
				continue // the tool did not read this event in this round
			}
			p, q := r.reads[j], prev[j]
			dv, de, dr := pipeline.Sub(p.value, q.value), pipeline.Sub(p.enabled, q.enabled), pipeline.Sub(p.running, q.running)
			tool := 0.0
			if dr > 0 {
				tool = float64(dv) * float64(de) / float64(dr)
			}
			e.Tool = &tool
			if !k.infer {
				// Without the model the tool's scaling is the kernel's, over exactly
				// the span between its reads.
				e.Value, e.Linux = tool, tool
				switch {
				case dr == 0:
					e.Status = inference.StatusNotCounted.String()
				case dr == de:
					e.Status = inference.StatusExact.String()
				default:
					e.Status = inference.StatusScaled.String()
				}
			}
			if p.hasTruth {
				t := pipeline.Sub(p.truth, q.truth)
				e.Truth = &t
			}
			prev[j] = p
			keep = append(keep, e)
		}
		ir.Events = keep
		cr.Intervals = append(cr.Intervals, ir)
		from, lxFrom, lxKFrom = r.slice, r.lx, r.lxK
	}
	return cr
}

// served records in the current round what the tool was given for e once its windows
// were followed (window.go), and, as the truth, what its own kernel event counted in
// them (counts, per member: the kernel never multiplexes the events whose windows are
// followed, so the count is exact): the report's "tool" and "truth" of a
// self-monitoring tool are then the value it printed and its native count, beside the
// model's estimate of the round's span. c.mu is held.
func (k *correction) served(c *client, e sidecar.Event, v shim.Values, counts []uint64) {
	if len(k.rounds) == 0 {
		return
	}
	r := k.rounds[len(k.rounds)-1]
	hs := append([]uint32{e.Handle}, c.members(e.Handle)...)
	for m, h := range hs {
		j, ok := c.index[h]
		if !ok || m >= len(v.Members) || m >= len(counts) || j >= len(r.reads) || !r.reads[j].has {
			continue
		}
		p := &r.reads[j]
		p.value, p.enabled, p.running = v.Members[m].Value, v.Enabled, v.Running
		if p.hasTruth {
			p.truth = counts[m]
		}
	}
}

// span reports every event over slices [from, to): bayesperf's estimate, the kernel's
// scaling between the linuxSums a0 and a1 (on the kernel's round robin, k0 and k1, when
// there is a second copy), and the truth t1−t0 when given.
func (k *correction) span(from, to int, a0, a1, k0, k1 []float64, t0, t1 []uint64) []EventReport {
	out := make([]EventReport, len(k.names))
	var bp []inference.Estimate
	if to > from && k.md != nil {
		bp = k.md.Estimate(from, to)
	}
	for i := range out {
		e := EventReport{Event: k.names[i], Status: inference.StatusNotCounted.String()}
		if to > from && a1 != nil {
			lx := linuxBetween(a0, a1, i)
			if k1 != nil {
				lx = linuxBetween(k0, k1, i)
			}
			e.Linux = lx.Value
			if k.md == nil {
				e.Value, e.Status = lx.Value, lx.Status.String()
			}
		}
		if i < len(bp) {
			b := bp[i]
			e.Value, e.Status = b.Value, b.Status.String()
			lo, hi := b.Value, b.Value
			if b.HasInterval {
				lo, hi = b.Lo, b.Hi
			}
			e.Lo, e.Hi = &lo, &hi
		}
		if t0 != nil && t1 != nil && i < len(t0) && i < len(t1) {
			t := pipeline.Sub(t1[i], t0[i])
			e.Truth = &t
		}
		out[i] = e
	}
	return out
}
