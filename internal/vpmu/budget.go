package vpmu

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// Budget measures how many counters a schedule of events (hardware events, as a client
// opened them) can use at once: for each distinct event, how many pinned copies of it
// the PMU counts together, after the pinned truth copies of all of them when truth is
// set (see truthParts), the smallest of these. Any configuration of that many of the
// events then fits, whatever counters each may use (a cycles event may take the cycle
// counter, an instructions event may not) and whatever other users hold (the NMI
// watchdog's counter). The copies count the calling thread, which runs a little with
// them enabled: the kernel puts a pinned event that finds no counter in error state, so
// it never runs. An error says the PMU could not be measured at all (no hardware PMU,
// or perf_event_open refused).
func Budget(events []perf.Attr, truth bool) (int, error) {
	if len(events) == 0 {
		return 0, errors.New("measure counters: no events")
	}
	var parts []perf.Attr
	distinct := map[perf.Attr]bool{}
	var order []perf.Attr
	descs := make([]perf.EventDesc, len(events))
	for i, a := range events {
		descs[i] = perf.EventDesc{Attr: a}
		if k := perf.CountKey(a); !distinct[k] {
			distinct[k] = true
			order = append(order, k)
		}
	}
	if truth {
		seen := map[perf.Attr]bool{}
		for _, ps := range truthParts(descs) {
			for _, p := range ps {
				if k := perf.CountKey(p); !seen[k] {
					seen[k] = true
					parts = append(parts, k)
				}
			}
		}
	}
	// The copies count the calling thread: keep the goroutine on it until they are read.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	budget := len(events)
	for _, e := range order {
		attrs := append([]perf.Attr(nil), parts...)
		for range events {
			attrs = append(attrs, e)
		}
		n, err := fit(attrs, len(parts))
		if err != nil {
			return 0, err
		}
		budget = min(budget, n)
	}
	return budget, nil
}

// fit opens attrs pinned and enabled on the calling thread, in order, runs a little,
// and returns how many of those after the first skip ran all the time (0 if any of the
// first skip did not).
func fit(attrs []perf.Attr, skip int) (int, error) {
	var evs []*perf.Event
	defer func() {
		for _, e := range evs {
			e.Close()
		}
	}()
	for _, a := range attrs {
		a.Flags |= perfabi.FlagPinned
		a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
		e, err := perf.Open(a, perf.ThisPid, perf.AnyCPU, nil)
		if err != nil {
			return 0, fmt.Errorf("measure counters: open a pinned %d:%#x: %w", a.Type, a.Config, err)
		}
		evs = append(evs, e)
	}
	// Run with them enabled, so that each has an enabled time to compare its running
	// time with.
	for t0 := time.Now(); time.Since(t0) < 100*time.Microsecond; {
	}
	n := 0
	for i, e := range evs {
		c, err := e.ReadCount()
		ok := err == nil && c.Enabled > 0 && c.Running == c.Enabled
		switch {
		case i < skip && !ok:
			return 0, nil
		case i >= skip && ok:
			n++
		}
	}
	return n, nil
}
