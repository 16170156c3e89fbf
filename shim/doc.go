// Package shim is the Go side of the binary interface between the LD_PRELOAD library
// libbayesperf.so (C sources in shim/preload) and the sidecar: the socket messages, the
// client page and the counting mirror page, mirrored field by field from the one C header
// shim/preload/bayesperf_abi.h. A test compiles a C program against that header with gcc
// and checks every size and offset against this package, so the two cannot drift.
//
// It also holds the seqlock writer of mirror pages (Mirror), which plays the kernel's part
// for counting reads: the sidecar publishes values, the shim copies them out without a
// system call.
//
// Errors: decoding functions return an error wrapping ErrMalformed for any byte string
// that is not a well-formed message; they never panic, whatever the input (fuzzed).
//
// Concurrency: a Mirror has exactly one writer at a time (the caller serialises
// Publish); any number of readers, in any process, may read concurrently. Message values
// are plain data.
package shim
