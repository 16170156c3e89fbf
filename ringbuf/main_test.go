package ringbuf

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain fails the run if a test leaked a perf event fd: a leaked ring keeps pinned
// memory and a live event on this machine.
func TestMain(m *testing.M) {
	before := perfFDs()
	code := m.Run()
	if code == 0 {
		for fd, target := range perfFDs() {
			if _, ok := before[fd]; !ok {
				fmt.Fprintf(os.Stderr, "leaked fd %s -> %s\n", fd, target)
				code = 1
			}
		}
	}
	os.Exit(code)
}

func perfFDs() map[string]string {
	fds := map[string]string{}
	ents, _ := os.ReadDir("/proc/self/fd")
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && target == "anon_inode:[perf_event]" {
			fds[e.Name()] = target
		}
	}
	return fds
}
