# The PMU testbed (test/pmu): an arm64 guest under qemu-system-aarch64 whose emulated
# PMUv3 is driven by the real Linux armv8_pmuv3 driver, which really multiplexes
# hardware counters. These machines have no hardware PMU of their own.
#
#   make pmu-test            build the guest (cached in $(PMU_DIR)/guest), cross-compile
#                            bayesperf, the shim and the PMU tests, run them in the guest,
#                            write $(PMU_DIR)/report.json; fails if a test fails
#   make pmu-run CMD='...'   run CMD with /bin/sh in the guest, in a copy of the working
#                            tree with the arm64 bin/ first on PATH and perf installed;
#                            prints its output and exits with its status
#                            (PMU_CPU=neoverse-n1 boots it as that core; default max)
#   BAYESPERF_PMU_STRICT=1 make pmu-test
#                            the same, with issue 14's acceptance figures as failures
#                            (the guest sees only what its command line sets, so
#                            pmu-test passes the variable on)

PMU_DIR   ?= build/pmu
PMU_GUEST := $(PMU_DIR)/guest
PMU_WORK  := $(PMU_DIR)/work
PMU_CC    ?= aarch64-linux-gnu-gcc
# PMU_EVENTS is Linux's pmu-events tree whose arm64 part pmu-tree copies into the copy's
# pmu-events/arch, where bayesperf finds it beside bin/: $BAYESPERF_PMU_EVENTS, else
# ../shared/pmu-events/arch where it exists (else none: TestPMUVendor skips).
PMU_EVENTS ?= $(or $(BAYESPERF_PMU_EVENTS),$(wildcard ../shared/pmu-events/arch))
# PMU_VENDOR_CPU is the CPU pmu-test boots the guest as a second time, for the tests of
# vendor tables (TestPMUVendor): one that Linux's arm64 mapfile.csv maps, with QEMU's PMU.
PMU_VENDOR_CPU ?= neoverse-n1
APT_PKGS  += qemu-system-arm mmdebstrap gcc-aarch64-linux-gnu libc6-dev-arm64-cross cpio kmod xz-utils
TEST_AFTER += pmu-test

.PHONY: pmu-guest pmu-tree pmu-run pmu-test
pmu-guest: deps
	test/pmu/build-guest.sh $(abspath $(PMU_GUEST))

# pmu-tree copies the working tree (tracked and untracked files, not ignored ones) and
# puts the arm64 builds in its bin/.
pmu-tree:
	@rm -rf $(PMU_WORK) && mkdir -p $(PMU_WORK)/bin
	@git ls-files -z -co --exclude-standard | tar --null -T - -cf - | tar -xf - -C $(PMU_WORK)
	CGO_ENABLED=0 GOARCH=arm64 $(GO) build -o $(PMU_WORK)/bin/bayesperf ./cmd/bayesperf
	CGO_ENABLED=0 GOARCH=arm64 $(GO) test -c -o $(PMU_WORK)/bin/pmu.test ./test/pmu
	$(PMU_CC) $(SHIM_CFLAGS) -shared -Wl,--version-script=shim/preload/libbayesperf.map \
		-Wl,-z,noseparate-code -Wl,--as-needed -o $(PMU_WORK)/bin/libbayesperf.so $(SHIM_C)
	@if [ -n "$(PMU_EVENTS)" ] && [ -f "$(PMU_EVENTS)/arm64/mapfile.csv" ] && [ ! -d $(PMU_WORK)/pmu-events/arch/arm64 ]; then \
		mkdir -p $(PMU_WORK)/pmu-events/arch && cp -r "$(PMU_EVENTS)/arm64" $(PMU_WORK)/pmu-events/arch/; fi

pmu-run: pmu-guest pmu-tree
	@test/pmu/run-guest.sh $(abspath $(PMU_GUEST)) $(abspath $(PMU_WORK)) '$(CMD)'

pmu-test: pmu-guest pmu-tree
	test/pmu/run-guest.sh $(abspath $(PMU_GUEST)) $(abspath $(PMU_WORK)) \
		'cd test/pmu && BAYESPERF_PMU_STRICT=$(BAYESPERF_PMU_STRICT) BAYESPERF_PMU_REPORT=/work/.pmu/report.json pmu.test -test.v -test.count=1 -test.timeout 15m'
	@if [ -d $(PMU_WORK)/pmu-events/arch/arm64 ]; then \
		echo "pmu: booting the guest as $(PMU_VENDOR_CPU) for the vendor tables"; \
		PMU_CPU=$(PMU_VENDOR_CPU) test/pmu/run-guest.sh $(abspath $(PMU_GUEST)) $(abspath $(PMU_WORK)) \
			'cd test/pmu && BAYESPERF_PMU_STRICT=$(BAYESPERF_PMU_STRICT) BAYESPERF_PMU_REPORT=/work/.pmu/report.json pmu.test -test.v -test.count=1 -test.run "^TestPMUVendor$$" -test.timeout 5m'; \
	else echo "pmu: no pmu-events JSON (../shared/pmu-events or BAYESPERF_PMU_EVENTS): TestPMUVendor skipped"; fi
	@cp $(PMU_WORK)/.pmu/report.json $(PMU_DIR)/report.json && echo "pmu: wrote $(PMU_DIR)/report.json" && cat $(PMU_DIR)/report.json
