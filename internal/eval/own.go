package eval

import (
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// ownSchedule: inference/schedule has no overlap scheduler yet, so bayesperf (on its own
// schedule) is absent; bayesperf-rr (the model on the kernel's round robin) is reported.
func ownSchedule(sp schedule.Spec, events []string, rels []relation.Relation) (*schedule.Schedule, error) {
	return nil, nil
}
