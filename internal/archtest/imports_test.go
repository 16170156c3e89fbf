package archtest

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/bayesperf/bayesperf"

// rule says which module-internal and third-party imports a package tree may have.
// Standard-library imports are always allowed.
type rule struct {
	tree    string   // package path prefix, relative to the module
	allowed []string // prefixes (module-relative for ours, full for third-party)
	tests   []string // more prefixes that the tree's tests alone may import
}

// rules mirror docs/architecture.md. Keep the two in step.
var rules = []rule{
	// Pure math: no syscalls, no knowledge of collectors, mirrors or the shim.
	{"inference", []string{"inference", "gonum.org/v1/gonum"}, nil},
	// The perf ring ABI: knows nothing about inference or BPF.
	{"ringbuf", []string{"ringbuf", "perfabi", "golang.org/x/sys"},
		[]string{"github.com/cilium/ebpf"}}, // a BPF program load makes the kernel write PERF_RECORD_BPF_EVENT
	// The shim's Go side (ABI mirror, messages): below the sidecar, knows only the ABI.
	{"shim", []string{"shim", "perfabi", "golang.org/x/sys"}, nil},
	// The server knows the ABI and the ring; correction plugs in through its Stage.
	{"internal/sidecar", []string{"internal/sidecar", "shim", "ringbuf", "internal/perf", "perfabi", "golang.org/x/sys"}, nil},
	// The virtual PMU over real events and schedules; vstage plugs it into the sidecar.
	{"internal/vpmu", []string{"internal/vpmu", "internal/pipeline", "internal/sidecar", "shim", "internal/perf", "perfabi", "inference", "golang.org/x/sys"},
		[]string{"internal/workload", "bpf"}}, // real workloads; vstage on the BPF collector
	// The kernel-rotation corrector: a sidecar stage over the model.
	{"internal/kstage", []string{"internal/kstage", "internal/pipeline", "internal/sidecar", "internal/vpmu", "shim", "internal/perf", "perfabi", "inference", "golang.org/x/sys"}, nil},
	// Collected counts -> slices -> model -> published value, shared by every corrector:
	// below the sidecar and the collectors' users, above the perf layer and the math.
	{"internal/pipeline", []string{"internal/pipeline", "inference", "internal/perf", "perfabi"}, nil},
	// The truth of a drop-in run: a stage around the correcting one.
	{"internal/truth", []string{"internal/truth", "internal/sidecar", "shim", "internal/perf", "perfabi", "golang.org/x/sys"}, nil},
	// End-to-end tests use the binaries, as a user would; raw clients use the ABI.
	{"test", []string{"test", "golang.org/x/sys", "github.com/stretchr/testify"},
		[]string{"shim", "perfabi"}}, // hostile raw clients speak the shim's ABI and open perf events
	// BPF collection: owns the BPF objects; implements perf.Collector.
	{"bpf", []string{"bpf", "internal/perf", "perfabi", "github.com/cilium/ebpf", "golang.org/x/sys"}, nil},
	// The OpenMetrics endpoint: an output format like statfmt, with Prometheus' library;
	// it knows no collector, model or sidecar.
	{"internal/openmetrics", []string{"internal/openmetrics", "internal/statfmt", "github.com/prometheus/client_golang"}, nil},
	// perf_event_open and event names: the bottom of the system side.
	{"internal/perf", []string{"internal/perf", "perfabi", "golang.org/x/sys"}, nil},
	// The perf ABI (attr, read_format, flag bits): the leaf every perf-speaking package
	// shares, so the standard library alone; its tests check the layout against x/sys.
	{"perfabi", []string{"perfabi"}, []string{"golang.org/x/sys"}},
	// What tests share (requirements that skip with the reason, process helpers): the
	// standard library alone, and every package's tests may import it (testOnly).
	{"internal/testutil", []string{"internal/testutil"}, nil},
}

// testOnly are the packages any package's tests may import on top of their rule's.
var testOnly = []string{"internal/testutil"}

type pkg struct {
	ImportPath   string
	Imports      []string
	TestImports  []string // of the package's own _test.go files
	XTestImports []string // of its _test package
}

func TestImportDirections(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var checked int
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		for _, r := range rules {
			if rel != r.tree && !strings.HasPrefix(rel, r.tree+"/") {
				continue
			}
			checked++
			for _, imp := range p.Imports {
				if !allowed(imp, r.allowed) {
					t.Errorf("%s imports %s, which docs/architecture.md does not allow for %s/", rel, imp, r.tree)
				}
			}
			// What a package's tests reach into is part of what it depends on (test/ has
			// nothing but tests).
			for _, imp := range slices.Concat(p.TestImports, p.XTestImports) {
				if !allowed(imp, r.allowed) && !allowed(imp, r.tests) && !allowed(imp, testOnly) {
					t.Errorf("%s's tests import %s, which docs/architecture.md does not allow for %s/", rel, imp, r.tree)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no package matched any rule: the module path or the rules are wrong")
	}
}

func allowed(imp string, prefixes []string) bool {
	if !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".") {
		return true // standard library
	}
	for _, p := range prefixes {
		full := p
		if !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") {
			full = module + "/" + p
		}
		if imp == full || strings.HasPrefix(imp, full+"/") {
			return true
		}
	}
	return false
}
