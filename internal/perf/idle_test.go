package perf

import (
	"errors"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSchedstatRunNs(t *testing.T) {
	text := []byte(`version 15
timestamp 4294892545
cpu0 0 0 0 0 0 0 1000902048 276108480 934
domain0 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
cpu12 1 2 3 4 5 6 77 8 9
`)
	for _, c := range []struct {
		cpu  int
		want uint64
	}{{0, 1000902048}, {12, 77}} {
		if got, err := SchedstatRunNs(text, c.cpu); err != nil || got != c.want {
			t.Errorf("CPU %d: %d, %v; want %d", c.cpu, got, err, c.want)
		}
	}
	for _, cpu := range []int{1, 3} { // no line; "cpu1" must not match "cpu12"
		if _, err := SchedstatRunNs(text, cpu); err == nil {
			t.Errorf("CPU %d: no error for a CPU without a line", cpu)
		}
	}
}

// A thread spinning on a CPU keeps it busy (whoever else runs there, it never idles):
// the meter, read on that CPU, says busy for nearly all the wall time, and never more.
func TestBusyMeterSpinning(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &old)
	cpu := 0
	for !old.IsSet(cpu) {
		cpu++
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	m, err := OpenBusyMeter(cpu)
	if errors.Is(err, ErrNoBusyTime) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	start := time.Now()
	for time.Since(start) < 100*time.Millisecond {
	}
	wall := uint64(time.Since(start))
	busy, err := m.Busy(wall)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: busy %v of %v spinning", m.Source(), time.Duration(busy), time.Duration(wall))
	if busy > wall || busy < wall*9/10 {
		t.Errorf("%s: busy %v of %v spent spinning on CPU %d", m.Source(), time.Duration(busy), time.Duration(wall), cpu)
	}
}

// The cost of one reading, taken once per slice per CPU.
func BenchmarkBusyMeter(b *testing.B) {
	m, err := OpenBusyMeter(0)
	if err != nil {
		b.Skip(err)
	}
	defer m.Close()
	for b.Loop() {
		if _, err := m.Busy(4e6); err != nil {
			b.Fatal(err)
		}
	}
}
