package replay

import (
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/inference"
)

func TestSimulateKernel(t *testing.T) {
	in := "interval,wall_ns,a,b,c,d,e\n"
	for i := range 10 {
		in += strings.Join([]string{itoa(i), "10", itoa(10 + i), itoa(20 + i), itoa(30 + i), itoa(40 + i), itoa(50 + i)}, ",") + "\n"
	}
	tr, err := ReadCSV(strings.NewReader(in), ReadOptions{TimeColumn: "wall_ns"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := KernelSchedule(tr, 2, []string{"c"})
	if err != nil {
		t.Fatal(err)
	}
	slices := Simulate(tr, s)
	if len(slices) != 10 {
		t.Fatalf("%d slices", len(slices))
	}
	// Groups a,b,c(fixed),d,e rotated by t: the first 2 non-fixed in rotated order.
	wantOn := [][]string{{"a", "b"}, {"b", "d"}, {"d", "e"}, {"d", "e"}, {"e", "a"}}
	for tt, sl := range slices {
		if sl.Index != tt || sl.Duration != 10 || len(sl.Readings) != 5 {
			t.Fatalf("slice %d malformed: %+v", tt, sl)
		}
		on := map[string]bool{"c": true}
		for _, n := range wantOn[tt%5] {
			on[n] = true
		}
		for _, r := range sl.Readings {
			name := tr.Events[r.Event]
			if r.Enabled != 10 {
				t.Errorf("slice %d %s: enabled %d, want the slice duration", tt, name, r.Enabled)
			}
			if on[name] {
				if r.Running != 10 || r.Count != tr.Counts[tt][r.Event] {
					t.Errorf("slice %d %s: counted reading %+v, want exact count %d", tt, name, r, tr.Counts[tt][r.Event])
				}
			} else if r.Running != 0 || r.Count != 0 {
				t.Errorf("slice %d %s: uncounted reading %+v", tt, name, r)
			}
		}
	}
	if _, err := KernelSchedule(tr, 2, []string{"nope"}); err == nil {
		t.Error("unknown fixed event accepted")
	}
	_ = inference.StatusExact
}

func TestIntervals(t *testing.T) {
	iv := Intervals(53, 25)
	if len(iv) != 3 || iv[2] != [2]int{50, 53} || iv[1] != [2]int{25, 50} {
		t.Fatalf("intervals %v", iv)
	}
	if len(Intervals(0, 25)) != 0 || len(Intervals(3, 0)) != 3 {
		t.Fatal("edge cases")
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}
