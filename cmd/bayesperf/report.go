package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/vpmu/vstage"
)

// correctionStage is the sidecar's virtual PMU stage for --virtual-counters with
// run's --correct and --schedule; truth keeps the hidden always-on copies (for --stats
// and --report); report (--report) also multiplexes a copy as the kernel would, for the
// report's linux values under --schedule bayesperf, and keeps the report's intervals.
func correctionStage(counters int, fixed []perf.Attr, correct, sched string, truth, report bool, logf func(string, ...any)) (*vstage.Stage, error) {
	switch correct {
	case "none", "bayesperf":
	default:
		return nil, usageErr("--correct %s: want none or bayesperf", correct)
	}
	switch sched {
	case "kernel", "bayesperf":
	default:
		return nil, usageErr("--schedule %s: want kernel or bayesperf", sched)
	}
	return &vstage.Stage{Counters: counters, Fixed: fixed, Logf: logf, Infer: correct == "bayesperf",
		Schedule: sched, Relations: stageRelations(logf), Truth: truth, Baseline: report, Intervals: report}, nil
}

// writeStageFiles writes the stats file (with "truth", per event, when the stage kept
// truth copies; "bpf_loads", bpf.LoaderStats, with the bpf collector) and the report of
// the stage's correction.
func writeStageFiles(statsFile, reportFile string, st sidecar.Stats, vst *vstage.Stage, bl *bpf.Loader) error {
	var errs []error
	if statsFile != "" {
		var out any = st
		if vst != nil {
			// The server's counters plus the virtual PMUs' collector and truth, in one
			// object.
			b, err := json.Marshal(st)
			m := map[string]any{}
			if err == nil {
				err = json.Unmarshal(b, &m)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("encode stats: %w", err))
			} else {
				if vst.Truth {
					m["truth"] = vst.TruthTotals()
				}
				m["collector"] = vst.Collector()
				if bl != nil {
					m["bpf_loads"] = bl.Stats()
				}
				out = m
			}
		}
		errs = append(errs, writeStats(statsFile, out))
	}
	if reportFile != "" {
		if vst == nil {
			errs = append(errs, fmt.Errorf("write report %s: no virtual PMU (--virtual-counters) to report on", reportFile))
		} else {
			rep := struct {
				Written string `json:"written"`
				vstage.Report
			}{time.Now().UTC().Format(time.RFC3339), vst.Report()}
			if err := writeStats(reportFile, rep); err != nil {
				errs = append(errs, fmt.Errorf("write report: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}
