package test

// `make reliability` writes the figures of docs/reliability.md from a real run: it runs
// the hardening tests (and short fuzz runs) with -v into a log, then this test, with
// $BAYESPERF_RELIABILITY_LOG naming that log, rewrites the section between the markers
// of docs/reliability.md. Without the variable it is skipped: it reports, it checks
// nothing.

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

const (
	figuresBegin = "<!-- figures:begin (make reliability) -->"
	figuresEnd   = "<!-- figures:end -->"
)

var (
	runRe  = regexp.MustCompile(`^=== (?:RUN|CONT)\s+(\S+)`)
	doneRe = regexp.MustCompile(`^\s*--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+s)\)`)
	logRe  = regexp.MustCompile(`^\s+(hardening_\w+_test\.go):\d+: (.*)$`)
	fuzzRe = regexp.MustCompile(`^fuzz: elapsed: (\S+), execs: (\d+) `)
	fuzzHd = regexp.MustCompile(`^fuzz (\S+) (\S+) \(`)
)

// reliabilityFigures turns a `go test -v` log (plus "fuzz PKG NAME (T)" headers followed
// by fuzzing output) into the markdown of the figures section.
func reliabilityFigures(log string) string {
	type res struct{ status, dur string }
	var order []string
	logs := map[string][]string{}
	results := map[string]res{}
	fuzz := map[string]string{}
	var fuzzOrder []string
	cur, curFuzz := "", ""
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case runRe.MatchString(line):
			cur = runRe.FindStringSubmatch(line)[1]
			if _, ok := logs[cur]; !ok && strings.HasPrefix(cur, "TestHardening") {
				order = append(order, cur)
				logs[cur] = nil
			}
		case doneRe.MatchString(line):
			m := doneRe.FindStringSubmatch(line)
			results[m[2]] = res{m[1], m[3]}
		case logRe.MatchString(line) && cur != "":
			m := logRe.FindStringSubmatch(line)
			logs[cur] = append(logs[cur], m[2])
		case fuzzHd.MatchString(line):
			m := fuzzHd.FindStringSubmatch(line)
			curFuzz = m[1] + " " + m[2]
			fuzzOrder = append(fuzzOrder, curFuzz)
		case fuzzRe.MatchString(line) && curFuzz != "":
			m := fuzzRe.FindStringSubmatch(line)
			fuzz[curFuzz] = m[2] + " executions in " + m[1]
		}
	}
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "Generated %s on %s (%s, %d CPUs).\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"), host, runtime.GOARCH, runtime.NumCPU())
	b.WriteString("| test | result | time | figures |\n|---|---|---|---|\n")
	for _, name := range order {
		if name == "TestHardeningReport" {
			continue
		}
		r, ok := results[name]
		if !ok {
			r = res{"did not finish", ""}
		}
		fig := strings.Join(logs[name], "; ")
		if fig == "" {
			fig = "(no figures logged)"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, r.status, r.dur, strings.ReplaceAll(fig, "|", "\\|"))
	}
	if len(fuzzOrder) > 0 {
		b.WriteString("\nFuzz targets of the socket protocol and the shim's parsers, short runs:\n\n")
		for _, f := range fuzzOrder {
			e := fuzz[f]
			if e == "" {
				e = "no execution count in the log"
			}
			fmt.Fprintf(&b, "- `%s`: %s\n", f, e)
		}
	}
	return b.String()
}

// TestHardeningReport rewrites the figures section of docs/reliability.md from the log
// in $BAYESPERF_RELIABILITY_LOG.
func TestHardeningReport(t *testing.T) {
	path := os.Getenv("BAYESPERF_RELIABILITY_LOG")
	if path == "" {
		t.Skip("report only: set BAYESPERF_RELIABILITY_LOG to a `go test -v` log of the hardening tests (make reliability)")
	}
	log, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const doc = "../docs/reliability.md"
	old, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	s := string(old)
	i, j := strings.Index(s, figuresBegin), strings.Index(s, figuresEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no figures markers", doc)
	}
	fig := reliabilityFigures(string(log))
	out := s[:i+len(figuresBegin)] + "\n" + fig + s[j:]
	if err := os.WriteFile(doc, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReliabilityFigures checks the log parser on a log in go test -v's format.
func TestReliabilityFigures(t *testing.T) {
	log := `=== RUN   TestHardeningThreads
    hardening_concurrency_test.go:39: 8 threads x 64 events: 9 reads
--- PASS: TestHardeningThreads (3.63s)
=== RUN   TestHardeningSidecarKilled
    hardening_faults_test.go:170: seed 1: 20 SIGKILLs | injected
--- FAIL: TestHardeningSidecarKilled (13.29s)
=== RUN   TestHardeningNoLeaks
fuzz ./shim FuzzDecode (10s)
fuzz: elapsed: 3s, execs: 100 (33/sec), new interesting: 0 (total: 5)
fuzz: elapsed: 10s, execs: 4242 (424/sec), new interesting: 1 (total: 6)
`
	got := reliabilityFigures(log)
	for _, want := range []string{
		"| TestHardeningThreads | PASS | 3.63s | 8 threads x 64 events: 9 reads |",
		`| TestHardeningSidecarKilled | FAIL | 13.29s | seed 1: 20 SIGKILLs \| injected |`,
		"| TestHardeningNoLeaks | did not finish |  | (no figures logged) |",
		"- `./shim FuzzDecode`: 4242 executions in 10s",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("figures lack %q:\n%s", want, got)
		}
	}
}
