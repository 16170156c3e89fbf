package perfabi

import (
	"runtime"
	"syscall"
	"unsafe"
)

// flagFDCloexec is PERF_FLAG_FD_CLOEXEC, a flag of perf_event_open(2) itself.
const flagFDCloexec = 1 << 3

// Open calls perf_event_open(2) with a for task pid (0 the caller, -1 every task on cpu)
// on cpu (-1 any), in the group of groupFD (-1 a new group), and returns the fd, opened
// close-on-exec. a goes to the kernel in its Encode layout with a.Size sent as is, so a
// zero Size gets VER0 (64-byte) semantics. It is the module's one call of the system
// call: the kernel's refusal is returned as the bare syscall.Errno, for errors.Is.
func Open(a *Attr, pid, cpu, groupFD int) (int, error) {
	b := a.Encode()
	fd, _, errno := syscall.Syscall6(syscall.SYS_PERF_EVENT_OPEN, uintptr(unsafe.Pointer(&b[0])),
		uintptr(pid), uintptr(cpu), uintptr(groupFD), flagFDCloexec, 0)
	runtime.KeepAlive(b)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
