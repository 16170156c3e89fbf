// Package test holds bayesperf's end-to-end tests: each runs bayesperf and its C shim
// with real clients (perf stat, perf record, perf trace, stress-ng, the C programs of
// test/c) against the real kernel, and checks what a user would see, printed values,
// exit statuses and reports, against the native run or the virtual PMU's truth.
// There are no mocks here; a test that needs what the machine lacks (root, tracefs, BPF,
// stress-ng) skips and says what. `make test` runs them with everything installed
// (`make deps`); the binaries are built once per test binary (dropinBins), or taken from
// the directory $BAYESPERF_BIN names.
//
// Files by prefix: dropin_ (the LD_PRELOAD path through `bayesperf run`: fidelity of
// values, groups, reads, records, the virtual PMU and its correction, kernel
// multiplexing), hardening_ (hostile and failing clients, a killed or stopped sidecar,
// privileges, leaks, the no-loss soak), stat_ (`bayesperf stat` and `attach`),
// consumers_ (--listen, Prometheus, streams), errors_ (one-line errors and exit codes),
// list_ (`bayesperf list`), bench_ (`bayesperf bench read`). test/pmu holds the tests
// that need a hardware PMU the kernel multiplexes, run in the arm64 guest.
package test
