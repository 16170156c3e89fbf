package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Methods timed by the C program, in the order tables list them.
const (
	Native  = "native"  // syscall(SYS_read) on the fd: the kernel
	Shim    = "shim"    // read() on the fd, served by the shim's mirror page
	Floor   = "floor"   // raw seqlock copy of a page in the mirror's layout
	Clock   = "clock"   // clock_gettime(CLOCK_MONOTONIC_COARSE), the shim's freshness check
	Precise = "precise" // clock_gettime(CLOCK_MONOTONIC), when the coarse clock cannot tell
	Rdpmc   = "rdpmc"   // user-page seqlock plus the rdpmc instruction
)

var methods = []string{Native, Shim, Floor, Clock, Precise, Rdpmc}

// Raw is what one run of the C program printed.
type Raw struct {
	BatchReads   int                  // reads per timed batch
	Batches      map[string][]float64 // method -> ns per read of each batch
	RdpmcReason  string               // why rdpmc was not timed ("" when it was)
	AgeUs        []float64            // age of the values of each sampled shim read, µs
	AgeAmbiguous int                  // samples where the mirror was republished around the read
	AgeReason    string               // why age was not measured ("" when it was)
	Checks       int                  // reads that returned a wrong size
}

// ParseRaw reads the line format documented in c/readbench.c. Unknown keys are errors,
// so that a format change cannot go unnoticed.
func ParseRaw(r io.Reader) (*Raw, error) {
	raw := &Raw{Batches: map[string][]float64{}, Checks: -1}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	version := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		bad := func(err error) error { return fmt.Errorf("parse readbench output line %d %q: %w", n, trim(line), err) }
		switch key {
		case "readbench":
			if val != "1" {
				return nil, bad(fmt.Errorf("format version %q, want 1", val))
			}
			version = true
		case "batch_reads":
			v, err := strconv.Atoi(val)
			if err != nil || v <= 0 {
				return nil, bad(fmt.Errorf("want a positive count"))
			}
			raw.BatchReads = v
		case Native, Shim, Floor, Clock, Precise, Rdpmc:
			v, err := number(val)
			if err != nil {
				return nil, bad(err)
			}
			raw.Batches[key] = append(raw.Batches[key], v)
		case "age_us":
			v, err := strconv.ParseFloat(val, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, bad(fmt.Errorf("want a finite number"))
			}
			raw.AgeUs = append(raw.AgeUs, v)
		case "age_ambiguous":
			v, err := strconv.Atoi(val)
			if err != nil || v < 0 {
				return nil, bad(fmt.Errorf("want a count"))
			}
			raw.AgeAmbiguous = v
		case "rdpmc_unavailable":
			raw.RdpmcReason = val
		case "age_unavailable":
			raw.AgeReason = val
		case "checks":
			v, err := strconv.Atoi(val)
			if err != nil || v < 0 {
				return nil, bad(fmt.Errorf("want a count"))
			}
			raw.Checks = v
		default:
			return nil, bad(fmt.Errorf("unknown key"))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read readbench output: %w", err)
	}
	switch {
	case !version:
		return nil, fmt.Errorf("parse readbench output: no \"readbench 1\" line")
	case raw.BatchReads == 0:
		return nil, fmt.Errorf("parse readbench output: no batch_reads line")
	case raw.Checks < 0:
		return nil, fmt.Errorf("parse readbench output: no checks line (the program did not finish)")
	}
	for _, m := range []string{Native, Shim, Floor} {
		if len(raw.Batches[m]) == 0 {
			return nil, fmt.Errorf("parse readbench output: no %s batches", m)
		}
	}
	if len(raw.Batches[Rdpmc]) == 0 && raw.RdpmcReason == "" {
		return nil, fmt.Errorf("parse readbench output: neither rdpmc batches nor a reason")
	}
	return raw, nil
}

// number parses a positive finite ns figure.
func number(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("want a positive finite number")
	}
	return v, nil
}

func trim(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// Spread summarises repeated measurements: quantiles over batches (or samples).
type Spread struct {
	P10 float64 `json:"p10"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	N   int     `json:"n"`
}

// Quantile is the q-quantile of xs with linear interpolation between order statistics
// (R's type 7); NaN for no data. xs is not modified.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 || math.IsNaN(q) {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	q = min(max(q, 0), 1)
	h := q * float64(len(s)-1)
	lo := int(math.Floor(h))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (h-float64(lo))*(s[hi]-s[lo])
}

func spread(xs []float64) *Spread {
	if len(xs) == 0 {
		return nil
	}
	return &Spread{P10: Quantile(xs, 0.1), P50: Quantile(xs, 0.5), P90: Quantile(xs, 0.9), N: len(xs)}
}
