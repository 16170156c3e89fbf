package bpf

// The BPF object and its Go bindings are committed: `make generate` reruns this with clang,
// and `make check-generate` verifies that doing so changes nothing.
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -target bpfel -cc clang -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" snapshot snapshot.c
