package eval

import (
	"github.com/bayesperf/bayesperf/inference/graph"
	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/inference/schedule"
)

// OverlapOptions tune bayesperf's own schedule (schedule.Overlap) in eval.
var OverlapOptions = schedule.OverlapOptions{}

// ownSchedule is BayesPerf's overlap-aware schedule over the run's relation graph.
func ownSchedule(sp schedule.Spec, events []string, rels []relation.Relation) (*schedule.Schedule, error) {
	return schedule.Overlap(sp, graph.FromRelations(events, rels), OverlapOptions)
}
