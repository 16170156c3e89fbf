package main

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/bayesperf/bayesperf/inference/pmuevents"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// relationHint says where to see what relations look like.
const relationHint = "one relation per line, e.g. 'page-faults = minor-faults + major-faults'; 'bayesperf list --relations' prints the built-in ones"

// loadRelations returns the built-in relations plus those of a relation file and of the
// host's vendor tables.
func loadRelations(relFile, pmuDir string) ([]relation.Relation, error) {
	rels := relation.Builtins()
	if relFile != "" {
		fh, err := os.Open(relFile)
		if err == nil {
			var st os.FileInfo
			if st, err = fh.Stat(); err == nil && st.IsDir() {
				err = errors.New("is a directory")
			}
			if err != nil {
				fh.Close()
			}
		}
		if err != nil {
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, usageErr("--relations %s: %v; give a readable relation file (%s)", relFile, err, relationHint)
		}
		more, err := relation.ParseFile(relFile, fh)
		fh.Close()
		if err != nil {
			return nil, usageErr("%v; fix that line (%s)", err, relationHint)
		}
		rels = append(rels, more...)
	}
	if pmuDir != "" {
		t, err := loadPMUEvents(pmuDir)
		if err != nil {
			return nil, err
		}
		more, _ := t.Relations(pmuevents.HostEnv("/"))
		rels = append(rels, more...)
	}
	return rels, nil
}

// loadPMUEvents loads a Linux pmu-events table: the host's, found through mapfile.csv
// and the CPU's id, when dir is the arch directory (the one holding x86/, arm64/, ...),
// or the table of the CPU directory dir itself (.../arch/x86/skylake,
// .../arch/arm64/arm/neoverse-n1), for a CPU that mapfile.csv does not map this host to.
func loadPMUEvents(dir string) (*pmuevents.Table, error) {
	t, err := pmuevents.Open(dir)
	if err != nil {
		return nil, usageErr("--pmu-events %s: %v; give Linux's tools/perf/pmu-events/arch directory (the one holding x86/, arm64/, ...) or one CPU directory in it (arch/x86/skylake, arch/arm64/arm/neoverse-n1)", dir, err)
	}
	return t, nil
}

// stageRelations are the relations the sidecar's stages bind: the built-in ones and,
// when this machine's CPU matches a table of Linux's pmu-events (hostPMUEvents), that
// table's. Found once per process.
func stageRelations(logf func(string, ...any)) []relation.Relation {
	if logf == nil { // not verbose
		logf = func(string, ...any) {}
	}
	stageRelOnce.Do(func() { stageRels = append(relation.Builtins(), hostPMUEvents(logf)...) })
	return stageRels
}

var (
	stageRelOnce sync.Once
	stageRels    []relation.Relation
)

// pmuEventsEnv names the pmu-events tree (Linux's tools/perf/pmu-events/arch) the
// sidecar looks in for the host's CPU when no flag gives one.
const pmuEventsEnv = "BAYESPERF_PMU_EVENTS"

// hostPMUEvents finds Linux's pmu-events tree without being told which CPU this is:
// $BAYESPERF_PMU_EVENTS, else pmu-events/arch beside the directory of the executable
// (where `make pmu-events` puts it: bin/../pmu-events/arch). When mapfile.csv maps this
// CPU to a table there, the core PMU's events get the table's names (perf.Namer: raw
// and armv8_pmuv3 events are named inst_retired, not 8:0x8) and the table's relations
// are returned. No tree, or no table for this CPU: none, and the log says why.
func hostPMUEvents(logf func(string, ...any)) []relation.Relation {
	dir := os.Getenv(pmuEventsEnv)
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil
		}
		dir = filepath.Join(filepath.Dir(filepath.Dir(exe)), "pmu-events", "arch")
		if _, err := os.Stat(dir); err != nil {
			return nil // no tree: nothing to say
		}
	}
	t, err := pmuevents.Host(dir)
	if err != nil {
		logf("pmu-events: %v; no vendor relations", err)
		return nil
	}
	rels, _ := t.Relations(pmuevents.HostEnv("/"))
	names := t.CoreNames()
	perf.SetCoreEventNames(perf.CorePMUTypes(), names)
	logf("pmu-events: this CPU's table is %s (%s): %d relations, %d event numbers named", t.Dir, t.Root, len(rels), len(names))
	return rels
}
