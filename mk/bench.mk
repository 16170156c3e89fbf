# bench: `bayesperf bench read` and docs/latency.md.
#
# bin/bayesperf-readbench is the C program bench read times under `bayesperf run`; it
# includes the shim's ABI header for the mirror page layout.

READBENCH_CFLAGS ?= -O2 -g -Wall -Wextra -Werror -std=gnu11
BUILD_EXTRA += $(BIN)/bayesperf-readbench
TEST_PREREQS += $(BIN)/bayesperf-readbench
FUZZ_TARGETS += ./internal/bench:FuzzParseRaw

$(BIN)/bayesperf-readbench: internal/bench/c/readbench.c shim/preload/bayesperf_abi.h shim/preload/vdso_clock.h
	@mkdir -p $(BIN)
	$(CC) $(READBENCH_CFLAGS) $(X86_JCC_CFLAGS) -o $@ internal/bench/c/readbench.c

.PHONY: latency
# latency regenerates docs/latency.md and its chart (docs/latency.svg, .png) from one real
# run of `bayesperf bench read` (root not needed; a few seconds).
latency: $(BIN)/bayesperf $(BIN)/libbayesperf.so $(BIN)/bayesperf-readbench
	$(GO) run ./internal/bench/latencydoc -bin $(BIN) -out docs
