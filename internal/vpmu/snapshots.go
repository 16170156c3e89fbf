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
	}
	p.init()
	iv := p.cfg.Interval
	if iv <= 0 {
		iv = MuxInterval()
	}
	c, err := p.cfg.Snapshots(perf.SnapshotRequest{Attrs: attrs, Pid: p.cfg.Pid, Slice: iv, Inherit: p.cfg.Inherit, EnableOnExec: p.cfg.EnableOnExec})
	if err != nil {
		return fmt.Errorf("open virtual PMU's collector: %w", err)
	}
	p.bc, p.paced = c, true
	return nil
}
