# bpf: the eBPF snapshot program (bpf/snapshot.c) and its committed bpf2go output.
#
# Building and testing never need clang: bpf/snapshot_bpfel.{go,o} are committed. Only the
# targets below compile BPF, so clang/llvm are installed by them, not by `make deps`.

BPF_GEN_PKGS := clang llvm
BPF_GENERATED := bpf/snapshot_bpfel.go bpf/snapshot_bpfel.o

.PHONY: generate generate-deps check-generate

generate-deps:
	$(MAKE) --no-print-directory deps APT_PKGS="$(BPF_GEN_PKGS)"

# generate rebuilds the BPF object and its Go bindings from bpf/snapshot.c.
generate: generate-deps
	cd bpf && $(GO) generate ./

# check-generate regenerates in place (with the flags in bpf/gen.go) and fails if that
# changed the committed files, restoring them. The object depends on the clang version: the
# committed one was built by Debian 12's clang 14.
check-generate: generate-deps
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	cp $(BPF_GENERATED) $$tmp/; \
	(cd bpf && $(GO) generate ./); \
	stale=0; for f in $(BPF_GENERATED); do \
		cmp -s $$f $$tmp/$$(basename $$f) || { echo "check-generate: $$f is stale: run make generate and commit" >&2; stale=1; }; \
	done; \
	if [ $$stale = 1 ]; then cp $$tmp/snapshot_bpfel.go $$tmp/snapshot_bpfel.o bpf/; exit 1; fi; \
	echo "check-generate: bpf generated files are up to date"

FUZZ_TARGETS += ./bpf:FuzzDecodeRecord ./bpf:FuzzFieldOffset
