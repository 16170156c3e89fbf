// Package pmu holds the tests that need a real hardware PMU whose counters the kernel
// multiplexes: they run in the arm64 guest of the PMU testbed (`make pmu-test`, see
// mk/pmu.mk), where QEMU's emulated PMUv3 counts instructions and cycles exactly
// (-icount) and Linux's armv8_pmuv3 driver rotates events over its 6+1 counters. On a
// machine whose PMU does not count (these VMs: hardware events are "not supported") every
// test skips and says so.
//
// The tests use the arm64 builds that `make pmu-tree` puts in the tree's bin/ (there is
// no Go toolchain in the guest) and the guest's own perf. With $BAYESPERF_PMU_REPORT set,
// TestMain writes the figures the tests measured there as one JSON object.
package pmu
