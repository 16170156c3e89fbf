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
		t, err := pmuevents.Host(pmuDir)
		if err != nil {
			return nil, usageErr("--pmu-events %s: %v; give Linux's tools/perf/pmu-events/arch directory (the one holding x86/, arm64/, ...)", pmuDir, err)
		}
		more, _ := t.Relations(pmuevents.HostEnv("/"))
		rels = append(rels, more...)
	}
	return rels, nil
}
