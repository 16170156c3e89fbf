package openmetrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/internal/statfmt"
)

func pf(v float64, count uint64) []statfmt.Counter {
	return []statfmt.Counter{{Event: "page-faults", Counted: true, Value: v, Lo: v, Hi: v, Linux: v, Status: "inferred", Count: count, Enabled: 1e9, Running: 5e8}}
}

// A restart with the same state file continues every counter under the same _created;
// another target's file is not resumed: its counters start from 0, created anew.
func TestResume(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	a := New(42, []string{"page-faults"})
	if resumed, err := a.Resume(path, "start 100"); err != nil || resumed {
		t.Fatalf("first Resume: %v, %v; want a fresh start", resumed, err)
	}
	for _, v := range []float64{100, -3, 50} {
		if err := a.Publish(time.Now(), pf(v, 10), Health{Slices: 5, NumericalFailures: 1}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond)
	b := New(42, []string{"page-faults"})
	if resumed, err := b.Resume(path, "start 100"); err != nil || !resumed {
		t.Fatalf("restart: Resume %v, %v; want resumed", resumed, err)
	}
	if !b.Created().Equal(a.Created()) {
		t.Errorf("resumed _created %v, want the first start's %v", b.Created(), a.Created())
	}
	_, body := scrape(t, b)
	if strings.Contains(body, "bayesperf_event_count_total") {
		t.Errorf("event series before the restart's first interval:\n%s", body)
	}
	if err := b.Publish(time.Now(), pf(7, 4), Health{Slices: 2}); err != nil {
		t.Fatal(err)
	}
	_, body = scrape(t, b)
	for _, want := range []string{
		`bayesperf_event_count_total{event="page-faults",pid="42"} 157.0`,
		`bayesperf_event_raw_count_total{event="page-faults",pid="42"} 34.0`,
		`bayesperf_event_enabled_seconds_total{event="page-faults",pid="42"} 4.0`,
		`bayesperf_event_running_seconds_total{event="page-faults",pid="42"} 2.0`,
		`bayesperf_slices_total{pid="42"} 7.0`,
		`bayesperf_model_numerical_failures_total{pid="42"} 1.0`,
		`bayesperf_intervals_total{pid="42"} 4.0`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no line %q in\n%s", want, body)
		}
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []struct {
		pid      int
		events   []string
		identity string
	}{
		{42, []string{"page-faults"}, "start 200"},                 // the pid reused by another process
		{43, []string{"page-faults"}, "start 100"},                 // another pid
		{42, []string{"page-faults", "minor-faults"}, "start 100"}, // other events
	} {
		if err := os.WriteFile(path, saved, 0o644); err != nil { // b's, which c takes over
			t.Fatal(err)
		}
		c := New(other.pid, other.events)
		if resumed, err := c.Resume(path, other.identity); err != nil || resumed {
			t.Errorf("%+v: Resume %v, %v; want a fresh start", other, resumed, err)
		}
		if !c.Created().After(a.Created()) {
			t.Errorf("%+v: _created %v not after the first start's", other, c.Created())
		}
	}
}

// A state file that cannot be written is removed and no longer kept: a later restart
// starts from 0 with a new _created (an announced reset), never from older values.
func TestStateWriteFailure(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "state.json")
	os.Mkdir(filepath.Dir(path), 0o755)
	a := New(1, []string{"page-faults"})
	if _, err := a.Resume(path, "x"); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(time.Now(), pf(5, 1), Health{}); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(time.Now(), pf(5, 1), Health{}); err == nil {
		t.Fatal("Publish into a removed directory: no error")
	}
	os.Mkdir(filepath.Dir(path), 0o755)
	if err := a.Publish(time.Now(), pf(5, 1), Health{}); err != nil {
		t.Fatalf("Publish after giving the file up: %v", err)
	}
	if _, err := os.Stat(path); err == nil {
		t.Errorf("state file written after a failure: a restart would resume from it")
	}
	_, body := scrape(t, a)
	if !strings.Contains(body, `bayesperf_event_count_total{event="page-faults",pid="1"} 15.0`) {
		t.Errorf("publishing stopped with the state file:\n%s", body)
	}
}

// A malformed state file is an error, not a silent fresh start.
func TestStateMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	os.WriteFile(path, []byte("{not json"), 0o644)
	if _, err := New(1, []string{"page-faults"}).Resume(path, "x"); err == nil {
		t.Error("malformed state file: no error")
	}
}
