package pmuevents

import (
	"testing"
	"testing/fstest"
)

// FuzzLoad feeds arbitrary bytes to the loader as a vendor events file and derives
// relations from whatever it accepted: a malformed or hostile pmu-events directory (a
// user can point bayesperf at any) must give errors or problems, never a panic.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`[{"EventCode": "0x24", "UMask": "0x21", "EventName": "A.X", "Counter": "0,1"},
		{"EventCode": "0x24", "UMask": "0x22", "EventName": "A.Y"},
		{"EventCode": "0x24", "UMask": "0x23", "EventName": "A.ALL", "Counter": "Fixed counter 1"},
		{"MetricName": "m", "MetricExpr": "A.X / A.ALL if #SMT_on else m2", "MetricGroup": "TopdownL1;p_group", "ScaleUnit": "100%"},
		{"MetricName": "m2", "MetricExpr": "d_ratio(A.Y, 0) + m", "MetricGroup": "TopdownL1;p_group"},
		{"MetricName": "p", "MetricExpr": "max(A.X, 1)"}]`))
	f.Add([]byte(`{"not": "a list"}`))
	f.Add([]byte(`[{"EventCode": "zz", "EventName": "bad", "UMask": 7, "Counter": "a,b"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fsys := fstest.MapFS{"x86/fuzz/events.json": &fstest.MapFile{Data: data}}
		tb, err := LoadFS(fsys, "x86/fuzz", "")
		if err != nil {
			return
		}
		tb.Relations(Env{Literals: map[string]float64{"#smt_on": 1}})
		for _, e := range tb.Events {
			tb.Constraint(e.Name)
		}
	})
}
