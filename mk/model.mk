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
