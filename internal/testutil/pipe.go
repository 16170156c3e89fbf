package testutil

import (
	"syscall"
	"testing"
)

// Pipe returns the read and write ends of a new close-on-exec pipe as raw fds, closed
// at cleanup: an fd of the wrong kind to hand to code that expects another.
func Pipe(tb testing.TB) [2]int {
	tb.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		syscall.Close(p[0])
		syscall.Close(p[1])
	})
	return p
}
