package vpmu

import (
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/testutil"
)

// TestKernelCountsExactly: a fixed amount of work counted by the kernel's own schedule,
// stepped while it runs: the slices add up to exactly the getppid and write calls it
// made, a group's members included, and software events, which the kernel never
// multiplexes, run all the time they are enabled.
func TestKernelCountsExactly(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	evs, err := perf.ParseEvents("syscalls:sys_enter_getppid,{task-clock,syscalls:sys_enter_write},page-faults")
	if err != nil {
		t.Fatal(err)
	}
	cmd := testutil.Reexec("BAYESPERF_VPMU_WORKLOAD=fixed-work:0")
	var k *Kernel
	if err := perf.StartAttached(cmd, func(pid int) error {
		k, err = OpenKernel(evs, pid, perf.AnyCPU)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	sum := make([]uint64, len(evs))
	add := func(st Step) {
		if st.Idle {
			return
		}
		for _, r := range st.Views[0].Readings {
			sum[r.Event] += r.Count
			if r.Running != r.Enabled {
				t.Errorf("slice %d: event %d ran %d of %d ns: software events are never multiplexed", st.Index, r.Event, r.Running, r.Enabled)
			}
		}
	}
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			running = false
		case <-time.After(2 * time.Millisecond):
			st, err := k.Step()
			if err != nil {
				t.Fatal(err)
			}
			add(st)
		}
	}
	st, err := k.Flush()
	if err != nil {
		t.Fatal(err)
	}
	add(st)
	if sum[0] != 5000 || sum[2] != 3000 {
		t.Errorf("getppid %d, write %d: want exactly 5000 and 3000", sum[0], sum[2])
	}
	if sum[1] == 0 || sum[3] < (4<<20)/4096 {
		t.Errorf("task-clock %d, page-faults %d: want some time and at least one fault per fresh page", sum[1], sum[3])
	}
}
