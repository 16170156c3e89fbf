package kstage

import (
	"math"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/pipeline"
)

// roundDelta is what one event did in one round: its count, and the share of the
// round it was counting (1: all of it, 0: not at all).
type roundDelta struct {
	j     int
	count uint64
	frac  float64
}

// openSlice is the slice being built: the events counting in it (the kernel's current
// configuration), its duration so far (ns of enabled time) and their counts.
type openSlice struct {
	on    map[int]bool
	d     float64
	count map[int]float64
}

// tauSlack is how far one event's share of a round may be from the others' and still
// be taken for the same rotation (the events are read microseconds apart).
const tauSlack = 0.2

// segment cuts the rounds into the kernel's own slices. The kernel rotates its
// multiplexed events every multiplexing interval, and the sidecar's rounds are not
// aligned with it: in a round that holds a rotation, the events that left ran for a
// share τ of it and those that joined for 1−τ. The model is built for slices in which
// every event either counted throughout or not at all (a reading over part of a slice
// is weak evidence, and the rounds would make one of every event's stints such a
// reading), so the round is split at τ: what the leaving events counted closes the
// current slice, what the joining ones counted opens the next, and the events that
// counted throughout are split in proportion. A round that does not fit one rotation
// (several rotations in it, an event that left without a partial share) is a slice of
// its own with partial readings. A slice also closes at twice the interval, so that a
// configuration the kernel does not rotate still informs the model.
func (s *Stage) segment(t *target, ref float64, rd []roundDelta) {
	o := &t.open
	var full, part []roundDelta
	for _, d := range rd {
		switch {
		case d.frac >= 1:
			full = append(full, d)
		case d.frac > 0:
			part = append(part, d)
		}
	}
	unit := float64(s.unit().Nanoseconds())
	if len(part) == 0 {
		same := len(full) == len(o.on)
		for _, d := range full {
			same = same && o.on[d.j]
		}
		if o.d > 0 && !same {
			s.closeSlice(t)
		}
		if o.d == 0 {
			s.openWith(t, full)
		}
		o.d += ref
		for _, d := range full {
			o.count[d.j] += float64(d.count)
		}
		if o.d >= 2*unit {
			s.closeSlice(t)
		}
		return
	}
	// One rotation inside the round: τ from every partial event.
	fits := o.d > 0
	tau, n := 0.0, 0
	for _, d := range part {
		if o.on[d.j] {
			tau += d.frac
		} else {
			tau += 1 - d.frac
		}
		n++
	}
	tau /= float64(n)
	for _, d := range part {
		x := d.frac
		if !o.on[d.j] {
			x = 1 - d.frac
		}
		fits = fits && math.Abs(x-tau) <= tauSlack
	}
	running := map[int]bool{}
	for _, d := range rd {
		running[d.j] = d.frac > 0
	}
	for j := range o.on {
		fits = fits && running[j] // an event that stopped at the round's start
	}
	for _, d := range full {
		fits = fits && o.on[d.j] // one that started then
	}
	if !fits {
		if o.d > 0 {
			s.closeSlice(t)
		}
		sl := inference.Slice{Duration: ref / unit}
		for _, d := range rd {
			if d.frac > 0 {
				sl.Readings = append(sl.Readings, inference.Reading{Event: inference.EventID(d.j), Count: d.count,
					Enabled: uint64(math.Round(ref)), Running: uint64(math.Round(ref * d.frac))})
			}
		}
		s.feed(t, sl)
		return
	}
	o.d += tau * ref
	var joined []roundDelta
	for _, d := range part {
		if o.on[d.j] {
			o.count[d.j] += float64(d.count)
		} else {
			joined = append(joined, d)
		}
	}
	for _, d := range full {
		o.count[d.j] += float64(d.count) * tau
	}
	s.closeSlice(t)
	s.openWith(t, append(full, joined...))
	o.d = (1 - tau) * ref
	for _, d := range joined {
		o.count[d.j] += float64(d.count)
	}
	for _, d := range full {
		o.count[d.j] += float64(d.count) * (1 - tau)
	}
}

// openWith starts a slice in which events on count.
func (s *Stage) openWith(t *target, on []roundDelta) {
	t.open = openSlice{on: map[int]bool{}, count: map[int]float64{}}
	for _, d := range on {
		t.open.on[d.j] = true
	}
}

// closeSlice gives the open slice to the model.
func (s *Stage) closeSlice(t *target) {
	o := t.open
	t.open = openSlice{}
	if o.d <= 0 || t.md == nil {
		return
	}
	en := uint64(math.Round(o.d))
	sl := inference.Slice{Duration: o.d / float64(s.unit().Nanoseconds())}
	for j := range t.handles {
		if o.on[j] {
			sl.Readings = append(sl.Readings, inference.Reading{Event: inference.EventID(j),
				Count: uint64(math.Round(o.count[j])), Enabled: en, Running: en})
		}
	}
	s.feed(t, sl)
}

// feed gives the model one slice and updates the running totals and each event's
// latest rate (per ns), which estimates what it counts in the open slice.
func (s *Stage) feed(t *target, sl inference.Slice) {
	sl, err := t.fd.Add(sl)
	if err != nil {
		s.logf("kstage: target pid %d cpu %d: %v", t.key.pid, t.key.cpu, err)
		return
	}
	s.totals(t)
	if len(t.rate) < len(t.handles) {
		t.rate = append(t.rate, make([]float64, len(t.handles)-len(t.rate))...)
	}
	if d := sl.Duration * float64(s.unit().Nanoseconds()); d > 0 {
		// lastEst has the model's events: fewer than the handles while a new event
		// waits for the rebuilt model.
		for j := range min(len(t.handles), len(t.lastEst)) {
			t.rate[j] = t.lastEst[j] / d
		}
	}
}

// pending is the estimate of event j's count in the open slice: counted there, or at
// its latest rate scaled by act (activity).
func (t *target) pending(j int, act float64) float64 {
	o := &t.open
	if o.d <= 0 {
		return 0
	}
	if o.on[j] {
		return o.count[j]
	}
	if j < len(t.rate) {
		return t.rate[j] * o.d * act
	}
	return 0
}

// activity is the share of what their latest rates predict that the events counting
// in the open slice did count there, at most 1 (1 when nothing is counted yet): the
// factor by which the latest rates of the events not counting there are
// extrapolated. The latest rates are the model's estimates of one slice, in which the
// exact identities hold; one factor for all keeps those identities between the
// extrapolated events, where each at its own rate, beside counted events that show a
// new phase, would break them. A rise is not extrapolated: a value published above
// the truth never comes back down, while one below it is made up at the next read;
// the model gives the events not counted theirs when the slice closes. Clock events
// (their count is the slice's time) say nothing of the activity and are left out.
func (t *target) activity() float64 {
	o := &t.open
	var got, want float64
	for j := range o.on {
		if j < len(t.rate) && !(j < len(t.clock) && t.clock[j]) {
			got += o.count[j]
			want += t.rate[j] * o.d
		}
	}
	if !(want > 0) || got >= want {
		return 1
	}
	return got / want
}

// span is the round's span of the target's time (see round) given the events'
// cumulative values now (cur) and at the last round, and records which events ran in
// the round (ran). An event that counted in this round and the last has its enabled
// time fresh at both reads, unless it stopped counting in between (then it has it
// up to then: less); one that started has its time caught up over the rounds it did
// not count (more), so it is not taken; and no event counted for longer than the
// span. The span is the enabled delta of the first such event, in the order they are
// read, not shorter than the longest running delta by more than tauSlack (where the
// target runs on while the events are read, on a machine with more than one CPU, the
// first one's deltas add up to its total, where the longest of all would overstate
// the target's time), else the longest of theirs and of the running deltas. When
// none ran (every one rotated out, behind other users' events), the longest enabled
// delta: no time caught up then.
func (t *target) span(cur map[int]perf.Count) uint64 {
	var run, en, longest uint64
	for j, r := range cur {
		run = max(run, pipeline.Sub(r.Running, t.last[j].Running))
		en = max(en, pipeline.Sub(r.Enabled, t.last[j].Enabled))
	}
	span := uint64(0)
	for j := range len(t.handles) {
		r, ok := cur[j]
		if !ok {
			continue
		}
		de, dr := pipeline.Sub(r.Enabled, t.last[j].Enabled), pipeline.Sub(r.Running, t.last[j].Running)
		if dr > 0 && t.ran[j] {
			if span == 0 && float64(de) >= (1-tauSlack)*float64(run) {
				span = de
			}
			longest = max(longest, de)
		}
		t.ran[j] = dr > 0
	}
	switch {
	case run == 0:
		return en
	case span > 0:
		return span
	}
	return max(longest, run)
}
