package perf

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/bayesperf/bayesperf/perfabi"
)

// BenchmarkReadCollector compares one snapshot of 24 software events read one read(2)
// each with the same events opened as one group and read with a single group read.
func BenchmarkReadCollector(b *testing.B) {
	for _, group := range []bool{false, true} {
		b.Run(fmt.Sprintf("group=%v", group), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			var evs []*Event
			var leader *Event
			for i := range 24 {
				a := Attr{Type: TypeSoftware, Size: perfabi.AttrSize, Config: []uint64{SWTaskClock, SWPageFaults, SWContextSwitches, SWPageFaultsMin}[i%4],
					ReadFormat: perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning}
				var l *Event
				if group && i > 0 {
					l = leader
				} else if group {
					a.ReadFormat |= perfabi.FormatGroup
				}
				e, err := Open(a, ThisPid, AnyCPU, l)
				if err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					leader = e
				}
				evs = append(evs, e)
			}
			c, err := NewReadCollector(evs, 0, true)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			dst := make([]Count, len(evs))
			b.ReportAllocs()
			for b.Loop() {
				if err := c.ReadAll(dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "µs/snapshot")
		})
	}
}
