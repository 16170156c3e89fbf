package test

// A real Prometheus (Debian's prometheus package, installed by make deps) scrapes
// `bayesperf attach --listen` of a running workload; its HTTP API must show the
// documented series and labels, with the values of bayesperf's own --json stream of the
// same run.

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// promSample is one (time, value) of a range vector of Prometheus' API.
type promSample struct {
	t float64
	v float64
}

// promQuery runs an instant query on Prometheus at base and returns, per series, its
// labels and samples (a range selector gives every raw sample).
func promQuery(t *testing.T, base, q string) []struct {
	labels  map[string]string
	samples []promSample
} {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?" + url.Values{"query": {q}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string
		Error  string
		Data   struct {
			ResultType string
			Result     []struct {
				Metric map[string]string
				Values [][2]any
				Value  [2]any
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %q: %v %s", q, err, r.Error)
	}
	var out []struct {
		labels  map[string]string
		samples []promSample
	}
	for _, s := range r.Data.Result {
		vals := s.Values
		if r.Data.ResultType == "vector" {
			vals = [][2]any{s.Value}
		}
		var ss []promSample
		for _, v := range vals {
			f, err := strconv.ParseFloat(v[1].(string), 64)
			if err != nil {
				t.Fatalf("query %q: value %v", q, v[1])
			}
			ss = append(ss, promSample{v[0].(float64), f})
		}
		out = append(out, struct {
			labels  map[string]string
			samples []promSample
		}{s.Metric, ss})
	}
	return out
}

// freePort is a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestPrometheusScrapesAttach(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("needs Prometheus' server: Debian's prometheus package, which make deps installs")
	}
	wl := startWorkload(t, "mixed", 40*time.Second)
	pid := strconv.Itoa(wl.Process.Pid)
	events := []string{"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches"}
	at := exec.Command(statBin(t), "attach", "-p", pid, "--json", "-I", "500", "--duration", "8",
		"--virtual-counters", "2", "-e", strings.Join(events, ","), "--listen", "127.0.0.1:0", "-o", "/dev/stdout")
	out, err := at.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errp, err := at.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := at.Start(); err != nil {
		t.Fatal(err)
	}
	defer at.Process.Kill()
	sr := readStream(out)
	note, err := firstLine(errp, "serving OpenMetrics on http://", 10*time.Second)
	if err != nil {
		t.Fatalf("no 'serving' note from attach --listen 127.0.0.1:0: %v", err)
	}
	target := strings.TrimSuffix(note[strings.Index(note, "http://")+len("http://"):], "/metrics")

	// Prometheus, scraping every 250 ms, with its data in a temporary directory.
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`global:
  scrape_interval: 250ms
  scrape_timeout: 200ms
scrape_configs:
  - job_name: bayesperf
    static_configs:
      - targets: ['%s']
`, target)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	var plog strings.Builder
	pc := exec.Command(prom, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+strings.TrimPrefix(base, "http://"))
	pc.Stdout, pc.Stderr = &plog, &plog
	if err := pc.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		pc.Process.Kill()
		pc.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", plog.String())
		}
	}()
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(base + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 15 s")
		}
	}
	if err := waitTimeout(at, 30*time.Second); err != nil {
		t.Fatalf("attach: %v", err)
	}
	lines, bad := sr.wait()
	if len(bad) > 0 {
		t.Fatalf("non-JSON lines on the stream: %q", bad)
	}

	// The JSON stream, per event and interval k (1-based), in the kernel's unit.
	type iv struct{ value, lo, hi, linux, total float64 }
	stream := map[string][]iv{} // [k-1]
	for _, l := range lines {
		scale := 1.0
		if l.Unit == "msec" {
			scale = 1e6
		}
		prev := 0.0
		if s := stream[l.Event]; len(s) > 0 {
			prev = s[len(s)-1].total
		}
		x := iv{total: prev}
		if v, err := strconv.ParseFloat(l.CounterValue, 64); err == nil {
			x.value = v * scale
			x.lo, x.hi, x.linux = *l.Lo*scale, *l.Hi*scale, *l.Linux*scale
			if x.value > 0 {
				x.total += x.value
			}
		}
		stream[l.Event] = append(stream[l.Event], x)
	}

	// The labels: exactly event, pid and Prometheus' own job and instance.
	for _, s := range promQuery(t, base, "bayesperf_event_count_total[1m]") {
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"__name__", "event", "instance", "job", "pid"}) || s.labels["pid"] != pid || s.labels["instance"] != target {
			t.Errorf("series labels %v: want event, pid=%s, instance=%s, job", s.labels, pid, target)
		}
	}
	// Each scrape saw interval k (bayesperf_intervals_total of the same scrape): every
	// series of that scrape must hold the stream's interval k.
	kAt := map[float64]int{}
	for _, s := range promQuery(t, base, "bayesperf_intervals_total[1m]") {
		for _, x := range s.samples {
			kAt[x.t] = int(x.v)
		}
	}
	near := func(a, b float64, k int, scale float64) bool {
		return math.Abs(a-b) <= 1e-9*math.Abs(b)+float64(k+1)*1e-6*scale
	}
	checked := map[string]int{}
	for _, fam := range []struct {
		name string
		get  func(iv) float64
	}{
		{"bayesperf_event_count_total", func(x iv) float64 { return x.total }},
		{"bayesperf_event_interval_value", func(x iv) float64 { return x.value }},
		{"bayesperf_event_interval_lower", func(x iv) float64 { return x.lo }},
		{"bayesperf_event_interval_upper", func(x iv) float64 { return x.hi }},
		{"bayesperf_event_kernel_scaled", func(x iv) float64 { return x.linux }},
	} {
		seen := map[string]bool{}
		for _, s := range promQuery(t, base, fam.name+"[1m]") {
			ev := s.labels["event"]
			seen[ev] = true
			scale := 1.0
			if ev == "task-clock" {
				scale = 1e6
			}
			last := math.Inf(-1)
			for _, x := range s.samples {
				k, ok := kAt[x.t]
				if !ok || k < 1 || k > len(stream[ev]) {
					t.Errorf("%s{event=%q} at %.3f: interval %d, not in the stream (%d intervals)", fam.name, ev, x.t, k, len(stream[ev]))
					continue
				}
				if want := fam.get(stream[ev][k-1]); !near(x.v, want, k, scale) {
					t.Errorf("%s{event=%q} after interval %d = %v, the --json stream gives %v", fam.name, ev, k, x.v, want)
				}
				if fam.name == "bayesperf_event_count_total" && x.v < last {
					t.Errorf("%s{event=%q} decreased: %v after %v", fam.name, ev, x.v, last)
				}
				last = x.v
				checked[fam.name]++
			}
		}
		for _, e := range events {
			if !seen[e] {
				t.Errorf("no series %s{event=%q} in Prometheus", fam.name, e)
			}
		}
	}
	// The status state set: one series per event and status, the stream's status at 1.
	st := promQuery(t, base, "bayesperf_event_status[1m]")
	if len(st) != 4*len(events) {
		t.Errorf("%d bayesperf_event_status series, want %d (4 statuses x %d events)", len(st), 4*len(events), len(events))
	}
	var jsonStatus = map[string][]string{}
	for _, l := range lines {
		jsonStatus[l.Event] = append(jsonStatus[l.Event], l.Status)
	}
	for _, s := range st {
		ev, status := s.labels["event"], s.labels["status"]
		for _, x := range s.samples {
			k := kAt[x.t]
			if k < 1 || k > len(jsonStatus[ev]) {
				continue
			}
			if want := jsonStatus[ev][k-1] == status; want != (x.v == 1) {
				t.Errorf("bayesperf_event_status{event=%q,status=%q} after interval %d = %v, stream says %q", ev, status, k, x.v, jsonStatus[ev][k-1])
			}
		}
	}
	if checked["bayesperf_event_count_total"] < 5*len(events) {
		t.Errorf("only %d scrapes of the counters matched against the stream, want at least %d", checked["bayesperf_event_count_total"], 5*len(events))
	}
	t.Logf("%d intervals streamed; Prometheus samples matched against the stream: %v", len(stream["page-faults"]), checked)
}
