package perf

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/bayesperf/bayesperf/perfabi"
	"golang.org/x/sys/unix"
)

// Event is one open perf event: its fd and the attr it was opened with. Close it when done.
// An Event may be read from several goroutines at once (read(2) is atomic per call), but
// Close must not race with other methods.
type Event struct {
	fd   int
	Attr Attr
	// Name is how the event was asked for, for messages; empty when opened from a raw attr.
	Name    string
	leader  *Event   // group leader when opened into a group
	members []*Event // members opened into this leader's group, in order
}

// Targets of Open.
const (
	AnyCPU  = -1 // pid-bound event that follows its task on every CPU
	ThisPid = 0  // the calling thread (and its children with FlagInherit)
	NoGroup = -1 // no group leader: the event leads its own group
)

// Open calls perf_event_open(2) with attr for task pid (0 = caller, -1 = every task on cpu)
// on cpu (-1 = any), joining the group of leader (nil = a new group). The fd is opened
// close-on-exec. The attr is passed in this package's AttrSize layout; its Size field is
// sent as is, so a zero Size gets VER0 (64-byte) semantics from the kernel.
func Open(attr Attr, pid, cpu int, leader *Event) (*Event, error) {
	gfd := NoGroup
	if leader != nil {
		gfd = leader.fd
	}
	fd, err := perfabi.Open(&attr, pid, cpu, gfd)
	if err != nil {
		return nil, fmt.Errorf("perf_event_open type=%d config=%#x pid=%d cpu=%d: %w", attr.Type, attr.Config, pid, cpu, explainOpenErr(attr, pid, err))
	}
	e := &Event{fd: fd, Attr: attr, leader: leader}
	if leader != nil {
		leader.members = append(leader.members, e)
	}
	return e, nil
}

// ErrNotSupported says the kernel or the machine lacks the event (no hardware PMU here).
var ErrNotSupported = errors.New("event not supported by this kernel or machine")

// explainOpenErr says why perf_event_open refused attr for pid and what to do about it.
// The errno stays wrapped for errors.Is.
func explainOpenErr(attr Attr, pid int, err error) error {
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return err
	}
	switch errno {
	case unix.ENOENT, unix.EOPNOTSUPP, unix.ENODEV:
		if hardwareType(attr.Type) && !hasCPUPMU(sysfsPMUDir) {
			return fmt.Errorf("%w (%w): this machine has no hardware PMU (a virtual machine?); count software events or tracepoints instead ('bayesperf list' shows them)", ErrNotSupported, errno)
		}
		return fmt.Errorf("%w (%w); 'bayesperf list' shows the events this machine has", ErrNotSupported, errno)
	case unix.EACCES, unix.EPERM:
		return fmt.Errorf("%w: %s", errno, permissionAdvice(attr, pid, os.Geteuid(), paranoid()))
	case unix.ESRCH:
		return fmt.Errorf("%w: process %d is gone; give the pid of a running process", errno, pid)
	case unix.EMFILE, unix.ENFILE:
		return fmt.Errorf("%w: one fd per event and thread; raise the limit (ulimit -n) or count fewer events", errno)
	}
	return errno
}

// hardwareType says the event type needs a hardware PMU (generic hardware, cache, raw).
func hardwareType(t uint32) bool {
	return t == TypeHardware || t == TypeHWCache || t == TypeRaw
}

const sysfsPMUDir = "/sys/bus/event_source/devices"

// hasCPUPMU says the kernel registered a core PMU (cpu, or cpu_core/cpu_atom on hybrid
// CPUs, armv8_* on arm64) under dir.
func hasCPUPMU(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return true // unknown: do not blame the machine
	}
	for _, e := range ents {
		n := e.Name()
		if n == "cpu" || strings.HasPrefix(n, "cpu_") || strings.HasPrefix(n, "armv") {
			return true
		}
	}
	return false
}

// paranoid is /proc/sys/kernel/perf_event_paranoid, or 99 when unreadable.
func paranoid() int {
	b, err := os.ReadFile("/proc/sys/kernel/perf_event_paranoid")
	if err != nil {
		return 99
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 99
	}
	return v
}

// permissionAdvice says what to do about a refused open, from who asks (euid), what (the
// attr's exclude bits) and the system's perf_event_paranoid level, as the kernel decides:
// another user's process needs ptrace rights; above level 1 an unprivileged user may not
// count kernel activity; above level 2 (Debian's 3, 4) not even its own user space.
func permissionAdvice(attr Attr, pid, euid, level int) string {
	const lower = "as root: sysctl kernel.perf_event_paranoid=1"
	if pid > 0 && euid != 0 {
		var st unix.Stat_t
		if unix.Stat(fmt.Sprintf("/proc/%d", pid), &st) == nil && int(st.Uid) != euid {
			return fmt.Sprintf("process %d belongs to another user; run as root or as its owner", pid)
		}
	}
	switch {
	case level > 2:
		return fmt.Sprintf("perf_event_paranoid is %d, which forbids unprivileged users every perf event; run as root or lower it (%s)", level, lower)
	case level > 1 && attr.Flags&perfabi.FlagExcludeKern == 0:
		return fmt.Sprintf("perf_event_paranoid is %d, which forbids unprivileged users to count kernel activity; count user space only with the :u modifier (task-clock:u), run as root, or lower it (%s)", level, lower)
	}
	return fmt.Sprintf("perf_event_paranoid is %d; run as root or lower it (%s)", level, lower)
}

// FD is the event's file descriptor, for polling, BPF maps or handing to another process.
func (e *Event) FD() int { return e.fd }

// Close closes the fd. Closing twice returns an error rather than closing someone else's fd.
func (e *Event) Close() error {
	if e.fd < 0 {
		return errors.New("close perf event: already closed")
	}
	err := unix.Close(e.fd)
	e.fd = -1
	if err != nil {
		return fmt.Errorf("close perf event: %w", err)
	}
	return nil
}

func (e *Event) ioctl(req uint, arg int, what string) error {
	if err := unix.IoctlSetInt(e.fd, req, arg); err != nil {
		return fmt.Errorf("%s perf event %s: %w", what, e.Name, err)
	}
	return nil
}

// Enable starts counting (PERF_EVENT_IOC_ENABLE); group=true applies to the whole group of
// which e is the leader.
func (e *Event) Enable(group bool) error {
	return e.ioctl(unix.PERF_EVENT_IOC_ENABLE, groupFlag(group), "enable")
}

// Disable stops counting (PERF_EVENT_IOC_DISABLE); time_enabled stops too.
func (e *Event) Disable(group bool) error {
	return e.ioctl(unix.PERF_EVENT_IOC_DISABLE, groupFlag(group), "disable")
}

// Reset zeroes the counter value (not the times), PERF_EVENT_IOC_RESET.
func (e *Event) Reset(group bool) error {
	return e.ioctl(unix.PERF_EVENT_IOC_RESET, groupFlag(group), "reset")
}

// ID returns the kernel's unique id of the event (PERF_EVENT_IOC_ID), as read with FormatID.
func (e *Event) ID() (uint64, error) {
	var id uint64
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(e.fd), uintptr(unix.PERF_EVENT_IOC_ID), uintptr(unsafe.Pointer(&id)))
	if errno != 0 {
		return 0, fmt.Errorf("get id of perf event %s: %w", e.Name, errno)
	}
	return id, nil
}

func groupFlag(g bool) int {
	if g {
		return unix.PERF_IOC_FLAG_GROUP
	}
	return 0
}

// Value is one event's part of a read: its count and, per read_format, its id and lost count.
type Value = perfabi.ReadValue

// Reading is a decoded read(2) of an event: the times are the (group leader's) enabled
// and running ns, and Values has one entry, or one per group member with FormatGroup.
type Reading = perfabi.Read

// DecodeReading decodes the bytes of a read(2) with read_format rf into r, reusing
// r.Values. It fails, never panics, on short or inconsistent input.
func DecodeReading(b []byte, rf uint64, r *Reading) error {
	// A group size that could not fit even without the times is named as such.
	if rf&perfabi.FormatGroup != 0 && len(b) >= 8 {
		if n := perfabi.ByteOrder.Uint64(b); n > uint64(len(b))/8 {
			r.Enabled, r.Running, r.Values = 0, 0, r.Values[:0]
			return fmt.Errorf("decode perf read: %d members claimed in %d bytes", n, len(b))
		}
	}
	if _, err := perfabi.DecodeRead(b, rf, r); err != nil {
		return fmt.Errorf("decode perf read: %d bytes too short for read_format %#x", len(b), rf)
	}
	return nil
}

// ReadInto reads the event (a group leader reads its whole group with FormatGroup) into
// r using buf as scratch; buf must hold ReadSize(rf, members). It does not allocate when
// r.Values has capacity.
func (e *Event) ReadInto(buf []byte, r *Reading) error {
	n, err := unix.Read(e.fd, buf)
	// A group read of an inherited group fails with ECHILD while an exiting child task's
	// copy of the group is being torn down (the kernel refuses to sum groups whose
	// parent and child configurations differ, __perf_read_group_add). It is transient:
	// retry, backing off from 20 µs to 10 ms (about 0.5 s in all: a loaded machine can
	// take that long to finish a task's exit).
	for try, wait := 0, 20*time.Microsecond; err == unix.ECHILD && try < 60; try++ {
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
		n, err = unix.Read(e.fd, buf)
	}
	if err != nil {
		return fmt.Errorf("read perf event %s: %w", e.Name, err)
	}
	if n == 0 {
		return fmt.Errorf("read perf event %s: end of file (event in error state or target gone)", e.Name)
	}
	return DecodeReading(buf[:n], e.Attr.ReadFormat, r)
}

// ReadCount reads a single (non-group) event opened with both time formats as the raw
// triple.
func (e *Event) ReadCount() (Count, error) {
	rf := e.Attr.ReadFormat
	if rf&perfabi.FormatGroup != 0 {
		return Count{}, fmt.Errorf("read count of %s: event has perfabi.FormatGroup, use ReadInto", e.Name)
	}
	buf := make([]byte, perfabi.ReadSize(rf, 1))
	var r Reading
	r.Values = make([]Value, 0, 1)
	if err := e.ReadInto(buf, &r); err != nil {
		return Count{}, err
	}
	return Count{Value: r.Values[0].Value, Enabled: r.Enabled, Running: r.Running}, nil
}
