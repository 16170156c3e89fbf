# inference/model: the BayesPerf estimator.
#
# model-traces re-records the real-program traces its accuracy tests replay (needs root
# and perf; software events and tracepoints only, so any Linux machine will do).
.PHONY: model-traces model-accuracy
model-traces:
	inference/model/testdata/gen.sh inference/model/testdata

# model-accuracy prints linux / linear / bayesperf figures per trace.
model-accuracy:
	$(GO) test -count=1 -run 'TestRealTraces' -v ./inference/model/

# model-bench prints the cost of one online slice update and of smoothing, per event
# count (see inference/model/BENCH.md).
.PHONY: model-bench
model-bench:
	$(GO) test -run '^$$' -bench 'BenchmarkSlice' -benchtime 3000x -count 3 -cpu 1 ./inference/model/
	$(GO) test -run '^$$' -bench 'BenchmarkSmooth/events=(8|16|35|64)$$' -benchtime 50x -cpu 1 ./inference/model/

# model-bench-ir counts the instructions of one online slice update under callgrind, a
# figure that repeats on a noisy machine (BENCH_EVENTS: event counts, default 35).
.PHONY: model-bench-ir
model-bench-ir:
	command -v valgrind >/dev/null || apt-get install -y valgrind
	inference/model/bench_ir.sh $(BENCH_EVENTS)

# Diagnostics of the model: each prints per-trace and per-event figures that the tests
# do not judge (inference/model/diag_test.go says what each showed). DIAG_TRACES
# narrows the traces (comma-separated names, default all); CUT and SKIP cut the live
# traces for model-diag-cut.
DIAG_TRACES ?= all
CUT    ?= 500
SKIP   ?= 0
.PHONY: model-diag model-diag-per-event model-diag-median model-diag-coverage model-diag-cut
model-diag: model-diag-per-event model-diag-median model-diag-coverage model-diag-cut
model-diag-per-event:
	BAYESPERF_PEREVENT=$(DIAG_TRACES) $(GO) test -count=1 -run '^TestPerEventDiag$$' -v ./inference/model/
model-diag-median:
	BAYESPERF_MEDIAN=$(DIAG_TRACES) $(GO) test -count=1 -run '^TestMedianDiag$$' -v ./inference/model/
model-diag-coverage:
	BAYESPERF_COVDIAG=1 $(GO) test -count=1 -run '^TestCoverageDiag$$' -v ./inference/model/
model-diag-cut:
	BAYESPERF_LIVE_CUT=$(CUT) BAYESPERF_LIVE_SKIP=$(SKIP) $(GO) test -count=1 -run '^TestLiveCut$$' -v ./inference/model/
