# eval: perf event syntax (internal/perf), built-in workloads, the virtual PMU and
# `bayesperf eval`.
#
# The live tests and run-demo attach tracepoints to a child task: they need root (or
# perf_event_paranoid <= -1) and a mounted tracefs, and compare with /usr/bin/perf
# (linux-perf, already in APT_PKGS).

FUZZ_TARGETS += ./internal/eval:FuzzScoreReads ./internal/perf:FuzzParseList ./internal/perf:FuzzDecodeReading ./perfabi:FuzzDecodeAttr ./perfabi:FuzzDecodeRead ./internal/perf:FuzzResolvePMU ./internal/perf:FuzzParseCPUList

# 24 software events and tracepoints with real relations between them
# (page-faults = minor + major, raw_syscalls = sum of syscalls:*, cs = sched_switch).
DEMO_EVENTS ?= task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations,raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_read,syscalls:sys_enter_write,syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_getpid,syscalls:sys_enter_getppid,syscalls:sys_enter_openat,syscalls:sys_enter_close,sched:sched_switch,sched:sched_wakeup,sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit,syscalls:sys_enter_newfstat,syscalls:sys_enter_lseek,syscalls:sys_enter_getuid
DEMO_COUNTERS ?= 4
DEMO_FIXED ?= task-clock
DEMO_WORKLOAD ?= mixed
DEMO_DURATION ?= 5s

.PHONY: run-demo
# run-demo measures a built-in workload with more events than virtual counters and prints,
# per event, the truth, Linux's scaled value and bayesperf's corrected value with its 95%
# interval, each with its error, then the accuracy of every estimator.
run-demo: $(BIN)/bayesperf
	$(BIN)/bayesperf eval -e $(DEMO_EVENTS) --counters $(DEMO_COUNTERS) --fixed $(DEMO_FIXED) \
		-- $(BIN)/bayesperf workload $(DEMO_WORKLOAD) --duration $(DEMO_DURATION)

.PHONY: accuracy
# accuracy regenerates docs/accuracy.md and its plots from real runs (root; ~1 minute).
accuracy: $(BIN)/bayesperf
	$(GO) run ./internal/eval/accuracy -bin $(BIN)/bayesperf -out docs

.PHONY: live-traces
# live-traces re-records internal/eval/testdata/live-*.csv from built-in workloads (root).
live-traces: $(BIN)/bayesperf
	@for w in mixed syscalls memory; do \
		$(BIN)/bayesperf eval -e $(DEMO_EVENTS) --counters 4 --fixed task-clock --json \
			--save-trace internal/eval/testdata/live-$$w.csv -- $(BIN)/bayesperf workload $$w --duration 3s --seed 1 >/dev/null; \
	done

.PHONY: corpus corpus-phases corpus-budgets corpus-online
# corpus prints TestCorpus's figures on the corpus's validation half and what falls
# short of issue 13's acceptance (CORPUS_HALF=tune: the tuning half).
CORPUS_HALF ?= valid
corpus:
	BAYESPERF_CORPUS=$(CORPUS_HALF) $(GO) test -count=1 -run '^TestCorpus$$' -v ./internal/eval/
# corpus-phases replays every corpus trace once per start of bayesperf's schedule cycle
# and prints the spread of each trace's figures (a few minutes).
corpus-phases:
	BAYESPERF_CORPUS=$(CORPUS_HALF) BAYESPERF_CORPUS_PHASES=1 $(GO) test -count=1 -timeout 30m -run '^TestCorpusPhases$$' -v ./internal/eval/
# corpus-budgets replays every corpus trace at counter budgets other than its family's
# (fewer and more; first start) and prints the figures corpus judges (about a minute).
corpus-budgets:
	BAYESPERF_CORPUS=$(CORPUS_HALF) BAYESPERF_CORPUS_BUDGETS=1 $(GO) test -count=1 -timeout 30m -run '^TestCorpusBudgets$$' -v ./internal/eval/
# corpus-online prints the figures of the values a live reader gets (each interval
# estimated right after it ends), which corpus does not judge (about a minute).
corpus-online:
	BAYESPERF_CORPUS=$(CORPUS_HALF) BAYESPERF_CORPUS_ONLINE=1 $(GO) test -count=1 -timeout 30m -run '^TestCorpusOnline$$' -v ./internal/eval/
