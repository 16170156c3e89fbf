package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// WriteJSON writes the result as exactly one JSON object (issue 5's shape). Non-finite
// numbers, which JSON cannot carry, are written as null.
func (r *Result) WriteJSON(w io.Writer) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result: %w", err)
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// MarshalJSON sanitises non-finite values before encoding, as replay's Scores, whose
// shape it has.
func (m Metric) MarshalJSON() ([]byte, error) {
	return json.Marshal(replay.Scores{WAPE: fin(m.WAPE), TotalError: fin(m.TotalError), RA: fin(m.RA), DTW: fin(m.DTW),
		Coverage95: m.Coverage95, Sharpness: finPtr(m.Sharpness)})
}

// finPtr is fin for an optional value: nil stays nil.
func finPtr(x *float64) *float64 {
	if x == nil {
		return nil
	}
	return fin(*x)
}

func fin(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// WriteTable writes a perf-stat-like table: per event the truth, Linux's scaled total and
// the bayesperf totals with their 95% intervals (and linux-own's, when scored), each with
// its error against the truth; then one line per estimator with the brief's metrics,
// including how much it harms its worst events relative to Linux scaling.
func (r *Result) WriteTable(w io.Writer, title string) {
	models := []string{}
	for _, n := range []string{BayesPerfRR, LinuxOwn, BayesPerf} {
		if r.has(n) {
			models = append(models, n)
		}
	}
	if r.Slices > 0 {
		fmt.Fprintf(w, "\n Counter estimates for %s\n (%d events on %d counters, %d slices, %d reporting intervals; err = |estimate - truth| / truth over the run)\n\n",
			title, r.Events, r.Counters, r.Slices, r.Intervals)
	} else { // scored from a tool's reads: the kernel's slices are not seen
		fmt.Fprintf(w, "\n Counter estimates for %s\n (%d events, %d reporting intervals; err = |estimate - truth| / truth over the run)\n\n",
			title, r.Events, r.Intervals)
	}
	fmt.Fprintf(w, "%16s  %16s %7s", "truth", "linux", "err")
	for _, m := range models {
		fmt.Fprintf(w, "  %16s %-12s %7s", m, "± 95%", "err")
	}
	fmt.Fprintf(w, "  event\n")
	for _, pe := range r.PerEvent {
		fmt.Fprintf(w, "%16s  %16s %7s", group(pe.Truth), group(pe.Totals[Linux].Value), relErr(pe.Totals[Linux].Value, pe.Truth))
		for _, m := range models {
			e := pe.Totals[m]
			pm := ""
			if e.HasInterval {
				pm = "± " + group(math.Max(e.Hi-e.Value, e.Value-e.Lo))
			}
			fmt.Fprintf(w, "  %16s %-12s %7s", group(e.Value), pm, relErr(e.Value, pe.Truth))
		}
		fmt.Fprintf(w, "  %s\n", pe.Event)
	}
	fmt.Fprintf(w, "\n %-13s %8s %12s %12s %7s %7s %11s %16s %10s %12s %7s  %s\n", "estimator", "wape", "median_wape", "total_error", "ra", "dtw", "coverage95", "error_reduction",
		"sharpness", "worst_ratio", "harmed", "worst_event")
	for _, n := range r.Names {
		s := r.Estimators[n]
		red := "-"
		if x, ok := r.ErrorReduction[n]; ok {
			red = fmt.Sprintf("%.2fx", x)
		}
		harmed, worst := "-", "-"
		if s.Harmed != nil {
			harmed = fmt.Sprint(*s.Harmed)
		}
		if s.WorstEvent != nil {
			worst = *s.WorstEvent
		}
		fmt.Fprintf(w, " %-13s %7.1f%% %11.1f%% %11.1f%% %7.3f %7.3f %11s %16s %10s %12s %7s  %s\n", n, 100*s.WAPE, 100*s.MedianWAPE, 100*s.TotalError, s.RA, s.DTW,
			opt(s.Coverage95, "%.3f"), red, opt(s.Sharpness, "%.3f"), opt(s.WorstRatio, "%.2fx"), harmed, worst)
	}
	fmt.Fprintf(w, " (worst_ratio: the largest WAPE / linux's WAPE over events where linux's WAPE >= 1%%, at worst_event;\n")
	fmt.Fprintf(w, "  harmed: events with WAPE > 1.5 linux's + 0.01; sharpness: median over events of sum of 95%% half-widths / sum of truth)\n")
	if !r.has(BayesPerf) {
		fmt.Fprintf(w, " (bayesperf on its own schedule: not available for this run)\n")
	}
	fmt.Fprintln(w)
}

func (r *Result) has(name string) bool {
	for _, n := range r.Names {
		if n == name {
			return true
		}
	}
	return false
}

// opt formats an optional figure, "-" when it is undefined.
func opt(x *float64, format string) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf(format, *x)
}

func relErr(est, truth float64) string {
	if truth == 0 {
		if est == 0 {
			return "0.0%"
		}
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*math.Abs(est-truth)/truth)
}

// group formats x rounded to an integer with perf's thousands separators.
func group(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "nan"
	}
	neg := x < 0
	s := fmt.Sprintf("%.0f", math.Abs(x))
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
