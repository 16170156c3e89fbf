package eval

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
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

// MarshalJSON sanitises non-finite values before encoding.
func (m Metric) MarshalJSON() ([]byte, error) {
	type plain struct {
		WAPE       *float64 `json:"wape"`
		TotalError *float64 `json:"total_error"`
		RA         *float64 `json:"ra"`
		DTW        *float64 `json:"dtw"`
		Coverage95 *float64 `json:"coverage95"`
	}
	return json.Marshal(plain{fin(m.WAPE), fin(m.TotalError), fin(m.RA), fin(m.DTW), m.Coverage95})
}

func fin(x float64) *float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return &x
}

// WriteTable writes a perf-stat-like table: per event the truth, Linux's scaled total and
// the bayesperf totals with their 95% intervals, each with its error against the truth;
// then one line per estimator with the brief's metrics.
func (r *Result) WriteTable(w io.Writer, title string) {
	models := []string{}
	for _, n := range []string{BayesPerfRR, BayesPerf} {
		if r.has(n) {
			models = append(models, n)
		}
	}
	fmt.Fprintf(w, "\n Counter estimates for %s\n (%d events on %d counters, %d slices, %d reporting intervals; err = |estimate - truth| / truth over the run)\n\n",
		title, r.Events, r.Counters, r.Slices, r.Intervals)
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
	fmt.Fprintf(w, "\n %-13s %8s %12s %12s %7s %7s %11s %16s\n", "estimator", "wape", "median_wape", "total_error", "ra", "dtw", "coverage95", "error_reduction")
	for _, n := range r.Names {
		s := r.Estimators[n]
		cov := "-"
		if s.Coverage95 != nil {
			cov = fmt.Sprintf("%.3f", *s.Coverage95)
		}
		red := "-"
		if x, ok := r.ErrorReduction[n]; ok {
			red = fmt.Sprintf("%.2fx", x)
		}
		fmt.Fprintf(w, " %-13s %7.1f%% %11.1f%% %11.1f%% %7.3f %7.3f %11s %16s\n", n, 100*s.WAPE, 100*s.MedianWAPE, 100*s.TotalError, s.RA, s.DTW, cov, red)
	}
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
