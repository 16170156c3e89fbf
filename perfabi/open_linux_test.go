package perfabi

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpen opens a software event (they work without a PMU) through Open and reads it
// back with DecodeRead: the attr's layout and read_format reach the kernel as encoded.
func TestOpen(t *testing.T) {
	const software, pageFaults = 1, 2 // PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS
	rf := FormatTotalTimeEnabled | FormatTotalTimeRunning | FormatID
	a := Attr{Type: software, Size: AttrSize, Config: pageFaults, ReadFormat: rf, Flags: FlagExcludeKern | FlagExcludeHV}
	fd, err := Open(&a, 0, -1, -1)
	if err != nil {
		t.Fatalf("open page-faults of this thread (software events work everywhere): %v", err)
	}
	defer unix.Close(fd)
	if fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil || fl&unix.FD_CLOEXEC == 0 {
		t.Errorf("fd flags %#x, %v: want close-on-exec", fl, err)
	}
	_ = make([]byte, 1<<20) // fault in a few pages
	buf := make([]byte, 64)
	n, err := unix.Read(fd, buf)
	if err != nil {
		t.Fatal(err)
	}
	var r Read
	used, err := DecodeRead(buf[:n], rf, &r)
	if err != nil || used != n || n != ReadSize(rf, 1) {
		t.Fatalf("read %d bytes, decoded %d (%v); layout says %d", n, used, err, ReadSize(rf, 1))
	}
	if r.Enabled == 0 || r.Values[0].ID == 0 {
		t.Errorf("read %+v: want enabled time and an id", r)
	}

	// A refusal is the bare errno.
	bad := Attr{Type: software, Size: AttrSize, Config: 1 << 40}
	if fd, err := Open(&bad, 0, -1, -1); !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
		t.Errorf("open of an unknown software event: fd %d, %v; want ENOENT or EINVAL", fd, err)
	}
}
