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
