package statfmt

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// perCPUFromCSV turns perf stat -A -x, lines ("CPU3,value,unit,event,...") into
// Counters, skipping the first skip fields (an interval's timestamp).
func perCPUFromCSV(t *testing.T, lines []string, skip int) []Counter {
	t.Helper()
	var cs []Counter
	for _, l := range lines {
		f := strings.Split(l, ",")[skip:]
		cpu, err := strconv.Atoi(strings.TrimPrefix(f[0], "CPU"))
		if err != nil || !strings.HasPrefix(f[0], "CPU") {
			t.Fatalf("perf -A CSV line %q: no CPU field", l)
		}
		c := fromCSV(t, []string{strings.Join(f[1:], ",")}, ",", 0)[0]
		c.CPU = cpu
		cs = append(cs, c)
	}
	return cs
}

// TestPerCPUMatchesPerf: with PerCPU, lines carry their CPU as perf stat -a -A prints
// it, in every mode: the CSV field before the value, the std column, the JSON key, and
// the interval column header.
func TestPerCPUMatchesPerf(t *testing.T) {
	evs := "cpu-clock,page-faults"
	csvPerf := perfStat(t, "-a", "-A", "-x,", "-e", evs, "true")
	cs := perCPUFromCSV(t, csvPerf, 0)
	if len(cs) < 2 {
		t.Fatalf("perf -a -A printed %d lines: %q", len(cs), csvPerf)
	}
	p := &Printer{Mode: CSV, PerCPU: true}
	ours := render(t, p, func() error { return p.Totals(cs, time.Second, false) })
	for i := range csvPerf {
		pf, of := strings.Split(csvPerf[i], ","), strings.Split(ours[i], ",")
		if len(of) != len(pf)+4 || of[0] != pf[0] || of[1] != pf[1] || of[3] != pf[3] || of[4] != pf[4] {
			t.Errorf("CSV\nperf: %s\nours: %s", csvPerf[i], ours[i])
		}
	}

	std := perfStat(t, "-a", "-A", "-e", evs, "true")
	sp := &Printer{Mode: Std, PerCPU: true}
	so := render(t, sp, func() error { return sp.Totals(cs, time.Second, false) })
	for i, c := range cs {
		var pl string
		for _, l := range std {
			if strings.HasPrefix(l, "CPU"+strconv.Itoa(c.CPU)+" ") && strings.Contains(l, " "+c.Event+" ") {
				pl = l
			}
		}
		if pl == "" {
			t.Fatalf("perf's std output has no line for CPU%d %s: %q", c.CPU, c.Event, std)
		}
		if column(so[i], " "+c.Event+" ") != column(pl, " "+c.Event+" ") || !strings.HasPrefix(so[i], "CPU"+strconv.Itoa(c.CPU)+" ") {
			t.Errorf("std columns differ\nperf: %q\nours: %q", pl, so[i])
		}
	}

	jp := perfStat(t, "-a", "-A", "-j", "-e", evs, "true")
	jo := &Printer{Mode: JSON, PerCPU: true}
	js := render(t, jo, func() error { return jo.Totals(cs, time.Second, false) })
	for i := range js {
		pk, ok := jsonKey.FindAllStringSubmatch(jp[i], -1), jsonKey.FindAllStringSubmatch(js[i], -1)
		if len(pk) == 0 || len(ok) < len(pk) || pk[0][1] != "cpu" || ok[0][1] != "cpu" {
			t.Errorf("JSON keys\nperf: %s\nours: %s", jp[i], js[i])
		}
		if want := `"cpu" : "` + strconv.Itoa(cs[i].CPU) + `"`; !strings.Contains(js[i], want) {
			t.Errorf("JSON line lacks %s: %s", want, js[i])
		}
	}

	iv := perfStat(t, "-a", "-A", "-I", "100", "-e", "page-faults", "sleep", "0.15")
	ip := &Printer{Mode: Std, PerCPU: true, Interval: 100 * time.Millisecond}
	io := render(t, ip, func() error { return ip.IntervalBlock(100*time.Millisecond, cs[len(cs)/2:]) })
	if io[0] != strings.TrimRight(iv[0], " ") && io[0] != iv[0] {
		t.Errorf("interval column header %q, perf %q", io[0], iv[0])
	}
	ts := regexp.MustCompile(`^ +\d+\.\d{9} CPU\d+ +\d`)
	if !ts.MatchString(iv[1]) || !ts.MatchString(io[1]) || column(io[1], " page-faults ") != column(iv[1], " page-faults ") {
		t.Errorf("interval line\nperf: %q\nours: %q", iv[1], io[1])
	}
}
