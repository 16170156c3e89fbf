# inference: factor graph, schedulers, baselines, learned estimators, metrics and trace
# replay.

FUZZ_TARGETS += ./inference/replay:FuzzReadCSV ./inference/replay:FuzzParsePerfStatInterval \
	./inference/replay:FuzzParseCallgrindPart ./inference/learned:FuzzLoad

# The committed traces are test data: `make test` never regenerates them. Regenerating
# needs perf, valgrind and the workloads' programs.
TRACE_PKGS := linux-perf valgrind xz-utils git python3 gcc make sqlite3

.PHONY: traces
# traces regenerates inference/replay/testdata/*.csv from real programs (root: perf needs
# tracepoints). `make traces TRACES="find python"` regenerates only those.
traces:
	@$(MAKE) --no-print-directory deps APT_PKGS="$(TRACE_PKGS)"
	./inference/replay/gen-traces.sh inference/replay/testdata $(TRACES)
