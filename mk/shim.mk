# The LD_PRELOAD shim (shim/preload) and the drop-in end-to-end tests (test/dropin_*).

# The library's C files, by concern (shim/preload/shim.h says what each owns). Listed,
# not globbed: a stray .c in the directory must not end up in the library. mk/pmu.mk
# cross-compiles the same list.
SHIM_C := $(addprefix shim/preload/,real.c fdtable.c conn.c exec.c ring.c read.c control.c)
SHIM_SRC := $(SHIM_C) shim/preload/shim.h shim/preload/bayesperf_abi.h shim/preload/vdso_clock.h shim/preload/libbayesperf.map
SHIM_CFLAGS ?= -O2 -g -Wall -Wextra -Werror -fPIC -fvisibility=hidden -std=gnu11
# Intel CPUs from Skylake to Cascade Lake (this project's machines) with the JCC erratum
# microcode do not cache in the decoded-uop cache any 32-byte block that a jump crosses
# or ends in, so a read served from the mirror, a hundred-odd instructions, cost about
# 4 ns more or less (20 against 16 ns) depending on where its jumps happened to fall.
# The assembler keeps jumps off those boundaries (padding, no other change); x86 only.
# bench.mk builds the read benchmark with it too, so that its loops do not move either.
X86_JCC_CFLAGS := $(if $(filter x86_64-% i686-% i386-%,$(shell $(CC) -dumpmachine)),-Xassembler -mbranches-within-32B-boundaries)

BUILD_EXTRA += $(BIN)/libbayesperf.so
TEST_PREREQS += $(BIN)/libbayesperf.so
FUZZ_TARGETS += ./shim:FuzzDecode ./shim:FuzzParseRead ./shim:FuzzParseAttr ./internal/sidecar:FuzzServeMessages
APT_PKGS += gcc libc6-dev

# Every process that inherits LD_PRELOAD maps this library, which costs it a few page
# faults: keep it to libc only and two LOAD segments (noseparate-code).
$(BIN)/libbayesperf.so: $(SHIM_SRC)
	@mkdir -p $(BIN)
	$(CC) $(SHIM_CFLAGS) $(X86_JCC_CFLAGS) -shared -Wl,--version-script=shim/preload/libbayesperf.map \
		-Wl,-z,noseparate-code -Wl,--as-needed -o $@ $(SHIM_C)

# test/dropin_selfmon_test.go runs stress-ng --perf, a real program that counts its own
# work between its own ENABLE and DISABLE ioctls (issue 15, self-monitoring windows).
APT_PKGS += stress-ng
