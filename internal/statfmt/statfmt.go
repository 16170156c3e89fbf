package statfmt

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Mode is an output format.
type Mode int

const (
	Std  Mode = iota // perf stat's default layout
	CSV              // perf stat -x SEP
	JSON             // perf stat -j
)

// Counter is one event's line.
type Counter struct {
	Event string
	// Counted is false when the event was never enabled in the span (the target did not
	// run): the line shows "<not counted>", as perf's does.
	Counted bool
	// Value is bayesperf's estimate in the event's own unit (ns for task-clock and
	// cpu-clock, a count otherwise); Lo and Hi bound its 95% interval (Lo = Hi = Value
	// for an exact value).
	Value, Lo, Hi float64
	// Linux is the kernel-style estimate: count * enabled / running.
	Linux float64
	// Status says how Value was obtained (exact, scaled, inferred, not-counted).
	Status string
	// Enabled and Running are the ns the event was enabled and counting in the span;
	// Count is the raw count the kernel gave in it: the triple every value derives from.
	Count, Enabled, Running uint64
	// CPU is the CPU a per-CPU line (Printer.PerCPU, perf's -A) counted on.
	CPU int
}

// Footer is what perf prints after the counters of a whole run.
type Footer struct {
	Elapsed time.Duration
	// Rusage says User and Sys are known (a command bayesperf started); perf stat -p
	// prints only the elapsed time.
	Rusage    bool
	User, Sys time.Duration
}

// Printer writes perf-stat-style output to W.
type Printer struct {
	W    io.Writer
	Mode Mode
	// Sep separates CSV fields (perf's -x); "," when empty.
	Sep string
	// Interval is the -I period; 0 without -I. Interval lines use it as the time base of
	// "CPUs utilized", as perf does.
	Interval time.Duration
	// Start is the wall-clock time of the run's start. When set, JSON interval lines
	// carry "end-unix-ns": Start plus the interval's timestamp, in ns since the Unix
	// epoch, so that a consumer can tell how late a line reached it.
	Start time.Time
	// PerCPU prints every line with its Counter's CPU, as perf stat -A does: "CPU3"
	// before the value (std and CSV), "cpu" : "3" in JSON.
	PerCPU bool

	printed int // interval blocks printed, for the std header every 25 blocks
}

// Unit is the unit perf shows for an event ("msec" for the clock events) and the scale
// from the event's count to it.
func Unit(event string) (unit string, scale float64) {
	if isClock(event) {
		return "msec", 1e-6
	}
	return "", 1
}

// isClock says whether perf treats event as a clock (evsel__is_clock): its count is ns
// of task or CPU time.
func isClock(event string) bool {
	base, _, _ := strings.Cut(event, ":")
	switch base {
	case "task-clock", "cpu-clock":
		return true
	}
	return false
}

// HalfWidthPct is the half-width of c's 95% interval relative to its value, in percent.
// An exact value has 0; a zero value with a non-zero interval has +Inf.
func HalfWidthPct(c Counter) float64 {
	hw := (c.Hi - c.Lo) / 2
	if !(hw > 0) {
		return 0
	}
	if c.Value == 0 {
		return math.Inf(1)
	}
	return 100 * hw / math.Abs(c.Value)
}

// RunningPct is the share of the enabled time the event was counting, in percent (100
// when it was never enabled, as perf prints it).
func RunningPct(c Counter) float64 {
	if c.Running == c.Enabled || c.Enabled == 0 {
		return 100
	}
	return 100 * float64(c.Running) / float64(c.Enabled)
}

func (p *Printer) sep() string {
	if p.Sep == "" {
		return ","
	}
	return p.Sep
}

// metric is perf's derived value for one line (print_shadow_stats for software events).
type metric struct {
	ok   bool
	val  float64
	unit string
}

// metrics derives perf's shadow metric for every counter of one block: "CPUs utilized"
// for clocks (clock time over wall time), a rate per second of clock time for the others
// when the block has a clock event.
func metrics(cs []Counter, wall time.Duration) []metric {
	out := make([]metric, len(cs))
	clock := -1.0
	for _, c := range cs {
		if isClock(c.Event) && c.Counted {
			clock = c.Value
			break
		}
	}
	for i, c := range cs {
		if !c.Counted {
			continue
		}
		if isClock(c.Event) {
			if wall > 0 {
				out[i] = metric{true, c.Value / float64(wall.Nanoseconds()), "CPUs utilized"}
			}
			continue
		}
		if clock < 0 {
			continue
		}
		rate := 0.0
		if clock > 0 {
			rate = 1e9 * c.Value / clock
		}
		unit := "/sec"
		switch {
		case rate > 1e9:
			rate, unit = rate/1e9, "G/sec"
		case rate > 1e6:
			rate, unit = rate/1e6, "M/sec"
		case rate > 1e3:
			rate, unit = rate/1e3, "K/sec"
		}
		out[i] = metric{true, rate, unit}
	}
	return out
}

// num formats v with a printf verb, spelling NaN and infinities as C's printf does.
func num(format string, v float64) string {
	switch {
	case math.IsNaN(v):
		return fmt.Sprintf(strings.Replace(strings.Replace(format, "f", "s", 1), ".2", "", 1), "nan")
	case math.IsInf(v, 1):
		return fmt.Sprintf(strings.Replace(strings.Replace(format, "f", "s", 1), ".2", "", 1), "inf")
	case math.IsInf(v, -1):
		return fmt.Sprintf(strings.Replace(strings.Replace(format, "f", "s", 1), ".2", "", 1), "-inf")
	}
	return fmt.Sprintf(format, v)
}

// valueFormat is perf's format of a counter value: two decimals for scaled (msec)
// events, none otherwise.
func valueFormat(scale float64, width string) string {
	if scale != math.Floor(scale) {
		return "%" + width + ".2f"
	}
	return "%" + width + ".0f"
}

// unitWidth is perf's unit column: 4, or the longest unit.
func unitWidth(cs []Counter) int {
	w := 4
	for _, c := range cs {
		if u, _ := Unit(c.Event); len(u) > w {
			w = len(u)
		}
	}
	return w
}

// Header writes perf's header of a whole run's counters (std mode only): target is what
// perf puts between the quotes, e.g. the command line, or "process id '1234" form via
// ForPid.
func (p *Printer) Header(target string) error {
	if p.Mode != Std {
		return nil
	}
	_, err := fmt.Fprintf(p.W, "\n Performance counter stats for %s:\n\n", target)
	return err
}

// ForCommand is the header target of a command: 'CMD ARGS'.
func ForCommand(args []string) string { return "'" + strings.Join(args, " ") + "'" }

// ForPid is the header target of an attached process: process id 'PID'.
func ForPid(pid int) string { return fmt.Sprintf("process id '%d'", pid) }

// ForSystemWide is the header target of a run over every CPU (perf's -a).
func ForSystemWide() string { return "'system wide'" }

// ForCPUs is the header target of a run over the CPUs of a list (perf's -C LIST), as
// the user gave it.
func ForCPUs(list string) string { return "'CPU(s) " + list + "'" }

// Totals writes the counters of a whole run (elapsed is the wall time, the base of
// "CPUs utilized"). In CSV and JSON modes with summary set (an interval run's final
// totals, perf's --summary) CSV lines carry perf's "summary" prefix.
func (p *Printer) Totals(cs []Counter, elapsed time.Duration, summary bool) error {
	bw := bufio.NewWriter(p.W)
	ms := metrics(cs, elapsed)
	uw := unitWidth(cs)
	for i, c := range cs {
		prefix := ""
		if summary && p.Mode == CSV {
			prefix = fmt.Sprintf("%16s%s", "summary", p.sep())
		}
		p.line(bw, prefix, "", "", c, ms[i], uw)
	}
	return bw.Flush()
}

// Footer writes perf's footer of a whole run (std mode only).
func (p *Printer) Footer(f Footer) error {
	if p.Mode != Std {
		return nil
	}
	s := fmt.Sprintf("\n %17.9f seconds time elapsed\n", f.Elapsed.Seconds())
	if f.Rusage {
		s += fmt.Sprintf("\n %17.9f seconds user\n %17.9f seconds sys\n", f.User.Seconds(), f.Sys.Seconds())
	}
	_, err := io.WriteString(p.W, s+"\n")
	return err
}

// IntervalBlock writes the lines of one -I interval ending at ts after the start, with
// perf's column header before the first block and every 25 blocks in std mode.
func (p *Printer) IntervalBlock(ts time.Duration, cs []Counter) error {
	bw := bufio.NewWriter(p.W)
	uw := unitWidth(cs)
	if p.Mode == Std && p.printed%25 == 0 {
		if p.PerCPU {
			fmt.Fprintf(bw, "#           time CPU                    counts %*s events\n", uw, "unit")
		} else {
			fmt.Fprintf(bw, "#           time             counts %*s events\n", uw, "unit")
		}
	}
	p.printed++
	sec, nsec := int64(ts/time.Second), int64(ts%time.Second)
	var prefix, jsonPrefix string
	switch p.Mode {
	case Std:
		prefix = fmt.Sprintf("%6d.%09d ", sec, nsec)
	case CSV:
		prefix = fmt.Sprintf("%6d.%09d%s", sec, nsec, p.sep())
	case JSON:
		jsonPrefix = fmt.Sprintf("\"interval\" : %d.%09d, ", sec, nsec)
	}
	var jsonSuffix string
	if p.Mode == JSON && !p.Start.IsZero() {
		jsonSuffix = fmt.Sprintf(", \"end-unix-ns\" : %d", p.Start.Add(ts).UnixNano())
	}
	wall := p.Interval
	if wall <= 0 {
		wall = ts
	}
	ms := metrics(cs, wall)
	for i, c := range cs {
		p.line(bw, prefix, jsonPrefix, jsonSuffix, c, ms[i], uw)
	}
	// One write per block: a reader of a pipe gets the whole interval at once, as soon
	// as it is printed.
	return bw.Flush()
}

// line writes one counter line in p's mode.
func (p *Printer) line(w *bufio.Writer, prefix, jsonPrefix, jsonSuffix string, c Counter, m metric, uw int) {
	unit, scale := Unit(c.Event)
	const notCounted = "<not counted>"
	switch p.Mode {
	case Std:
		w.WriteString(prefix)
		if p.PerCPU {
			fmt.Fprintf(w, "CPU%-7d ", c.CPU) // perf's aggr_printout for -A
		}
		if c.Counted {
			w.WriteString(num(valueFormat(scale, "18")+" ", c.Value*scale))
		} else {
			fmt.Fprintf(w, "%18s ", notCounted)
		}
		fmt.Fprintf(w, "%-*s ", uw, unit)
		fmt.Fprintf(w, "%-32s", c.Event)
		// perf 6.1's metric column: " # " value unit, 35 wide in all (measured: its
		// lines are 91 columns before the running percentage, with or without a metric).
		const metricLen = 35
		if m.ok {
			s := " # " + num("%8.3f", m.val)
			w.WriteString(s)
			fmt.Fprintf(w, " %-*s", max(metricLen-len(s)-1, 0), m.unit)
		} else if c.Counted {
			fmt.Fprintf(w, "%-*s", metricLen, "")
		} else {
			// perf pads a <not counted> line less (measured: 84 columns, not 91).
			fmt.Fprintf(w, "%-*s", metricLen-7, "")
		}
		if c.Counted {
			fmt.Fprintf(w, "  ( ±%s%% )", num("%6.2f", HalfWidthPct(c)))
		}
		if c.Running != c.Enabled {
			fmt.Fprintf(w, "  (%.2f%%)", 100*float64(c.Running)/float64(c.Enabled))
		}
		w.WriteString("\n")
	case CSV:
		sep := p.sep()
		w.WriteString(prefix)
		if p.PerCPU {
			fmt.Fprintf(w, "CPU%d%s", c.CPU, sep)
		}
		vf := valueFormat(scale, "")
		if c.Counted {
			w.WriteString(num(vf, c.Value*scale))
		} else {
			w.WriteString(notCounted)
		}
		fmt.Fprintf(w, "%s%s%s%s", sep, unit, sep, c.Event)
		fmt.Fprintf(w, "%s%d%s%.2f", sep, c.Running, sep, RunningPct(c))
		if m.ok {
			fmt.Fprintf(w, "%s%s%s%s", sep, strings.TrimSpace(num("%8.3f", m.val)), sep, m.unit)
		} else {
			w.WriteString(sep + sep)
		}
		// bayesperf's fields, after perf's: the interval, the status, the kernel's value.
		if c.Counted {
			fmt.Fprintf(w, "%s%s%s%s%s%s%s%s\n", sep, num(vf, c.Lo*scale), sep, num(vf, c.Hi*scale),
				sep, c.Status, sep, num(vf, c.Linux*scale))
		} else {
			fmt.Fprintf(w, "%s%s%s%s\n", sep, sep, sep, c.Status)
		}
	case JSON:
		w.WriteString("{" + jsonPrefix)
		if p.PerCPU {
			fmt.Fprintf(w, "\"cpu\" : \"%d\", ", c.CPU)
		}
		if c.Counted {
			fmt.Fprintf(w, "\"counter-value\" : \"%s\", ", num("%f", c.Value*scale))
		} else {
			fmt.Fprintf(w, "\"counter-value\" : \"%s\", ", notCounted)
		}
		fmt.Fprintf(w, "\"unit\" : %s, \"event\" : %s, ", quote(unit), quote(c.Event))
		fmt.Fprintf(w, "\"event-runtime\" : %d, \"pcnt-running\" : %.2f, ", c.Running, RunningPct(c))
		mv, mu := 0.0, ""
		if m.ok {
			mv, mu = m.val, m.unit
		}
		fmt.Fprintf(w, "\"metric-value\" : %s, \"metric-unit\" : %s", jnum(mv), quote(mu))
		if c.Counted {
			fmt.Fprintf(w, ", \"lo\" : %s, \"hi\" : %s, \"status\" : %s, \"linux\" : %s",
				jnum(c.Lo*scale), jnum(c.Hi*scale), quote(c.Status), jnum(c.Linux*scale))
		} else {
			fmt.Fprintf(w, ", \"lo\" : null, \"hi\" : null, \"status\" : %s, \"linux\" : null", quote(c.Status))
		}
		// The raw triple, in the kernel's units (a count, ns), whatever the event's unit.
		fmt.Fprintf(w, ", \"count\" : %d, \"enabled\" : %d, \"running\" : %d%s}\n", c.Count, c.Enabled, c.Running, jsonSuffix)
	}
}

// jnum is a JSON number with perf's six decimals; JSON has no NaN or infinity, so those
// are null.
func jnum(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return fmt.Sprintf("%f", v)
}

func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
