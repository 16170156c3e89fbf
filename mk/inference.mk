# inference: factor graph, schedulers, baselines, metrics and trace replay.

# Real-program traces need perf (linux-perf, already in APT_PKGS), python3, xz, git, gcc
# and make for the workloads.
APT_PKGS += xz-utils git python3

FUZZ_TARGETS += ./inference/replay:FuzzReadCSV ./inference/replay:FuzzParsePerfStatInterval

.PHONY: traces
# traces regenerates inference/replay/testdata/*.csv from real programs (root, perf).
traces:
	./inference/replay/gen-traces.sh inference/replay/testdata
