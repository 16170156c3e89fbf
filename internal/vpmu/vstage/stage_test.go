package vstage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// With BAYESPERF_VSTAGE_WORK set, the test binary is the measured command: 200 ms of
// getppid storms and fresh pages, and with BAYESPERF_VSTAGE_WORK=until-winch then on
// until it has got a SIGWINCH (ignored by default, so one sent before the handler is in
// place is lost, not fatal), for at most 10 s.
func TestMain(m *testing.M) {
	if w := os.Getenv("BAYESPERF_VSTAGE_WORK"); w != "" {
		start := time.Now()
		var stop chan os.Signal
		if w == "until-winch" {
			stop = make(chan os.Signal, 1)
			signal.Notify(stop, syscall.SIGWINCH)
		}
		stopped := stop == nil
		for {
			if el := time.Since(start); el >= 10*time.Second || el >= 200*time.Millisecond && stopped {
				break
			}
			select {
			case <-stop:
				stopped = true
			default:
			}
			for range 1000 {
				unix.Getppid()
			}
			b, _ := unix.Mmap(-1, 0, 64<<10, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			unix.Munmap(b)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestPerfStatLikeClient plays the sidecar for a perf-stat-like client: 8 events with
// enable_on_exec on a forked child that has not exec'd yet, corrected every 2 ms while
// the command runs. The client must see multiplexing as on a real 4-counter PMU: nothing
// before the exec, time_running below time_enabled, and exactly 4 events running at any
// time besides task-clock, which sits on a fixed counter (the running times of the others
// add up to 4 × time_enabled once the command is gone).
//
// The command runs 200 ms and on until the client has seen every event multiplexed (at
// most 10 s), not for a fixed 200 ms: the virtual PMU rotates when this process runs, and with the
// load average at 15-17 on 2 CPUs this process was now and then starved of CPU for the
// whole of those 200 ms (the bpf collector's records read 236-700 ms after the kernel
// wrote them, the read(2) runner stepping twice in 66 ms), so that the command ended
// before a second rotation, which a kernel rotating from its timer interrupt would not
// have missed, but a user-space PMU cannot promise.
//
// It runs with each collector: read(2), and the bpf collector (bpf.Snapshots), which
// opens the copies with enable_on_exec on the shell and answers reads between its
// snapshots through Peek.
func TestPerfStatLikeClient(t *testing.T) {
	testutil.RequireRoot(t, "opens tracepoints on another process")
	for _, coll := range []string{"read", "bpf"} {
		t.Run(coll, func(t *testing.T) { testPerfStatLikeClient(t, coll) })
	}
}

func testPerfStatLikeClient(t *testing.T, coll string) {
	names := "task-clock,page-faults,minor-faults,context-switches,raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_getppid,syscalls:sys_enter_mmap"
	cmd, in, descs, evs := heldWorker(t, names, true, "until-winch")
	vals := func() []shim.Values {
		out := make([]shim.Values, len(evs))
		for i := range out {
			out[i].Members = []shim.MirrorValue{{Value: 12345}}
		}
		return out
	}
	fixed, err := FixedEvents("task-clock")
	if err != nil {
		t.Fatal(err)
	}
	st := &Stage{Counters: 4, Fixed: fixed, Logf: t.Logf}
	if coll == "bpf" {
		st.Snapshots = bpf.Snapshots
	}
	defer st.Close()
	v := vals()
	st.Correct(0, evs, v)
	if got := st.Collector(); got != coll {
		t.Fatalf("collector %q, want %q", got, coll)
	}
	if v[0].Enabled != 0 || v[0].Members[0].Value != 0 {
		t.Fatalf("counted before exec: %+v", v[0])
	}
	in.Write([]byte("go\n"))
	in.Close()
	prev := v
	// What a tool reads never goes back: perf stat -I prints the difference of two
	// reads, and a count, enabled or running time below the last read would wrap.
	monotonic := func(v []shim.Values) {
		t.Helper()
		for i := range v {
			a, b := prev[i], v[i]
			if b.Members[0].Value < a.Members[0].Value || b.Enabled < a.Enabled || b.Running < a.Running {
				t.Errorf("%s went back: value %d -> %d, enabled %d -> %d, running %d -> %d", descs[i].Name,
					a.Members[0].Value, b.Members[0].Value, a.Enabled, b.Enabled, a.Running, b.Running)
			}
		}
		prev = v
	}
	// Multiplexed as the final checks below want it: every event but the fixed
	// task-clock enabled and not always running.
	muxed := func(v []shim.Values) bool {
		for _, x := range v[1:] {
			if x.Enabled == 0 || x.Running >= x.Enabled {
				return false
			}
		}
		return true
	}
	seen := false
	if err := readUntilExit(cmd, 2*time.Millisecond, func() {
		v := vals()
		st.Correct(0, evs, v)
		monotonic(v)
		if seen = seen || muxed(v); seen {
			cmd.Process.Signal(syscall.SIGWINCH) // until it stops; an error once it has
		}
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond) // let the runner take a slice after the exit
	v = vals()
	st.Correct(0, evs, v)
	monotonic(v)
	var sumRun uint64
	for i, x := range v {
		t.Logf("%-28s value %10d enabled %10d running %10d (%.0f%%)", descs[i].Name, x.Members[0].Value, x.Enabled, x.Running, 100*float64(x.Running)/float64(max(x.Enabled, 1)))
		if i == 0 {
			// task-clock is on a fixed counter: always running, not in the budget.
			if x.Running != x.Enabled {
				t.Errorf("fixed task-clock ran %d of %d", x.Running, x.Enabled)
			}
			continue
		}
		if x.Enabled == 0 || x.Running >= x.Enabled {
			t.Errorf("%s: enabled %d running %d: not multiplexed", descs[i].Name, x.Enabled, x.Running)
		}
		if x.Enabled != v[0].Enabled {
			t.Errorf("%s: enabled %d, task-clock's %d", descs[i].Name, x.Enabled, v[0].Enabled)
		}
		sumRun += x.Running
	}
	if sumRun != 4*v[0].Enabled {
		t.Errorf("running times add up to %d, want 4 × %d", sumRun, v[0].Enabled)
	}
}

// TestCollectorFallback: a client whose virtual PMU the snapshotting collector cannot
// serve gets one with read(2), and the log and Collector say so.
func TestCollectorFallback(t *testing.T) {
	testutil.RequireRoot(t, "opens events on another process")
	cmd, in, _, evs := heldWorker(t, "task-clock,page-faults,context-switches", false)
	defer func() {
		in.Close()
		cmd.Wait()
	}()
	var lines []string
	st := &Stage{Counters: 2, Logf: func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) },
		Snapshots: func(perf.SnapshotRequest) (perf.Collector, error) { return nil, errors.New("no bpf here") }}
	defer st.Close()
	v := make([]shim.Values, len(evs))
	for i := range v {
		v[i].Members = []shim.MirrorValue{{Value: 1}}
	}
	st.Correct(0, evs, v)
	if got := st.Collector(); got != "read" {
		t.Errorf("collector %q, want read", got)
	}
	n := 0
	for _, l := range lines {
		if strings.Contains(l, "collector") {
			n++
			if !strings.Contains(l, "collector read (") || !strings.Contains(l, "no bpf here") {
				t.Errorf("log %q: want the read collector and why", l)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d collector lines for one client, want 1: %q", n, lines)
	}
	if v[0].Members[0].Value != 0 {
		t.Errorf("virtual value before the exec %d, want 0 (the read(2) PMU serves it)", v[0].Members[0].Value)
	}
}

// TestGroupRead: a client reading a {task-clock,page-faults} group with one read gets
// both virtual counts with the group's times, and the group is scheduled as a unit (its
// members ran exactly as long as each other).
func TestGroupRead(t *testing.T) {
	testutil.RequireRoot(t, "opens events on another process")
	cmd := testutil.Reexec("BAYESPERF_VSTAGE_WORK=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := int32(cmd.Process.Pid)
	mk := func(h, g uint32, cfg uint64) sidecar.Event {
		return sidecar.Event{Client: 7, ClientPid: int32(os.Getpid()), Handle: h, GroupHandle: g, Pid: pid, CPU: -1,
			Attr: shim.Attr{Type: perf.TypeSoftware, Config: cfg, Flags: perfabi.FlagInherit}}
	}
	evs := []sidecar.Event{mk(1, 0, perf.SWTaskClock), mk(2, 1, perf.SWPageFaults), mk(3, 0, perf.SWContextSwitches), mk(4, 0, perf.SWPageFaultsMin)}
	vals := func() []shim.Values {
		out := make([]shim.Values, len(evs))
		out[0].Members = make([]shim.MirrorValue, 2) // the leader's group read
		for i := 1; i < len(out); i++ {
			out[i].Members = make([]shim.MirrorValue, 1)
		}
		return out
	}
	st := &Stage{Counters: 2, Logf: t.Logf}
	defer st.Close()
	st.Correct(0, evs, vals())
	if err := readUntilExit(cmd, 2*time.Millisecond, func() { st.Correct(0, evs, vals()) }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	v := vals()
	st.Correct(0, evs, v)
	g, pf := v[0], v[1]
	if g.Members[0].Value == 0 || g.Members[1].Value == 0 {
		t.Fatalf("group read values %+v", g.Members)
	}
	if g.Members[1].Value != pf.Members[0].Value {
		t.Errorf("page-faults in the group read %d, alone %d", g.Members[1].Value, pf.Members[0].Value)
	}
	if g.Running != pf.Running || g.Enabled != pf.Enabled || g.Running >= g.Enabled {
		t.Errorf("group times %d/%d, member alone %d/%d: want equal and multiplexed", g.Running, g.Enabled, pf.Running, pf.Enabled)
	}
}

// readUntilExit calls read every period until cmd exits, as a tool reads its events
// while its command runs, and returns cmd's Wait error.
func readUntilExit(cmd *exec.Cmd, period time.Duration, read func()) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for {
		select {
		case err := <-done:
			return err
		case <-time.After(period):
			read()
		}
	}
}

// heldWorker starts this test binary as the worker (BAYESPERF_VSTAGE_WORK=1, or work[0]) behind a
// shell that execs it once a line arrives on in, and returns the events names (perf
// syntax) and those a perf stat-like client registers for them on it: disabled,
// inherited, enabled on exec, with the events' read_format when withReadFormat is set.
func heldWorker(t *testing.T, names string, withReadFormat bool, work ...string) (*exec.Cmd, io.WriteCloser, []perf.EventDesc, []sidecar.Event) {
	t.Helper()
	descs, err := perf.ParseEvents(names)
	if err != nil {
		t.Fatal(err)
	}
	w := "1"
	if len(work) > 0 {
		w = work[0]
	}
	cmd := testutil.ReexecOnLine("BAYESPERF_VSTAGE_WORK=" + w)
	in := testutil.StartWithStdin(t, cmd)
	pid := int32(cmd.Process.Pid)
	var evs []sidecar.Event
	for i, d := range descs {
		a := shim.Attr{Type: d.Attr.Type, Config: d.Attr.Config, Flags: perfabi.FlagDisabled | perfabi.FlagInherit | perfabi.FlagEnableOnExec}
		if withReadFormat {
			a.ReadFormat = d.Attr.ReadFormat
		}
		evs = append(evs, sidecar.Event{Client: 1, ClientPid: pid, Handle: uint32(i + 1), Pid: pid, CPU: -1, Attr: a})
	}
	return cmd, in, descs, evs
}
