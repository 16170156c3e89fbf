package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/openmetrics"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/truth"
	"github.com/bayesperf/bayesperf/internal/vpmu/vstage"
)

const sidecarHelp = `usage: bayesperf sidecar --socket PATH [--stats FILE] [--period D] [--stale D]
                         [--virtual-counters N [--fixed-counters EVENTS]
                          [--schedule kernel|bayesperf] [--collector auto|read|bpf]
                          [--report FILE]]
                         [--correct auto|none|bayesperf] [--infer-from slices|values]
                         [--truth FILE.csv] [--allow-uid USERS] [--listen ADDR] [-v]

Serves libbayesperf.so clients on the Unix socket PATH, whose directory must be
mode 0700. Prints "ready" on stdout once listening. Stops on SIGTERM or SIGINT,
or when stdin reaches EOF (bayesperf run holds the other end), and then writes
its counters as JSON to --stats FILE. 'bayesperf run' starts it for you.

--period D (1ms) is how often mirrors are republished while a client reads;
--stale D is the age beyond which a client's read first asks for fresh values.
Its default is two ticks of the kernel's coarse clock (CLOCK_MONOTONIC_COARSE's
resolution, 4ms at HZ=250) plus --period: the shim judges a page's age on that
clock, which costs a few ns and lags by less than two ticks, with that margin,
and reads the precise clock only when the coarse one cannot tell (always, with a
bound of two ticks or less).

Without --virtual-counters, --correct auto (the default) publishes the kernel's
values unchanged unless a client asks for more hardware events than the PMU can
count at once: the sidecar then schedules those itself on the counters it
measured free, and serves corrected values (run's --correct auto); none always
publishes the kernel's values; --correct bayesperf corrects the kernel's own multiplexing (a
CPU with more events asked for than counters) from the values read every round,
and events the kernel never multiplexed keep its values bit for bit.
--virtual-counters N presents each client's counting events through a virtual
PMU of N counters (multiplexed as the kernel rotates flexible groups);
--fixed-counters lists events (perf syntax) that sit on fixed counters;
--correct, --schedule and --infer-from are those of 'bayesperf run' (defaults
with it: bayesperf, bayesperf, slices), and --report FILE writes run's report at exit.
With --virtual-counters, --correct bayesperf --infer-from slices (the defaults)
or --report sets the stale bound's default to 1ns: every read asks for values at
the instant it reads (the report's intervals are the tool's rounds of reads).
The correction from values (without --virtual-counters, or --infer-from values)
needs no such bound: the events it corrects are refreshed at every read, the
others keep the default. --truth FILE.csv (without --virtual-counters) is run's:
pinned hidden copies of the clients' hardware events, a row per read. --collector is run's too: how each virtual PMU reads its
copies (bpf: in-kernel snapshots at every slice; read: read(2); auto, the
default: bpf when it can be loaded). -v logs each client's ("collector bpf", or
"collector read (why)"), and --stats FILE has it as "collector".

--allow-uid USERS (names or uids, comma-separated) also serves those users'
tools: a sidecar run as root for BPF serving non-root tools. Their socket
directory may then be mode 0711. Such a tool is served only what the fds it
opened itself give it: no virtual PMU (which opens events with the sidecar's
rights, so --allow-uid refuses --virtual-counters), no correction (the
kernel's values only: --allow-uid refuses --correct bayesperf, whose model
would run on the other user's behalf under the lock every client's
publishing takes), no mirror of its sampling
rings (it maps the kernel's, under its own locked-memory limit), and no more
events than its own RLIMIT_NOFILE.
`

func sidecarMain(args []string) int {
	fs := flag.NewFlagSet("sidecar", flag.ContinueOnError)
	fail := func(err error) int { return exitWith("sidecar", err) }
	sock := fs.String("socket", "", "")
	period := fs.Duration("period", time.Millisecond, "")
	stale := fs.Duration("stale", 0, "") // 0: sidecar.CoarseTick() + period
	f := addSidecarFlags(fs)
	allowUIDs := fs.String("allow-uid", "", "")
	if code, stop := parseCmdLine("sidecar", sidecarHelp, fs, args); stop {
		return code
	}
	switch {
	case fs.NArg() > 0:
		return fail(usageErr("unexpected arguments %q; the sidecar runs no command ('bayesperf run' does)", fs.Args()))
	case *sock == "":
		return fail(usageErr("--socket PATH is required; 'bayesperf run' starts a sidecar for you"))
	case *f.vcounters < 0:
		return fail(usageErr("--virtual-counters %d: want a positive number of counters", *f.vcounters))
	case *f.truth != "" && *f.vcounters > 0:
		return fail(usageErr("--truth with --virtual-counters: the virtual PMU keeps its own truth (--report, --stats)"))
	case *allowUIDs != "" && *f.vcounters > 0:
		return fail(usageErr("--allow-uid with --virtual-counters: the virtual PMU opens events with the sidecar's rights, so other users could count processes they may not; run one sidecar per user for the virtual PMU"))
	}
	var loader *bpf.Loader // with the bpf collector
	var probe chan error   // bpf.Probe's answer
	if *f.vcounters > 0 && *f.collector != bpf.CollectorRead {
		// Started first: the BPF programs of the first builds load, and BPF is
		// probed, while the rest of the sidecar starts (chooseCollector closes the
		// loader if BPF is not to be used).
		loader = bpf.NewLoader()
		defer loader.Close()
		probe = make(chan error, 1)
		go func() { probe <- bpf.Probe() }()
	}
	correct, from, uids, err := f.checkSidecar(*allowUIDs)
	if err != nil {
		return fail(err)
	}
	staleSet := false
	fs.Visit(func(fl *flag.Flag) { staleSet = staleSet || fl.Name == "stale" })
	cfg := sidecar.Config{SocketPath: *sock, Period: *period, StaleBound: *stale, AllowUIDs: uids}
	if *f.verbose {
		cfg.Logf = func(format string, a ...any) {
			fmt.Fprintf(os.Stderr, "bayesperf sidecar[%d]: %s\n", os.Getpid(), fmt.Sprintf(format, a...))
		}
	}
	stages, err := f.buildStages(&cfg, correct, from, staleSet, loader, probe)
	defer stages.close()
	if err != nil {
		return fail(err)
	}
	srv, err := sidecar.New(cfg)
	if err != nil {
		return fail(fmt.Errorf("%w; give --socket a path in a directory of your own with mode 0700 (mkdir -m 700 DIR), or let 'bayesperf run' start the sidecar", err))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		cancel()
	}()
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode()&os.ModeNamedPipe != 0 {
		go func() { // lifeline: run is gone when its end of the pipe closes
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}
	if *f.listen != "" {
		om, err := serveSidecarHealth(*f.listen, srv)
		if err != nil {
			return fail(err)
		}
		defer om.Close()
	}
	fmt.Println("ready")
	os.Stdout.Close()
	err = srv.Serve(ctx)
	if werr := writeStageFiles(*f.stats, *f.report, srv.Stats(), stages.vst, stages.loader); werr != nil {
		fmt.Fprintf(os.Stderr, "bayesperf sidecar: %s\n", oneLine(werr.Error()))
	}
	if err != nil {
		return fail(err)
	}
	return 0
}

// checkSidecar resolves the sidecar's --correct and --infer-from and parses --allow-uid
// (allowUIDs), refusing a correction other users' tools may not have.
func (f sidecarFlags) checkSidecar(allowUIDs string) (correct, from string, uids []int, err error) {
	from, err = resolveInferFrom(*f.inferFrom, *f.vcounters)
	if err != nil {
		return "", "", nil, err
	}
	correct, err = resolveCorrect(*f.correct, *f.vcounters)
	if err != nil {
		return "", "", nil, err
	}
	if correct == "auto" && (allowUIDs != "" || *f.truth != "") {
		// The virtual PMU opens events with the sidecar's rights: not for other users.
		// --truth scores the kernel's values (or kstage's): its pinned copies would take
		// counters the virtual PMU's budget does not know of.
		correct = "none"
	}
	if allowUIDs != "" && correct == "bayesperf" {
		// One lock serialises every client's publishing, and a corrected target's
		// smoothing runs under it (tens of ms for 64 events): another user's tool must
		// not be able to slow every client down.
		return "", "", nil, usageErr("--allow-uid with --correct bayesperf: other users' tools are served the kernel's values only; run one sidecar per user to correct them")
	}
	uids, err = parseUIDs(allowUIDs)
	if err != nil {
		return "", "", nil, usageError{fmt.Errorf("--allow-uid: %w", err)}
	}
	return correct, from, uids, nil
}

// sidecarStages are the stages buildStages put in a sidecar's Config.
type sidecarStages struct {
	vst    *vstage.Stage // the virtual PMU's, if any
	loader *bpf.Loader   // the bpf collector's, nil when the virtual PMU reads with read(2)
	closes []func()      // the last built first, as deferred calls run
}

// onClose adds c to what close does, before the rest.
func (s *sidecarStages) onClose(c func()) { s.closes = append([]func(){c}, s.closes...) }

// close closes the stages, the outermost first.
func (s *sidecarStages) close() {
	for _, c := range s.closes {
		c()
	}
}

// buildStages sets cfg.Stage for the flags: the virtual PMU (--virtual-counters, or
// --correct auto on a CPU whose PMU counts), the correction from the kernel's values, and
// --truth's pinned copies around them. The caller closes the stages even on an error.
func (f sidecarFlags) buildStages(cfg *sidecar.Config, correct, from string, staleSet bool, loader *bpf.Loader, probe chan error) (*sidecarStages, error) {
	stages := &sidecarStages{loader: loader}
	if *f.vcounters > 0 {
		fx, err := vstage.FixedEvents(*f.fixed)
		if err != nil {
			return stages, usageError{fmt.Errorf("--fixed-counters: %w", err)}
		}
		st, err := correctionStage(*f.vcounters, fx, vstageCorrect(correct, from), *f.schedule, *f.stats != "" || *f.report != "", *f.report != "", cfg.Logf)
		if err != nil {
			return stages, err
		}
		stages.onClose(func() { st.Close() })
		if err := chooseCollector(st, *f.collector, loader, probe); err != nil {
			return stages, err
		}
		if st.Snapshots == nil {
			stages.loader = nil // closed: read(2)
		}
		go st.Preload()
		cfg.Stage = st
		if (st.Infer || *f.report != "") && !staleSet {
			cfg.StaleBound = time.Nanosecond
		}
		stages.vst = st
	}
	if correct == "auto" && countsHardware() {
		// The kernel's PMU counts: clients with more hardware events than counters get
		// the virtual PMU's own schedule of them, the others the kernel's values.
		// The report's linux values would need a second copy of the events on the kernel's
		// round robin, taking counters from the schedule: with auto it has none.
		st, err := correctionStage(0, nil, "bayesperf", "bayesperf", *f.stats != "" || *f.report != "", *f.report != "", cfg.Logf)
		if err != nil {
			return stages, err
		}
		st.Auto, st.Baseline = true, false
		stages.onClose(func() { st.Close() })
		cfg.Stage = st
		if !staleSet {
			cfg.StaleBound = time.Nanosecond
		}
		stages.vst = st
	}
	cfg.Stage = withKernelMux(cfg.Stage, correct, from, cfg.Logf)
	if *f.truth != "" {
		tf, err := os.Create(*f.truth)
		if err != nil {
			return stages, fmt.Errorf("--truth: %w", err)
		}
		ts := truth.New(cfg.Stage, tf, cfg.Logf)
		truthFile := *f.truth
		stages.onClose(func() {
			if err := ts.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "bayesperf sidecar: --truth %s: %s\n", truthFile, oneLine(err.Error()))
			}
		})
		cfg.Stage = ts
	}
	return stages, nil
}

// chooseCollector sets how st's virtual PMUs read their copies for --collector name: bpf
// (forced: fails here if BPF cannot be loaded at all; a client whose events it cannot
// serve still falls back to read(2), with the reason in the log), read, or auto (bpf
// when bpf.Probe succeeds). With a collector other than read, probe gives Probe's
// answer (started with the sidecar, so that it runs while the sidecar starts) and l
// builds the collectors: it has been loading the programs of the first builds in the
// background since the sidecar started, so that a tool's registrations find them
// loaded (the tool's start waited for a load per event it opened); it is closed if BPF
// is not used.
func chooseCollector(st *vstage.Stage, name string, l *bpf.Loader, probe <-chan error) error {
	var err error
	switch name {
	case bpf.CollectorRead:
	case bpf.CollectorBPF, bpf.CollectorAuto:
		if err = <-probe; err != nil && name == bpf.CollectorBPF {
			l.Close()
			return fmt.Errorf("--collector bpf: %w", err)
		}
	default:
		return usageErr("--collector %s: want auto, read or bpf", name)
	}
	if name != bpf.CollectorRead && err == nil {
		st.Snapshots = l.Snapshots
		return nil
	}
	if l != nil {
		l.Close()
	}
	st.ReadWhy = "--collector read"
	if err != nil {
		st.ReadWhy = "auto: " + err.Error()
	}
	return nil
}

func writeStats(path string, st any) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("encode stats: %w", err)
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write stats: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write stats: %w", err)
	}
	return nil
}

// parseUIDs resolves --allow-uid's comma-separated user names and uids.
func parseUIDs(list string) ([]int, error) {
	var uids []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if n, err := strconv.Atoi(f); err == nil && n >= 0 {
			uids = append(uids, n)
			continue
		}
		u, err := user.Lookup(f)
		if err != nil {
			return nil, fmt.Errorf("%q is neither a uid nor a known user name", f)
		}
		n, err := strconv.Atoi(u.Uid)
		if err != nil {
			return nil, fmt.Errorf("user %q has uid %q, not a number", f, u.Uid)
		}
		uids = append(uids, n)
	}
	return uids, nil
}

// serveSidecarHealth serves srv's health at http://addr/metrics (--listen), saying on
// stderr the port the kernel picked for ADDR:0.
func serveSidecarHealth(addr string, srv *sidecar.Server) (*openmetrics.Sidecar, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usageErr("--listen %s: %v; give a free HOST:PORT (port 0 picks one)", addr, err)
	}
	om := openmetrics.NewSidecar(func() openmetrics.SidecarHealth {
		st := srv.Stats()
		return openmetrics.SidecarHealth{Clients: st.Clients, Events: st.Events, Declined: st.Declined,
			MirrorReads: st.MirrorReads, PassthroughReads: st.PassthroughReads, SelfReads: st.SelfReads,
			SyncRefreshes: st.SyncRefreshes, Publishes: st.Publishes, Rings: st.Rings,
			RecordsMirrored: st.RecordsMirrored, RecordsLost: st.RecordsLost, Stage: st.Stage, StageOff: st.StagePanicked}
	})
	om.Serve(ln, func(err error) { fmt.Fprintf(os.Stderr, "bayesperf sidecar: --listen: %v\n", err) })
	if strings.HasSuffix(addr, ":0") {
		fmt.Fprintf(os.Stderr, "bayesperf sidecar: serving OpenMetrics on http://%s/metrics\n", ln.Addr())
	}
	return om, nil
}
