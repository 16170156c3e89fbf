package main

import (
	"fmt"
	"os"

	"github.com/bayesperf/bayesperf/inference/pmuevents"
	"github.com/bayesperf/bayesperf/inference/relation"
)

// loadRelations returns the built-in relations plus those of a relation file and of the
// host's vendor tables.
func loadRelations(relFile, pmuDir string) ([]relation.Relation, error) {
	rels := relation.Builtins()
	if relFile != "" {
		fh, err := os.Open(relFile)
		if err != nil {
			return nil, usageError{fmt.Errorf("open relation file: %w", err)}
		}
		more, err := relation.ParseFile(relFile, fh)
		fh.Close()
		if err != nil {
			return nil, usageError{err}
		}
		rels = append(rels, more...)
	}
	if pmuDir != "" {
		t, err := pmuevents.Host(pmuDir)
		if err != nil {
			return nil, usageError{fmt.Errorf("--pmu-events %s: %w", pmuDir, err)}
		}
		more, _ := t.Relations(pmuevents.HostEnv("/"))
		rels = append(rels, more...)
	}
	return rels, nil
}
