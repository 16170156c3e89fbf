package perf

import (
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestTaskFinished: a running task is not finished; a zombie (exited, not yet reaped)
// and a reaped one are.
func TestTaskFinished(t *testing.T) {
	if TaskFinished(os.Getpid()) {
		t.Fatal("this test's own process is finished")
	}
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	deadline := time.Now().Add(5 * time.Second)
	for !TaskFinished(pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // a zombie until Wait reaps it
	}
	if !TaskFinished(pid) {
		t.Fatal("an exited child (a zombie) is not finished")
	}
	cmd.Wait()
	if !TaskFinished(pid) {
		t.Fatal("a reaped child is not finished")
	}
}
