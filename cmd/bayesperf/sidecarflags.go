package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"strconv"
)

// sidecarFlags are the flags that run and sidecar share: run checks them and passes them
// on to the sidecar it starts (sidecarArgs), which checks them again.
type sidecarFlags struct {
	stats, report, truth, listen        *string
	verbose                             *bool
	vcounters                           *int
	fixed, correct, schedule, collector *string
	inferFrom                           *string
}

// addSidecarFlags defines the shared flags on fs.
func addSidecarFlags(fs *flag.FlagSet) sidecarFlags {
	return sidecarFlags{
		stats:     fs.String("stats", "", ""),
		verbose:   fs.Bool("v", false, ""),
		vcounters: fs.Int("virtual-counters", 0, ""),
		fixed:     fs.String("fixed-counters", "", ""),
		correct:   fs.String("correct", "", ""),
		schedule:  fs.String("schedule", "bayesperf", ""),
		report:    fs.String("report", "", ""),
		inferFrom: fs.String("infer-from", "", ""),
		collector: fs.String("collector", "auto", ""),
		truth:     fs.String("truth", "", ""),
		listen:    fs.String("listen", "", ""),
	}
}

// sidecarArgs are the flags run starts its sidecar with, given the resolved --correct
// and --infer-from: files as absolute paths, the virtual PMU's flags only with it.
func (f sidecarFlags) sidecarArgs(correct, from string) ([]string, error) {
	extra := []string{"--correct", correct, "--infer-from", from}
	if *f.listen != "" {
		extra = append(extra, "--listen", *f.listen)
	}
	if *f.truth != "" {
		abs, err := filepath.Abs(*f.truth)
		if err != nil {
			return nil, fmt.Errorf("--truth %s: %v", *f.truth, err)
		}
		extra = append(extra, "--truth", abs)
	}
	if *f.vcounters != 0 {
		extra = append(extra, "--virtual-counters", strconv.Itoa(*f.vcounters), "--fixed-counters", *f.fixed,
			"--schedule", *f.schedule, "--collector", *f.collector)
	}
	if *f.report != "" {
		abs, err := filepath.Abs(*f.report)
		if err != nil {
			return nil, fmt.Errorf("--report %s: %v", *f.report, err)
		}
		extra = append(extra, "--report", abs)
	}
	return extra, nil
}
