# bayesperf build, test and report targets.
#
# Each area of the project owns a fragment in mk/<area>.mk that appends to the variables
# below and adds its own targets; this file only wires them together. Everything a target
# needs is installed by `make deps` (apt-get, as root), because CI starts from a clean
# machine.

GO      ?= go
BIN     := bin
SHELL   := /bin/bash

# Debian packages the build and the tests need; fragments append.
APT_PKGS := linux-perf gcc make
# Extra prerequisites of `make test` (besides deps and build); fragments append.
TEST_PREREQS :=
# Targets `make test` runs after the Go tests and fuzzing; fragments append.
TEST_AFTER :=
# Short fuzz runs that `make test` does: "pkgpath:FuzzName" entries; fragments append.
FUZZ_TARGETS :=
# FUZZ_SHORT is a count of executions, not a duration: with Go 1.26 a duration -fuzztime
# can fail at its deadline with "context deadline exceeded" and no crasher when the
# machine is loaded (golang/go#75804, fixed in Go 1.27), which would fail CI for nothing.
# A count has no deadline to race; 50000 took 1-8 s per target here (make fuzz runs longer).
FUZZ_SHORT ?= 50000x
FUZZ_LONG  ?= 5m
# Packages under test; `make test PKGS=./ringbuf/...` narrows it.
PKGS ?= ./...
TEST_TIMEOUT ?= 75m

.PHONY: all build deps test fuzz fuzz-short run usage bench clean
all: build

include $(wildcard mk/*.mk)

build: $(BIN)/bayesperf $(BUILD_EXTRA)

$(BIN)/bayesperf: FORCE
	@mkdir -p $(BIN)
	$(GO) build -o $@ ./cmd/bayesperf

FORCE:

# deps installs the Debian packages that are missing. It is a no-op when all are present.
deps:
	@missing=$$(for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then echo "make deps: need root to apt-get install $$missing" >&2; exit 1; fi; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# test sets up everything and runs every test, then a short run of each fuzz target.
# Packages run one at a time (-p 1): many tests measure the real kernel (context
# switches, multiplexing slices, sidecar timeouts), and another package's tests loading
# both cores at the same moment made them fail by chance (a truth copy saw 360
# context switches against native runs of 76). It costs about a minute.
test: deps build $(TEST_PREREQS)
	$(GO) vet ./...
	$(GO) test -p 1 -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	$(MAKE) --no-print-directory fuzz-short
	@# The committed BPF objects must match their source wherever clang can rebuild them;
	@# a clean machine has no clang, and building or testing never needs it.
	@if command -v clang >/dev/null; then $(MAKE) --no-print-directory check-generate; \
	else echo "check-generate: skipped: clang is not installed (make generate installs it)"; fi
	@for t in $(TEST_AFTER); do $(MAKE) --no-print-directory $$t || exit 1; done

fuzz-short:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name ($(FUZZ_SHORT))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZ_SHORT) $$pkg; \
	done

fuzz:
	$(MAKE) fuzz-short FUZZ_SHORT=$(FUZZ_LONG)

# run sets up everything and shows the main job on a built-in workload: more events than
# (virtual) counters, Linux's scaled values and bayesperf's corrected values with their
# 95% intervals, each scored against the exact truth. The demo itself is defined by the
# eval fragment (mk/eval.mk) as run-demo.
run: deps build
	@$(MAKE) --no-print-directory run-demo

# usage regenerates docs/usage.md from the commands' own --help.
usage: $(BIN)/bayesperf
	docs/gen/usage.sh $(BIN)/bayesperf docs/usage.md

bench: build
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

clean:
	rm -rf $(BIN) build
