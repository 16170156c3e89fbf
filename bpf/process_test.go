package bpf

// The collector and its target as processes: events that count from the exec, a target
// followed from one thread with its descendants, new processes held until they are
// followed, and exits counted in the slices they happen in.

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
)

// startExecShell starts a shell that waits for a line on stdin and then execs the "work"
// helper (which waits for one more byte before it works): a target that has not exec'd
// yet, as perf stat's forked child before it execs the command.
func startExecShell(t *testing.T) (*exec.Cmd, io.WriteCloser) {
	t.Helper()
	cmd := testutil.ReexecOnLine(helperEnv + "=work")
	cmd.Stderr = os.Stderr
	in := testutil.StartWithStdin(t, cmd)
	// Attach once the shell waits in its read: its start-up (dash calls getppid for
	// $PPID) must be over, or a collector without EnableOnExec would count it.
	for deadline := time.Now().Add(2 * time.Second); taskState(cmd.Process.Pid) != 'S' && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return cmd, in
}

// TestEnableOnExec: with EnableOnExec the events count from the target's exec, as perf
// stat's do on its forked child: nothing before it (Peek reads zeros while the shell waits,
// and the execve syscall, entered before the exec enables the events, is not counted), and
// everything after (the helper's getppid calls, exactly). Without it, the same run counts
// the shell's execve.
func TestEnableOnExec(t *testing.T) {
	execve := tracepointAttr(t, "syscalls", "sys_enter_execve")
	getppid := tracepointAttr(t, "syscalls", "sys_enter_getppid")
	evs := []perfabi.Attr{softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK), execve, getppid}
	for _, onExec := range []bool{true, false} {
		t.Run(fmt.Sprintf("EnableOnExec=%v", onExec), func(t *testing.T) {
			cmd, in := startExecShell(t)
			c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Events: evs, Slice: 5 * time.Millisecond,
				SwitchAtSnapshots: true, EnableOnExec: onExec})
			// Let the shell run a little before its exec: its reads of stdin must not count.
			in.Write([]byte("x"))
			time.Sleep(20 * time.Millisecond)
			before := make([]perf.Count, len(evs))
			if err := c.Peek([]int{0, 1, 2}, before); err != nil {
				t.Fatal(err)
			}
			in.Write([]byte("\ng")) // exec, then work
			snaps := collectAll(t, c, 20*time.Second)
			if len(snaps) == 0 {
				t.Fatal("no snapshot")
			}
			end := snaps[len(snaps)-1].Counts
			t.Logf("before the exec %+v; at the end %+v", before, end)
			if onExec {
				for i, v := range before {
					if v != (perf.Count{}) {
						t.Errorf("event %d before the exec: %+v, want zeros (enabled at exec)", i, v)
					}
				}
				if end[1].Value != 0 {
					t.Errorf("execve counted %d times, want 0: the exec's own syscall entry precedes the enabling", end[1].Value)
				}
			} else if end[1].Value != 1 || before[0].Value == 0 {
				t.Errorf("without EnableOnExec: execve %d (want 1), task-clock before the exec %d (want > 0)", end[1].Value, before[0].Value)
			}
			if end[2].Value != workGetppid {
				t.Errorf("getppid counted %d times, want the helper's %d", end[2].Value, workGetppid)
			}
			if err := cmd.Wait(); err != nil && !strings.Contains(err.Error(), "killed") {
				t.Errorf("helper: %v", err)
			}
		})
	}
}

// TestPeek: between snapshots, Peek reads every event now, gated as the next snapshot
// would be without ending the slice: an enabled copy reads at least what the last
// snapshot said, a copy disabled since that snapshot reads exactly it, the next snapshot
// reports at least what Peek read, and after the target has exited, Peek and the final
// snapshot agree. Wait returns when Next would not block, and consumes nothing.
func TestPeek(t *testing.T) {
	tc := softwareAttr(unix.PERF_COUNT_SW_TASK_CLOCK)
	gp := tracepointAttr(t, "syscalls", "sys_enter_getppid")
	tcOff := tc
	tcOff.Flags |= perfabi.FlagDisabled
	evs := []perfabi.Attr{tc, gp, tcOff}
	cmd, in, _ := startHelper(t, "work")
	c := newCollector(t, Options{Pid: cmd.Process.Pid, Events: evs, Slice: 5 * time.Millisecond, SwitchAtSnapshots: true})
	in.Write([]byte{'g'})
	idx := []int{0, 1, 2}
	peek := make([]perf.Count, len(evs))
	var last perf.Snapshot
	n, checked := 0, 0
	for ; ; n++ {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
		s, ok := nextSnapshot(t, c)
		if !ok {
			break
		}
		for i := range evs {
			if n > 0 && s.Counts[i].Value < peek[i].Value {
				t.Fatalf("slice %d event %d: snapshot %d below the last peek's %d", n, i, s.Counts[i].Value, peek[i].Value)
			}
		}
		last = s
		// Copy 2 is on in even slices: it counts over the slice that begins now.
		if err := c.SetEnabled(2, n%2 == 0); err != nil {
			t.Fatal(err)
		}
		if err := c.Peek(idx, peek); err != nil {
			t.Fatal(err)
		}
		for i := range evs {
			if peek[i].Value < s.Counts[i].Value {
				t.Fatalf("slice %d event %d: peek %d below the snapshot's %d", n, i, peek[i].Value, s.Counts[i].Value)
			}
		}
		if n%2 == 1 && peek[2] != s.Counts[2] {
			t.Fatalf("slice %d: disabled copy peeks %+v, the snapshot said %+v", n, peek[2], s.Counts[2])
		}
		checked++
	}
	if err := c.Peek(idx, peek); err != nil {
		t.Fatal(err)
	}
	for i := range evs {
		if peek[i] != last.Counts[i] {
			t.Errorf("after the exit, event %d: peek %+v, final snapshot %+v", i, peek[i], last.Counts[i])
		}
	}
	if last.Counts[1].Value != workGetppid || checked < 4 || last.Counts[2].Value == 0 || last.Counts[2].Value >= last.Counts[0].Value {
		t.Errorf("%d slices checked, getppid %d (want %d), switched task-clock %d of %d: want several slices, each copy counted",
			checked, last.Counts[1].Value, workGetppid, last.Counts[2].Value, last.Counts[0].Value)
	}
}

// TestDescendants: with Descendants the collector starts from the thread Pid alone, as an
// inherited event opened on it counts, not from every thread of its process (a Go
// helper has runtime threads before the test lets it go), and still follows the tasks Pid
// creates.
func TestDescendants(t *testing.T) {
	for _, desc := range []bool{true, false} {
		t.Run(fmt.Sprintf("Descendants=%v", desc), func(t *testing.T) {
			cmd, in, _ := startHelper(t, "forker")
			// The Go runtime starts its threads at once; wait until it has more than one.
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid)); len(ents) > 1 {
					break
				}
			}
			getppid := tracepointAttr(t, "syscalls", "sys_enter_getppid")
			c := newCollector(t, Options{Pid: cmd.Process.Pid, Threads: true, Descendants: desc, HoldProcesses: true,
				Events: []perfabi.Attr{getppid}, Slice: 5 * time.Millisecond})
			initial := c.Threads()
			if desc && (len(initial) != 1 || initial[0] != cmd.Process.Pid) {
				t.Errorf("initial threads %v, want the target thread %d alone", initial, cmd.Process.Pid)
			}
			if !desc && len(initial) < 2 {
				t.Errorf("initial threads %v: want every thread of the helper (Go starts several)", initial)
			}
			// The forker's children wait for a byte each on the shared stdin.
			in.Write([]byte("ggg"))
			snaps := collectAll(t, c, 20*time.Second)
			if len(snaps) == 0 {
				t.Fatal("no snapshot")
			}
			if got := snaps[len(snaps)-1].Counts[0].Value; got < childCount*childGetppid {
				t.Errorf("getppid counted %d times, want at least the children's %d: new processes not followed", got, childCount*childGetppid)
			}
		})
	}
}

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
// inherited copies from the fork on). Once with each way of holding (hold.go): the
// program on the system call exit alone, the fork program alone (the kernel's BTF
// decoded first), and the first upgraded to the second before the loop starts and while
// it runs. (A collector left to choose, holdAuto, takes one of these paths depending on
// whether the process has decoded the BTF yet: in this package's run, tests before this
// one have, so it would repeat "fork-hold".)
func TestHoldsNewProcesses(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode holdMode
	}{
		{"first-exit", holdFirstExit},
		{"upgraded", holdEarly},
		{"upgrading", holdEarly},
		{"fork-hold", holdAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "fork-hold" {
				Preload()
			}
			testHolds(t, tc.mode, tc.name)
		})
	}
}

// testHolds: with upgrade "upgraded" the early hold is replaced before the loop starts,
// with "upgrading" while it runs (after a quarter of its commands, as inherited events
// count them): no command may slip through the change.
func testHolds(t *testing.T, mode holdMode, upgrade string) {
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
	upgradeAt := make(chan struct{})
	if upgrade != "upgrading" {
		close(upgradeAt)
	}
	c, err := NewCollector(Options{Pid: cmd.Process.Pid, Threads: true, HoldProcesses: true, Events: attrs,
		Slice: 4 * time.Millisecond, holdMode: mode, upgradeAt: upgradeAt})
	if err != nil {
		t.Fatalf("NewCollector (requires root): %v", err)
	}
	defer c.Close()
	if upgrade == "upgrading" {
		Preload()
		go func() {
			defer close(upgradeAt)
			var buf [8]byte
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
				if _, err := unix.Read(inherited[holdEvExecve], buf[:]); err != nil || *(*uint64)(unsafe.Pointer(&buf[0])) >= shellLoopChildren/4 {
					return
				}
			}
		}()
	}
	if upgrade == "upgraded" {
		Preload()
		<-c.upgraded
		c.mu.Lock()
		fork, exit, herr := c.earlyFork, c.earlyExit, c.holdErr
		c.mu.Unlock()
		if herr != nil || fork != nil || exit != nil {
			t.Fatalf("upgrade: on_fork %v and on_first_exit %v still attached, error %v", fork, exit, herr)
		}
	}
	in.Write([]byte("go\n"))
	var last perf.Snapshot
	for {
		s, ok := nextSnapshot(t, c)
		if !ok {
			break
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
	t.Logf("collector %v, inherited %v; %d processes held (%d on their first return to user space, hold error %v), %d lost, longest follow %v",
		got, want, st.Held, st.HeldEarly, st.HoldErr, st.LostThreads, st.MaxFollowLatency)
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
	// Which program held them: each process once, by the program of the mode.
	switch {
	case st.Held != shellLoopChildren:
		t.Errorf("%d processes held, want the loop's %d", st.Held, shellLoopChildren)
	case mode == holdFirstExit && st.HeldEarly != st.Held:
		t.Errorf("%d of %d held on the system call exit, want all: the fork program was attached", st.HeldEarly, st.Held)
	case (upgrade == "upgraded" || mode == holdAuto && btfDecoded()) && st.HeldEarly != 0:
		t.Errorf("%d held on the system call exit after the upgrade to the fork program", st.HeldEarly)
	case upgrade == "upgrading" && (st.HeldEarly == 0 || st.HeldEarly == st.Held):
		t.Errorf("%d of %d held on the system call exit: the upgrade was not during the loop", st.HeldEarly, st.Held)
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
