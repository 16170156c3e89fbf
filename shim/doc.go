// Package shim is the Go side of the binary interface between the LD_PRELOAD library
// libbayesperf.so (C sources in shim/preload) and the sidecar: the socket messages, the
// client page and the counting mirror page, mirrored field by field from the one C header
// shim/preload/bayesperf_abi.h. A test compiles a C program against that header with gcc
// and checks every size, offset and constant against this package, so the two cannot
// drift.
//
// It also holds the seqlock writer of counting mirror pages (Mirror), which plays the
// kernel's part for counting reads: the sidecar publishes values, the shim copies them out
// without a system call.
//
// # The C library (shim/preload)
//
// libbayesperf.so interposes syscall() (only perf_event_open is handled; every other
// number goes to the kernel untouched through a raw system call, with bookkeeping for
// close/dup numbers), read, __read_chk, readv, pread, ioctl, fcntl, close, close_range,
// dup*, mmap, munmap, poll, ppoll, epoll_wait, epoll_pwait, the wait family, fork, the
// exec family and posix_spawn (see the measured program below), and sigaction and
// signal for SIGCHLD (a child that ended counts as reaped from the moment
// the tool's SIGCHLD handler runs: perf stat reads at once after it). Its
// exported symbols are listed in libbayesperf.map. It opens every perf event itself, in
// the caller, then registers the fd, the attr and the group with the sidecar:
//
//   - counting: read() of a registered fd is served from the event's mirror page in the
//     exact read_format layout. A page older than the sidecar's staleness bound, any perf
//     ioctl or a child that ended since the last refresh, and every read of an event that
//     counts the reader itself (pid 0, own pid or thread, or -1) first ask the sidecar for
//     a synchronous refresh, so values are never older than the reader can notice. A
//     page's age is judged on CLOCK_MONOTONIC_COARSE with a margin of two of its ticks
//     (the most it lags), and on CLOCK_MONOTONIC only when that cannot tell (counted in
//     the client page); the sidecar's bound is two ticks plus its republish period. The perf ioctls that
//     change what an event counts (RESET; ENABLE, DISABLE, REFRESH) are counted per
//     event in the client page, without a system call, for a stage that follows the
//     tool's own counting windows.
//   - sampling: mmap() of a registered fd that does not count the reader returns a mirror
//     ring of the same size that the sidecar fills from the kernel's ring (package
//     ringbuf), with backpressure, so losses happen in the kernel and reach the tool as
//     PERF_RECORD_LOST. Readiness stays the kernel's; after a poll/epoll wait returns,
//     after a perf ioctl and after a reaped child, the mirrors are flushed synchronously
//     so the tool never wakes to an empty mirror. Backward (write_backward) rings and
//     events that count the reader use the kernel's ring.
//   - the measured program: an exec whose new program a perf event opened through the
//     shim will count (the event targets the exec'ing process, as perf stat -- CMD's
//     events target its forked child; or counts its parent's descendants: pid -1, or
//     inherit on the parent itself; or is the process's own event on itself and not
//     close-on-exec) drops libbayesperf.so from LD_PRELOAD (the user's other preloads
//     stay) and BAYESPERF_SOCKET and BAYESPERF_VERBOSE from the new program's
//     environment (execve, execv, execvp, execvpe, execl*, fexecve; posix_spawn* when the
//     caller's events count its children), and no fd of the shim survives an exec (all
//     O_CLOEXEC). The workload therefore runs, and counts, exactly as without bayesperf.
//     perf opens the events after forking the child, which execs after; the child learns
//     of them through a MAP_SHARED page mapped before the first fork. Any other exec
//     keeps the shim: the shell of `sh -c 'perf stat ...'`, a tool started by a tool.
//   - degradation: without a sidecar, or when it dies or does not answer within
//     $BAYESPERF_TIMEOUT_MS (2000), the process passes everything to the kernel from then
//     on and prints one warning line. The real fds were in the caller all along, and the
//     shim keeps a mapping of each kernel ring behind a mirror ring and pumps it itself,
//     so no value and no record is lost. Values stay monotonic across the fallback: an
//     event read from the kernel after a mirror served it is served max(kernel + offset,
//     largest served), the offset fixed at that first kernel read as what the mirror had
//     served (or last published) above the kernel's count, so a corrected total that was
//     above the kernel's is continued with the kernel's increments, never taken back.
//
// The C sources are one file per concern behind the internal header shim/preload/shim.h,
// which states the rules the library keeps and which file owns what: real.c (the real
// libc functions, logging), fdtable.c (the fd table and the state all files share),
// conn.c (the sidecar connection, registration), exec.c (the measured program), ring.c
// (sampling mirrors, poll and epoll), read.c (counting reads, monotonic after a
// fallback) and control.c (syscall, ioctl, fcntl, dup, close, wait, SIGCHLD). Only
// bayesperf_abi.h is shared with this package.
//
// # Errors and concurrency
//
// Decoding functions return an error wrapping ErrMalformed for any byte string that is
// not a well-formed message, attr or read buffer; they never panic, whatever the input
// (fuzzed). A Mirror has exactly one writer at a time (the caller serialises Publish);
// any number of readers, in any process, may read concurrently. Message values are plain
// data.
package shim
