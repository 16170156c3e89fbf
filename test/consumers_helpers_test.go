package test

// Helpers of the consumer tests (consumers_*_test.go): a workload to attach to, and
// `bayesperf attach --json -I` read from a pipe with the arrival time of every line.

import (
	"bufio"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// streamLine is one line of the --json -I stream, with the time the reader got it.
type streamLine struct {
	Interval     float64  `json:"interval"`
	Event        string   `json:"event"`
	CounterValue string   `json:"counter-value"`
	Unit         string   `json:"unit"`
	Lo           *float64 `json:"lo"`
	Hi           *float64 `json:"hi"`
	Linux        *float64 `json:"linux"`
	Status       string   `json:"status"`
	Count        uint64   `json:"count"`
	Enabled      uint64   `json:"enabled"`
	Running      uint64   `json:"running"`
	EndUnixNs    int64    `json:"end-unix-ns"`
	arrived      time.Time
}

// startWorkload starts `bayesperf workload NAME --duration D`, killed at the end of t.
func startWorkload(t *testing.T, name string, d time.Duration) *exec.Cmd {
	t.Helper()
	wl := exec.Command(statBin(t), "workload", name, "--duration", d.String())
	if err := wl.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		wl.Process.Kill()
		wl.Wait()
	})
	time.Sleep(200 * time.Millisecond) // let it start its phases
	return wl
}

// streamReader reads JSON lines from r, stamping each as it arrives; other lines go to
// other (stderr notes). Lines returns what has arrived so far.
type streamReader struct {
	mu    sync.Mutex
	lines []streamLine
	bad   []string
	done  chan struct{}
}

func readStream(r io.Reader) *streamReader {
	s := &streamReader{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			now := time.Now()
			var l streamLine
			err := json.Unmarshal(sc.Bytes(), &l)
			s.mu.Lock()
			if err != nil {
				s.bad = append(s.bad, sc.Text())
			} else {
				l.arrived = now
				s.lines = append(s.lines, l)
			}
			s.mu.Unlock()
		}
	}()
	return s
}

// wait waits for the end of the stream and returns its lines and non-JSON lines.
func (s *streamReader) wait() ([]streamLine, []string) {
	<-s.done
	return s.lines, s.bad
}

// firstLine waits up to d for a line containing sub on r and returns it.
func firstLine(r io.Reader, sub string, d time.Duration) (string, error) {
	ch := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		found := false
		for sc.Scan() {
			if !found && strings.Contains(sc.Text(), sub) {
				found = true
				ch <- sc.Text()
			}
		}
		if !found {
			close(ch)
		}
	}()
	select {
	case l, ok := <-ch:
		if !ok {
			return "", io.EOF
		}
		return l, nil
	case <-time.After(d):
		return "", errWaitTimeout
	}
}
