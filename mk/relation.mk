# Relations: built-in, relation files and Linux pmu-events JSON (inference/relation,
# inference/metricexpr, inference/pmuevents).

FUZZ_TARGETS += ./inference/relation:FuzzParseFile ./inference/metricexpr:FuzzParse ./inference/pmuevents:FuzzLoad

# pmu-events extracts tools/perf/pmu-events/arch from Debian's linux-source-6.12 into
# $(PMU_EVENTS_DIR), for users without ../shared/pmu-events. It downloads ~150 MB and is
# never part of `make test`. Point bayesperf at it with --pmu-events $(PMU_EVENTS_DIR)/arch
# (tests look for $$BAYESPERF_PMU_EVENTS, relative to the module root, else
# ../shared/pmu-events: BAYESPERF_PMU_EVENTS=pmu-events/arch go test ./...).
PMU_EVENTS_DIR ?= pmu-events
PMU_EVENTS_PKG ?= linux-source-6.12
.PHONY: pmu-events
pmu-events:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	cd "$$tmp" && apt-get download $(PMU_EVENTS_PKG); \
	dpkg-deb -x $(PMU_EVENTS_PKG)_*.deb pkg; \
	src=$$(ls pkg/usr/src/linux-source-*.tar.xz | head -n1); \
	tar -xJf "$$src" --wildcards '*/tools/perf/pmu-events/arch'; \
	cd - >/dev/null; rm -rf $(PMU_EVENTS_DIR); mkdir -p $(PMU_EVENTS_DIR); \
	cp -r "$$tmp"/linux-source-*/tools/perf/pmu-events/arch $(PMU_EVENTS_DIR)/; \
	echo "pmu-events: $$(find $(PMU_EVENTS_DIR)/arch -name '*.json' | wc -l) JSON files in $(PMU_EVENTS_DIR)/arch"
