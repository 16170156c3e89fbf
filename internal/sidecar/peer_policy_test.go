package sidecar

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/bayesperf/bayesperf/shim"
)

// opensEvents stands for a stage such as the virtual PMU: not KernelExact.
type opensEvents struct{}

func (opensEvents) Name() string                          { return "opens-events" }
func (opensEvents) Correct(int64, []Event, []shim.Values) {}

// TestAllowUIDsPolicy: serving other users needs a stage that publishes the kernel's
// values, and lets the socket directory be 0711 (only then); the socket is then
// connectable by all (SO_PEERCRED decides who is served).
func TestAllowUIDsPolicy(t *testing.T) {
	mk := func(mode os.FileMode) string {
		dir := filepath.Join(t.TempDir(), "d")
		if err := os.Mkdir(dir, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(dir, "sock")
	}
	if _, err := New(Config{SocketPath: mk(0o711), AllowUIDs: []int{1234}, Stage: opensEvents{}}); err == nil || !strings.Contains(err.Error(), "opens-events") {
		t.Errorf("AllowUIDs with a stage that opens events: %v, want a refusal naming the stage", err)
	}
	if _, err := New(Config{SocketPath: mk(0o711)}); err == nil {
		t.Error("a 0711 socket directory without AllowUIDs was accepted")
	}
	if _, err := New(Config{SocketPath: mk(0o755), AllowUIDs: []int{1234}}); err == nil {
		t.Error("a 0755 socket directory with AllowUIDs was accepted")
	}
	sock := mk(0o711)
	srv, err := New(Config{SocketPath: sock, AllowUIDs: []int{1234}})
	if err != nil {
		t.Fatalf("AllowUIDs with the identity stage in a 0711 directory: %v", err)
	}
	defer srv.Close()
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o666 {
		t.Errorf("socket %v, %v; want mode 0666", st.Mode(), err)
	}
}

// TestOpenFilesLimit reads our own soft RLIMIT_NOFILE from /proc.
func TestOpenFilesLimit(t *testing.T) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	got, err := openFilesLimit(os.Getpid())
	if err != nil || got != rl.Cur {
		t.Errorf("openFilesLimit: %d, %v; want %d", got, err, rl.Cur)
	}
	if _, err := openFilesLimit(-1); err == nil {
		t.Error("openFilesLimit(-1) gave no error")
	}
}
