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
}

func runCallgrind(out string, bbs int, keepStdout bool, cmd []string) error {
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
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write trace: %w", err)
	}
	fmt.Fprintf(os.Stderr, "tracegen: %s: %d parts x %d events, %d bytes; per-event sums equal callgrind's totals\n", out, tr.Slices(), len(tr.Events), buf.Len())
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
		fmt.Fprintf(os.Stderr, "tracegen: %-12s rows violated: %d/%d\n", q[0]+" <= "+q[1], bad, tr.Slices())
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
