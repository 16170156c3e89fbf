# The LD_PRELOAD shim (shim/preload) and the drop-in end-to-end tests (test/dropin_*).

SHIM_SRC := shim/preload/libbayesperf.c shim/preload/bayesperf_abi.h shim/preload/libbayesperf.map
SHIM_CFLAGS ?= -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden -std=gnu11

BUILD_EXTRA += $(BIN)/libbayesperf.so
TEST_PREREQS += $(BIN)/libbayesperf.so
FUZZ_TARGETS += ./shim:FuzzDecode ./shim:FuzzParseRead ./shim:FuzzParseAttr ./internal/sidecar:FuzzServeMessages
APT_PKGS += gcc libc6-dev

# Every process that inherits LD_PRELOAD maps this library, which costs it a few page
# faults: keep it to libc only and two LOAD segments (noseparate-code).
$(BIN)/libbayesperf.so: $(SHIM_SRC)
	@mkdir -p $(BIN)
	$(CC) $(SHIM_CFLAGS) -shared -Wl,--version-script=shim/preload/libbayesperf.map \
		-Wl,-z,noseparate-code -Wl,--as-needed -o $@ shim/preload/libbayesperf.c
