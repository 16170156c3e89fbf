package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Phase is one stretch of uniform behaviour.
type Phase struct {
	Kind      string        // "memory", "syscalls", "sleep", "fork", "idle-spin"
	Duration  time.Duration // how long the phase lasts
	Intensity int           // kind-specific size: pages per burst, syscalls per burst...
	Variant   int           // kind-specific choice, e.g. which syscall mix
}

// Workload is a named built-in program.
type Workload struct {
	Name    string
	Summary string
	// Plan returns the phases for a run of about total length, from the seed.
	Plan func(rng *rand.Rand, total time.Duration) []Phase
}

var all = map[string]Workload{}

func add(w Workload) { all[w.Name] = w }

// Names lists the workloads, sorted.
func Names() []string {
	return slices.Sorted(maps.Keys(all))
}

// Lookup finds a workload by name.
func Lookup(name string) (Workload, error) {
	w, ok := all[name]
	if !ok {
		return Workload{}, fmt.Errorf("find workload %q: unknown; known: %v", name, Names())
	}
	return w, nil
}

// RunSpec runs the workload that spec, "name:ms", names for ms milliseconds (for def
// when spec has no ":ms") with seed: what a test binary that doubles as a target
// process does in its TestMain.
func RunSpec(spec string, def time.Duration, seed uint64) error {
	name, ms, timed := strings.Cut(spec, ":")
	total := def
	if timed {
		n, _ := strconv.Atoi(ms)
		total = time.Duration(n) * time.Millisecond
	}
	w, err := Lookup(name)
	if err != nil {
		return err
	}
	return w.Run(context.Background(), total, seed)
}

// Run plans the workload from seed and executes its phases until total has passed or ctx
// is done.
func (w Workload) Run(ctx context.Context, total time.Duration, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for _, p := range w.Plan(rng, total) {
		if err := ctx.Err(); err != nil {
			return nil
		}
		if err := RunPhase(ctx, p, rng); err != nil {
			return fmt.Errorf("run %s phase of %s: %w", p.Kind, w.Name, err)
		}
	}
	return nil
}

// phaseLengths cuts total into phases of 40-250 ms.
func phaseLengths(rng *rand.Rand, total time.Duration) []time.Duration {
	var out []time.Duration
	for left := total; left > 0; {
		d := time.Duration(40+rng.IntN(211)) * time.Millisecond
		d = min(d, left)
		out = append(out, d)
		left -= d
	}
	return out
}

func single(kind string, lo, hi, variants int) func(*rand.Rand, time.Duration) []Phase {
	return func(rng *rand.Rand, total time.Duration) []Phase {
		var ps []Phase
		for _, d := range phaseLengths(rng, total) {
			ps = append(ps, Phase{Kind: kind, Duration: d, Intensity: lo + rng.IntN(hi-lo+1), Variant: rng.IntN(variants)})
		}
		return ps
	}
}

func init() {
	add(Workload{Name: "memory", Summary: "map, touch and unmap anonymous memory in bursts of varying size (page faults)",
		Plan: single("memory", 16, 2048, 3)})
	add(Workload{Name: "syscalls", Summary: "storms of varied syscalls (read, write, getpid, openat/close, stat...) whose mix changes by phase",
		Plan: single("syscalls", 50, 2000, len(syscallMixes))})
	add(Workload{Name: "sleep", Summary: "sleep/wake ping-pong between threads and timed sleeps (context switches, wakeups)",
		Plan: single("sleep", 1, 400, 2)})
	add(Workload{Name: "fork", Summary: "bursts of fork+exec of /bin/true (process creation, exec, exit, page faults)",
		Plan: single("fork", 1, 8, 1)})
	add(Workload{Name: "mixed", Summary: "cycles through memory, syscall, sleep, fork and compute phases in a seeded order",
		Plan: func(rng *rand.Rand, total time.Duration) []Phase {
			kinds := []struct {
				kind             string
				lo, hi, variants int
			}{{"memory", 16, 2048, 3}, {"syscalls", 50, 2000, len(syscallMixes)}, {"sleep", 1, 400, 2}, {"fork", 1, 6, 1}, {"idle-spin", 1, 1, 1}}
			var ps []Phase
			for _, d := range phaseLengths(rng, total) {
				k := kinds[rng.IntN(len(kinds))]
				ps = append(ps, Phase{Kind: k.kind, Duration: d, Intensity: k.lo + rng.IntN(k.hi-k.lo+1), Variant: rng.IntN(k.variants)})
			}
			return ps
		}})
}

// RunPhase executes one phase.
func RunPhase(ctx context.Context, p Phase, rng *rand.Rand) error {
	end := time.Now().Add(p.Duration)
	for time.Now().Before(end) && ctx.Err() == nil {
		var err error
		switch p.Kind {
		case "memory":
			err = memoryBurst(p.Intensity, p.Variant)
		case "syscalls":
			err = syscallBurst(p.Intensity, p.Variant)
		case "sleep":
			err = sleepBurst(p.Intensity, p.Variant)
		case "fork":
			err = forkBurst(p.Intensity)
		case "idle-spin":
			spin(200 * time.Microsecond)
		default:
			return fmt.Errorf("unknown phase kind %q", p.Kind)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var pageSize = os.Getpagesize()

// memoryBurst maps pages anonymous pages, touches them (one minor fault each) and unmaps
// them; variant 1 also advises MADV_DONTNEED and touches again, variant 2 touches only
// every fourth page.
func memoryBurst(pages, variant int) error {
	b, err := unix.Mmap(-1, 0, pages*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("map %d pages: %w", pages, err)
	}
	step := pageSize
	if variant == 2 {
		step *= 4
	}
	for i := 0; i < len(b); i += step {
		b[i] = 1
	}
	if variant == 1 {
		if err := unix.Madvise(b, unix.MADV_DONTNEED); err == nil {
			for i := 0; i < len(b); i += step {
				b[i] = 2
			}
		}
	}
	if err := unix.Munmap(b); err != nil {
		return fmt.Errorf("unmap: %w", err)
	}
	return nil
}

// syscallMixes are the syscall mixes of syscall storms; each phase uses one.
var syscallMixes = [][]string{
	{"getpid", "getppid"},
	{"read", "write"},
	{"openat", "close", "fstat"},
	{"getpid", "read", "openat", "close"},
	{"write", "getuid", "getppid", "lseek"},
}

var (
	devZero, devNull int = -1, -1
)

func openDevs() error {
	if devZero >= 0 {
		return nil
	}
	z, err := unix.Open("/dev/zero", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /dev/zero: %w", err)
	}
	n, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(z)
		return fmt.Errorf("open /dev/null: %w", err)
	}
	devZero, devNull = z, n
	return nil
}

func syscallBurst(n, variant int) error {
	if err := openDevs(); err != nil {
		return err
	}
	var buf [64]byte
	var st unix.Stat_t
	mix := syscallMixes[variant%len(syscallMixes)]
	for i := range n {
		switch mix[i%len(mix)] {
		case "getpid":
			unix.Getpid()
		case "getppid":
			unix.Getppid()
		case "getuid":
			unix.Getuid()
		case "read":
			if _, err := unix.Read(devZero, buf[:]); err != nil {
				return fmt.Errorf("read /dev/zero: %w", err)
			}
		case "write":
			if _, err := unix.Write(devNull, buf[:]); err != nil {
				return fmt.Errorf("write /dev/null: %w", err)
			}
		case "lseek":
			_, _ = unix.Seek(devZero, 0, 0)
		case "fstat":
			_ = unix.Fstat(devZero, &st)
		case "openat":
			fd, err := unix.Openat(unix.AT_FDCWD, "/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
			if err != nil {
				return fmt.Errorf("open /dev/null: %w", err)
			}
			unix.Close(fd)
		case "close":
			// paired with openat above; alone it closes a fresh dup
			if fd, err := unix.Dup(devNull); err == nil {
				unix.Close(fd)
			}
		}
	}
	return nil
}

// sleepBurst: variant 0 ping-pongs n messages through pipes with another thread (a
// context switch and a wakeup per message); variant 1 sleeps n times for 50-100 µs.
func sleepBurst(n, variant int) error {
	if variant == 1 {
		for range n {
			time.Sleep(50 * time.Microsecond)
		}
		return nil
	}
	var a, b [2]int
	if err := unix.Pipe2(a[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("make pipe: %w", err)
	}
	if err := unix.Pipe2(b[:], unix.O_CLOEXEC); err != nil {
		unix.Close(a[0])
		unix.Close(a[1])
		return fmt.Errorf("make pipe: %w", err)
	}
	done := make(chan error, 1)
	go func() {
		var c [1]byte
		for range n {
			if _, err := unix.Read(a[0], c[:]); err != nil {
				done <- err
				return
			}
			if _, err := unix.Write(b[1], c[:]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var c [1]byte
	var err error
	for range n {
		if _, err = unix.Write(a[1], c[:]); err != nil {
			break
		}
		if _, err = unix.Read(b[0], c[:]); err != nil {
			break
		}
	}
	if err == nil {
		err = <-done
	}
	for _, fd := range []int{a[0], a[1], b[0], b[1]} {
		unix.Close(fd)
	}
	if err != nil {
		return fmt.Errorf("ping-pong: %w", err)
	}
	return nil
}

var truePath string

func forkBurst(n int) error {
	if truePath == "" {
		p, err := exec.LookPath("true")
		if err != nil {
			return errors.New("find the true program: not in PATH")
		}
		truePath = p
	}
	for range n {
		if err := exec.Command(truePath).Run(); err != nil {
			return fmt.Errorf("run %s: %w", truePath, err)
		}
	}
	return nil
}

func spin(d time.Duration) {
	end := time.Now().Add(d)
	x := 1
	for time.Now().Before(end) {
		for i := range 1000 {
			x = x*31 + i
		}
	}
	sink = x
}

var sink int
