package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bayesperf/bayesperf/inference/replay"
)

// callgrindArgs fix the simulated caches (32 KiB 8-way L1s, 8 MiB 16-way LL, 64-byte
// lines) rather than letting callgrind copy this VM's (which reports a 512 MiB LL).
var callgrindArgs = []string{
	"--tool=callgrind", "--cache-sim=yes", "--branch-sim=yes", "--collect-bus=yes",
	"--collect-systime=nsec", "--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64",
}

// cgInequalities are misses <= accesses pairs that hold exactly in every part: the LL is
// only looked up on an L1 miss.
var cgInequalities = [][2]string{
	{"I1mr", "Ir"}, {"ILmr", "I1mr"}, {"D1mr", "Dr"}, {"DLmr", "D1mr"},
	{"D1mw", "Dw"}, {"DLmw", "D1mw"}, {"Bcm", "Bc"}, {"Bim", "Bi"},
	// Between the derived totals (-derived): each follows from the pairs above.
	{"D1_misses", "D_accesses"}, {"LL_misses", "L1_misses"}, {"Br_misses", "Br_total"},
}

// cgDerived are the totals -derived appends as event columns, each the exact sum of
// callgrind events in every row. Their names avoid perf's generic events (branches,
// branch-misses, L1-dcache-load-misses, ...), whose built-in relations say something
// else: callgrind's Bc + Bi leaves out direct unconditional jumps and calls, which
// callgrind does not simulate.
var cgDerived = []struct {
	Name  string
	Terms []string
}{
	{"L1_misses", []string{"I1mr", "D1mr", "D1mw"}}, // first-level misses, instruction and data
	{"LL_misses", []string{"ILmr", "DLmr", "DLmw"}}, // last-level misses, instruction and data
	{"D1_misses", []string{"D1mr", "D1mw"}},         // first-level data misses
	{"D_accesses", []string{"Dr", "Dw"}},            // data reads and writes
	{"Br_total", []string{"Bc", "Bi"}},              // conditional and indirect branches
	{"Br_misses", []string{"Bcm", "Bim"}},           // their mispredictions
}

// addDerived appends the cgDerived columns to tr, computed row by row from its counts.
func addDerived(tr *replay.Trace) error {
	for _, d := range cgDerived {
		if tr.EventIndex(d.Name) >= 0 {
			return fmt.Errorf("derive %s: the trace already has that event", d.Name)
		}
		idx := make([]int, len(d.Terms))
		for k, n := range d.Terms {
			if idx[k] = tr.EventIndex(n); idx[k] < 0 {
				return fmt.Errorf("derive %s: callgrind collected no %s", d.Name, n)
			}
		}
		tr.Events = append(tr.Events, d.Name)
		for t, row := range tr.Counts {
			var s uint64
			for _, j := range idx {
				s += row[j]
			}
			tr.Counts[t] = append(row, s)
		}
	}
	return nil
}

// identitiesOff returns, for each cgDerived total present in tr, in how many rows it
// differs from the sum of its terms (0 for a correct trace).
func identitiesOff(tr *replay.Trace) map[string]int {
	off := map[string]int{}
	for _, d := range cgDerived {
		i := tr.EventIndex(d.Name)
		if i < 0 {
			continue
		}
		off[d.Name] = 0
		for _, row := range tr.Counts {
			var s uint64
			for _, n := range d.Terms {
				if j := tr.EventIndex(n); j >= 0 {
					s += row[j]
				}
			}
			if row[i] != s {
				off[d.Name]++
			}
		}
	}
	return off
}

// runCallgrind records cmd under callgrind, one row per bbs basic blocks, into out; with
// derived it appends the cgDerived totals as events.
func runCallgrind(out string, bbs int, derived, keepStdout bool, cmd []string) error {
	dir, err := os.MkdirTemp("", "tracegen-cg-*")
	if err != nil {
		return fmt.Errorf("create temp dir: %w", err)
	}
	defer os.RemoveAll(dir)
	args := append(append([]string{}, callgrindArgs...),
		"--dump-every-bb="+strconv.Itoa(bbs), "--callgrind-out-file="+filepath.Join(dir, "cg.out"), "--")
	c := exec.Command("valgrind", append(args, cmd...)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if keepStdout {
		c.Stdout = os.Stdout
	}
	if err := c.Run(); err != nil {
		os.Stderr.Write(stderr.Bytes())
		return fmt.Errorf("run valgrind: %w", err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "cg.out*"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("find callgrind dumps in %s: none", dir)
	}
	var parts []*replay.CallgrindPart
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return fmt.Errorf("open callgrind dump: %w", err)
		}
		p, err := replay.ParseCallgrindPart(fh)
		fh.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		parts = append(parts, p)
	}
	tr, err := replay.CallgrindTrace(parts)
	if err != nil {
		return err
	}
	if err := checkCollected(tr, stderr.String()); err != nil {
		return err
	}
	if derived {
		if err := addDerived(tr); err != nil {
			return err
		}
	}
	if err := writeTrace(out, tr, "parts", "; per-event sums equal callgrind's totals"); err != nil {
		return err
	}
	for _, q := range cgInequalities {
		a, b := tr.EventIndex(q[0]), tr.EventIndex(q[1])
		if a < 0 || b < 0 {
			continue
		}
		bad := 0
		for _, row := range tr.Counts {
			if row[a] > row[b] {
				bad++
			}
		}
		fmt.Fprintf(os.Stderr, "tracegen: %-23s rows violated: %d/%d\n", q[0]+" <= "+q[1], bad, tr.Slices())
	}
	off := identitiesOff(tr)
	for _, d := range cgDerived {
		if n, ok := off[d.Name]; ok {
			fmt.Fprintf(os.Stderr, "tracegen: %-30s rows off: %d/%d\n", d.Name+" = "+strings.Join(d.Terms, " + "), n, tr.Slices())
		}
	}
	return nil
}

// checkCollected compares the sum of the parts with valgrind's "Collected :" line.
func checkCollected(tr *replay.Trace, stderr string) error {
	var collected []string
	for _, l := range strings.Split(stderr, "\n") {
		if _, rest, ok := strings.Cut(l, "Collected :"); ok {
			collected = strings.Fields(rest)
		}
	}
	if len(collected) != len(tr.Events) {
		return fmt.Errorf("check callgrind totals: %d collected totals for %d events", len(collected), len(tr.Events))
	}
	whole := tr.Truth(0, tr.Slices())
	for i, s := range collected {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("check callgrind totals: bad total %q", s)
		}
		if v != whole[i] {
			return fmt.Errorf("check callgrind totals: %s sums to %.0f over the parts, callgrind collected %.0f", tr.Events[i], whole[i], v)
		}
	}
	return nil
}
