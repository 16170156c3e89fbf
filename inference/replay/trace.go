package replay

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// MetadataColumns are the columns that never hold an event.
var MetadataColumns = []string{"interval", "wall_ns", "basic_blocks", "time_ns"}

// Trace is a run recorded with exact per-slice counts of every event.
type Trace struct {
	// Events are the event names in column order; EventID i is Events[i].
	Events []string
	// Counts[t][e] is the exact count of event e in slice t.
	Counts [][]uint64
	// Durations[t] is the length of slice t: 1, or the time column's value.
	Durations []float64
	// Meta holds the metadata columns present in the file, by name, one value per row.
	Meta map[string][]float64
}

// Slices is the number of slices (rows) of the trace.
func (tr *Trace) Slices() int { return len(tr.Counts) }

// EventIndex returns the column index of the event named name, or -1.
func (tr *Trace) EventIndex(name string) int {
	for i, n := range tr.Events {
		if n == name {
			return i
		}
	}
	return -1
}

// Truth returns the exact count of every event summed over slices [from, to), clamped
// to the trace.
func (tr *Trace) Truth(from, to int) []float64 {
	out := make([]float64, len(tr.Events))
	from, to = max(from, 0), min(to, len(tr.Counts))
	for t := from; t < to; t++ {
		for e, c := range tr.Counts[t] {
			out[e] += float64(c)
		}
	}
	return out
}

// ReadOptions tune ReadCSV.
type ReadOptions struct {
	// TimeColumn names a metadata column whose value is the duration of each row's slice.
	// Empty means every slice lasts 1.
	TimeColumn string
}

// ReadFile reads a trace CSV file (see ReadCSV).
func ReadFile(path string, opt ReadOptions) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	tr, err := ReadCSV(f, opt)
	if err != nil {
		return nil, fmt.Errorf("read trace %s: %w", path, err)
	}
	return tr, nil
}

// ErrNoEvents is returned for a trace whose header names only metadata columns.
var ErrNoEvents = errors.New("trace has no event columns")

// ReadCSV reads a trace: a header line of column names, then one row per slice.
//
// Event cells must be non-negative integers (a count; "12.0" is accepted as 12, a
// fraction is an error). Metadata cells must be finite numbers; the time column's values
// must be positive. Blank lines are skipped; a row with a different number of cells than
// the header, a duplicate or empty column name, or a time column that is absent are
// errors. Column "interval", when present, must number the rows consecutively (any
// start), so that a truncated or shuffled file is caught.
func ReadCSV(r io.Reader, opt ReadOptions) (*Trace, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("read header: empty trace")
	}
	if err != nil {
		return nil, fmt.Errorf("read header: %w", err)
	}
	isMeta := map[string]bool{}
	for _, m := range MetadataColumns {
		isMeta[m] = true
	}
	if opt.TimeColumn != "" {
		isMeta[opt.TimeColumn] = true
	}
	seen := map[string]int{}
	tr := &Trace{Meta: map[string][]float64{}}
	var eventCol []int
	for i, name := range header {
		name = strings.TrimSpace(name)
		header[i] = name
		if name == "" {
			return nil, fmt.Errorf("read header: column %d has no name", i+1)
		}
		if j, dup := seen[name]; dup {
			return nil, fmt.Errorf("read header: column %q appears twice (columns %d and %d)", name, j+1, i+1)
		}
		seen[name] = i
		if isMeta[name] {
			tr.Meta[name] = nil
			continue
		}
		eventCol = append(eventCol, i)
		tr.Events = append(tr.Events, name)
	}
	if len(tr.Events) == 0 {
		return nil, fmt.Errorf("read header: %w", ErrNoEvents)
	}
	if opt.TimeColumn != "" {
		if _, ok := seen[opt.TimeColumn]; !ok {
			return nil, fmt.Errorf("read header: time column %q not found", opt.TimeColumn)
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
				return nil, fmt.Errorf("read row at line %d: %d cells, header has %d", pe.Line, len(rec), len(header))
			}
			return nil, fmt.Errorf("read row: %w", err)
		}
		line, _ := cr.FieldPos(0)
		counts := make([]uint64, len(eventCol))
		for k, col := range eventCol {
			v, err := parseCount(rec[col])
			if err != nil {
				return nil, fmt.Errorf("read row at line %d, column %q: %w", line, header[col], err)
			}
			counts[k] = v
		}
		dur := 1.0
		for i, name := range header {
			if !isMeta[name] {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(rec[i]), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("read row at line %d, column %q: not a finite number: %q", line, name, rec[i])
			}
			if name == opt.TimeColumn {
				if v <= 0 {
					return nil, fmt.Errorf("read row at line %d, time column %q: duration %v is not positive", line, name, v)
				}
				dur = v
			}
			tr.Meta[name] = append(tr.Meta[name], v)
		}
		if iv, ok := tr.Meta["interval"]; ok && len(iv) > 1 {
			if iv[len(iv)-1] != iv[len(iv)-2]+1 {
				return nil, fmt.Errorf("read row at line %d: interval %v does not follow %v", line, iv[len(iv)-1], iv[len(iv)-2])
			}
		}
		tr.Counts = append(tr.Counts, counts)
		tr.Durations = append(tr.Durations, dur)
	}
	if len(tr.Counts) == 0 {
		return nil, errors.New("read rows: trace has a header but no rows")
	}
	return tr, nil
}

func parseCount(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if v, err := strconv.ParseUint(s, 10, 64); err == nil {
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a count: %q", s)
	}
	if f < 0 || f != math.Trunc(f) || f >= 1<<63 {
		return 0, fmt.Errorf("not a non-negative integer count: %q", s)
	}
	return uint64(f), nil
}

// WriteCSV writes the trace in the format ReadCSV reads: "interval" first, then the
// other metadata columns in name order, then the events.
func (tr *Trace) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var meta []string
	for _, m := range MetadataColumns {
		if _, ok := tr.Meta[m]; ok && m != "interval" {
			meta = append(meta, m)
		}
	}
	var extra []string
	for m := range tr.Meta {
		if !isStandardMeta(m) {
			extra = append(extra, m)
		}
	}
	slices.Sort(extra)
	meta = append(meta, extra...)
	header := append([]string{"interval"}, meta...)
	header = append(header, tr.Events...)
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write trace header: %w", err)
	}
	row := make([]string, len(header))
	for t, counts := range tr.Counts {
		row = row[:0]
		row = append(row, strconv.Itoa(t))
		for _, m := range meta {
			v := 0.0
			if t < len(tr.Meta[m]) {
				v = tr.Meta[m][t]
			}
			row = append(row, strconv.FormatFloat(v, 'f', -1, 64))
		}
		for _, c := range counts {
			row = append(row, strconv.FormatUint(c, 10))
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write trace row %d: %w", t, err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	return nil
}

func isStandardMeta(m string) bool {
	for _, s := range MetadataColumns {
		if s == m {
			return true
		}
	}
	return false
}
