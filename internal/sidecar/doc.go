// Package sidecar is the server half of the drop-in path: it accepts the connections of
// libbayesperf.so (one per tool process) on a Unix socket, keeps a registry of the perf
// events each client opened and handed over, and publishes their counts into counting
// mirror pages (package shim) that the shim serves read() from without a system call.
//
// Pipeline: kernel fd -> raw shim.Values -> Stage (correction) -> shim.Mirror. The Stage
// is the seam where the virtual PMU and inference plug in; Identity publishes the kernel's
// values unchanged, which is how the drop-in path proves its fidelity.
//
// Security: the socket must live in a directory only its owner can enter (New checks the
// mode is 0700); every connection's peer credentials are checked (same uid as the
// sidecar, or root); the sidecar only reads fds a client opened itself and sent with
// SCM_RIGHTS, after checking they are perf event fds; shared pages are memfds sealed
// against shrinking and growing (mirror pages also against new writable mappings).
//
// Freshness: every live event is re-read and republished at least every Config.Period
// (1 ms by default); a shim that finds a page older than Config.StaleBound, or that saw an
// ioctl or a reaped child since, asks for a synchronous refresh over the socket.
//
// Errors: malformed messages and bad fds from a client close that client's connection
// (or decline the one registration) and are logged; they never stop the server. Server
// methods are safe for concurrent use; a Stage is called by one goroutine at a time.
package sidecar
