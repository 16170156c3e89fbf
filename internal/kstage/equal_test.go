package kstage

import (
	"os"
	"testing"

	"github.com/bayesperf/bayesperf/internal/perf"
)

// TestEqualEventsServedAlike: page-faults opened twice is multiplexed like the others;
// a tool reads the two one after the other while the kernel counts on in between, and
// is served the same increase for both (the identity holds in what it reads).
func TestEqualEventsServedAlike(t *testing.T) {
	k := newKernel(t, int32(os.Getpid()), []uint64{perf.SWTaskClock, perf.SWPageFaults, perf.SWContextSwitches, perf.SWPageFaults, perf.SWCPUMigrations})
	k.rate = func(r, j int) float64 {
		switch j {
		case 0:
			return 1e6
		case 1, 3:
			return 40 + float64(r%5)
		}
		return 5
	}
	k.on = func(r, j int) bool {
		rot := (r / 4) % 5 // 5 events on 2 counters
		return j == (2*rot)%5 || j == (2*rot+1)%5
	}
	k.told = true
	for range 300 {
		k.step()
	}
	var prev [2]uint64
	for i := range 6 {
		k.step()
		// the kernel counts on between the tool's two reads
		_, a := k.read(1)
		for _, j := range []int{1, 3} {
			k.counted[j] += 7
			k.value[j] = uint64(k.counted[j])
			k.running[j] += 1e5
		}
		k.enabled += 1e5
		_, b := k.read(3)
		cur := [2]uint64{a[0].Members[0].Value, b[0].Members[0].Value}
		if i > 0 && cur[0]-prev[0] != cur[1]-prev[1] {
			t.Errorf("read %d: page-faults rose by %d, its repeat by %d", i, cur[0]-prev[0], cur[1]-prev[1])
		}
		prev = cur
	}
}
