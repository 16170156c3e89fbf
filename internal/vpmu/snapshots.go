package vpmu

import (
	"fmt"

	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/perfabi"
)

// openSnapshots hands every copy to one snapshotting collector: the clock (a dummy event,
// always on), the truth copies (always on) and each view's copies (disabled until
// scheduled).
func (p *PMU) openSnapshots() error {
	if p.cfg.Pid <= 0 {
		return fmt.Errorf("open virtual PMU with a snapshotting collector: needs a task target (pid > 0), got %d", p.cfg.Pid)
	}
	var attrs []perf.Attr
	add := func(a perf.Attr, disabled bool) {
		a.Flags &^= perfabi.FlagDisabled | perfabi.FlagEnableOnExec | perfabi.FlagPinned | perfabi.FlagExclusive | perfabi.FlagInherit
		if disabled {
			a.Flags |= perfabi.FlagDisabled
		}
		a.ReadFormat = perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning
		attrs = append(attrs, a)
	}
	add(perf.Attr{Type: perf.TypeSoftware, Size: perfabi.AttrSize, Config: perf.SWDummy}, false)
	if p.cfg.Truth {
		for _, d := range p.cfg.Events {
			add(d.Attr, false)
		}
	}
	for range p.cfg.Views {
		for _, d := range p.cfg.Events {
			add(d.Attr, true)
		}
		p.views = append(p.views, make([]*perf.Event, len(p.cfg.Events)))
		p.on = append(p.on, make([]bool, len(p.cfg.Events)))
		p.wasOn = append(p.wasOn, make([]bool, len(p.cfg.Events)))
		p.next = append(p.next, make([]bool, len(p.cfg.Events)))
		p.viewVals = append(p.viewVals, make([]perf.Count, len(p.cfg.Events)))
		p.prevView = append(p.prevView, make([]perf.Count, len(p.cfg.Events)))
		p.running = append(p.running, make([]uint64, len(p.cfg.Events)))
	}
	p.prevTruth = make([]uint64, len(p.cfg.Events))
	iv := p.cfg.Interval
	if iv <= 0 {
		iv = MuxInterval()
	}
	c, err := p.cfg.Snapshots(perf.SnapshotRequest{Attrs: attrs, Pid: p.cfg.Pid, Slice: iv, Inherit: p.cfg.Inherit, EnableOnExec: p.cfg.EnableOnExec})
	if err != nil {
		return fmt.Errorf("open virtual PMU's collector: %w", err)
	}
	p.bc = c
	return nil
}
