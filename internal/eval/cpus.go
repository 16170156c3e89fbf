package eval

import (
	"fmt"
	"os/exec"

	"github.com/bayesperf/bayesperf/internal/vpmu"
)

// RunLiveCPUs is RunLive system-wide: while cmd runs, every task on each CPU of cpus is
// counted by a virtual PMU of that CPU, with the kernel's round robin, bayesperf's own
// schedule (when available) and truth copies, and each CPU's observations come back
// apart, in the order of cpus: events of different CPUs share no slices, so each is
// modelled and scored on its own. The read(2) collector reads them (l.Collector must be
// "" or "read").
func RunLiveCPUs(l Live, cpus []int, cmd *exec.Cmd) ([]*LiveRun, error) {
	if l.Collector != "" && l.Collector != "read" {
		return nil, fmt.Errorf("run live on CPUs: collector %q follows tasks; CPUs are read with read", l.Collector)
	}
	names, views, err := liveViews(l)
	if err != nil {
		return nil, err
	}
	res, err := vpmu.RunCPUs(vpmu.Config{Events: l.Events, Views: views, Truth: true}, cpus, cmd, l.Interval)
	if err != nil {
		return nil, err
	}
	out := make([]*LiveRun, len(res))
	for i, r := range res {
		out[i] = liveRun(r, names, len(views) > 1)
	}
	return out, nil
}
