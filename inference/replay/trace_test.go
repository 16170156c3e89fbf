package replay

import (
	"bytes"
	"strings"
	"testing"
)

const small = `interval,wall_ns,a,b,c
0,10,1,2,3
1,12,4,5,6
2,9,7,8,9
`

func TestReadCSV(t *testing.T) {
	tr, err := ReadCSV(strings.NewReader(small), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tr.Events, ","); got != "a,b,c" {
		t.Fatalf("events %q, want a,b,c (interval and wall_ns are metadata)", got)
	}
	if tr.Slices() != 3 || tr.Counts[1][2] != 6 || tr.Durations[2] != 1 {
		t.Fatalf("bad trace: %+v", tr)
	}
	if got := tr.Truth(1, 3); got[0] != 11 || got[1] != 13 || got[2] != 15 {
		t.Fatalf("truth over [1,3) = %v, want [11 13 15]", got)
	}
	tr2, err := ReadCSV(strings.NewReader(small), ReadOptions{TimeColumn: "wall_ns"})
	if err != nil {
		t.Fatal(err)
	}
	if tr2.Durations[1] != 12 {
		t.Fatalf("duration %v, want 12 from the time column", tr2.Durations[1])
	}
	// A custom time column is metadata, not an event.
	tr3, err := ReadCSV(strings.NewReader("interval,dt,x\n0,5,1\n1,5,2\n"), ReadOptions{TimeColumn: "dt"})
	if err != nil {
		t.Fatal(err)
	}
	if len(tr3.Events) != 1 || tr3.Durations[0] != 5 {
		t.Fatalf("custom time column: %+v", tr3)
	}
}

func TestReadCSVRoundTrip(t *testing.T) {
	tr, err := ReadCSV(strings.NewReader(small), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tr.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	if buf.String() != small {
		t.Fatalf("round trip:\n%s\nwant\n%s", buf.String(), small)
	}
}

func TestReadCSVErrors(t *testing.T) {
	cases := map[string]string{
		"empty":         "",
		"no events":     "interval,wall_ns\n0,1\n",
		"no rows":       "interval,a\n",
		"short row":     "interval,a,b\n0,1\n",
		"negative":      "interval,a\n0,-1\n",
		"fraction":      "interval,a\n0,1.5\n",
		"text":          "interval,a\n0,x\n",
		"dup column":    "a,a\n1,2\n",
		"empty column":  "a,\n1,2\n",
		"interval gap":  "interval,a\n0,1\n2,1\n",
		"bad meta":      "interval,wall_ns,a\n0,NaN,1\n",
		"no time col":   "interval,a\n0,1\n",
		"zero duration": "interval,wall_ns,a\n0,0,1\n",
	}
	for name, in := range cases {
		opt := ReadOptions{}
		if name == "no time col" || name == "zero duration" {
			opt.TimeColumn = "wall_ns"
		}
		if _, err := ReadCSV(strings.NewReader(in), opt); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzReadCSV(f *testing.F) {
	f.Add(small, "")
	f.Add(small, "wall_ns")
	f.Add("interval,a\n0,1.0\n1,2e3\n", "")
	f.Add("a,\"b\nc\"\n1,2\n", "")
	f.Fuzz(func(t *testing.T, in, timeCol string) {
		tr, err := ReadCSV(strings.NewReader(in), ReadOptions{TimeColumn: timeCol})
		if err != nil {
			return
		}
		if len(tr.Events) == 0 || tr.Slices() == 0 || len(tr.Durations) != tr.Slices() {
			t.Fatalf("accepted a trace without events or rows: %+v", tr)
		}
		for i, row := range tr.Counts {
			if len(row) != len(tr.Events) || !(tr.Durations[i] > 0) {
				t.Fatalf("row %d malformed: %v, duration %v", i, row, tr.Durations[i])
			}
		}
		// What we write we read back identically.
		var buf bytes.Buffer
		if err := tr.WriteCSV(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ReadCSV(&buf, ReadOptions{TimeColumn: timeCol})
		if err != nil {
			// WriteCSV renumbers intervals from 0; names that csv quoting cannot
			// preserve (leading spaces are trimmed on read) may legitimately differ.
			if strings.TrimSpace(timeCol) != timeCol {
				return
			}
			t.Fatalf("re-read written trace: %v\n%s", err, buf.String())
		}
		for i := range tr.Counts {
			for j := range tr.Counts[i] {
				if back.Counts[i][j] != tr.Counts[i][j] {
					t.Fatalf("round trip changed count [%d][%d]", i, j)
				}
			}
		}
	})
}
