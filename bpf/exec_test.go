package bpf

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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
		s, err := c.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
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
