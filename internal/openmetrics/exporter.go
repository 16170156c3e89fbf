package openmetrics

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bayesperf/bayesperf/internal/statfmt"
)

// Statuses are the values of the status label of bayesperf_event_status, one series
// each (inference's Status names).
var Statuses = []string{"exact", "scaled", "inferred", "not-counted"}

// Health is the measurement loop's own state at a publication.
type Health struct {
	// Slices is the number of multiplexing slices observed so far.
	Slices int
	// NumericalFailures counts slices the model could not use (a numerical failure
	// it recovered from by skipping them).
	NumericalFailures int
}

// series is one event's published state.
type series struct {
	total                   float64 // corrected running total
	value, lo, hi, kernel   float64 // last interval
	status                  string
	count, enabled, running uint64 // raw running totals
	seen                    bool   // published at least once
}

// Exporter is the state /metrics shows. The zero value is not usable: use New.
type Exporter struct {
	pid   string
	descs map[string]*prometheus.Desc
	// events and targets name each series: the event, and the value of its target
	// label (the pid, or with NewCPUs the CPU).
	events, targets []string

	// created is when the totals started from 0: every counter's _created (the
	// OpenMetrics created timestamp). A restarted process has a later one, which is how
	// the scraper tells its reset from a decrease.
	created time.Time

	mu        sync.Mutex
	ev        []series
	intervals int
	lastEnd   time.Time
	health    Health
	// base is the health resumed from a state file (Resume), added to what Publish is
	// given; statePath the file every Publish writes, "" for none, and identity the
	// target's name in it.
	base                Health
	statePath, identity string

	srv *http.Server
}

// New returns an exporter for the events of process pid, in the given order (the -e
// list); nothing is published yet, so a scrape shows the health metrics only.
func New(pid int, events []string) *Exporter {
	x := &Exporter{pid: strconv.Itoa(pid), events: append([]string(nil), events...), created: time.Now()}
	for range events {
		x.targets = append(x.targets, x.pid)
	}
	x.describe("pid")
	return x
}

// NewCPUs returns an exporter for the events of a system-wide run, one series per event
// and CPU, labelled cpu instead of pid (perf stat -a -A): Publish takes the lines in
// the order event by event, every CPU of cpus for each. The health metrics are the
// run's, labelled pid="-1" (perf's pid of a system-wide event).
func NewCPUs(cpus []int, events []string) *Exporter {
	x := &Exporter{pid: "-1", created: time.Now()}
	for _, e := range events {
		for _, c := range cpus {
			x.events = append(x.events, e)
			x.targets = append(x.targets, strconv.Itoa(c))
		}
	}
	x.describe("cpu")
	return x
}

// describe makes the descriptions, the event families labelled event and target.
func (x *Exporter) describe(target string) {
	x.ev = make([]series, len(x.events))
	ev := []string{"event", target}
	d := func(name, help string, labels []string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, labels, nil)
	}
	x.descs = map[string]*prometheus.Desc{
		"total":    d("bayesperf_event_count_total", "Corrected running total of the event since the start, in the kernel's unit of the event (ns for task-clock and cpu-clock, a count otherwise): the sum of the interval values, each clamped at 0.", ev),
		"value":    d("bayesperf_event_interval_value", "Corrected value of the event over the last interval, in the kernel's unit of the event.", ev),
		"lo":       d("bayesperf_event_interval_lower", "Lower bound of the 95% interval of the last interval's value.", ev),
		"hi":       d("bayesperf_event_interval_upper", "Upper bound of the 95% interval of the last interval's value.", ev),
		"kernel":   d("bayesperf_event_kernel_scaled", "Kernel-style scaled value of the last interval: count * enabled / running.", ev),
		"status":   d("bayesperf_event_status", "How the last interval's value was obtained: 1 for the current status, 0 for the others.", []string{"event", target, "status"}),
		"count":    d("bayesperf_event_raw_count_total", "Raw count the kernel reported while the event was counting, summed since the start.", ev),
		"enabled":  d("bayesperf_event_enabled_seconds_total", "Time the event was enabled (time_enabled), summed since the start.", ev),
		"running":  d("bayesperf_event_running_seconds_total", "Time the event was counting (time_running), summed since the start.", ev),
		"slices":   d("bayesperf_slices_total", "Multiplexing slices observed.", []string{"pid"}),
		"numfail":  d("bayesperf_model_numerical_failures_total", "Slices the model skipped after a numerical failure.", []string{"pid"}),
		"ivs":      d("bayesperf_intervals_total", "Intervals published.", []string{"pid"}),
		"last_end": d("bayesperf_last_interval_end_timestamp_seconds", "Wall-clock end of the last published interval, in seconds since the Unix epoch.", []string{"pid"}),
	}
}

// Publish records one interval ending at end: cs holds the series in New's (or
// NewCPUs') order (extra or missing entries are ignored), h the health since this
// process started. After Resume it writes the state file first; when that fails it
// removes the file and writes no more (a later restart starts from 0 with a new
// _created, a reset announced as such, rather than from values older than the scrapes
// saw), publishes all the same and returns the error.
func (x *Exporter) Publish(end time.Time, cs []statfmt.Counter, h Health) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	for i := range x.ev {
		if i >= len(cs) {
			break
		}
		c, s := cs[i], &x.ev[i]
		s.seen = true
		s.status = c.Status
		s.count += c.Count
		s.enabled += c.Enabled
		s.running += c.Running
		if !c.Counted {
			s.value, s.lo, s.hi, s.kernel = 0, 0, 0, 0
			continue
		}
		s.value, s.lo, s.hi, s.kernel = c.Value, c.Lo, c.Hi, c.Linux
		if c.Value > 0 && !math.IsInf(c.Value, 1) {
			s.total += c.Value
		}
	}
	x.intervals++
	x.lastEnd = end
	x.health = Health{Slices: x.base.Slices + h.Slices, NumericalFailures: x.base.NumericalFailures + h.NumericalFailures}
	if x.statePath == "" {
		return nil
	}
	if err := x.save(); err != nil {
		path := x.statePath
		x.statePath = ""
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
		return fmt.Errorf("state file %s: %w; counters will start from 0 at the next start", path, err)
	}
	return nil
}

// Describe sends every metric's description (prometheus.Collector).
func (x *Exporter) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range x.descs {
		ch <- d
	}
}

// Collect sends the last published state (prometheus.Collector).
func (x *Exporter) Collect(ch chan<- prometheus.Metric) {
	x.mu.Lock()
	defer x.mu.Unlock()
	m := func(key string, t prometheus.ValueType, v float64, labels ...string) {
		if t == prometheus.CounterValue {
			ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(x.descs[key], t, v, x.created, labels...)
			return
		}
		ch <- prometheus.MustNewConstMetric(x.descs[key], t, v, labels...)
	}
	for i, s := range x.ev {
		if !s.seen {
			continue
		}
		e, tg := x.events[i], x.targets[i]
		m("total", prometheus.CounterValue, s.total, e, tg)
		m("value", prometheus.GaugeValue, s.value, e, tg)
		m("lo", prometheus.GaugeValue, s.lo, e, tg)
		m("hi", prometheus.GaugeValue, s.hi, e, tg)
		m("kernel", prometheus.GaugeValue, s.kernel, e, tg)
		for _, st := range Statuses {
			v := 0.0
			if st == s.status {
				v = 1
			}
			m("status", prometheus.GaugeValue, v, e, tg, st)
		}
		m("count", prometheus.CounterValue, float64(s.count), e, tg)
		m("enabled", prometheus.CounterValue, float64(s.enabled)/1e9, e, tg)
		m("running", prometheus.CounterValue, float64(s.running)/1e9, e, tg)
	}
	m("slices", prometheus.CounterValue, float64(x.health.Slices), x.pid)
	m("numfail", prometheus.CounterValue, float64(x.health.NumericalFailures), x.pid)
	m("ivs", prometheus.CounterValue, float64(x.intervals), x.pid)
	if !x.lastEnd.IsZero() {
		m("last_end", prometheus.GaugeValue, float64(x.lastEnd.UnixNano())/1e9, x.pid)
	}
}

// Created is when the exporter's totals started from 0, every counter's _created.
func (x *Exporter) Created() time.Time { return x.created }

// Handler is the /metrics handler: OpenMetrics when the scraper accepts it (Prometheus
// does), else Prometheus' text format. In OpenMetrics every counter has its _created
// sample, so that a restart (new totals from 0, a later _created) is announced as a
// reset; the Process-Start-Time-Unix header says the same for consumers that read it.
func (x *Exporter) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(x) // the descriptions are fixed and distinct: cannot fail
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError,
		EnableOpenMetricsTextCreatedSamples: true, ProcessStartTime: x.created})
}

// Serve serves /metrics on ln until Close. It returns at once; the server's error,
// other than its closing, is reported to errf.
func (x *Exporter) Serve(ln net.Listener, errf func(error)) {
	x.srv = serve(ln, x.Handler(), errf)
}

// serve serves h at /metrics on ln, in the background.
func serve(ln net.Listener, h http.Handler, errf func(error)) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && errf != nil {
			errf(err)
		}
	}()
	return srv
}

// Close stops the server started by Serve.
func (x *Exporter) Close() error {
	if x.srv == nil {
		return nil
	}
	return x.srv.Close()
}
