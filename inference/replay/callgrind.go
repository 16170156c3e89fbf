package replay

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// CallgrindPart is one dump of `valgrind --tool=callgrind --dump-every-bb=N`: the
// event totals of one part of the run (callgrind zeroes its counters at each dump).
type CallgrindPart struct {
	Part   int      // the "part:" number, 1-based, in run order
	BBs    float64  // basic blocks executed in the part ("desc: Timerange: Basic block A - B")
	Events []string // the "events:" line
	Counts []uint64 // the "totals:" line (else "summary:"), one per event
}

// ParseCallgrindPart reads one callgrind output file. The counts are taken from the
// "totals:" line at the end, the sum of the costs listed in the part, which is what
// callgrind's final "Collected" line adds up; the "summary:" line of the last part
// also holds a few instructions of process exit that no function is charged with, so it
// serves only when there is no totals line. Callgrind omits trailing zero values. The
// "events:" line and a summary or totals line are required; "part:" defaults to 0 and
// the time range to 0 basic blocks when absent.
func ParseCallgrindPart(r io.Reader) (*CallgrindPart, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	p := &CallgrindPart{}
	line := 0
	haveTotals := false
	for sc.Scan() {
		line++
		text := sc.Text()
		key, val, ok := strings.Cut(text, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "part":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("parse callgrind line %d: bad part %q", line, val)
			}
			p.Part = n
		case "desc":
			if rest, ok := strings.CutPrefix(val, "Timerange: Basic block "); ok {
				a, b, ok := strings.Cut(rest, " - ")
				x, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 64)
				y, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 64)
				if !ok || err1 != nil || err2 != nil || y < x {
					return nil, fmt.Errorf("parse callgrind line %d: bad time range %q", line, rest)
				}
				p.BBs = float64(y - x)
			}
		case "events":
			if p.Counts != nil {
				return nil, fmt.Errorf("parse callgrind line %d: events after the counts", line)
			}
			p.Events = strings.Fields(val)
			if len(p.Events) == 0 {
				return nil, fmt.Errorf("parse callgrind line %d: empty events line", line)
			}
			for i, e := range p.Events {
				if slices.Contains(p.Events[:i], e) {
					return nil, fmt.Errorf("parse callgrind line %d: event %q twice", line, e)
				}
			}
		case "summary", "totals":
			if p.Events == nil {
				return nil, fmt.Errorf("parse callgrind line %d: %s before events", line, key)
			}
			if key == "summary" && haveTotals {
				continue // totals came first: keep them
			}
			f := strings.Fields(val)
			if len(f) > len(p.Events) {
				return nil, fmt.Errorf("parse callgrind line %d: %d %s values for %d events", line, len(f), key, len(p.Events))
			}
			counts := make([]uint64, len(p.Events))
			for i, s := range f {
				v, err := strconv.ParseUint(s, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("parse callgrind line %d: bad count %q for %s", line, s, p.Events[i])
				}
				counts[i] = v
			}
			p.Counts = counts
			if key == "totals" {
				haveTotals = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parse callgrind: %w", err)
	}
	if p.Counts == nil {
		return nil, fmt.Errorf("parse callgrind: no summary or totals line")
	}
	return p, nil
}

// CallgrindTrace assembles parts into a trace, one row per part in part order, with a
// basic_blocks metadata column (use it as the time column). Parts must share one event
// list and be numbered consecutively.
func CallgrindTrace(parts []*CallgrindPart) (*Trace, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("assemble callgrind trace: no parts")
	}
	ps := slices.Clone(parts)
	slices.SortFunc(ps, func(a, b *CallgrindPart) int { return a.Part - b.Part })
	tr := &Trace{Events: slices.Clone(ps[0].Events), Meta: map[string][]float64{"basic_blocks": nil}}
	for i, p := range ps {
		if !slices.Equal(p.Events, tr.Events) {
			return nil, fmt.Errorf("assemble callgrind trace: part %d has events %v, part %d %v", p.Part, p.Events, ps[0].Part, tr.Events)
		}
		if i > 0 && p.Part != ps[i-1].Part+1 {
			return nil, fmt.Errorf("assemble callgrind trace: part %d follows part %d", p.Part, ps[i-1].Part)
		}
		if len(p.Counts) != len(tr.Events) {
			return nil, fmt.Errorf("assemble callgrind trace: part %d has %d counts for %d events", p.Part, len(p.Counts), len(tr.Events))
		}
		tr.Counts = append(tr.Counts, slices.Clone(p.Counts))
		tr.Durations = append(tr.Durations, 1)
		tr.Meta["basic_blocks"] = append(tr.Meta["basic_blocks"], p.BBs)
	}
	return tr, nil
}
