package bench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Acceptance bounds of the issue (15, "Read path, decided"): the shim read must be at
// least MinSpeedup times cheaper than a native read() and within MaxAboveFloorNs of the
// floor. They are reported, never used to tune the measurement.
const (
	MinSpeedup      = 15.0
	MaxAboveFloorNs = 10.0
)

// WriteTable prints r as a small table with the ratios, for people.
func (r *Result) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "read of one counting event: %s\n%d batches of %d reads per method, interleaved\n\n", r.Event, r.Batches, r.BatchReads)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-36s\tns/read p50\tp10\tp90\tvs shim\t\n", "method")
	row := func(name string, s *Spread) {
		fmt.Fprintf(tw, "%-36s\t%.1f\t%.1f\t%.1f\t%.3gx\t\n", name, s.P50, s.P10, s.P90, s.P50/r.ShimReadNs)
	}
	row("native read(2)", r.Native)
	row("shim mirror read()", r.Shim)
	row("floor: raw seqlock", r.Floor)
	if r.Clock != nil {
		row("  coarse clock (every shim read)", r.Clock)
	}
	if r.PreciseClock != nil {
		row("  precise clock (if coarse undecided)", r.PreciseClock)
	}
	if r.Rdpmc != nil {
		row("rdpmc (user page)", r.Rdpmc)
	} else {
		fmt.Fprintf(tw, "%-36s\t-\t-\t-\t-\t\n", "rdpmc (user page)")
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write table: %w", err)
	}
	if r.RdpmcNs == nil {
		fmt.Fprintf(w, "rdpmc unavailable: %s\n", r.RdpmcReason)
	}
	if r.AgeP50Us != nil {
		fmt.Fprintf(w, "\ndata age of shim values: p50 %.0f us, p99 %.0f us, max %.0f us (%d samples, %d around a republish)\n",
			*r.AgeP50Us, *r.AgeP99Us, *r.AgeMaxUs, r.AgeSamples, r.AgeAmbiguous)
	} else {
		fmt.Fprintf(w, "\ndata age unavailable: %s\n", r.AgeReason)
	}
	fmt.Fprintf(w, "shim: %d reads from the mirror, %d passed to the kernel, %d synchronous refreshes,\n",
		r.MirrorReads, r.PassthroughReads, r.SyncRefreshes)
	fmt.Fprintf(w, "      %d (%.3f%%) read the precise clock (the coarse one could not tell)\n\n",
		r.PreciseClockReads, 100*r.PreciseShare)
	fmt.Fprintf(w, "native / shim = %.1fx (acceptance: >= %.0fx): %s\n", r.NativeOverShim, MinSpeedup, holds(r.NativeOverShim >= MinSpeedup))
	_, err := fmt.Fprintf(w, "shim - floor  = %.1f ns (acceptance: <= %.0f ns): %s\n", r.ShimAboveFloor, MaxAboveFloorNs, holds(r.ShimAboveFloor <= MaxAboveFloorNs))
	return err
}

func holds(ok bool) string {
	if ok {
		return "holds"
	}
	return "does not hold"
}
