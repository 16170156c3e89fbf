package main

import (
	"github.com/bayesperf/bayesperf/internal/kstage"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/perfabi"
)

// resolveInferFrom checks --infer-from against --virtual-counters and gives its default.
func resolveInferFrom(v string, vcounters int) (string, error) {
	switch {
	case v == "" && vcounters > 0:
		return "slices", nil
	case v == "":
		return "values", nil
	case v == "slices" && vcounters == 0:
		return "", usageErr("--infer-from slices needs --virtual-counters N (only the virtual PMU makes slices); without it the kernel's values are all there is")
	case v != "slices" && v != "values":
		return "", usageErr("--infer-from %s: want slices or values", v)
	}
	return v, nil
}

// resolveCorrect gives --correct's default: bayesperf with --virtual-counters, none
// without. Correcting the kernel's own round robin from the values alone (kstage) is not
// better than the kernel's scaling on every workload (0.8-1.0x on the emulated round
// robin, test/dropin_kstage_test.go; 0.21-3.0x on the arm64 guest's real PMU,
// docs/pmu.md), while it turns every read of a multiplexed event into a round trip: it
// is there for those who ask for it, not yet the default.
//
// Without --virtual-counters the default is auto: on a CPU whose PMU counts, a client
// asking for more hardware events than the counters hold has them scheduled by the
// sidecar itself (vstage.Stage.Auto), which measured better than the kernel's scaling
// on the arm64 testbed (docs/pmu.md); elsewhere, and for clients whose events fit, the
// kernel's values, as none.
func resolveCorrect(v string, vcounters int) (string, error) {
	switch {
	case v == "" && vcounters > 0:
		return "bayesperf", nil
	case v == "":
		return "auto", nil
	case v == "auto" && vcounters > 0:
		return "", usageErr("--correct auto is for the kernel's PMU; with --virtual-counters N use bayesperf or none")
	case v != "none" && v != "bayesperf" && v != "auto":
		return "", usageErr("--correct %s: want auto, none or bayesperf", v)
	}
	return v, nil
}

// countsHardware says whether this machine's PMU counts a hardware event for this
// process (instructions): where it does not (a VM without a PMU), auto is none.
func countsHardware() bool {
	a := perf.Attr{Type: perf.TypeHardware, Size: perfabi.AttrSize, Config: perf.HWInstructions,
		Flags: perfabi.FlagExcludeKern | perfabi.FlagExcludeHV, ReadFormat: perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning}
	e, err := perf.Open(a, perf.ThisPid, perf.AnyCPU, nil)
	if err != nil {
		return false
	}
	e.Close()
	return true
}

// vstageCorrect is the --correct the virtual PMU gets: none when the values it
// presents are corrected after it.
func vstageCorrect(correct, inferFrom string) string {
	if inferFrom == "values" {
		return "none"
	}
	return correct
}

// withKernelMux adds, with --correct bayesperf --infer-from values, the stage that
// corrects multiplexing from the values read after st (nil: the kernel's own values).
func withKernelMux(st sidecar.Stage, correct, inferFrom string, logf func(string, ...any)) sidecar.Stage {
	if correct != "bayesperf" || inferFrom != "values" {
		return st
	}
	// No Preload: reading every tracepoint id takes the CPU from the measured program
	// just as it starts (perf stat's context switches tripled on the test VM), and the
	// names are only needed once the kernel is seen multiplexing, which a machine
	// without a PMU never shows.
	ks := &kstage.Stage{Relations: stageRelations(logf), Logf: logf}
	if st == nil {
		ks.SelfFromKernel = true // alone, the stage is KernelExact
		return ks
	}
	// After the virtual PMU, which preloads the names anyway, the stage would
	// otherwise read tracefs under the sidecar's lock at the first multiplexed round,
	// hundreds of milliseconds without rounds or reads.
	go ks.Preload()
	return sidecar.Chain{st, ks}
}
