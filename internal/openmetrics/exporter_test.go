package openmetrics

import (
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/statfmt"
)

// scrape gets h's exposition as Prometheus 2.x asks for it: the content type and the body.
func scrape(t *testing.T, h interface{ Handler() http.Handler }) (string, string) {
	t.Helper()
	srv := httptest.NewServer(h.Handler())
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	// What Prometheus 2.x sends.
	req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Get("Content-Type"), string(b)
}

// The running total adds each interval's value clamped at 0, so it never decreases;
// the gauges show the last interval as given; the status is a state set.
func TestPublishAndScrape(t *testing.T) {
	x := New(42, []string{"page-faults", "minor-faults"})
	end := time.Unix(1700000000, 500_000_000)
	x.Publish(end, []statfmt.Counter{
		{Event: "page-faults", Counted: true, Value: 100, Lo: 90, Hi: 110, Linux: 120, Status: "inferred", Count: 50, Enabled: 2e9, Running: 1e9},
		{Event: "minor-faults", Counted: true, Value: 10, Lo: 10, Hi: 10, Linux: 10, Status: "exact", Count: 10, Enabled: 2e9, Running: 2e9},
	}, Health{Slices: 7})
	x.Publish(end.Add(time.Second), []statfmt.Counter{
		{Event: "page-faults", Counted: true, Value: -5, Lo: -20, Hi: 10, Linux: 0, Status: "inferred"},
		{Event: "minor-faults", Counted: true, Value: math.NaN(), Status: "inferred"},
	}, Health{Slices: 9, NumericalFailures: 1})
	ct, body := scrape(t, x)
	if !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Errorf("content type %q, want OpenMetrics", ct)
	}
	if !strings.HasSuffix(strings.TrimSpace(body), "# EOF") {
		t.Errorf("OpenMetrics exposition must end with # EOF:\n%s", body)
	}
	for _, want := range []string{
		"# TYPE bayesperf_event_count counter",
		`bayesperf_event_count_total{event="page-faults",pid="42"} 100.0`,
		`bayesperf_event_count_total{event="minor-faults",pid="42"} 10.0`,
		`bayesperf_event_interval_value{event="page-faults",pid="42"} -5.0`,
		`bayesperf_event_interval_lower{event="page-faults",pid="42"} -20.0`,
		`bayesperf_event_interval_upper{event="page-faults",pid="42"} 10.0`,
		`bayesperf_event_kernel_scaled{event="page-faults",pid="42"} 0.0`,
		`bayesperf_event_status{event="page-faults",pid="42",status="inferred"} 1.0`,
		`bayesperf_event_status{event="page-faults",pid="42",status="exact"} 0.0`,
		`bayesperf_event_raw_count_total{event="page-faults",pid="42"} 50.0`,
		`bayesperf_event_enabled_seconds_total{event="page-faults",pid="42"} 2.0`,
		`bayesperf_event_running_seconds_total{event="page-faults",pid="42"} 1.0`,
		`bayesperf_slices_total{pid="42"} 9.0`,
		`bayesperf_model_numerical_failures_total{pid="42"} 1.0`,
		`bayesperf_intervals_total{pid="42"} 2.0`,
		`bayesperf_last_interval_end_timestamp_seconds{pid="42"} 1.7000000015e+09`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no line %q in\n%s", want, body)
		}
	}
}

// Before the first interval only the health metrics exist: no series with made-up
// zeros.
func TestNothingPublished(t *testing.T) {
	_, body := scrape(t, New(1, []string{"page-faults"}))
	if strings.Contains(body, "bayesperf_event_") {
		t.Errorf("event series before any interval:\n%s", body)
	}
	if !strings.Contains(body, `bayesperf_intervals_total{pid="1"} 0`) {
		t.Errorf("no intervals_total:\n%s", body)
	}
}

// NewCPUs: one series per event and CPU, labelled cpu, fed in -A's order (event by
// event, every CPU); the health metrics are the run's, pid="-1".
func TestPerCPUSeries(t *testing.T) {
	x := NewCPUs([]int{0, 3}, []string{"page-faults", "context-switches"})
	c := func(ev string, v float64) statfmt.Counter {
		return statfmt.Counter{Event: ev, Counted: true, Value: v, Lo: v, Hi: v, Linux: v, Status: "exact"}
	}
	x.Publish(time.Unix(1700000000, 0), []statfmt.Counter{c("page-faults", 5), c("page-faults", 7), c("context-switches", 11), c("context-switches", 13)}, Health{Slices: 4})
	x.Publish(time.Unix(1700000001, 0), []statfmt.Counter{c("page-faults", 1), c("page-faults", 2), c("context-switches", 3), c("context-switches", 4)}, Health{Slices: 8})
	_, body := scrape(t, x)
	for _, want := range []string{
		`bayesperf_event_count_total{cpu="0",event="page-faults"} 6.0`,
		`bayesperf_event_count_total{cpu="3",event="page-faults"} 9.0`,
		`bayesperf_event_count_total{cpu="0",event="context-switches"} 14.0`,
		`bayesperf_event_count_total{cpu="3",event="context-switches"} 17.0`,
		`bayesperf_event_status{cpu="3",event="context-switches",status="exact"} 1.0`,
		`bayesperf_slices_total{pid="-1"} 8.0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no line %q in\n%s", want, body)
		}
	}
	if strings.Contains(body, `event="page-faults",pid=`) {
		t.Errorf("per-CPU series labelled pid:\n%s", body)
	}
}

// Every counter carries its _created sample, the exporter's start: a restarted
// exporter (totals from 0 again) announces its reset with a later one, and the gauges
// have none.
func TestCreatedAnnouncesReset(t *testing.T) {
	c := []statfmt.Counter{{Event: "page-faults", Counted: true, Value: 100, Lo: 90, Hi: 110, Linux: 120, Status: "inferred", Count: 50, Enabled: 2e9, Running: 1e9}}
	first := New(42, []string{"page-faults"})
	first.Publish(time.Now(), c, Health{Slices: 3})
	time.Sleep(10 * time.Millisecond)
	second := New(42, []string{"page-faults"})
	if !second.Created().After(first.Created()) {
		t.Fatalf("restarted exporter created at %v, not after the first's %v", second.Created(), first.Created())
	}
	_, body := scrape(t, first)
	created := float64(first.Created().UnixNano()) / 1e9
	for _, name := range []string{
		`bayesperf_event_count_created{event="page-faults",pid="42"}`,
		`bayesperf_event_raw_count_created{event="page-faults",pid="42"}`,
		`bayesperf_event_enabled_seconds_created{event="page-faults",pid="42"}`,
		`bayesperf_event_running_seconds_created{event="page-faults",pid="42"}`,
		`bayesperf_slices_created{pid="42"}`,
		`bayesperf_model_numerical_failures_created{pid="42"}`,
		`bayesperf_intervals_created{pid="42"}`,
	} {
		i := strings.Index(body, name+" ")
		if i < 0 {
			t.Errorf("no %s in\n%s", name, body)
			continue
		}
		line := body[i : i+strings.IndexByte(body[i:], '\n')]
		v, err := strconv.ParseFloat(line[len(name)+1:], 64)
		if err != nil || math.Abs(v-created) > 1e-6 {
			t.Errorf("%q: want the exporter's start %.6f", line, created)
		}
	}
	for _, gauge := range []string{"bayesperf_event_interval_value_created", "bayesperf_event_status_created", "bayesperf_last_interval_end_timestamp_seconds_created"} {
		if strings.Contains(body, gauge) {
			t.Errorf("gauge with a _created sample %s:\n%s", gauge, body)
		}
	}
}

// The sidecar's health: its counters as given, with _created; the stage's state as a
// gauge labelled with its name.
func TestSidecarHealth(t *testing.T) {
	h := SidecarHealth{Clients: 2, Events: 9, MirrorReads: 1000, RecordsMirrored: 50, RecordsLost: 3, Stage: "vpmu", StageOff: true}
	_, body := scrape(t, NewSidecar(func() SidecarHealth { return h }))
	for _, want := range []string{
		"bayesperf_sidecar_clients_total 2.0",
		"bayesperf_sidecar_events_total 9.0",
		"bayesperf_sidecar_mirror_reads_total 1000.0",
		"bayesperf_sidecar_records_mirrored_total 50.0",
		"bayesperf_sidecar_records_lost_total 3.0",
		`bayesperf_sidecar_stage_switched_off{stage="vpmu"} 1.0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no line %q in\n%s", want, body)
		}
	}
	if !strings.Contains(body, "bayesperf_sidecar_records_lost_created ") {
		t.Errorf("no _created for the sidecar's counters:\n%s", body)
	}
}
