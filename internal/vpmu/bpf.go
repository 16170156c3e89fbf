package vpmu

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/bpf"
	"github.com/bayesperf/bayesperf/internal/perf"
)

// openBPF hands every copy to one BPF collector: the clock (a dummy event, always on),
// the truth copies (always on) and each view's copies (disabled until scheduled).
func (p *PMU) openBPF() error {
	if p.cfg.Pid <= 0 {
		return fmt.Errorf("open virtual PMU with the bpf collector: needs a task target (pid > 0), got %d", p.cfg.Pid)
	}
	var attrs []unix.PerfEventAttr
	add := func(a perf.Attr, disabled bool) {
		a.Flags &^= perf.FlagDisabled | perf.FlagEnableOnExec | perf.FlagPinned | perf.FlagExclusive | perf.FlagInherit
		if disabled {
			a.Flags |= perf.FlagDisabled
		}
		a.ReadFormat = perf.FormatTotalTimeEnabled | perf.FormatTotalTimeRunning
		attrs = append(attrs, toUnix(a))
	}
	add(perf.Attr{Type: perf.TypeSoftware, Size: perf.AttrSize, Config: perf.SWDummy}, false)
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
		p.prevView = append(p.prevView, make([]perf.Count, len(p.cfg.Events)))
		p.running = append(p.running, make([]uint64, len(p.cfg.Events)))
	}
	p.prevTruth = make([]uint64, len(p.cfg.Events))
	iv := p.cfg.Interval
	if iv <= 0 {
		iv = MuxInterval()
	}
	c, err := bpf.NewCollector(bpf.Options{Pid: p.cfg.Pid, Threads: true, Events: attrs, Slice: iv})
	if err != nil {
		return fmt.Errorf("open virtual PMU with the bpf collector: %w", err)
	}
	p.bc = c
	return nil
}

// toUnix converts an attr to x/sys's type through the kernel byte layout both mirror.
func toUnix(a perf.Attr) unix.PerfEventAttr {
	var u unix.PerfEventAttr
	b := a.Encode()
	dst := unsafe.Slice((*byte)(unsafe.Pointer(&u)), unsafe.Sizeof(u))
	copy(dst, b)
	u.Size = uint32(min(len(b), len(dst)))
	return u
}
