package test

// A real Prometheus (Debian's prometheus package, installed by make deps) scrapes
// `bayesperf attach --listen` of a running workload, killed and restarted while
// Prometheus scrapes it; its HTTP API must show the documented series and labels, with
// the values of bayesperf's own --json stream of the same runs, and no counter reset.

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

// promSeries is one series of a query's answer.
type promSeries struct {
	labels  map[string]string
	samples []promSample
}

// promQuery runs an instant query on Prometheus at base and returns, per series, its
// labels and samples (a range selector gives every raw sample).
func promQuery(t *testing.T, base, q string) []promSeries {
	t.Helper()
	return promQueryAt(t, base, q, "")
}

// promQueryAt is promQuery evaluated at time at (Unix seconds, as Prometheus' API
// takes it), or now for "".
func promQueryAt(t *testing.T, base, q, at string) []promSeries {
	t.Helper()
	v := url.Values{"query": {q}}
	if at != "" {
		v.Set("time", at)
	}
	resp, err := http.Get(base + "/api/v1/query?" + v.Encode())
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
	var out []promSeries
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
		out = append(out, promSeries{s.Metric, ss})
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

// attachRun is one `bayesperf attach --listen` of the test, with its --json stream.
type attachRun struct {
	cmd    *exec.Cmd
	sr     *streamReader
	stderr *strings.Builder // read only after the run ended
}

// startAttachListen starts attach on pid serving addr with --state state (none for
// ""), streaming --json -I 500 on stdout, and waits until addr serves /metrics. args
// are added.
func startAttachListen(t *testing.T, pid, addr, state string, events []string, args ...string) *attachRun {
	t.Helper()
	a := &attachRun{stderr: &strings.Builder{}}
	if state != "" {
		args = append(args, "--state", state)
	}
	a.cmd = exec.Command(statBin(t), append([]string{"attach", "-p", pid, "--json", "-I", "500",
		"--virtual-counters", "2", "-e", strings.Join(events, ","), "--listen", addr, "-o", "/dev/stdout"}, args...)...)
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stderr = a.stderr
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.cmd.Process.Kill() })
	a.sr = readStream(out)
	poll(t, "attach serving http://"+addr+"/metrics", 15*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return a
}

// poll calls cond every 100 ms until it holds, failing t after d.
func poll(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// streamIv is one event's interval on the --json stream, in the kernel's unit, with
// the running total the endpoint's counter holds after it.
type streamIv struct{ value, lo, hi, linux, total float64 }

// streamIntervals are the stream's intervals per event ([k-1] for interval k), totals
// starting from base[event].
func streamIntervals(lines []streamLine, base map[string]float64) map[string][]streamIv {
	stream := map[string][]streamIv{}
	for _, l := range lines {
		scale := 1.0
		if l.Unit == "msec" {
			scale = 1e6
		}
		x := streamIv{total: base[l.Event]}
		if s := stream[l.Event]; len(s) > 0 {
			x.total = s[len(s)-1].total
		}
		if v, err := strconv.ParseFloat(l.CounterValue, 64); err == nil {
			x.value = v * scale
			x.lo, x.hi, x.linux = *l.Lo*scale, *l.Hi*scale, *l.Linux*scale
			if x.value > 0 {
				x.total += x.value
			}
		}
		stream[l.Event] = append(stream[l.Event], x)
	}
	return stream
}

// The counter families of the endpoint: a restart must reset none of them.
var promCounters = []string{
	"bayesperf_event_count_total", "bayesperf_event_raw_count_total",
	"bayesperf_event_enabled_seconds_total", "bayesperf_event_running_seconds_total",
	"bayesperf_slices_total", "bayesperf_model_numerical_failures_total", "bayesperf_intervals_total",
}

// Prometheus scrapes attach --listen --state every 250 ms; attach is killed (SIGKILL)
// while it scrapes, Prometheus sees the target down, and attach restarts on the same
// address and state file. Every scraped value equals the --json stream of its run
// (the second run's totals continue the first's), every counter is monotonic across
// the restart under one _created, and Prometheus' own resets() is 0 and increase()
// equals the streams' sum. Then a third attach without --state: its counters start
// from 0 under a later _created, a reset announced as such, and no sample is lower
// than an earlier one with the same _created.
func TestPrometheusScrapesAttach(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("needs Prometheus' server: Debian's prometheus package, which make deps installs")
	}
	wl := startWorkload(t, "mixed", 60*time.Second)
	pid := strconv.Itoa(wl.Process.Pid)
	events := []string{"task-clock", "page-faults", "minor-faults", "major-faults", "context-switches"}
	target := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	dir := t.TempDir()
	state := filepath.Join(dir, "state.json")
	base := startPrometheus(t, prom, dir, target)
	p := attachThreeTimes(t, base, pid, target, state, events)

	checked := p.checkValues()
	for run := range 3 {
		if n := checked["bayesperf_event_count_total"][run]; n < 3*len(events) {
			t.Errorf("run %d: only %d scrapes of the counters matched against the stream, want at least %d", run+1, n, 3*len(events))
		}
	}
	p.checkCreated()
	resetsSeen := p.checkIncrease()
	t.Logf("%d + %d + %d intervals streamed, %d saved at the kill; Prometheus samples matched against the streams (runs 1, 2, 3): %v; %d of %d totals reset at the third run",
		len(p.s[0]["page-faults"]), len(p.s[1]["page-faults"]), len(p.s[2]["page-faults"]), p.n1, checked, resetsSeen, len(events))
}

// startPrometheus starts Prometheus (the binary prom) scraping target every 250 ms, with
// its data in dir, and returns its URL once it is ready. It is killed at the end of t,
// and its log shown if t failed.
func startPrometheus(t *testing.T, prom, dir, target string) string {
	t.Helper()
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
	t.Cleanup(func() {
		pc.Process.Kill()
		pc.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", plog.String())
		}
	})
	poll(t, "prometheus ready", 15*time.Second, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	return base
}

// promScrapes is what TestPrometheusScrapesAttach checks Prometheus' samples against:
// the three attach runs' --json streams and when the first was killed, the second
// started and the third started (Unix seconds).
type promScrapes struct {
	t                          *testing.T
	base, pid, target          string
	events                     []string
	lines                      [3][]streamLine
	s                          [3]map[string][]streamIv // per event and interval; the second's totals continue the first's
	n1                         int                      // the first run's intervals the state file saved
	killAt, restartAt, resetAt float64
	nAt                        map[float64]int // intervals_total of each scrape, by time
}

// unixSeconds is t in Unix seconds, as Prometheus' API gives times.
func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// attachThreeTimes runs attach --listen three times while Prometheus (at base) scrapes
// it: the first killed, the second resuming its state file, the third without one.
func attachThreeTimes(t *testing.T, base, pid, target, state string, events []string) *promScrapes {
	t.Helper()
	// The first attach, until Prometheus has scraped 6 of its intervals (it starts
	// scraping up to 5 s after its start); then SIGKILL, the harshest end, at any point
	// of attach's loop.
	run1 := startAttachListen(t, pid, target, state, events)
	poll(t, "Prometheus scraping 6 intervals of the first attach", 30*time.Second, func() bool {
		r := promQuery(t, base, "count_over_time(bayesperf_event_count_total{event=\"page-faults\"}[1m])")
		return len(r) == 1 && r[0].samples[0].v >= 6
	})
	killAt := time.Now()
	run1.cmd.Process.Kill()
	run1.cmd.Wait()
	lines1, bad := run1.sr.wait()
	var saved struct {
		Intervals int `json:"intervals"`
	}
	if b, err := os.ReadFile(state); err != nil || json.Unmarshal(b, &saved) != nil {
		t.Fatalf("state file after the kill: %v\n%s", err, b)
	}
	// Prometheus sees the target down before it comes back.
	poll(t, "Prometheus seeing the killed attach down", 15*time.Second, func() bool {
		return len(promQuery(t, base, "min_over_time(up[10s]) == 0")) == 1
	})
	restartAt := time.Now()
	run2 := startAttachListen(t, pid, target, state, events, "--duration", "4")
	if err := waitTimeout(run2.cmd, 30*time.Second); err != nil {
		t.Fatalf("restarted attach: %v\n%s", err, run2.stderr)
	}
	lines2, bad2 := run2.sr.wait()
	if bad = append(bad, bad2...); len(bad) > 0 {
		t.Fatalf("non-JSON lines on the streams: %q", bad)
	}
	if !strings.Contains(run2.stderr.String(), "counters resumed") {
		t.Errorf("restarted attach did not resume the state file:\n%s", run2.stderr)
	}
	// The third, without --state, once Prometheus saw the second end.
	poll(t, "Prometheus seeing the second attach gone", 15*time.Second, func() bool {
		return len(promQuery(t, base, "up == 0")) == 1
	})
	resetAt := time.Now()
	run3 := startAttachListen(t, pid, target, "", events, "--duration", "3")
	if err := waitTimeout(run3.cmd, 30*time.Second); err != nil {
		t.Fatalf("third attach: %v\n%s", err, run3.stderr)
	}
	lines3, bad3 := run3.sr.wait()
	if len(bad3) > 0 {
		t.Fatalf("non-JSON lines on the third stream: %q", bad3)
	}
	// The streams, per event and interval. The counters hold the first run's
	// intervals up to the saved one (a kill between the stream's write and the
	// publication loses that interval, as it loses the time attach was down), then the
	// second run's, on top.
	s1 := streamIntervals(lines1, nil)
	n1 := saved.Intervals
	if n1 < 1 || n1 > len(s1["page-faults"]) {
		t.Fatalf("state file saved %d intervals: the first run streamed %d", n1, len(s1["page-faults"]))
	}
	carry := map[string]float64{}
	for _, e := range events {
		carry[e] = s1[e][n1-1].total
	}
	s2 := streamIntervals(lines2, carry)
	s3 := streamIntervals(lines3, nil)
	p := &promScrapes{t: t, base: base, pid: pid, target: target, events: events,
		lines: [3][]streamLine{lines1, lines2, lines3}, s: [3]map[string][]streamIv{s1, s2, s3}, n1: n1,
		killAt: unixSeconds(killAt), restartAt: unixSeconds(restartAt), resetAt: unixSeconds(resetAt),
		nAt: map[float64]int{}}
	for _, s := range promQuery(t, base, "bayesperf_intervals_total[2m]") {
		for _, x := range s.samples {
			p.nAt[x.t] = int(x.v)
		}
	}
	return p
}

// ivRef is the stream interval k of a scrape in run (0, 1 or 2), whose stream it is.
type ivRef struct {
	stream map[string][]streamIv
	run, k int
}

// ivAt finds the stream interval of the scrape at time ts, from its intervals_total.
func (p *promScrapes) ivAt(ts float64) (ivRef, error) {
	n, ok := p.nAt[ts]
	switch {
	case !ok:
		return ivRef{}, fmt.Errorf("no bayesperf_intervals_total in the scrape")
	case ts < p.killAt:
		return ivRef{p.s[0], 0, n}, nil
	case ts > p.resetAt:
		return ivRef{p.s[2], 2, n}, nil
	case ts > p.restartAt:
		return ivRef{p.s[1], 1, n - p.n1}, nil
	}
	return ivRef{}, fmt.Errorf("a scrape succeeded while attach was down")
}

// nearStream says whether a scraped a is the stream's b, within the rounding of n
// intervals of values in units of scale.
func nearStream(a, b float64, n int, scale float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Abs(b)+float64(n+1)*1e-6*scale
}

// checkValues checks the series' labels, that every series of a scrape holds the
// stream's interval of that scrape, and the status state set; it returns how many
// samples of each family were matched in each run.
func (p *promScrapes) checkValues() map[string][3]int {
	t, base, pid, target, events := p.t, p.base, p.pid, p.target, p.events
	// The labels: exactly event, pid and Prometheus' own job and instance.
	for _, s := range promQuery(t, base, "bayesperf_event_count_total[2m]") {
		keys := make([]string, 0, len(s.labels))
		for k := range s.labels {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"__name__", "event", "instance", "job", "pid"}) || s.labels["pid"] != pid || s.labels["instance"] != target {
			t.Errorf("series labels %v: want event, pid=%s, instance=%s, job", s.labels, pid, target)
		}
	}
	// Every series of a scrape holds the stream's interval of that scrape.
	checked := map[string][3]int{}
	for _, fam := range []struct {
		name string
		get  func(streamIv) float64
	}{
		{"bayesperf_event_count_total", func(x streamIv) float64 { return x.total }},
		{"bayesperf_event_interval_value", func(x streamIv) float64 { return x.value }},
		{"bayesperf_event_interval_lower", func(x streamIv) float64 { return x.lo }},
		{"bayesperf_event_interval_upper", func(x streamIv) float64 { return x.hi }},
		{"bayesperf_event_kernel_scaled", func(x streamIv) float64 { return x.linux }},
	} {
		seen := map[string]bool{}
		for _, s := range promQuery(t, base, fam.name+"[2m]") {
			ev := s.labels["event"]
			seen[ev] = true
			scale := 1.0
			if ev == "task-clock" {
				scale = 1e6
			}
			for _, x := range s.samples {
				r, err := p.ivAt(x.t)
				if err == nil && (r.k < 1 || r.k > len(r.stream[ev])) {
					err = fmt.Errorf("interval %d of run %d, not in its stream (%d intervals)", r.k, r.run+1, len(r.stream[ev]))
				}
				if err != nil {
					t.Errorf("%s{event=%q} at %.3f: %v", fam.name, ev, x.t, err)
					continue
				}
				if want := fam.get(r.stream[ev][r.k-1]); !nearStream(x.v, want, p.nAt[x.t], scale) {
					t.Errorf("%s{event=%q} after interval %d of run %d = %v, the --json stream gives %v", fam.name, ev, r.k, r.run+1, x.v, want)
				}
				c := checked[fam.name]
				c[r.run]++
				checked[fam.name] = c
			}
		}
		for _, e := range events {
			if !seen[e] {
				t.Errorf("no series %s{event=%q} in Prometheus", fam.name, e)
			}
		}
	}
	// The status state set: one series per event and status, the stream's status at 1.
	st := promQuery(t, base, "bayesperf_event_status[2m]")
	if len(st) != 4*len(events) {
		t.Errorf("%d bayesperf_event_status series, want %d (4 statuses x %d events)", len(st), 4*len(events), len(events))
	}
	status := [3]map[string][]string{{}, {}, {}}
	for r, lines := range p.lines {
		for _, l := range lines {
			status[r][l.Event] = append(status[r][l.Event], l.Status)
		}
	}
	for _, s := range st {
		ev, stname := s.labels["event"], s.labels["status"]
		for _, x := range s.samples {
			r, err := p.ivAt(x.t)
			if err != nil || r.k < 1 || r.k > len(status[r.run][ev]) {
				continue // reported above
			}
			if want := status[r.run][ev][r.k-1] == stname; want != (x.v == 1) {
				t.Errorf("bayesperf_event_status{event=%q,status=%q} after interval %d of run %d = %v, stream says %q", ev, stname, r.k, r.run+1, x.v, status[r.run][ev][r.k-1])
			}
		}
	}
	return checked
}

// checkCreated: no counter decreases under one _created. Until the third run all have
// one: the first run's start, so Prometheus sees no reset across the killed one's
// restart; the third's is later, and only there may a counter go down.
func (p *promScrapes) checkCreated() {
	t, base := p.t, p.base
	for _, fam := range promCounters {
		total := promQuery(t, base, fam+"[2m]")
		if len(total) == 0 {
			t.Errorf("no series %s", fam)
		}
		cname := strings.TrimSuffix(fam, "_total") + "_created"
		cr := promQuery(t, base, cname+"[2m]")
		if len(cr) != len(total) {
			t.Errorf("%d series of %s for %d of %s", len(cr), cname, len(total), fam)
		}
		createdAt := map[string]map[float64]float64{} // series (its event) -> time -> _created
		for _, s := range cr {
			m := map[float64]float64{}
			for _, x := range s.samples {
				m[x.t] = x.v
			}
			createdAt[s.labels["event"]] = m
		}
		for _, s := range total {
			cs := createdAt[s.labels["event"]]
			for i, x := range s.samples {
				c, ok := cs[x.t]
				switch {
				case !ok:
					t.Errorf("%s%v at %.3f: no %s in the same scrape", fam, s.labels, x.t, cname)
				case x.t < p.resetAt && !(c < p.killAt):
					t.Errorf("%s%v at %.3f: _created %.3f, not the first run's start (before its kill at %.3f): the restart did not resume", fam, s.labels, x.t, c, p.killAt)
				case x.t > p.resetAt && !(c > p.resetAt):
					t.Errorf("%s%v at %.3f: _created %.3f, not the third run's start (after %.3f)", fam, s.labels, x.t, c, p.resetAt)
				}
				if i == 0 {
					continue
				}
				prev := s.samples[i-1]
				pc := cs[prev.t]
				switch {
				case c < pc:
					t.Errorf("%s%v: _created went back at %.3f, %.3f after %.3f", fam, s.labels, x.t, c, pc)
				case c == pc && x.v < prev.v:
					t.Errorf("%s%v decreased at %.3f under one _created: %v after %v", fam, s.labels, x.t, x.v, prev.v)
				}
			}
		}
	}
}

// checkIncrease checks resets() and increase() over the runs' windows (see below) and
// returns how many totals Prometheus saw reset at the third run.
func (p *promScrapes) checkIncrease() int {
	t, base := p.t, p.base
	// Over the window of the first two runs, evaluated at its last sample with a range
	// reaching exactly back to its first (so that Prometheus extrapolates nothing):
	// resets() is 0 and increase() is what the streams counted. Over the window of all
	// three, resets() is 1 where the third run's first total is below the second's
	// last (Prometheus before 2.50 reads no _created: a reset it sees only as a
	// decrease), and increase() then counts the streams' sum again.
	scale := func(ev string) float64 {
		if ev == "task-clock" {
			return 1e6
		}
		return 1
	}
	promAt := func(f, sel string, at float64) (float64, bool) {
		got := promQueryAt(t, base, f+"("+sel+")", fmt.Sprintf("%.3f", at))
		if len(got) != 1 {
			t.Errorf("%s(%s) at %.3f: %d series", f, sel, at, len(got))
			return 0, false
		}
		return got[0].samples[0].v, true
	}
	window := func(ev string, from, to promSample) string {
		return fmt.Sprintf("bayesperf_event_count_total{event=%q}[%dms]", ev, int64(math.Round((to.t-from.t)*1000)))
	}
	resetsSeen := 0
	for _, s := range promQuery(t, base, "bayesperf_event_count_total[2m]") {
		ev := s.labels["event"]
		var before, after []promSample
		for _, x := range s.samples {
			if x.t < p.resetAt {
				before = append(before, x)
			} else {
				after = append(after, x)
			}
		}
		if len(before) == 0 || len(after) == 0 {
			t.Errorf("%s: %d samples before the third run, %d in it", ev, len(before), len(after))
			continue
		}
		first, last, first3, last3 := before[0], before[len(before)-1], after[0], after[len(after)-1]
		if !(first.t < p.killAt && last.t > p.restartAt) {
			t.Errorf("%s: samples %.3f..%.3f do not span the restart", ev, first.t, last.t)
			continue
		}
		r0, err0 := p.ivAt(first.t)
		r1, err1 := p.ivAt(last.t)
		r3, err3 := p.ivAt(last3.t)
		if err0 != nil || err1 != nil || err3 != nil || r0.k < 1 || r0.k > len(r0.stream[ev]) || r1.k < 1 || r1.k > len(r1.stream[ev]) || r3.k < 1 || r3.k > len(r3.stream[ev]) {
			continue // reported above
		}
		want := r1.stream[ev][r1.k-1].total - r0.stream[ev][r0.k-1].total
		sel := window(ev, first, last)
		if v, ok := promAt("resets", sel, last.t); ok && v != 0 {
			t.Errorf("resets(%s) = %v across the restart, want 0", sel, v)
		}
		if v, ok := promAt("increase", sel, last.t); ok {
			if !nearStream(v, want, p.nAt[last.t], scale(ev)) {
				t.Errorf("increase(%s) = %v, the streams counted %v (interval %d of run 1 to %d of run 2)", sel, v, want, r0.k, r1.k)
			}
			t.Logf("%s: increase over %s across the restart %.6g, streams %.6g", ev, sel, v, want)
		}
		sel = window(ev, first, last3)
		wantResets := 0.0
		if first3.v < last.v {
			wantResets = 1
			resetsSeen++
		}
		if v, ok := promAt("resets", sel, last3.t); ok && v != wantResets {
			t.Errorf("resets(%s) = %v with the third run's reset announced (%v then %v), want %v", sel, v, last.v, first3.v, wantResets)
		}
		if wantResets == 1 {
			want += r3.stream[ev][r3.k-1].total
			if v, ok := promAt("increase", sel, last3.t); ok && !nearStream(v, want, p.nAt[last3.t], scale(ev)) {
				t.Errorf("increase(%s) = %v across the reset, the streams counted %v", sel, v, want)
			}
		}
	}
	if resetsSeen == 0 {
		t.Errorf("no counter went down at the third run's start: its reset was not seen")
	}
	return resetsSeen
}
