package replay

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// ParsePerfStatInterval reads the output of `perf stat -I MS -x,` (CSV mode, one line per
// event per interval: time,value,unit,event,running,percent,...) and returns it as a
// trace with a wall_ns column holding each interval's length in ns (the difference of
// consecutive timestamps; the first interval is measured from 0, perf's start).
//
// Every interval must report every event once, in the same order, counted for the whole
// interval (percent 100.00): an event shown as <not counted> or <not supported>, or
// scaled by multiplexing, is an error, because a trace must hold exact counts. The one
// exception is an interval in which every event is <not counted>: per-task events only
// run while a monitored task is on a CPU, so all of them lacking running time means no
// monitored task ran (it slept, or waited for a CPU) and every true count is 0; such a
// row is kept as zeros, except the last one, a tail after the program exited, which is
// dropped. Values in
// msec (task-clock, cpu-clock) are converted to ns, rounded; perf prints them with 2
// decimals, so they are exact to 10 µs. Lines starting with '#' and blank lines are
// skipped. Event names containing a comma (pmu/event=X,umask=Y/) cannot be told apart
// from the field separator and are not supported; software events and tracepoints,
// which tracegen records, have none.
func ParsePerfStatInterval(r io.Reader) (*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	p := &perfStatParser{tr: &Trace{Meta: map[string][]float64{"wall_ns": nil}}}
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.TrimSpace(sc.Text())); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse perf stat: %w", err)
	}
	if err := p.flush(true); err != nil {
		return nil, err
	}
	if len(p.tr.Counts) == 0 {
		return nil, fmt.Errorf("parse perf stat: no intervals")
	}
	return p.tr, nil
}

// perfStatParser is ParsePerfStatInterval's state: the trace so far and the interval
// being read.
type perfStatParser struct {
	tr       *Trace
	curStamp string
	prevTime float64
	row      []uint64
	pos      int // index of the next event expected in the current interval
	line     int
	nc       []string // events <not counted> in the current interval
}

// flush ends the current interval: its row joins the trace (final: it is the last).
func (p *perfStatParser) flush(final bool) error {
	tr := p.tr
	if p.row == nil {
		return nil
	}
	if p.pos != len(tr.Events) {
		return fmt.Errorf("parse perf stat: interval %s reports %d of %d events", p.curStamp, p.pos, len(tr.Events))
	}
	if len(p.nc) > 0 {
		if len(p.nc) != len(tr.Events) {
			return fmt.Errorf("parse perf stat: interval %s: %s not counted", p.curStamp, strings.Join(p.nc, ", "))
		}
		if final && len(tr.Counts) > 0 {
			// The program exited before this last tick: there is no slice to record.
			p.row = nil
			return nil
		}
		// The whole group was inactive: no monitored task ran during the interval,
		// so every event truly counted zero (row already holds zeros).
	}
	t, _ := strconv.ParseFloat(p.curStamp, 64)
	tr.Meta["wall_ns"] = append(tr.Meta["wall_ns"], math.Round((t-p.prevTime)*1e9))
	p.prevTime = t
	tr.Counts = append(tr.Counts, p.row)
	tr.Durations = append(tr.Durations, 1)
	p.row = nil
	return nil
}

// parseLine reads one line of perf stat's output.
func (p *perfStatParser) parseLine(text string) error {
	tr, line := p.tr, p.line
	if text == "" || strings.HasPrefix(text, "#") {
		return nil
	}
	f := strings.Split(text, ",")
	if len(f) < 6 {
		return fmt.Errorf("parse perf stat line %d: %d fields, want at least 6 (time,value,unit,event,running,percent)", line, len(f))
	}
	stamp, value, unit, name, pct := strings.TrimSpace(f[0]), f[1], f[2], f[3], f[5]
	t, err := strconv.ParseFloat(stamp, 64)
	if err != nil || t < 0 || math.IsInf(t, 0) || math.IsNaN(t) {
		return fmt.Errorf("parse perf stat line %d: bad timestamp %q", line, stamp)
	}
	if name == "" {
		return fmt.Errorf("parse perf stat line %d: empty event name", line)
	}
	if stamp != p.curStamp {
		if err := p.flush(false); err != nil {
			return err
		}
		if len(tr.Counts) > 0 && t <= p.prevTime {
			return fmt.Errorf("parse perf stat line %d: timestamp %s does not increase", line, stamp)
		}
		p.curStamp, p.pos, p.nc = stamp, 0, nil
		p.row = make([]uint64, 0, len(tr.Events))
	}
	if len(tr.Counts) == 0 {
		// The first interval defines the event list.
		for _, n := range tr.Events {
			if n == name {
				return fmt.Errorf("parse perf stat line %d: event %q twice in interval %s", line, name, stamp)
			}
		}
		tr.Events = append(tr.Events, name)
	} else if p.pos >= len(tr.Events) || tr.Events[p.pos] != name {
		return fmt.Errorf("parse perf stat line %d: event %q out of order in interval %s", line, name, stamp)
	}
	if value == "<not counted>" {
		p.nc = append(p.nc, name)
		p.row = append(p.row, 0)
		p.pos++
		return nil
	}
	if strings.HasPrefix(value, "<") {
		return fmt.Errorf("parse perf stat line %d: event %q is %s in interval %s", line, name, value, stamp)
	}
	if pc, err := strconv.ParseFloat(pct, 64); err != nil || pc != 100 {
		return fmt.Errorf("parse perf stat line %d: event %q ran %s%% of interval %s, want 100 (exact counts only)", line, name, pct, stamp)
	}
	v, err := strconv.ParseFloat(value, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Errorf("parse perf stat line %d: bad value %q for %q", line, value, name)
	}
	if unit == "msec" {
		v *= 1e6
	}
	if v >= 1<<63 {
		return fmt.Errorf("parse perf stat line %d: value %q for %q out of range", line, value, name)
	}
	p.row = append(p.row, uint64(math.Round(v)))
	p.pos++
	return nil
}
