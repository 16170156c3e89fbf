package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunC compiles the C program src, called name, with gcc and cflags, runs it and
// returns what it printed on its standard output. It fails tb when gcc is missing (a
// build dependency: make deps installs it) or when the program does not compile or
// run.
func RunC(tb testing.TB, name, src string, cflags ...string) []byte {
	tb.Helper()
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		tb.Fatalf("gcc is needed to compile the %s probe (make deps installs it): %v", name, err)
	}
	dir := tb.TempDir()
	cfile, exe := filepath.Join(dir, name+".c"), filepath.Join(dir, name)
	if err := os.WriteFile(cfile, []byte(src), 0o600); err != nil {
		tb.Fatal(err)
	}
	args := append(append([]string(nil), cflags...), "-o", exe, cfile)
	if out, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		tb.Fatalf("compile the %s probe: %v\n%s", name, err, out)
	}
	out, err := exec.Command(exe).Output()
	if err != nil {
		tb.Fatalf("run the %s probe: %v", name, err)
	}
	return out
}
