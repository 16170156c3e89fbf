package bpf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Requirements of this package's tests: root (or CAP_BPF+CAP_PERFMON), software perf
// events and tracefs. The development and CI machines have all of them, so nothing here
// skips: a missing one is a failure.

// helperEnv selects a workload when the test binary is re-executed as a target process.
const helperEnv = "BPF_TEST_HELPER"

// Work done by the "work" helper on its main thread; the tests check these counts.
const (
	workPages   = 2000 // fresh pages touched: at least this many minor faults
	workGetppid = 300  // getppid calls: exactly this many syscalls:sys_enter_getppid
	workSleeps  = 50   // nanosleeps: at least this many context switches
	workSpin    = 200 * time.Millisecond
)

// Work done by every new thread of the "threads" helper.
const (
	threadWorkers = 6
	threadPages   = 500
	threadGetppid = 100
	threadSpin    = 40 * time.Millisecond
)

func init() {
	// A helper's workload runs on the main thread, whose tid is the pid.
	if os.Getenv(helperEnv) != "" {
		runtime.LockOSThread()
	}
}

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "":
	case "work":
		waitGo()
		work(workPages, workGetppid, workSleeps, workSpin)
		os.Exit(0)
	case "threads":
		helperThreads()
		os.Exit(0)
	case "waves":
		helperWaves()
		os.Exit(0)
	case "forker":
		helperForker()
		os.Exit(0)
	case "child":
		fmt.Println(os.Getpid())
		waitGo()
		work(100, childGetppid, 0, 0)
		os.Exit(0)
	case "naps":
		waitGo()
		helperNaps()
		os.Exit(0)
	case "spin":
		helperSpin()
	case "sleep":
		waitGo()
		os.Exit(0)
	case "unavailable":
		os.Exit(helperUnavailable())
	default:
		fmt.Fprintln(os.Stderr, "unknown helper")
		os.Exit(2)
	}
	// Catch leaked fds: the netpoller's own fds are created first by a throwaway pipe.
	if r, w, err := os.Pipe(); err == nil {
		r.Close()
		w.Close()
	}
	before := countFDs()
	code := m.Run()
	if after := countFDs(); code == 0 && after != before {
		fmt.Fprintf(os.Stderr, "bpf tests leaked fds: %d open before, %d after\n", before, after)
		code = 1
	}
	os.Exit(code)
}

func countFDs() int {
	ents, _ := os.ReadDir("/proc/self/fd")
	return len(ents)
}

// waitGo blocks until the test writes a byte to stdin: the collector is attached by then.
func waitGo() {
	var b [1]byte
	os.Stdin.Read(b[:])
}

// work faults in pages, makes syscalls, sleeps and spins on the calling thread.
func work(pages, getppid, sleeps int, spin time.Duration) {
	mem, err := unix.Mmap(-1, 0, pages*4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		panic(err) // a helper process, not library code
	}
	for i := range pages {
		mem[i*4096] = 1
	}
	for range getppid {
		unix.Getppid()
	}
	for range sleeps {
		unix.Nanosleep(&unix.Timespec{Nsec: 100_000}, nil)
	}
	spinCPU(spin, 10000)
	unix.Munmap(mem)
}

// The "naps" helper runs napCount times for napRun of CPU time and sleeps napSleep: it
// runs in nearly every slice of a few milliseconds, but seldom at the instant of a tick.
const (
	napCount = 80
	napRun   = 200 * time.Microsecond
	napSleep = 3 * time.Millisecond
)

func helperNaps() {
	for range napCount {
		spinCPU(napRun, 1000)
		unix.Nanosleep(&unix.Timespec{Nsec: napSleep.Nanoseconds()}, nil)
	}
}

// spinCPU spins for d of this thread's CPU time (wall time would fall short on a busy
// machine), reading the clock (a system call) every step increments.
func spinCPU(d time.Duration, step int) {
	cpu := func() time.Duration {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts)
		return time.Duration(ts.Nano())
	}
	end := cpu() + d
	for x := 0; cpu() < end; {
		for range step {
			x++
		}
	}
}

// helperThreads starts threadWorkers new OS threads after the go signal; each prints its
// tid and waits for a second go signal (sent once the test sees them followed), works, and
// exits (a locked goroutine that returns takes its thread with it).
func helperThreads() {
	waitGo()
	threadWave(threadWorkers, func() { work(threadPages, threadGetppid, 0, threadSpin) })
	time.Sleep(20 * time.Millisecond)
}

// threadWave starts n new OS threads that print their tids, and once a go signal
// comes, runs body on each and waits for them to return (a locked goroutine that
// returns takes its thread with it).
func threadWave(n int, body func()) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	release := make(chan struct{})
	for range n {
		wg.Go(func() {
			runtime.LockOSThread()
			mu.Lock()
			fmt.Println(unix.Gettid())
			mu.Unlock()
			<-release
			body()
		})
	}
	waitGo()
	close(release)
	wg.Wait()
}

// Waves of short-lived threads: more threads in all than the collector's slots.
const (
	waveCount   = 7
	waveThreads = 4
	waveGetppid = 50
)

// helperWaves runs, after a first go signal, waveCount waves of waveThreads new threads;
// each wave prints its tids,
// waits for a go signal, works and exits before the next wave starts.
func helperWaves() {
	waitGo()
	ents, _ := os.ReadDir("/proc/self/task")
	threadsBefore := len(ents)
	for range waveCount {
		threadWave(waveThreads, func() { work(50, waveGetppid, 0, 2*time.Millisecond) })
		// The threads die just after their goroutines return: wait for that, so that the
		// next wave needs the slots they free.
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			ents, _ := os.ReadDir("/proc/self/task")
			if len(ents) <= threadsBefore {
				break
			}
		}
	}
}

// Child processes of the "forker" helper, each run to completion in turn.
const (
	childCount   = 2
	childGetppid = 100
)

// helperForker runs childCount child processes (this binary as helper "child") one after
// the other; they share its stdin and stdout, so the test talks to them directly.
func helperForker() {
	waitGo()
	for range childCount {
		cmd := testutil.Reexec(helperEnv + "=child")
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			panic(err) // a helper process, not library code
		}
	}
}

// helperUnavailable runs as an unprivileged user and reports what NewCollector said.
func helperUnavailable() int {
	_, err := NewCollector(Options{Pid: os.Getpid(), Events: []perfabi.Attr{softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK)}})
	var ue *UnavailableError
	if errors.As(err, &ue) && errors.Is(err, ErrUnavailable) {
		if perr := Probe(); !errors.Is(perr, ErrUnavailable) {
			fmt.Println("Probe disagrees with NewCollector:", perr)
			return 1
		}
		fmt.Println("unavailable:", ue.Op)
		return 0
	}
	fmt.Println("not an UnavailableError:", err)
	return 1
}

// startHelper re-executes the test binary as workload name. It returns the process, the
// pipe that releases it, and its stdout.
func startHelper(t testing.TB, name string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := testutil.Reexec(helperEnv + "=" + name)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in := testutil.StartWithStdin(t, cmd)
	return cmd, in, bufio.NewReader(out)
}

// startWaves starts the "waves" helper and returns, with its pipes, the threads it has
// once its runtime has started them: the room a MaxThreads must leave besides the waves.
func startWaves(t *testing.T) (*exec.Cmd, io.WriteCloser, *bufio.Reader, []int) {
	t.Helper()
	cmd, in, out := startHelper(t, "waves")
	time.Sleep(100 * time.Millisecond) // let the runtime start its threads
	initial, err := listThreads(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, in, out, initial
}

// readIDs reads n thread or process ids (what) that the helper prints one a line.
func readIDs(t *testing.T, out *bufio.Reader, n int, what string) []int {
	t.Helper()
	var ids []int
	for range n {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("read %s: %v", what, err)
		}
		id, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			t.Fatalf("parse %s %q: %v", what, line, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// newCollector is NewCollector(o), closed when the test ends; it fails t if the
// collector cannot be made.
func newCollector(t testing.TB, o Options) *Collector {
	t.Helper()
	c, err := NewCollector(o)
	if err != nil {
		t.Fatalf("NewCollector (requires root): %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func softwareAttr(config uint64) perfabi.Attr {
	return perfabi.Attr{Type: unix.PERF_TYPE_SOFTWARE, Config: config, Size: perfabi.AttrSize}
}

func tracepointAttr(t testing.TB, group, name string) perfabi.Attr {
	t.Helper()
	for _, root := range tracefsRoots {
		b, err := os.ReadFile(filepath.Join(root, "events", group, name, "id"))
		if err != nil {
			continue
		}
		id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatalf("parse tracepoint id of %s:%s: %v", group, name, err)
		}
		return perfabi.Attr{Type: unix.PERF_TYPE_TRACEPOINT, Config: id, Size: perfabi.AttrSize}
	}
	t.Fatalf("tracepoint %s:%s not found in tracefs (requires tracefs mounted, as root)", group, name)
	return perfabi.Attr{}
}

// collectAll calls Next until io.EOF, failing the test after timeout.
func collectAll(t *testing.T, c *Collector, timeout time.Duration) []perf.Snapshot {
	t.Helper()
	snaps, err := collect(c, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return snaps
}

// collectAsync runs collect in a new goroutine while the test drives the target; wait
// returns the snapshots once the collector ends, failing t on an error.
func collectAsync(c *Collector, timeout time.Duration) (wait func(t *testing.T) []perf.Snapshot) {
	var snaps []perf.Snapshot
	var err error
	done := make(chan struct{})
	go func() {
		snaps, err = collect(c, timeout)
		close(done)
	}()
	return func(t *testing.T) []perf.Snapshot {
		t.Helper()
		<-done
		if err != nil {
			t.Fatal(err)
		}
		return snaps
	}
}

// nextSnapshot is c.Next for a test's loop over the snapshots: false at the end (io.EOF),
// and any other error fails the test.
func nextSnapshot(t *testing.T, c *Collector) (perf.Snapshot, bool) {
	t.Helper()
	s, err := c.Next()
	if err == io.EOF {
		return s, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return s, true
}

// collect calls Next until io.EOF, closing the collector after timeout; it may run in
// any goroutine.
func collect(c *Collector, timeout time.Duration) ([]perf.Snapshot, error) {
	timer := time.AfterFunc(timeout, func() { c.Close() })
	defer timer.Stop()
	var snaps []perf.Snapshot
	for {
		s, err := c.Next()
		if err == io.EOF {
			return snaps, nil
		}
		if err != nil {
			return snaps, fmt.Errorf("Next after %d snapshots: %w", len(snaps), err)
		}
		snaps = append(snaps, s)
	}
}
