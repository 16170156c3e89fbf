// Package schedule decides which events count in which multiplexing slice: it holds the
// cyclic Schedule type and the two schedulers that produce one, Kernel (the Linux round
// robin, reproduced exactly, used by every baseline) and Overlap (BayesPerf's
// overlap-aware schedule of paper section 4.1, built greedily as in the design notes).
//
// By default Overlap carries no event from one configuration to the next: it partitions
// the events into configurations (without groups or counter masks, the fewest the
// budget allows), each spread over the relation graph, so that consecutive
// configurations are linked through relations where the relations allow (their Markov
// blankets intersect, the paper's condition) and through the fixed events, rather than
// by sharing a counter. Every event is then read as often as the budget allows,
// evenly spaced; with the model this measured better than carrying events over, and
// co-counting related events worse (docs/model.md has the figures). The order of the
// configurations within the cycle is left as built: reordering them moved the figures
// no more than shifting the same schedule's phase against the reporting intervals does.
//
// A schedule is a list of configurations; slice t uses configuration t mod len. A
// configuration lists the events on programmable counters; events on fixed counters are
// counted in every slice and are kept apart in Schedule.Fixed.
//
// Errors: a Spec that cannot be scheduled (a user group larger than the counter budget,
// an event no counter may hold, a validity hook that rejects every configuration) is
// reported as an error naming the offending events, never a panic. Schedules are
// immutable values once built and safe for concurrent reads; schedulers hold no state.
package schedule
