package eval

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/bayesperf/bayesperf/inference"
	"github.com/bayesperf/bayesperf/inference/replay"
)

// readsHeader is the header of `bayesperf run --truth` (internal/truth.Header; eval may
// not import the sidecar's packages, and the file is the contract).
const readsHeader = "time_ns,client,handle,event,raw_value,raw_enabled,raw_running,value,enabled,running,truth"

// ScoreReads scores a drop-in run from the rows `bayesperf run --truth FILE.csv` wrote:
// one per read of a hardware event by the tool, with the kernel's (value, enabled,
// running), what the tool was served, and the exact count. An event's k-th read ends
// its k-th interval. Both estimates of an interval are what perf stat -I prints for it:
// the delta of the value scaled by the deltas of enabled over running (0 when the event
// did not run: <not counted>), linux from the kernel's values and bayesperf-rr from
// the served ones (the correction of the kernel's round robin; the kernel's values
// again when the run did not correct). Events are the tool's (client, handle), named
// by the row; intervals past an event's last read count as 0 for it.
func ScoreReads(r io.Reader) (*Result, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("read the header: %w", err)
	}
	if strings.Join(head, ",") != readsHeader {
		return nil, fmt.Errorf("header %q: want %q (a file of bayesperf run --truth)", strings.Join(head, ","), readsHeader)
	}
	type prev struct{ raw, served [3]uint64 }
	type series struct {
		name                 string
		last                 prev
		truth, linux, served []float64
		lastTruth            uint64
	}
	byKey := map[string]*series{}
	var order []*series
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		if len(rec) != 11 {
			return nil, fmt.Errorf("line %d: %d fields, want 11", line, len(rec))
		}
		var n [7]uint64
		for i, f := range append(rec[4:10:10], rec[10]) {
			if n[i], err = strconv.ParseUint(f, 10, 64); err != nil {
				return nil, fmt.Errorf("line %d: field %d: %q is not a count", line, 5+i, f)
			}
		}
		key := rec[1] + "/" + rec[2]
		s := byKey[key]
		if s == nil {
			s = &series{name: rec[3]}
			byKey[key] = s
			order = append(order, s)
		}
		raw, served := [3]uint64{n[0], n[1], n[2]}, [3]uint64{n[3], n[4], n[5]}
		s.linux = append(s.linux, intervalScaled(s.last.raw, raw))
		s.served = append(s.served, intervalScaled(s.last.served, served))
		s.truth = append(s.truth, float64(n[6]-min(n[6], s.lastTruth)))
		s.last, s.lastTruth = prev{raw, served}, max(n[6], s.lastTruth)
	}
	if len(order) == 0 {
		return nil, errors.New("no reads: the run read no hardware event with a truth copy (bayesperf run -v says why)")
	}
	nIv := 0
	events := make([]string, len(order))
	for e, s := range order {
		nIv = max(nIv, len(s.truth))
		events[e] = s.name
	}
	truth := make([][]float64, nIv)
	answers := map[string][][]inference.Estimate{Linux: make([][]inference.Estimate, nIv), BayesPerfRR: make([][]inference.Estimate, nIv)}
	for k := range nIv {
		truth[k] = make([]float64, len(order))
		answers[Linux][k] = make([]inference.Estimate, len(order))
		answers[BayesPerfRR][k] = make([]inference.Estimate, len(order))
		for e, s := range order {
			if k < len(s.truth) {
				truth[k][e] = s.truth[k]
				answers[Linux][k][e] = inference.Estimate{Value: s.linux[k]}
				answers[BayesPerfRR][k][e] = inference.Estimate{Value: s.served[k]}
			}
		}
	}
	names := []string{Linux, BayesPerfRR}
	sum := replay.Summarize(truth, answers, names, Linux, events)
	res := &Result{Report: replay.Report{Events: len(order), Intervals: nIv,
		Estimators: sum.Estimators, ErrorReduction: sum.ErrorReduction}, Names: names, PerEvent: make([]PerEvent, len(order))}
	for e, s := range order {
		pe := PerEvent{Event: s.name, Metrics: map[string]Metric{}, Totals: map[string]inference.Estimate{},
			Series: map[string][]float64{Linux: s.linux, BayesPerfRR: s.served}, Truths: s.truth}
		for _, v := range s.truth {
			pe.Truth += v
		}
		pe.Defined = pe.Truth > 0
		pe.Totals[Linux] = inference.Estimate{Value: total(s.linux)}
		pe.Totals[BayesPerfRR] = inference.Estimate{Value: total(s.served)}
		for _, name := range names {
			m := sum.PerEvent[name][e]
			pm := Metric{WAPE: m.WAPE, TotalError: m.TotalError, RA: m.RA, DTW: m.DTW}
			if !m.Defined {
				nan := math.NaN()
				pm = Metric{WAPE: nan, TotalError: nan, RA: nan, DTW: nan}
			}
			pe.Metrics[name] = pm
		}
		res.PerEvent[e] = pe
	}
	return res, nil
}

// intervalScaled is perf stat -I's value for an interval: the value's delta times the
// deltas of enabled over running; 0 when the event did not run (<not counted>).
func intervalScaled(from, to [3]uint64) float64 {
	dv := float64(to[0] - min(to[0], from[0]))
	de := float64(to[1] - min(to[1], from[1]))
	dr := float64(to[2] - min(to[2], from[2]))
	if dr == 0 {
		return 0
	}
	return dv * de / dr
}

func total(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}
