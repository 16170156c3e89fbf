package vpmu

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// BenchmarkStep measures one multiplexing step (read the ending slice, toggle to the
// next configuration) on the calling thread's events with the read(2) backend, the
// kernel view and truth copies: the cost the virtual PMU adds per 4 ms slice.
func BenchmarkStep(b *testing.B) {
	pool := strings.Split("task-clock,page-faults,minor-faults,major-faults,context-switches,cpu-migrations,"+
		"raw_syscalls:sys_enter,raw_syscalls:sys_exit,syscalls:sys_enter_read,syscalls:sys_enter_write,"+
		"syscalls:sys_enter_mmap,syscalls:sys_enter_munmap,syscalls:sys_enter_getpid,syscalls:sys_enter_getppid,"+
		"syscalls:sys_enter_openat,syscalls:sys_enter_close,sched:sched_switch,sched:sched_wakeup,"+
		"sched:sched_process_fork,sched:sched_process_exec,sched:sched_process_exit,syscalls:sys_enter_newfstat,"+
		"syscalls:sys_enter_lseek,syscalls:sys_enter_getuid", ",")
	for _, n := range []int{8, 24} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			evs, err := perf.ParseEvents(strings.Join(pool[:n], ","))
			if err != nil {
				b.Fatal(err)
			}
			ks, err := KernelSchedule(evs, 4, []int{0})
			if err != nil {
				b.Fatal(err)
			}
			p := startOnThread(b, evs, ks, true)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Step(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/slice")
		})
	}
}
