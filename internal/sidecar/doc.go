// Package sidecar is the server half of the drop-in path: it accepts the connections of
// libbayesperf.so (one per tool process) on a Unix socket, keeps a registry of the perf
// events each client opened and handed over, and publishes their counts into counting
// mirror pages (package shim) that the shim serves read() from without a system call.
//
// Pipeline: kernel fd -> raw shim.Values -> Stage (correction) -> shim.Mirror. The Stage
// is the seam where the virtual PMU and inference plug in; Identity publishes the kernel's
// values unchanged, which is how the drop-in path proves its fidelity.
//
// Sampling: when the tool maps a registered fd (MAP), the sidecar maps the kernel's ring
// from its copy of the fd and creates a mirror ring of the same size; each round and on
// FLUSH it moves the records that fit from the kernel's ring to the mirror with ringbuf's
// Reader and Writer (the sidecar is the mirror's producer: record bytes, then
// store-release of data_head). Records are copied verbatim; correcting the counter
// values inside SAMPLE and READ records (ringbuf.FindReadBlock) is the Stage's future
// business.
//
// Security: the socket must live in a directory only its owner can enter (New checks the
// mode is 0700); every connection's peer credentials are checked (same uid as the
// sidecar, or root, or a uid of Config.AllowUIDs, which gets nothing its own fds do not
// give it: see client.foreignPolicy); the sidecar only reads fds a client opened itself and sent with
// SCM_RIGHTS, after checking they are perf event fds; shared pages are memfds sealed
// against shrinking and growing (mirror pages also against new writable mappings).
//
// Freshness: a shim that finds a page older than Config.StaleBound (by default two ticks
// of CLOCK_MONOTONIC_COARSE, on which the shim judges ages, plus Period), or that saw an ioctl
// or a reaped child since, asks for a synchronous refresh over the socket, so no read
// returns values older than the bound. To spare reads that round trip, every live event
// is re-read and republished every Config.Period (1 ms by default) for
// Config.ActiveWindow (10 ms) after a client reads, as long as reads keep coming (and
// only when Period is below StaleBound, else every read refreshes anyway). Otherwise the
// server makes no periodic rounds, so that an idle client costs no wakeups that would
// perturb the measured workload: only while a client has a mirrored sampling ring
// (every Config.IdlePeriod, to move its records) or a Pacer stage asks. A Stage may ask for more: Pacer, rounds at least every so often for a
// client even while nobody reads (a stage inferring from successive values);
// Syncer, pages marked shim.MirrorSync, which the shim refreshes before every read (a
// stage whose values are estimates as of the read). A Stage may also learn more:
// CallCorrector, whether each call is a round, a read or a registration; Unregisterer,
// each event the tool closed; Forgetter, each client gone; Sampler, the moment just
// before a call's kernel values are read. Chain composes stages.
//
// Errors: malformed messages and bad fds from a client close that client's connection
// (or decline the one registration) and are logged; they never stop the server. A Stage
// that panics is switched off for the rest of the run (logged once with its stack;
// Stats.StagePanicked): every mirror then carries the kernel's values, which are exact.
// Server methods are safe for concurrent use. A Stage is called for one client by one
// goroutine at a time, and for different clients concurrently: no lock shared by all
// clients is held across a system call, so one client's slow registration or Stage
// call never delays another's reads; a stage guards what its clients share.
package sidecar
