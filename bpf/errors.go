package bpf

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

// ErrUnavailable matches (with errors.Is) every *UnavailableError.
var ErrUnavailable = errors.New("bpf collector unavailable")

// ErrClosed is returned by Next once Close has been called.
var ErrClosed = errors.New("bpf collector closed")

// UnavailableError says that BPF cannot be used on this machine or by this process, so the
// caller should collect with read(2) instead. Op names the step that was refused.
type UnavailableError struct {
	Op  string
	Err error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("bpf collector unavailable: %s: %v (needs root, or CAP_BPF and CAP_PERFMON, and a kernel with the BPF ring buffer (5.8+); use the read() collector)", e.Op, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// classify wraps err as an *UnavailableError when it means "no privilege" or "no kernel
// support", and as an ordinary failure of op otherwise.
func classify(op string, err error) error {
	if err == nil {
		return nil
	}
	if isUnavailable(err) {
		return &UnavailableError{Op: op, Err: err}
	}
	return fmt.Errorf("%s: %w", op, err)
}

func isUnavailable(err error) bool {
	for _, e := range []error{unix.EPERM, unix.EACCES, unix.ENOSYS, unix.EOPNOTSUPP, ebpf.ErrNotSupported} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
