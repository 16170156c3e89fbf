package openmetrics

import (
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// SidecarHealth is the drop-in sidecar's own state (sidecar.Stats): what `bayesperf run
// --listen` serves.
type SidecarHealth struct {
	Clients, Events, Declined                uint64
	MirrorReads, PassthroughReads, SelfReads uint64
	SyncRefreshes, Publishes                 uint64
	Rings, RecordsMirrored, RecordsLost      uint64
	Stage                                    string // the correction stage's name
	StageOff                                 bool   // the stage failed: values since are the kernel's
}

// sidecarCounters are the counter families of SidecarHealth, in order.
var sidecarCounters = []struct {
	name, help string
	get        func(*SidecarHealth) uint64
}{
	{"bayesperf_sidecar_clients_total", "Tool processes that connected (one per process that opened a perf event).", func(h *SidecarHealth) uint64 { return h.Clients }},
	{"bayesperf_sidecar_events_total", "Perf events registered by the tools.", func(h *SidecarHealth) uint64 { return h.Events }},
	{"bayesperf_sidecar_declined_total", "Registrations refused (a bad fd or attr): those events go to the kernel.", func(h *SidecarHealth) uint64 { return h.Declined }},
	{"bayesperf_sidecar_mirror_reads_total", "read()s of perf events served from the sidecar's mirrors.", func(h *SidecarHealth) uint64 { return h.MirrorReads }},
	{"bayesperf_sidecar_passthrough_reads_total", "read()s of registered perf events that went to the kernel.", func(h *SidecarHealth) uint64 { return h.PassthroughReads }},
	{"bayesperf_sidecar_self_reads_total", "read()s of events counting the reader itself, served by the kernel.", func(h *SidecarHealth) uint64 { return h.SelfReads }},
	{"bayesperf_sidecar_sync_refreshes_total", "Mirror reads that first asked the sidecar for fresh values.", func(h *SidecarHealth) uint64 { return h.SyncRefreshes }},
	{"bayesperf_sidecar_publishes_total", "Mirror pages written.", func(h *SidecarHealth) uint64 { return h.Publishes }},
	{"bayesperf_sidecar_rings_total", "Sampling ring buffers mirrored.", func(h *SidecarHealth) uint64 { return h.Rings }},
	{"bayesperf_sidecar_records_mirrored_total", "Sampling records copied to mirror rings.", func(h *SidecarHealth) uint64 { return h.RecordsMirrored }},
	{"bayesperf_sidecar_records_lost_total", "Sampling records lost (the tool's mirror ring full).", func(h *SidecarHealth) uint64 { return h.RecordsLost }},
}

// Sidecar serves a sidecar's health, read from health at every scrape. The counters
// carry _created, the sidecar's start: a sidecar started again (a new `bayesperf run`)
// announces its reset with a later one.
type Sidecar struct {
	health  func() SidecarHealth
	created time.Time
	descs   []*prometheus.Desc
	off     *prometheus.Desc
	srv     *http.Server
}

// NewSidecar returns the collector of health, created now.
func NewSidecar(health func() SidecarHealth) *Sidecar {
	x := &Sidecar{health: health, created: time.Now()}
	for _, c := range sidecarCounters {
		x.descs = append(x.descs, prometheus.NewDesc(c.name, c.help, nil, nil))
	}
	x.off = prometheus.NewDesc("bayesperf_sidecar_stage_switched_off", "1 when the correction stage failed and was switched off (values since are the kernel's), else 0.", []string{"stage"}, nil)
	return x
}

// Describe sends the descriptions (prometheus.Collector).
func (x *Sidecar) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range x.descs {
		ch <- d
	}
	ch <- x.off
}

// Collect sends the health as of now (prometheus.Collector).
func (x *Sidecar) Collect(ch chan<- prometheus.Metric) {
	h := x.health()
	for i, c := range sidecarCounters {
		ch <- prometheus.MustNewConstMetricWithCreatedTimestamp(x.descs[i], prometheus.CounterValue, float64(c.get(&h)), x.created)
	}
	off := 0.0
	if h.StageOff {
		off = 1
	}
	ch <- prometheus.MustNewConstMetric(x.off, prometheus.GaugeValue, off, h.Stage)
}

// Handler is the /metrics handler, as Exporter's.
func (x *Sidecar) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(x)
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError,
		EnableOpenMetricsTextCreatedSamples: true, ProcessStartTime: x.created})
}

// Serve serves /metrics on ln until Close; errors other than its closing go to errf.
func (x *Sidecar) Serve(ln net.Listener, errf func(error)) {
	x.srv = serve(ln, x.Handler(), errf)
}

// Close stops the server started by Serve.
func (x *Sidecar) Close() error {
	if x.srv == nil {
		return nil
	}
	return x.srv.Close()
}
