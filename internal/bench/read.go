package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
)

// Result is the summary of one `bayesperf bench read` run. The *_ns and age fields are
// medians over batches (age: quantiles over samples); the spreads give p10/p50/p90.
type Result struct {
	NativeReadNs float64  `json:"native_read_ns"`
	ShimReadNs   float64  `json:"shim_read_ns"`
	FloorNs      float64  `json:"floor_ns"`
	RdpmcNs      *float64 `json:"rdpmc_ns"` // null when rdpmc cannot be used here
	RdpmcReason  string   `json:"rdpmc_reason,omitempty"`
	AgeP50Us     *float64 `json:"age_p50_us"` // null when age could not be measured
	AgeP99Us     *float64 `json:"age_p99_us"`
	AgeReason    string   `json:"age_reason,omitempty"`

	ClockNs        float64 `json:"clock_ns"`            // CLOCK_MONOTONIC_COARSE, part of every shim read
	PreciseNs      float64 `json:"precise_clock_ns"`    // CLOCK_MONOTONIC, when the coarse clock cannot tell
	NativeOverShim float64 `json:"native_over_shim"`    // how many times cheaper the shim read is
	ShimOverFloor  float64 `json:"shim_over_floor"`     // how far the shim read is from the floor, as a ratio
	ShimAboveFloor float64 `json:"shim_above_floor_ns"` // and in ns
	// PreciseShare is the share of the run's mirror reads that read the precise clock
	// (PreciseClockReads / MirrorReads).
	PreciseShare float64 `json:"precise_clock_share"`

	Native       *Spread `json:"native_spread"`
	Shim         *Spread `json:"shim_spread"`
	Floor        *Spread `json:"floor_spread"`
	Clock        *Spread `json:"clock_spread,omitempty"`
	PreciseClock *Spread `json:"precise_clock_spread,omitempty"`
	Rdpmc        *Spread `json:"rdpmc_spread,omitempty"`

	AgeMaxUs     *float64 `json:"age_max_us"`
	AgeSamples   int      `json:"age_samples"`
	AgeAmbiguous int      `json:"age_ambiguous"`

	Batches    int    `json:"batches"`
	BatchReads int    `json:"batch_reads"`
	Event      string `json:"event"`

	// From `bayesperf run --stats`: how the shim served the run's reads.
	MirrorReads       uint64 `json:"mirror_reads"`
	PassthroughReads  uint64 `json:"passthrough_reads"`
	SyncRefreshes     uint64 `json:"sync_refreshes"`
	PreciseClockReads uint64 `json:"precise_clock_reads"`
}

// Stats are the fields of `bayesperf run --stats` the benchmark checks.
type Stats struct {
	MirrorReads       uint64 `json:"mirror_reads"`
	PassthroughReads  uint64 `json:"passthrough_reads"`
	SyncRefreshes     uint64 `json:"sync_refreshes"`
	PreciseClockReads uint64 `json:"precise_clock_reads"`
}

// Event describes what the C program reads.
const Event = "task-clock of a sleeping child, read_format TOTAL_TIME_ENABLED|TOTAL_TIME_RUNNING (24 bytes)"

// Summarize turns a run's raw output and shim statistics into a Result.
func Summarize(raw *Raw, st Stats) *Result {
	r := &Result{
		Native: spread(raw.Batches[Native]), Shim: spread(raw.Batches[Shim]),
		Floor: spread(raw.Batches[Floor]), Clock: spread(raw.Batches[Clock]), PreciseClock: spread(raw.Batches[Precise]),
		Rdpmc:       spread(raw.Batches[Rdpmc]),
		RdpmcReason: raw.RdpmcReason, AgeReason: raw.AgeReason,
		AgeSamples: len(raw.AgeUs), AgeAmbiguous: raw.AgeAmbiguous,
		Batches: len(raw.Batches[Shim]), BatchReads: raw.BatchReads, Event: Event,
		MirrorReads: st.MirrorReads, PassthroughReads: st.PassthroughReads, SyncRefreshes: st.SyncRefreshes,
		PreciseClockReads: st.PreciseClockReads,
	}
	r.NativeReadNs, r.ShimReadNs, r.FloorNs = r.Native.P50, r.Shim.P50, r.Floor.P50
	if r.Clock != nil {
		r.ClockNs = r.Clock.P50
	}
	if r.PreciseClock != nil {
		r.PreciseNs = r.PreciseClock.P50
	}
	if st.MirrorReads > 0 {
		r.PreciseShare = float64(st.PreciseClockReads) / float64(st.MirrorReads)
	}
	if r.Rdpmc != nil {
		v := r.Rdpmc.P50
		r.RdpmcNs = &v
	}
	if len(raw.AgeUs) > 0 {
		p50, p99, mx := Quantile(raw.AgeUs, 0.5), Quantile(raw.AgeUs, 0.99), Quantile(raw.AgeUs, 1)
		r.AgeP50Us, r.AgeP99Us, r.AgeMaxUs = &p50, &p99, &mx
	} else if r.AgeReason == "" {
		r.AgeReason = "no age samples were taken"
	}
	r.NativeOverShim = r.NativeReadNs / r.ShimReadNs
	r.ShimOverFloor = r.ShimReadNs / r.FloorNs
	r.ShimAboveFloor = r.ShimReadNs - r.FloorNs
	return r
}

// Options of a read benchmark run.
type Options struct {
	Bayesperf  string // the bayesperf binary that runs the program under `bayesperf run`
	Readbench  string // the bayesperf-readbench binary (c/readbench.c)
	Shim       string // libbayesperf.so; "" lets `bayesperf run` find it
	Batches    int    // timed batches per method (default 200)
	BatchReads int    // reads per batch (default 1000)
	AgeSamples int    // shim reads sampled for the data age (default 2000; 0: none)
	Seed       uint64 // seed of the random spacing of age samples (default 1)
}

// RunRead runs the C program once under `bayesperf run` and summarises it. It fails when
// the program fails or when its shim reads were not all served from the mirror (then the
// figures would not measure the shim).
func RunRead(ctx context.Context, o Options) (*Result, *Raw, error) {
	if o.Batches <= 0 {
		o.Batches = 200
	}
	if o.BatchReads <= 0 {
		o.BatchReads = 1000
	}
	if o.AgeSamples < 0 {
		o.AgeSamples = 0
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	dir, err := os.MkdirTemp("", "bayesperf-bench-")
	if err != nil {
		return nil, nil, fmt.Errorf("create stats directory: %w", err)
	}
	defer os.RemoveAll(dir)
	statsFile := filepath.Join(dir, "stats.json")
	args := []string{"run", "--stats", statsFile}
	if o.Shim != "" {
		args = append(args, "--shim", o.Shim)
	}
	args = append(args, "--", o.Readbench, "-b", strconv.Itoa(o.Batches), "-n", strconv.Itoa(o.BatchReads),
		"-a", strconv.Itoa(o.AgeSamples), "-s", strconv.FormatUint(o.Seed, 10))
	cmd := exec.CommandContext(ctx, o.Bayesperf, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("run %s under bayesperf run: %w: %s", filepath.Base(o.Readbench), err, trim(stderr.String()))
	}
	raw, err := ParseRaw(&stdout)
	if err != nil {
		return nil, nil, err
	}
	if raw.Checks != 0 {
		return nil, nil, fmt.Errorf("measure reads: %d reads returned a wrong size", raw.Checks)
	}
	b, err := os.ReadFile(statsFile)
	if err != nil {
		return nil, nil, fmt.Errorf("read bayesperf run stats: %w", err)
	}
	var st Stats
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, nil, fmt.Errorf("parse bayesperf run stats: %w", err)
	}
	// Every timed shim read (plus the warm-up batch) must have come from a mirror.
	want := uint64(o.Batches+1) * uint64(o.BatchReads)
	if st.PassthroughReads != 0 || st.MirrorReads < want {
		return nil, nil, fmt.Errorf("measure shim reads: %d of at least %d reads were served from the mirror and %d went to the kernel; the figures would not measure the shim",
			st.MirrorReads, want, st.PassthroughReads)
	}
	return Summarize(raw, st), raw, nil
}
