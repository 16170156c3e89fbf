package testutil

import (
	"io"
	"os"
	"os/exec"
	"testing"
)

// Reexec returns a command that runs this test binary again, selecting no test, with
// env added to the environment: a test binary doubles as a target process when its
// TestMain acts on such a variable and exits.
func Reexec(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// ReexecOnLine is Reexec behind a shell that waits for a line on its standard input
// before it execs the test binary: a target whose events can be opened before its
// command starts, as perf stat's forked child is before its exec.
func ReexecOnLine(env ...string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", `read x; exec "$0" -test.run=^$`, os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// StartWithStdin starts cmd with a pipe to its standard input and returns the pipe,
// failing tb if either cannot be made. At cleanup it closes the pipe, kills cmd and
// reaps it (harmless when the test has done so).
func StartWithStdin(tb testing.TB, cmd *exec.Cmd) io.WriteCloser {
	tb.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	tb.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return in
}
