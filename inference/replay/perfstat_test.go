package replay

import (
	"strings"
	"testing"
)

const perfOut = `# started on Sun Nov 22 03:20:00 2026

     0.010222812,8.63,msec,task-clock,8624773,100.00,0.863,CPUs utilized
     0.010222812,122,,page-faults,8624773,100.00,14.145,K/sec
     0.015000000,<not counted>,msec,task-clock,0,100.00,,
     0.015000000,<not counted>,,page-faults,0,100.00,,
     0.020678152,10.08,msec,task-clock,10078428,100.00,1.008,CPUs utilized
     0.020678152,32,,page-faults,10078428,100.00,3.175,K/sec
     0.021000000,<not counted>,msec,task-clock,0,100.00,,
     0.021000000,<not counted>,,page-faults,0,100.00,,
`

func TestParsePerfStatInterval(t *testing.T) {
	tr, err := ParsePerfStatInterval(strings.NewReader(perfOut))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(tr.Events, ",") != "task-clock,page-faults" {
		t.Fatalf("events %v", tr.Events)
	}
	if tr.Slices() != 3 {
		t.Fatalf("%d rows, want 3 (an idle interval kept as zeros, the tail after exit dropped)", tr.Slices())
	}
	if tr.Counts[1][0] != 0 || tr.Counts[1][1] != 0 {
		t.Fatalf("idle interval %v, want zeros", tr.Counts[1])
	}
	if tr.Counts[0][0] != 8630000 || tr.Counts[2][1] != 32 {
		t.Fatalf("counts %v: task-clock msec must become ns", tr.Counts)
	}
	if w := tr.Meta["wall_ns"]; w[0] != 10222812 || w[2] != 20678152-15000000 {
		t.Fatalf("wall_ns %v, want interval lengths", w)
	}
}

func TestParsePerfStatIntervalErrors(t *testing.T) {
	cases := map[string]string{
		"partial not counted": "1.0,5,,a,1,100.00\n1.0,<not counted>,,b,0,100.00\n",
		"multiplexed":         "1.0,5,,a,1,50.00\n",
		"not supported":       "1.0,<not supported>,,a,0,100.00\n",
		"missing event":       "1.0,5,,a,1,100.00\n1.0,5,,b,1,100.00\n2.0,5,,a,1,100.00\n",
		"reordered":           "1.0,5,,a,1,100.00\n1.0,5,,b,1,100.00\n2.0,5,,b,1,100.00\n2.0,5,,a,1,100.00\n",
		"time goes back":      "1.0,5,,a,1,100.00\n0.5,5,,a,1,100.00\n",
		"few fields":          "1.0,5,,a\n",
		"empty":               "",
	}
	for name, in := range cases {
		if _, err := ParsePerfStatInterval(strings.NewReader(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParsePerfStatInterval(f *testing.F) {
	f.Add(perfOut)
	f.Add("1.0,5,,a,1,100.00\n2.0,6,,a,1,100.00\n")
	f.Fuzz(func(t *testing.T, in string) {
		tr, err := ParsePerfStatInterval(strings.NewReader(in))
		if err != nil {
			return
		}
		if len(tr.Events) == 0 || tr.Slices() == 0 || len(tr.Meta["wall_ns"]) != tr.Slices() {
			t.Fatalf("inconsistent trace: %+v", tr)
		}
		for _, row := range tr.Counts {
			if len(row) != len(tr.Events) {
				t.Fatalf("row of %d counts for %d events", len(row), len(tr.Events))
			}
		}
	})
}
