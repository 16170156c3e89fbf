package test

// bayesperf run --listen: the drop-in sidecar serves its own health at /metrics while
// the tool runs.

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestRunListenHealth(t *testing.T) {
	bin := statBin(t)
	cmd := exec.Command(bin, "run", "--listen", "127.0.0.1:0", "--virtual-counters", "2", "--",
		"perf", "stat", "-e", "page-faults,minor-faults,major-faults", "-I", "200", "--", bin, "workload", "mixed", "--duration", "3s")
	errp, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	note, err := firstLine(errp, "serving OpenMetrics on http://", 15*time.Second)
	if err != nil {
		t.Fatalf("no 'serving' note from run --listen 127.0.0.1:0: %v", err)
	}
	url := note[strings.Index(note, "http://"):]
	var body string
	poll(t, "the sidecar's health showing perf stat's 3 events", 20*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return strings.Contains(body, "bayesperf_sidecar_events_total 3\n")
	})
	for _, want := range []string{
		"bayesperf_sidecar_clients_total 1\n",
		"bayesperf_sidecar_records_lost_total 0\n",
		`bayesperf_sidecar_stage_switched_off{stage="vpmu"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
	if err := waitTimeout(cmd, 60*time.Second); err != nil {
		t.Fatalf("run: %v", err)
	}
}
