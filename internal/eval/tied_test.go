package eval

import "testing"

// TestSleeperUntiedFromBound replays the tuning half's sys-make at the start of the
// cycle where a bound once tied a syscall made once to raw_syscalls:sys_enter: a burst
// of the other syscalls pushed the bound `raw_syscalls:sys_enter >=
// sum(syscalls:sys_enter_*)` up by its truncation, whose covariance then carried every
// later rise of raw_syscalls:sys_enter into the terms, and chmod (made once, never read
// by bayesperf's schedule in that run) came out at 4.0 spread over the run, 9.27x
// Linux's WAPE. A term asleep is no longer tied to a bound (model.applyInequalities);
// the test holds chmod to the kernel family's acceptance, 5x Linux's WAPE + 0.01.
func TestSleeperUntiedFromBound(t *testing.T) {
	const ev = "syscalls:sys_enter_chmod"
	pe := eventOf(t, scoreCorpusAt(t, "sys-make.csv", 5), ev)
	bp, lx := pe.Metrics[BayesPerf].WAPE, pe.Metrics[Linux].WAPE
	t.Logf("%s: truth %v, bayesperf %v (WAPE %.3f), linux WAPE %.3f", ev, pe.Truth, pe.Totals[BayesPerf].Value, bp, lx)
	if bp > 5*lx+0.01 {
		t.Errorf("%s: WAPE %.3f, above 5x linux's %.3f + 0.01", ev, bp, lx)
	}
}
