// Package workload holds built-in programs with phase behaviour (memory churn with page
// faults, storms of varied syscalls, sleep/wake ping-pong, fork/exec bursts, and a mix
// cycling through them) for demos, tests and `bayesperf eval`, so that multiplexed
// counters have something hard to estimate: rates that change abruptly from one phase
// to the next.
//
// A workload is deterministic given its seed: the sequence of phases, their lengths and
// intensities come from a math/rand/v2 PCG source seeded by the caller; only the counts
// the kernel sees vary with timing. Run them through `bayesperf workload NAME` so they
// are a separate process that events can be attached to.
//
// Errors are wrapped with the action that failed. Run is not meant to be called
// concurrently with another Run in the same process (phases compete for the CPU).
package workload
