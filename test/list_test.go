package test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/testutil"
)

// TestListRelations: list --relations prints every relation with its source, a
// relation file's lines as file:PATH:LINE, and a glob keeps the relations that mention
// a matching event.
func TestListRelations(t *testing.T) {
	out, errOut, code := runBin(t, "list", "--relations")
	if code != 0 {
		t.Fatalf("list --relations: exit %d\n%s", code, errOut)
	}
	if !regexp.MustCompile(`(?m)^page-faults = minor-faults \+ major-faults +# \[builtin\] `).MatchString(out) {
		t.Errorf("no built-in page-faults identity with its source:\n%s", out)
	}
	file := filepath.Join(t.TempDir(), "my.rel")
	if err := os.WriteFile(file, []byte("# mine\ncontext-switches >= cpu-migrations\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = runBin(t, "list", "--relations", "--relation-file", file, "cpu-mig*")
	if code != 0 {
		t.Fatalf("list --relations --relation-file: exit %d\n%s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := "# [file:" + file + ":2]"
	found := false
	for _, l := range lines {
		if !strings.Contains(l, "cpu-migrations") && !strings.Contains(l, "migrations") {
			t.Errorf("glob cpu-mig* kept a relation that does not mention it: %q", l)
		}
		if strings.HasPrefix(l, "context-switches >= cpu-migrations") && strings.Contains(l, want) {
			found = true
		}
	}
	if !found {
		t.Errorf("no line for the file's relation with source %q:\n%s", want, out)
	}
	_, errOut, code = runBin(t, "list", "--relations", "--relation-file", filepath.Join(t.TempDir(), "none.rel"))
	if code != 2 || strings.Count(errOut, "\n") != 1 {
		t.Errorf("missing relation file: exit %d, stderr %q; want 2 and one line", code, errOut)
	}
}

// TestListPMUEvents: with a vendor table (Linux's pmu-events JSON, which the repository
// does not carry: testutil.PMUEvents), list adds the table's events, and list
// --relations the relations from its metrics and sub-events, each with its source. The host's own table is not in the shared data (this VM is an AMD family 26
// CPU, x86/amdzen5), so the test names a CPU directory.
func TestListPMUEvents(t *testing.T) {
	root, _ := testutil.PMUEvents(t)
	dir := filepath.Join(root, "x86", "skylake")
	out, errOut, code := runBin(t, "list", "--pmu-events", dir, "inst_retired.*")
	if code != 0 {
		t.Fatalf("list --pmu-events: exit %d\n%s", code, errOut)
	}
	if !strings.Contains(out, "vendor events (pmu-events x86/skylake):") || !strings.Contains(out, "  inst_retired.any\n") {
		t.Errorf("no vendor events section with inst_retired.any:\n%s", out)
	}
	out, errOut, code = runBin(t, "list", "--relations", "--pmu-events", dir)
	if code != 0 {
		t.Fatalf("list --relations --pmu-events: exit %d\n%s", code, errOut)
	}
	for _, src := range []string{"# [builtin]", "# [metric:", "# [subevents:"} {
		if !strings.Contains(out, src) {
			t.Errorf("no relation with source %q", src)
		}
	}
}
