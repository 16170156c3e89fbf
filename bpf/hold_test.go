package bpf

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// shellLoopChildren is how many short commands the shell loop of TestHoldsNewProcesses
// runs: each is a process that lives about a millisecond.
const shellLoopChildren = 150

// Events of TestHoldsNewProcesses, in order.
const (
	holdEvExecve   = iota // syscalls:sys_enter_execve: exactly one per command
	holdEvFaults          // page-faults
	holdEvSwitches        // context-switches
	holdEvents
)

// TestHoldsNewProcesses runs a shell loop of short commands and counts it twice in the same
// run: with the collector (HoldProcesses) and with inherited events read with read(2),
// which the kernel copies into every child at fork. The collector must see every command
// from its start: every execve, and the page faults up to the few the kernel takes for a
// child before it first runs (schedule_tail's write of the child's tid, counted by the
// inherited copies from the fork on).
func TestHoldsNewProcesses(t *testing.T) {
	cmd, in := startShellLoop(t, shellLoopChildren)
	attrs := []perfabi.Attr{
		tracepointAttr(t, "syscalls", "sys_enter_execve"),
		softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS),
		softwareAttr(unix.PERF_COUNT_SW_CONTEXT_SWITCHES),
	}
	var inherited []int
	for _, a := range attrs {
		a.Flags |= perfabi.FlagInherit
		fd, err := perfabi.Open(&a, cmd.Process.Pid, -1, -1)
		if err != nil {
			t.Fatalf("open inherited event (type %d config %d): %v", a.Type, a.Config, err)
		}
		inherited = append(inherited, fd)
	}
	defer closeAll(inherited)
	c, err := NewCollector(Options{Pid: cmd.Process.Pid, Threads: true, HoldProcesses: true, Events: attrs, Slice: 4 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewCollector (requires root): %v", err)
	}
	defer c.Close()
	in.Write([]byte("go\n"))
	var last perf.Snapshot
	for {
		s, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		last = s
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shell loop: %v", err)
	}
	st, err := c.Stats()
	if err != nil {
		t.Fatal(err)
	}
	// Read after the wait: the kernel folds an exited child's inherited counts into its
	// parent's copy, so the shell's copies now hold every command's.
	want := make([]uint64, holdEvents)
	for i, fd := range inherited {
		var buf [8]byte
		if _, err := unix.Read(fd, buf[:]); err != nil {
			t.Fatalf("read inherited event %d: %v", i, err)
		}
		want[i] = *(*uint64)(unsafe.Pointer(&buf[0]))
	}
	got := make([]uint64, holdEvents)
	for i := range got {
		got[i] = last.Counts[i].Value
	}
	t.Logf("collector %v, inherited %v; %d processes held, %d lost, longest follow %v", got, want, st.Held, st.LostThreads, st.MaxFollowLatency)
	if want[holdEvExecve] != shellLoopChildren {
		t.Fatalf("inherited events saw %d execve, want %d: the reference itself is wrong", want[holdEvExecve], shellLoopChildren)
	}
	if got[holdEvExecve] != want[holdEvExecve] {
		t.Errorf("execve: collector %d, inherited %d: commands were missed", got[holdEvExecve], want[holdEvExecve])
	}
	// At most one fault per command that the inherited copies see and the collector
	// cannot: the child's first write to its memory, made by the kernel before it runs.
	if got[holdEvFaults] > want[holdEvFaults] || want[holdEvFaults]-got[holdEvFaults] > shellLoopChildren {
		t.Errorf("page faults: collector %d, inherited %d: want at most %d fewer", got[holdEvFaults], want[holdEvFaults], shellLoopChildren)
	}
	if st.LostThreads != 0 {
		t.Errorf("%d processes lost", st.LostThreads)
	}
}

// TestContinuesHeldProcesses stalls the collector's consumer so that a new process stays
// held (stopped), then checks that contAllHeld, which Close calls for the processes whose
// notice it did not consume, lets it run.
func TestContinuesHeldProcesses(t *testing.T) {
	cmd, in := startShellLoop(t, 1)
	c, err := NewCollector(Options{Pid: cmd.Process.Pid, Threads: true, HoldProcesses: true,
		Events: []perfabi.Attr{softwareAttr(unix.PERF_COUNT_SW_PAGE_FAULTS)}})
	if err != nil {
		t.Fatalf("NewCollector (requires root): %v", err)
	}
	defer c.Close()
	c.mu.Lock() // the consumer cannot apply records, so nobody sends SIGCONT
	locked := true
	defer func() {
		if locked {
			c.mu.Unlock()
		}
	}()
	in.Write([]byte("go\n"))
	var child int
	deadline := time.Now().Add(20 * time.Second)
	for child == 0 || taskState(child) != 'T' {
		if time.Now().After(deadline) {
			t.Fatalf("no held process stopped within 20s (held: %d, state %c)", child, taskState(child))
		}
		var tid, v uint32
		if it := c.heldMap.Iterate(); it.Next(&tid, &v) {
			child = int(tid)
		}
		time.Sleep(time.Millisecond)
	}
	c.contAllHeld()
	for taskState(child) == 'T' {
		if time.Now().After(deadline) {
			t.Fatalf("held process %d still stopped after contAllHeld", child)
		}
		time.Sleep(time.Millisecond)
	}
	c.mu.Unlock()
	locked = false
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shell: %v", err)
	}
}

// taskState returns the state letter of /proc/PID/stat (0 if it cannot be read).
func taskState(pid int) byte {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// TestExitsCountInTheirSlices: an exited process's own sched:sched_process_exit is counted
// by the kernel after the collector's exit snapshot, so only its events hold it; the
// collector reads them at the next slice, so that the exits of a shell loop's commands
// reach the slices they happened in, not only the final snapshot.
func TestExitsCountInTheirSlices(t *testing.T) {
	const children = 60
	cmd, in := startShellLoop(t, children)
	attrs := []perfabi.Attr{
		tracepointAttr(t, "syscalls", "sys_enter_execve"),
		tracepointAttr(t, "sched", "sched_process_exit"),
	}
	c, err := NewCollector(Options{Pid: cmd.Process.Pid, Threads: true, HoldProcesses: true, Events: attrs, Slice: 4 * time.Millisecond})
	if err != nil {
		t.Fatalf("NewCollector (requires root): %v", err)
	}
	defer c.Close()
	in.Write([]byte("go\n"))
	snaps := collectAll(t, c, 20*time.Second)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shell loop: %v", err)
	}
	if len(snaps) < 2 {
		t.Fatalf("%d snapshots", len(snaps))
	}
	final := snaps[len(snaps)-1].Counts
	if final[0].Value != children || final[1].Value != children+1 {
		t.Fatalf("final: %d execve, %d exits; want %d and %d (the shell's own too)", final[0].Value, final[1].Value, children, children+1)
	}
	// In the last BPF snapshot every command that had exec'd has exited, but for the one
	// running then and one whose events the kernel was still detaching.
	last := snaps[len(snaps)-2].Counts
	execs, exits := last[0].Value, last[1].Value
	t.Logf("%d snapshots; last BPF one: %d execve, %d exits", len(snaps), execs, exits)
	if execs < children/2 {
		t.Skipf("only %d of %d commands ran before the last BPF snapshot: too few to judge", execs, children)
	}
	if exits+2 < execs {
		t.Errorf("last BPF snapshot: %d exits for %d execve: exits reach only the final snapshot", exits, execs)
	}
}

// startShellLoop starts a shell that waits for a line on in, then runs cat n times (a
// fork and an exec each); the test's cleanup kills and reaps it.
func startShellLoop(t *testing.T, n int) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	script := fmt.Sprintf("read go; i=0; while [ $i -lt %d ]; do cat /proc/self/stat >/dev/null; i=$((i+1)); done", n)
	cmd := exec.Command("/bin/sh", "-c", script)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start shell loop: %v", err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in
}
