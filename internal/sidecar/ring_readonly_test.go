package sidecar

import (
	"os"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// TestServerDeclinesReadOnlyForwardRing: a client mapping a forward sampling ring
// read-only (overwrite mode) gets -EOPNOTSUPP, so its shim maps the kernel's ring; the
// sidecar used to mirror it and crash storing data_tail into its read-only mapping of
// the kernel's ring at the first record. The server keeps serving the client.
func TestServerDeclinesReadOnlyForwardRing(t *testing.T) {
	_, path := startServer(t, Config{Period: time.Millisecond})
	c := dial(t, path)
	if _, fd := c.call(shim.MsgHello, shim.Hello{Pid: int32(os.Getpid())}, -1); fd >= 0 {
		unix.Close(fd)
	}
	runtime.LockOSThread() // the event samples this thread's page faults
	defer runtime.UnlockOSThread()
	reg := registerMsg(1, 0)
	reg.Attr[16] = 1                          // sample_period 1
	reg.Attr[24] = byte(unix.PERF_SAMPLE_TID) // sample_type
	attr := perfabi.Attr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_PAGE_FAULTS, SamplePeriod: 1,
		SampleType: unix.PERF_SAMPLE_TID, Size: 64}
	sfd, err := perfabi.Open(&attr, 0, -1, -1)
	if err != nil {
		t.Fatalf("perf_event_open sampling page-faults: %v", err)
	}
	defer unix.Close(sfd)
	rep, mfd := c.call(shim.MsgRegister, reg, sfd)
	if r := rep.(shim.RegisterReply); r.Status != 0 {
		t.Fatalf("register: %+v", r)
	}
	unix.Close(mfd)
	rep, rfd := c.call(shim.MsgMap, shim.Map{Handle: 1, Prot: unix.PROT_READ, Length: 3 * uint64(os.Getpagesize())}, -1)
	if rfd >= 0 {
		unix.Close(rfd)
	}
	if st := rep.(shim.Status); st.Status != -int32(unix.EOPNOTSUPP) || rfd >= 0 {
		t.Errorf("map a forward ring read-only: %+v fd %d, want -EOPNOTSUPP and no fd", st, rfd)
	}
	touchPages(64)
	if rep, _ := c.call(shim.MsgFlush, shim.Handle{}, -1); rep.(shim.Status).Status != 0 {
		t.Errorf("flush: %+v", rep)
	}
	// The writable mapping (the normal case) is still mirrored.
	rep, rfd = c.call(shim.MsgMap, shim.Map{Handle: 1, Prot: unix.PROT_READ | unix.PROT_WRITE, Length: 3 * uint64(os.Getpagesize())}, -1)
	if st := rep.(shim.Status); st.Status != 0 || rfd < 0 {
		t.Errorf("map a forward ring read-write: %+v fd %d, want a mirror", st, rfd)
	}
	if rfd >= 0 {
		unix.Close(rfd)
	}
	touchPages(64)
	if rep, _ := c.call(shim.MsgFlush, shim.Handle{}, -1); rep.(shim.Status).Status != 0 {
		t.Errorf("flush: %+v", rep)
	}
}
