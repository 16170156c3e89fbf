# learned: the learned correctors of source 001 (inference/learned) against bayesperf.

LEARNED_MODEL ?= docs/learned-model.json
LEARNED_CORPUS ?= inference/replay/testdata/corpus

.PHONY: learned
# learned trains mlp and bigru on the corpus's tuning half (about 10 s on one core), then
# scores them with every other estimator on the validation half, and per application
# (one model per validation trace, trained on its first 60%), and writes docs/learned.md
# (14 minutes in all on a 2-core VM in 2026-11, 75 traces; no root needed).
learned: $(BIN)/bayesperf
	$(BIN)/bayesperf train --corpus $(LEARNED_CORPUS) -o $(LEARNED_MODEL)
	$(GO) run ./internal/eval/learnedreport -corpus $(LEARNED_CORPUS) -model $(LEARNED_MODEL) -out docs/learned.md \
		-train-cmd "bayesperf train --corpus $(LEARNED_CORPUS) -o $(LEARNED_MODEL)"
