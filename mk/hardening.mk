# hardening (issue 8): privilege, hostile clients, leaks, fault injection and concurrency
# of the drop-in path: test/hardening_*_test.go with the C programs test/c/hardening_*.c.
#
# They run in `make test` (about 2 min on 2 cores: 20 seeded SIGKILLs during perf stat -I,
# 6 during perf record, one SIGSTOP, 3 x 1000 open/close cycles, 8 threads x 64 events,
# fork/exec under load and with the sidecar killed, a root sidecar serving bpuser
# (--allow-uid), an 8 s no-loss soak, which `make soak` runs for SOAK_DURATION). They need root (the
# privilege test creates a second user, bpuser, with useradd from passwd, and removes
# it), the perf binary, gcc and perf_event_open for software events.

APT_PKGS += passwd
TEST_PREREQS += $(BIN)/libbayesperf.so

FAULT_TRIALS ?= 200
RECORD_FAULT_TRIALS ?= 50
MONO_FAULT_TRIALS ?= 50
FAULT_SEED ?= 1
LEAK_CYCLES ?= 10000
RELIABILITY_TRIALS ?= 50
RELIABILITY_RECORD_TRIALS ?= 20
RELIABILITY_CYCLES ?= 1000
RELIABILITY_FUZZ := ./shim:FuzzDecode ./shim:FuzzParseAttr ./internal/sidecar:FuzzServeMessages
# A count, not a duration: a duration -fuzztime can fail at its deadline with "context
# deadline exceeded" and no crasher on a loaded machine (golang/go#75804; see FUZZ_SHORT).
RELIABILITY_FUZZTIME ?= 400000x
SOAK_DURATION ?= 10m

.PHONY: faults leaks reliability soak

# faults: FAULT_TRIALS seeded SIGKILLs of the sidecar during perf stat -I 50,
# RECORD_FAULT_TRIALS during perf record, MONO_FAULT_TRIALS during perf stat -I 100
# under --virtual-counters 2 (no value may go backwards), and the SIGSTOP test; `make
# faults FAULT_SEED=7` draws other moments.
faults: deps
	BAYESPERF_FAULT_TRIALS=$(FAULT_TRIALS) BAYESPERF_RECORD_FAULT_TRIALS=$(RECORD_FAULT_TRIALS) \
		BAYESPERF_MONO_TRIALS=$(MONO_FAULT_TRIALS) BAYESPERF_FAULT_SEED=$(FAULT_SEED) \
		$(GO) test -count=1 -v -timeout 60m -run '^TestHardening((Record)?Sidecar(Killed|Stopped)|VirtualSidecarKilledMonotonic)$$' ./test

# leaks: the open/close cycle leak test with LEAK_CYCLES cycles per batch.
leaks: deps
	BAYESPERF_LEAK_CYCLES=$(LEAK_CYCLES) $(GO) test -count=1 -v -timeout 60m -run '^TestHardeningNoLeaks$$' ./test

# soak: the no-loss soak (a slow reader of two period-1 sampling events, and perf
# record -c 1 -m 2 beside it) for SOAK_DURATION; its figures are in the log.
soak: deps
	BAYESPERF_SOAK_DURATION=$(SOAK_DURATION) $(GO) test -count=1 -v -timeout 60m -run '^TestHardeningSoak$$' ./test

# reliability reruns every hardening test (RELIABILITY_TRIALS and
# RELIABILITY_RECORD_TRIALS kill trials, RELIABILITY_CYCLES cycles per leak batch) and
# short fuzz runs, then rewrites the figures section of docs/reliability.md from their
# log (root; about 3 minutes).
reliability: deps
	@set -o pipefail; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	BAYESPERF_FAULT_TRIALS=$(RELIABILITY_TRIALS) BAYESPERF_RECORD_FAULT_TRIALS=$(RELIABILITY_RECORD_TRIALS) \
	BAYESPERF_LEAK_CYCLES=$(RELIABILITY_CYCLES) \
		$(GO) test -count=1 -v -timeout 30m -run '^TestHardening' ./test 2>&1 | tee $$log; status=$$?; \
	for t in $(RELIABILITY_FUZZ); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "fuzz $$pkg $$name ($(RELIABILITY_FUZZTIME))" | tee -a $$log; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(RELIABILITY_FUZZTIME) $$pkg 2>&1 | tee -a $$log || status=1; \
	done; \
	BAYESPERF_RELIABILITY_LOG=$$log $(GO) test -count=1 -run '^TestHardeningReport$$' ./test || status=1; \
	echo "reliability: figures written to docs/reliability.md"; exit $$status
