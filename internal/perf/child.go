package perf

import (
	"fmt"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// StartAttached starts cmd, stops it right after its execve (with ptrace, as a debugger
// does), calls attach with its pid so that events can be opened on the new program before
// it runs its first instruction, then lets it run. Events opened in attach with FlagInherit
// also count the threads and processes the program creates. When attach fails, the child
// is killed and reaped. The caller then waits for cmd as usual.
//
// Why ptrace and not enable_on_exec: Go cannot run code between fork and exec, and a
// helper that execs later would be multi-threaded; the stop after exec gives the same
// guarantee without a helper. The only difference from perf's enable_on_exec is that the
// kernel work of the execve itself is not counted.
func StartAttached(cmd *exec.Cmd, attach func(pid int) error) error {
	runtime.LockOSThread() // the tracer is this thread: detach must come from it
	defer runtime.UnlockOSThread()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Ptrace = true
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	pid := cmd.Process.Pid
	var ws unix.WaitStatus
	for {
		_, err := unix.Wait4(pid, &ws, unix.WALL, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			_ = cmd.Process.Kill()
			return fmt.Errorf("wait for %s to exec: %w", cmd.Path, err)
		}
		break
	}
	if !ws.Stopped() {
		return fmt.Errorf("start %s: child ended before running (status %#x)", cmd.Path, uint32(ws))
	}
	if err := attach(pid); err != nil {
		_ = cmd.Process.Kill()
		_ = unix.PtraceDetach(pid)
		_ = cmd.Wait()
		return err
	}
	if err := unix.PtraceDetach(pid); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return fmt.Errorf("let %s run (ptrace detach): %w", cmd.Path, err)
	}
	return nil
}
