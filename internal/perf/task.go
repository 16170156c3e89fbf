package perf

import (
	"bytes"
	"fmt"
	"os"
)

// TaskFinished says whether a task (a thread of any process, or a process by its pid)
// has passed the point where the kernel detaches its perf events: it is gone from /proc,
// or a zombie or dead task, so its counts are final. /proc/TID works for every thread,
// though only process leaders are listed.
func TaskFinished(tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", tid))
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may hold anything.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	switch b[i+2] {
	case 'Z', 'X', 'x':
		return true
	}
	return false
}
