package bpf

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Indices of the events of workEvents.
const (
	evTaskClock = iota
	evPageFaults
	evMinorFaults
	evMajorFaults
	evContextSwitches
	evMigrations
	evGetppid
	evSysEnter
)

func workEvents(t testing.TB) []perfabi.Attr {
	return []perfabi.Attr{
		softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK),
		softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS),
		softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS_MIN),
		softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS_MAJ),
		softwareAttr(unix.PERF_COUNT_SW_CONTEXT_SWITCHES),
		softwareAttr(unix.PERF_COUNT_SW_CPU_MIGRATIONS),
		tracepointAttr(t, "syscalls", "sys_enter_getppid"),
		tracepointAttr(t, "raw_syscalls", "sys_enter"),
	}
}

// checkCumulative fails unless every field of every event never decreases.
func checkCumulative(t *testing.T, snaps []perf.Snapshot) {
	t.Helper()
	for k := 1; k < len(snaps); k++ {
		for i, v := range snaps[k].Counts {
			p := snaps[k-1].Counts[i]
			if v.Value < p.Value || v.Enabled < p.Enabled || v.Running < p.Running {
				t.Fatalf("snapshot %d event %d went backwards: %+v after %+v", k, i, v, p)
			}
		}
		if snaps[k].TimeNs < snaps[k-1].TimeNs {
			t.Fatalf("snapshot %d time %d before %d", k, snaps[k].TimeNs, snaps[k-1].TimeNs)
		}
	}
}

// checkDeltas checks that the snapshots are cumulative, that the last one is the read() of
// the same fds once the target is gone, and that the per-slice deltas, from zero at
// attach, add up to it exactly.
func checkDeltas(t *testing.T, snaps []perf.Snapshot, end perf.Snapshot) {
	t.Helper()
	zero := perf.Snapshot{Counts: make([]perf.Count, len(end.Counts))}
	checkCumulative(t, append([]perf.Snapshot{zero}, snaps...))
	final := snaps[len(snaps)-1]
	if !slices.Equal(final.Counts, end.Counts) {
		t.Fatalf("final snapshot %+v != read() after exit %+v", final.Counts, end.Counts)
	}
	sum := make([]perf.Count, len(end.Counts))
	prev := zero
	for _, s := range snaps {
		for i, v := range s.Counts {
			d := v.Sub(prev.Counts[i])
			sum[i].Value += d.Value
			sum[i].Enabled += d.Enabled
			sum[i].Running += d.Running
		}
		prev = s
	}
	if !slices.Equal(sum, end.Counts) {
		t.Errorf("deltas add up to %+v, read() says %+v", sum, end.Counts)
	}
}

// TestSlicesOfOneThread runs a known workload under the collector and checks the slices
// against read(2) of the same events and against the work done.
func TestSlicesOfOneThread(t *testing.T) {
	const slice = 5 * time.Millisecond
	cmd, in, _ := startHelper(t, "work")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Events: workEvents(t), Slice: slice})
	start, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	in.Write([]byte{'g'})
	snaps := collectAll(t, c, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	end, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(); err == nil {
		t.Fatal("Next after the end: want io.EOF, got a snapshot")
	}

	// The spin alone lasts workSpin, so there must be about workSpin/slice ticks.
	if min := int(workSpin/slice) / 2; len(snaps) < min {
		t.Fatalf("got %d snapshots over a %v spin with %v slices, want at least %d", len(snaps), workSpin, slice, min)
	}
	checkDeltas(t, snaps, end)

	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// The snapshots taken by BPF (all but the read() at the end) are real slices: the
	// task clock moves from slice to slice, and the last one is within a few slices of
	// the end (the spin is the last thing the helper does), give or take how late the
	// collector's user side was: on a saturated machine the helper spins on while this
	// process waits for a CPU (a clean-clone make test saw 30ms of task-clock after the
	// last BPF snapshot; in such runs a slice had waited 40-170ms to be returned), and the
	// final snapshot then takes in the slices not returned.
	bpfSnaps := snaps[:len(snaps)-1]
	moving := 0
	for k := 1; k < len(bpfSnaps); k++ {
		if bpfSnaps[k].Counts[evTaskClock].Value > bpfSnaps[k-1].Counts[evTaskClock].Value {
			moving++
		}
	}
	if moving < len(bpfSnaps)/2 {
		t.Errorf("task-clock moved in only %d of %d BPF slices", moving, len(bpfSnaps))
	}
	lastBPF := bpfSnaps[len(bpfSnaps)-1]
	tc := end.Counts[evTaskClock].Value - lastBPF.Counts[evTaskClock].Value
	if tc > uint64(3*slice+st.MaxSliceLag) {
		t.Errorf("task-clock after the last BPF snapshot: %v, want under 3 slices plus the collector's lag %v", time.Duration(tc), st.MaxSliceLag)
	}
	// Work that ended before the final spin is all in the last BPF snapshot, exactly.
	if got, want := lastBPF.Counts[evGetppid].Value-start.Counts[evGetppid].Value, uint64(workGetppid); got != want {
		t.Errorf("getppid tracepoint in BPF snapshots: %d, want exactly %d", got, want)
	}
	// Counts against the known work.
	d := func(i int) uint64 { return end.Counts[i].Value - start.Counts[i].Value }
	if d(evGetppid) != workGetppid {
		t.Errorf("getppid tracepoint: %d, want %d", d(evGetppid), workGetppid)
	}
	// page-faults is counted on entry to the fault handler, minor and major faults where
	// the fault is accounted, and the two paths do not always agree: runs here differed by
	// one either way.
	sumMM := d(evMinorFaults) + d(evMajorFaults)
	if d(evMinorFaults) < workPages || d(evPageFaults)+10 < sumMM || d(evPageFaults) > sumMM+10 {
		t.Errorf("faults: page %d minor %d major %d; want minor >= %d and page = minor + major (within 10)",
			d(evPageFaults), d(evMinorFaults), d(evMajorFaults), workPages)
	}
	if d(evContextSwitches) < workSleeps {
		t.Errorf("context switches: %d, want at least %d", d(evContextSwitches), workSleeps)
	}
	if d(evSysEnter) < workGetppid+workSleeps {
		t.Errorf("raw_syscalls:sys_enter: %d, want at least %d", d(evSysEnter), workGetppid+workSleeps)
	}
	if d(evTaskClock) < uint64(workSpin) {
		t.Errorf("task-clock: %v, want at least the %v spin", time.Duration(d(evTaskClock)), workSpin)
	}
	if st.Drops != 0 || st.ReadErrors != 0 || st.BadRecords != 0 {
		t.Errorf("stats %+v: want no drops, read errors or bad records", st)
	}
	if st.Records < uint64(len(bpfSnaps)) {
		t.Errorf("stats: %d records for %d BPF snapshots", st.Records, len(bpfSnaps))
	}
	t.Logf("%d snapshots, task-clock after the last BPF one %v, stats %+v", len(snaps), time.Duration(tc), st)
}

// TestFollowsNewThreads checks that threads created after attach are found, and that
// everything they count after their events are opened reaches the snapshots.
func TestFollowsNewThreads(t *testing.T) {
	cmd, in, out := startHelper(t, "threads")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Events: workEvents(t), Slice: 5 * time.Millisecond})
	initial := c.Threads()
	if !slices.Contains(initial, cmd.Process.Pid) {
		t.Fatalf("initial threads %v lack the main thread %d", initial, cmd.Process.Pid)
	}
	start, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	in.Write([]byte{'g'})
	workers := readIDs(t, out, threadWorkers, "worker tid")
	// The workers start working once all of them are followed: whatever they count from
	// then on must reach the snapshots exactly. (Next must keep up meanwhile: it is not
	// needed for following threads, which the collector does in the background.)
	waitFollowed(t, c, workers, "workers")
	in.Write([]byte{'g'})
	snaps := collectAll(t, c, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	followed := c.Threads()
	created := 0
	for _, tid := range workers {
		if !slices.Contains(followed, tid) {
			t.Errorf("worker thread %d not followed (followed %v)", tid, followed)
		}
		if !slices.Contains(initial, tid) {
			created++
		}
	}
	if created == 0 {
		t.Fatalf("all %d workers reused threads present at attach %v: the test proves nothing", len(workers), initial)
	}
	end, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	checkDeltas(t, snaps, end)
	// Only the workers call getppid, after waiting for their events to be opened, so the
	// count is exact; it is also in the BPF snapshots (exit records), not only in read().
	if got := end.Counts[evGetppid].Value - start.Counts[evGetppid].Value; got != threadWorkers*threadGetppid {
		t.Errorf("getppid over all threads: %d, want %d", got, threadWorkers*threadGetppid)
	}
	lastBPF := snaps[len(snaps)-2]
	if got := lastBPF.Counts[evGetppid].Value - start.Counts[evGetppid].Value; got != threadWorkers*threadGetppid {
		t.Errorf("getppid in the last BPF snapshot: %d, want %d", got, threadWorkers*threadGetppid)
	}
	if got := end.Counts[evMinorFaults].Value - start.Counts[evMinorFaults].Value; got < threadWorkers*threadPages {
		t.Errorf("minor faults over all threads: %d, want at least %d", got, threadWorkers*threadPages)
	}
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Drops != 0 {
		t.Errorf("stats %+v: want no drops", st)
	}
	t.Logf("%d workers (%d created after attach), %d threads followed, %d snapshots, stats %+v",
		len(workers), created, len(followed), len(snaps), st)
	if st.MaxFollowLatency <= 0 {
		t.Errorf("no follow latency measured although %d threads were created after attach", created)
	}
}

// TestRecyclesSlots runs more short-lived threads than the collector has slots: the
// slots of exited threads must be reused, and nothing any thread counted may be lost.
func TestRecyclesSlots(t *testing.T) {
	cmd, in, out, initial := startWaves(t)
	// Room for the helper's own threads, which the runtime may add to later (more so under
	// the race detector), and one wave; the waves in all need more.
	maxThreads := len(initial) + waveThreads + 8
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Events: workEvents(t), Slice: 5 * time.Millisecond, MaxThreads: maxThreads})
	start, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	wait := collectAsync(c, 30*time.Second)
	in.Write([]byte{'g'})
	var workers []int
	for w := range waveCount {
		wave := readIDs(t, out, waveThreads, fmt.Sprintf("wave %d: worker tid", w))
		waitFollowed(t, c, wave, fmt.Sprintf("wave %d: workers", w))
		workers = append(workers, wave...)
		in.Write([]byte{'g'})
	}
	snaps := wait(t)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	if len(workers) <= maxThreads {
		t.Fatalf("%d workers fit in %d slots: the test proves nothing", len(workers), maxThreads)
	}
	end := snaps[len(snaps)-1]
	if got, want := end.Counts[evGetppid].Value-start.Counts[evGetppid].Value, uint64(waveCount*waveThreads*waveGetppid); got != want {
		t.Errorf("getppid over %d threads in %d slots: %d, want %d", len(workers), maxThreads, got, want)
	}
	zero := perf.Snapshot{Counts: make([]perf.Count, len(end.Counts))}
	checkCumulative(t, append([]perf.Snapshot{zero}, snaps...))
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Short-lived threads of the Go runtime may exit before a loaded machine schedules
	// the collector (LostThreads); the workers, which wait to be followed, may not.
	t.Logf("%d workers through %d slots, %d snapshots, stats %+v", len(workers), maxThreads, len(snaps), st)
}

// TestFollowsChildProcesses checks that processes forked by the target are followed, as
// perf's inherit follows them, and that what they count reaches the snapshots.
func TestFollowsChildProcesses(t *testing.T) {
	cmd, in, out := startHelper(t, "forker")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Events: workEvents(t), Slice: 5 * time.Millisecond})
	wait := collectAsync(c, 30*time.Second)
	in.Write([]byte{'g'})
	var children []int
	for range childCount {
		pid := readIDs(t, out, 1, "child pid")
		waitFollowed(t, c, pid, "child")
		children = append(children, pid...)
		in.Write([]byte{'g'}) // read by the child, which shares the helper's stdin
	}
	snaps := wait(t)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	end, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	checkDeltas(t, snaps, end)
	if got := end.Counts[evGetppid].Value; got != childCount*childGetppid {
		t.Errorf("getppid in %d children: %d, want %d", childCount, got, childCount*childGetppid)
	}
	t.Logf("children %v followed; %d tasks in all, %d snapshots", children, len(c.Threads()), len(snaps))
}

// waitFollowed waits up to 10 s for c to follow every one of ids (what), and fails t
// if it does not.
func waitFollowed(t *testing.T, c *Collector, ids []int, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !containsAll(c.Threads(), ids); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			st, _ := c.Stats()
			t.Fatalf("%s %v not all followed after 10s: followed %v (stats %+v)", what, ids, c.Threads(), st)
		}
	}
}

func containsAll(set, want []int) bool {
	for _, x := range want {
		if !slices.Contains(set, x) {
			return false
		}
	}
	return true
}

// TestSystemWide snapshots per-CPU events: the sums over CPUs move with time and never
// exceed a later read().
func TestSystemWide(t *testing.T) {
	const slice = 2 * time.Millisecond
	c := newCollector(t, Options{Pid: -1, Events: []perfabi.Attr{
		softwareAttr(unix.PERF_COUNT_SW_CPU_CLOCK),
		softwareAttr(unix.PERF_COUNT_SW_CONTEXT_SWITCHES),
	}, Slice: slice})
	var snaps []perf.Snapshot
	for range 10 {
		s, err := c.Next()
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, s)
	}
	now, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	checkCumulative(t, append(snaps, now))
	first, last := snaps[0], snaps[len(snaps)-1]
	wall := time.Duration(last.TimeNs - first.TimeNs)
	clock := time.Duration(last.Counts[0].Value - first.Counts[0].Value)
	cpus, _ := perf.OnlineCPUs()
	// cpu-clock on every CPU advances with wall time, whether the CPU is busy or idle.
	if clock < wall/2 || clock > wall*time.Duration(len(cpus))*2 {
		t.Errorf("cpu-clock summed over %d CPUs advanced %v in %v of wall time", len(cpus), clock, wall)
	}
	// The CPUs' ticks of one slice make one snapshot, so 10 snapshots span about 9 slices
	// (fewer would mean a snapshot per CPU tick). A loaded machine may delay the
	// consumer past the grace period now and then, hence the slack.
	if wall < 5*slice {
		t.Errorf("10 snapshots span %v: less than 5 slices of %v", wall, slice)
	}
	t.Logf("10 snapshots over %v of %v slices on %d CPUs", wall, slice, len(cpus))
}

// TestCloseUnblocksNext checks that Close makes a Next blocked on an idle target return.
func TestCloseUnblocksNext(t *testing.T) {
	cmd, _, _ := startHelper(t, "sleep")
	c, err := NewCollector(Options{Pid: cmd.Process.Pid, Events: workEvents(t)[:1]})
	if err != nil {
		t.Fatalf("NewCollector (requires root): %v", err)
	}
	done := make(chan error)
	go func() {
		for {
			if _, err := c.Next(); err != nil {
				done <- err
				return
			}
		}
	}()
	time.Sleep(50 * time.Millisecond)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Next after Close: %v, want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still blocked 5s after Close")
	}
}

// TestUnavailableWithoutPrivilege runs NewCollector as user nobody, without capabilities,
// and expects the typed error the sidecar uses to fall back to read().
func TestUnavailableWithoutPrivilege(t *testing.T) {
	// The test binary lives in a 0700 directory; copy it where nobody can run it.
	dir, err := os.MkdirTemp("", "bpftest")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "bpf.test")
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=unavailable")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as nobody: %v: %s", err, out)
	}
	if !strings.HasPrefix(string(out), "unavailable:") {
		t.Fatalf("as nobody: %s", out)
	}
	t.Logf("as nobody: %s", strings.TrimSpace(string(out)))
}

func TestProbe(t *testing.T) {
	before := countFDs()
	if err := Probe(); err != nil {
		t.Fatalf("Probe as root: %v", err)
	}
	if after := countFDs(); after != before {
		t.Errorf("Probe left %d fds open", after-before)
	}
}

func TestBadOptions(t *testing.T) {
	ev := workEvents(t)[:1]
	for name, o := range map[string]Options{
		"no events":    {Pid: os.Getpid()},
		"too many":     {Pid: os.Getpid(), Events: make([]perfabi.Attr, maxEvents+1)},
		"pid zero":     {Events: ev},
		"short slice":  {Pid: os.Getpid(), Events: ev, Slice: time.Microsecond},
		"ring size":    {Pid: os.Getpid(), Events: ev, RingBytes: 12345},
		"no such pid":  {Pid: 1 << 30, Events: ev},
		"bad pid":      {Pid: -2, Events: ev},
		"unknown type": {Pid: os.Getpid(), Events: []perfabi.Attr{{Type: 1 << 20}}},
	} {
		c, err := NewCollector(o)
		if err == nil {
			c.Close()
			t.Errorf("%s: NewCollector succeeded", name)
			continue
		}
		if errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: %v is not a configuration error", name, err)
		}
	}
}

// TestSetEnabled checks that a disabled event reads as not counting through BPF (no read
// errors) and that enabling it mid-run makes it count from then on, in every thread.
func TestSetEnabled(t *testing.T) {
	on := softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK)
	off := on
	off.Flags |= perfabi.FlagDisabled
	never := off
	cmd, in, _ := startHelper(t, "work")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Events: []perfabi.Attr{on, off, never}, Slice: 5 * time.Millisecond})
	in.Write([]byte{'g'})
	first, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if first.Counts[1].Value != 0 || first.Counts[1].Enabled != 0 {
		t.Fatalf("disabled event counted before being enabled: %+v", first.Counts[1])
	}
	if err := c.SetEnabled(1, true); err != nil {
		t.Fatal(err)
	}
	snaps := collectAll(t, c, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	end := snaps[len(snaps)-1].Counts
	if end[1].Value == 0 || end[1].Value >= end[0].Value {
		t.Errorf("task-clock enabled after the first slice: %d, want between 0 and the always-on %d", end[1].Value, end[0].Value)
	}
	if end[2] != (perf.Count{}) {
		t.Errorf("never-enabled event: %+v, want zeros", end[2])
	}
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.ReadErrors != 0 {
		t.Errorf("%d BPF read errors on disabled events", st.ReadErrors)
	}
	if err := c.SetEnabled(3, true); err == nil {
		t.Error("SetEnabled(3) of 3 events succeeded")
	}
}

// TestSlicesOfASleeper runs a target that runs briefly in nearly every slice but is seldom
// running at the instant of a tick, and checks that it still gets a snapshot for about every
// slice in which it ran, as the read(2) backend steps every interval in which the target
// ran: the tick of a CPU that finds no tracked thread running ends the slice all the same
// when one ran since the last tick (its counts came with its switch snapshot).
func TestSlicesOfASleeper(t *testing.T) {
	const slice = 5 * time.Millisecond
	cmd, in, _ := startHelper(t, "naps")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Events: workEvents(t), Slice: slice})
	start := time.Now()
	in.Write([]byte{'g'})
	snaps := collectAll(t, c, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	wall := time.Since(start)
	end, err := c.ReadNow()
	if err != nil {
		t.Fatal(err)
	}
	checkDeltas(t, snaps, end)
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// What is checked is the kernel's slicing (Stats.Slices, IdleSlices), not the number
	// of snapshots: a Next that runs late (MaxSliceLag above a slice, when the Go side is
	// starved on a loaded machine) merges slices into one snapshot, and a snapshot may then
	// hold values past its boundary, leaving the next one with no task-clock. Under
	// stress-ng --cpu 2 that failed 2 runs in 30 (35 snapshots for 79 slices of wall time
	// with a lag of 144ms; snapshots [4 8 50] without task-clock with a lag of 13ms).
	//
	// The helper's napCount runs start at least napRun+napSleep apart, more than half a
	// slice, so an interval between two rounds of ticks holds at most two starts, and the
	// round after each interval holding one ends a slice: at least napCount/2 slices
	// however slowly the helper gets the CPU (idle: 51-55 for 53-55 slices of wall time;
	// under stress-ng --cpu 2, 60-71 for 62-111). Ticks alone (a slice only when the
	// target is running at a tick) gave 1-3.
	if want := uint64(napCount / 2); st.Slices < want {
		t.Errorf("%d slices over %v of a target running %d times, want at least %d", st.Slices, wall, napCount, want)
	}
	// Nearly every slice shows the target having run: a slice is not ended by a tick
	// round in which it did not run. A clean-clone make test once saw one exception, the
	// second snapshot (a switch right after the first snapshot, at the helper's start):
	// at most two are allowed.
	if st.IdleSlices > 2 {
		t.Errorf("%d of %d slices ended with no tracked thread run since the previous one", st.IdleSlices, st.Slices)
	}
	if d := end.Counts[evContextSwitches].Value; d < napCount {
		t.Errorf("context switches: %d, want at least %d", d, napCount)
	}
	t.Logf("%d snapshots over %v (%d slices of wall time), stats %+v", len(snaps), wall, wall/slice, st)
}

// TestSwitchAtSnapshots checks Options.SwitchAtSnapshots: an event switched with
// SetEnabled after each snapshot advances by exactly what an always-on copy of it counted
// over the slices it was enabled in, and copies of one event are one kernel event.
func TestSwitchAtSnapshots(t *testing.T) {
	tc := softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK)
	pf := softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS)
	tcOff, pfOff := tc, pf
	tcOff.Flags |= perfabi.FlagDisabled
	pfOff.Flags |= perfabi.FlagDisabled
	evs := []perfabi.Attr{tc, pf, tcOff, pfOff, tcOff}
	cmd, in, _ := startHelper(t, "work")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Events: evs, Slice: 5 * time.Millisecond, SwitchAtSnapshots: true})
	if c.nr != 2 {
		t.Errorf("%d kernel events per thread for copies of 2 events, want 2", c.nr)
	}
	in.Write([]byte{'g'})
	// Event 2 is on in odd slices, 3 in even ones, 4 never; the expected values are summed
	// here from the always-on events' deltas.
	on := []bool{true, true, false, false, false}
	want := make([]perf.Count, len(evs))
	var prev perf.Snapshot
	var n int
	for ; ; n++ {
		s, ok := nextSnapshot(t, c)
		if !ok {
			break
		}
		for i := range evs {
			src := i
			if i >= 2 {
				src = i % 2
			}
			if on[i] {
				d := s.Counts[src]
				if n > 0 {
					d = d.Sub(prev.Counts[src])
				}
				want[i].Value += d.Value
				want[i].Enabled += d.Enabled
				want[i].Running += d.Running
			}
			if s.Counts[i] != want[i] {
				t.Fatalf("snapshot %d event %d: %+v, want %+v", n, i, s.Counts[i], want[i])
			}
		}
		prev = s
		on[2], on[3] = n%2 == 0, n%2 == 1
		for i := 2; i < 4; i++ {
			if err := c.SetEnabled(i, on[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	// task-clock advances in every slice the helper runs in, so its switched copy must
	// have seen some slices on and some off. Page faults come when the helper's work
	// touches new pages, which on a loaded machine can all fall in slices where the
	// switched copy is off: its count is checked exactly above, not required nonzero.
	if n < 4 || want[2].Value == 0 || want[2].Value >= prev.Counts[0].Value {
		t.Errorf("%d snapshots, switched task-clock %d of %d: want some slices on and some off",
			n, want[2].Value, prev.Counts[0].Value)
	}
	t.Logf("%d snapshots; switched copies: task-clock %d of %d, page faults %d of %d",
		n, want[2].Value, prev.Counts[0].Value, want[3].Value, prev.Counts[1].Value)
	if prev.Counts[4] != (perf.Count{}) {
		t.Errorf("never-enabled copy: %+v, want zeros", prev.Counts[4])
	}
}

// TestTracepointsStillCount checks that the collector's tracepoint programs leave the
// tracepoints they attach to counted in perf events: the kernel counts a tracepoint only if
// its programs return non-zero, and with 0 sched:sched_switch and sched:sched_process_exit
// counted nothing, for anyone on the machine, while a collector ran (here: 0 switches and
// 0 exits, against 491 context switches, and nothing system-wide on CPU 0).
func TestTracepointsStillCount(t *testing.T) {
	evs := []perfabi.Attr{
		softwareAttr(unix.PERF_COUNT_SW_CONTEXT_SWITCHES),
		tracepointAttr(t, "sched", "sched_switch"),
		tracepointAttr(t, "sched", "sched_process_exit"),
	}
	cmd, in, _ := startHelper(t, "work")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Events: evs, Slice: 5 * time.Millisecond})
	// Someone else's event on the same tracepoint: a system-wide count on CPU 0.
	other := tracepointAttr(t, "sched", "sched_switch")
	ofd, err := perfabi.Open(&other, -1, 0, -1)
	if err != nil {
		t.Fatalf("open system-wide sched:sched_switch on cpu 0: %v", err)
	}
	defer unix.Close(ofd)
	in.Write([]byte{'g'})
	snaps := collectAll(t, c, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper: %v", err)
	}
	end := snaps[len(snaps)-1].Counts
	cs, sw, exits := end[0].Value, end[1].Value, end[2].Value
	// Every context switch of the thread passes the sched_switch tracepoint; the software
	// event also counts a few the tracepoint does not see (and the other way round), so
	// they agree only within a few.
	if sw < workSleeps || sw+5 < cs || sw > cs+5 {
		t.Errorf("sched:sched_switch %d, context-switches %d: want at least %d and within 5 of each other", sw, cs, workSleeps)
	}
	if exits != 1 {
		t.Errorf("sched:sched_process_exit of the thread: %d, want 1", exits)
	}
	var buf [8]byte
	if _, err := unix.Read(ofd, buf[:]); err != nil {
		t.Fatal(err)
	}
	if n := perfabi.ByteOrder.Uint64(buf[:]); n == 0 {
		t.Errorf("system-wide sched:sched_switch on cpu 0 counted nothing while the collector ran")
	}
	t.Logf("context-switches %d, sched_switch %d, sched_process_exit %d", cs, sw, exits)
}
