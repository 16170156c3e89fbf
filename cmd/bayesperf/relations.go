package main

import (
	"errors"
	"os"

	"github.com/bayesperf/bayesperf/inference/pmuevents"
	"github.com/bayesperf/bayesperf/inference/relation"
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
