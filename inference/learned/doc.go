// Package learned holds the learned multiplexing correctors of source 001 (an MLP and a
// bidirectional GRU fitted to map multiplexed readings to true per-slice counts), behind
// the same inference.Estimator interface as the baselines and the Bayesian model, so that
// all are scored on the same observations.
//
// # What the models see
//
// Both models read the kernel's multiplexing of one run: for every event e and slice t,
// five per-slice inputs, all scale-free (see Inputs):
//
//   - rate: the slice's Linux-scaled count (count * enabled / running) when the event
//     counted in it, else 0;
//   - counted: running / enabled of the slice (1 counted whole, 0 not counted);
//   - fixed: PAPI's fixed interpolation of the slice (the last counted rate held over,
//     the next one before the first counted slice);
//   - always: the mean of the same normalised value over the events that counted in every
//     slice (the fixed counters: Ir, task-clock), which says how busy the slice was;
//   - duration: the slice's length over the run's mean slice length.
//
// Counts are divided by a per-event unit, the event's mean counted rate over the run
// times the mean slice length (the paper's models see whole runs, so this uses the run
// observed so far: after Finish, the whole run), and compressed with log1p, as the paper
// takes log10 of its counts. The target is log1p(true count / unit).
//
// The MLP (paper table 1: two hidden layers, dropout; DefaultConfig gives the sizes
// used here and why they are smaller) sees the five inputs of the 2W+1
// slices around t (W = 8 by default) and predicts slice t. The Bi-GRU (table 2) reads
// the whole sequence of the event's per-slice inputs forwards and backwards and predicts
// every slice from both hidden states. Both predict a correction of the fixed
// interpolation in log1p units (output = log1p(fixed) + network), trained with mean
// squared error, as the paper does, on the slices where the event was not counted
// whole: a slice counted whole keeps its exact count, so those slices are not
// predicted. A prediction is never negative (expm1 of a value clipped at 0).
//
// # One model shared by all events
//
// The paper fits one model per event per application, from 70 runs of each. Our corpus
// has one run per program and 24 to 70 events per run, with different event sets per
// family; a per-event model would not exist for most events of an unseen program. Since
// every input is normalised per event, the event's identity is not needed: one MLP and
// one Bi-GRU are shared by every event of every training run (a model trained on one
// program is then that program's per-application model). Per-event models are not
// implemented.
//
// # No framework
//
// The networks are plain float64 loops, not gonum/mat or a machine-learning framework:
// they are small (an MLP over 85 inputs, a GRU of 16 units) and trained one sample at a
// time, and explicit loops keep each forward pass beside its backward pass, which the
// finite-difference test checks.
//
// # Contract
//
// Estimates are point values: HasInterval is false, Status is StatusExact for an
// interval counted whole, StatusScaled otherwise and StatusNotCounted for an event that
// never counted. Training is deterministic: the same runs, Config and seed give the
// same weights, bit for bit (a single goroutine, a seeded math/rand/v2 PCG source, a
// fixed number of epochs, a fixed order). Errors are values; bad model files are
// rejected by Load with an error saying what is wrong. Estimators are not safe for
// concurrent use; a Model is read-only after Train or Load and may be shared.
package learned
