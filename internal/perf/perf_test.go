package perf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/bayesperf/bayesperf/internal/testutil"
	"github.com/bayesperf/bayesperf/perfabi"
	"golang.org/x/sys/unix"
)

// whyRoot is why this package's kernel tests need root.
const whyRoot = "opens tracepoints and other tasks' events"

// The test binary doubles as a target program: with BAYESPERF_PERF_HELPER=getppid:N it
// makes N getppid calls and exits, so tracepoint counts are known exactly.
func TestMain(m *testing.M) {
	if h := os.Getenv("BAYESPERF_PERF_HELPER"); h != "" {
		n, _ := strconv.Atoi(strings.TrimPrefix(h, "getppid:"))
		for range n {
			unix.Getppid()
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func helperCmd(n int) *exec.Cmd {
	cmd := testutil.Reexec(fmt.Sprintf("BAYESPERF_PERF_HELPER=getppid:%d", n))
	return cmd
}

func TestTracepointCountsExactly(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	const n = 12345
	evs, err := ParseEvents("syscalls:sys_enter_getppid,{dummy,raw_syscalls:sys_enter,task-clock}")
	if err != nil {
		t.Fatal(err)
	}
	var opened []*Event
	cmd := helperCmd(n)
	err = StartAttached(cmd, func(pid int) error {
		var leader *Event
		for i, d := range evs {
			a := d.Attr
			a.Flags |= perfabi.FlagInherit
			var l *Event
			if d.Grouped && i > 0 && evs[i-1].Group == d.Group {
				l = leader
			} else if d.Grouped {
				a.ReadFormat |= perfabi.FormatGroup
			}
			e, err := Open(a, pid, AnyCPU, l)
			if err != nil {
				return err
			}
			e.Name = d.Name
			if l == nil && d.Grouped {
				leader = e
			}
			opened = append(opened, e)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	c, err := NewReadCollector(opened, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Counts[0].Value; got != n {
		t.Errorf("sys_enter_getppid = %d, want %d", got, n)
	}
	if got := s.Counts[2].Value; got < n {
		t.Errorf("raw_syscalls:sys_enter = %d, want at least the %d getppid calls", got, n)
	}
	if s.Counts[3].Value == 0 || s.Counts[0].Enabled == 0 || s.Counts[0].Running != s.Counts[0].Enabled {
		t.Errorf("task-clock/times implausible: %+v", s.Counts)
	}
	// A group read reports the leader's times for every member.
	if s.Counts[2].Enabled != s.Counts[1].Enabled {
		t.Errorf("group members report different times: %+v", s.Counts[1:])
	}
	// The target is gone: Peek reads the same final values, in the order asked for,
	// whichever member of a group is asked first.
	out := make([]Count, 4)
	if err := c.Peek([]int{3, 0, 1, 2}, out); err != nil {
		t.Fatal(err)
	}
	for k, i := range []int{3, 0, 1, 2} {
		if out[k] != s.Counts[i] {
			t.Errorf("Peek of event %d = %+v, Next gave %+v", i, out[k], s.Counts[i])
		}
	}
}

// threadTaskClock locks t to its OS thread for the rest of the test, so that an event
// of this task counts it alone, and returns task-clock's description.
func threadTaskClock(t *testing.T) []EventDesc {
	t.Helper()
	runtime.LockOSThread()
	t.Cleanup(runtime.UnlockOSThread)
	d, err := ParseEvents("task-clock")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// spin keeps this thread on the CPU for some 20 million additions.
func spin() {
	x := 0
	for i := range 20_000_000 {
		x += i
	}
	_ = x
}

// TestReadCollectorSetEnabled: an event switched off by the collector stops counting,
// and counts again once switched on.
func TestReadCollectorSetEnabled(t *testing.T) {
	d := threadTaskClock(t)
	e, err := Open(d[0].Attr, ThisPid, AnyCPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewReadCollector([]*Event{e}, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetEnabled(0, false); err != nil {
		t.Fatal(err)
	}
	off := make([]Count, 1)
	if err := c.Peek([]int{0}, off); err != nil {
		t.Fatal(err)
	}
	spin()
	s, err := c.Next()
	if err != nil {
		t.Fatal(err)
	}
	if s.Counts[0] != off[0] {
		t.Fatalf("switched off, the event counted: %+v then %+v", off[0], s.Counts[0])
	}
	if err := c.SetEnabled(0, true); err != nil {
		t.Fatal(err)
	}
	spin()
	if err := c.Peek([]int{0}, off); err != nil {
		t.Fatal(err)
	}
	if off[0].Value <= s.Counts[0].Value {
		t.Fatalf("switched on, the event did not count: %+v then %+v", s.Counts[0], off[0])
	}
	if err := c.SetEnabled(1, true); err == nil {
		t.Fatal("SetEnabled of an event out of range must fail")
	}
}

func TestEnableDisableStopsCounting(t *testing.T) {
	d := threadTaskClock(t)
	a := d[0].Attr
	a.Flags |= perfabi.FlagDisabled
	e, err := Open(a, ThisPid, AnyCPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	spin()
	c0, _ := e.ReadCount()
	if c0.Value != 0 || c0.Enabled != 0 {
		t.Fatalf("disabled event counted: %+v", c0)
	}
	if err := e.Enable(false); err != nil {
		t.Fatal(err)
	}
	spin()
	if err := e.Disable(false); err != nil {
		t.Fatal(err)
	}
	c1, _ := e.ReadCount()
	spin()
	c2, _ := e.ReadCount()
	if c1.Value == 0 || c2 != c1 {
		t.Fatalf("enable/disable: after enable %+v, after disable %+v", c1, c2)
	}
	if err := e.Reset(false); err != nil {
		t.Fatal(err)
	}
	c3, _ := e.ReadCount()
	if c3.Value != 0 || c3.Enabled != c1.Enabled {
		t.Fatalf("reset should zero the value only: %+v", c3)
	}
	if _, err := e.ID(); err != nil {
		t.Fatal(err)
	}
}

func TestParseList(t *testing.T) {
	specs, err := ParseList("cycles:u,{page-faults,cs}:k,sched:sched_switch,syscalls:sys_enter_*:u,cpu/event=0x3c,umask=1/k,r1a8,L1-dcache-load-misses")
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		name, mods string
		kind       Kind
		group      int
		grouped    bool
	}
	var got []row
	for _, s := range specs {
		got = append(got, row{s.Name, s.Mods, s.Kind, s.Group, s.Grouped})
	}
	want := []row{
		{"cycles", "u", KindSymbol, 0, false},
		{"page-faults", "k", KindSymbol, 1, true},
		{"cs", "k", KindSymbol, 1, true},
		{"sched:sched_switch", "", KindTracepoint, 2, false},
		{"syscalls:sys_enter_*", "u", KindTracepoint, 3, false},
		{"cpu", "k", KindPMU, 4, false},
		{"1a8", "", KindRaw, 5, false},
		{"L1-dcache-load-misses", "", KindCache, 6, false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if terms := specs[5].Terms; len(terms) != 2 || terms[0] != (Term{"event", "0x3c", true}) || terms[1] != (Term{"umask", "1", true}) {
		t.Fatalf("pmu terms = %+v", terms)
	}
	for _, bad := range []string{"", "{a,b", "a}", "{}", "{a,{b}}", "cpu/event=1", "a::u", "a:b:c:d", "{a}:xyz", "cpu/event=/"} {
		if _, err := ParseList(bad); err == nil {
			t.Errorf("ParseList(%q) succeeded", bad)
		}
	}
}

func TestCacheNames(t *testing.T) {
	for name, want := range map[string]uint64{
		"L1-dcache-load-misses": 0 | 0<<8 | 1<<16,
		"L1-dcache-loads":       0,
		"LLC-store-misses":      2 | 1<<8 | 1<<16,
		"dTLB-loads":            3,
		"iTLB-load-misses":      4 | 1<<16,
		"branch-load-misses":    5 | 1<<16,
		"node-prefetches":       6 | 2<<8,
		"L1-icache-misses":      1 | 1<<16,
	} {
		got, ok := parseCache(name)
		if !ok || got != want {
			t.Errorf("parseCache(%s) = %#x, %v; want %#x", name, got, ok, want)
		}
	}
	for _, n := range CacheEventNames() {
		if _, ok := parseCache(n); !ok {
			t.Errorf("listed cache name %q does not parse", n)
		}
	}
	if _, ok := parseCache("L1-dcache"); ok {
		t.Error("bare cache name accepted")
	}
}

func TestResolveSymbolsAndModifiers(t *testing.T) {
	evs, err := ParseEvents("faults,cs:u,migrations:k,instructions:uk,ref-cycles:ppp")
	if err != nil {
		t.Fatal(err)
	}
	check := func(i int, typ uint32, cfg, flagsSet, flagsClear uint64) {
		t.Helper()
		a := evs[i].Attr
		if a.Type != typ || a.Config != cfg || a.Flags&flagsSet != flagsSet || a.Flags&flagsClear != 0 {
			t.Errorf("%s: type %d config %d flags %#x", evs[i].Name, a.Type, a.Config, a.Flags)
		}
	}
	check(0, TypeSoftware, SWPageFaults, 0, perfabi.FlagExcludeUser|perfabi.FlagExcludeKern|perfabi.FlagExcludeHV)
	check(1, TypeSoftware, SWContextSwitches, perfabi.FlagExcludeKern|perfabi.FlagExcludeHV, perfabi.FlagExcludeUser)
	check(2, TypeSoftware, SWCPUMigrations, perfabi.FlagExcludeUser|perfabi.FlagExcludeHV, perfabi.FlagExcludeKern)
	check(3, TypeHardware, HWInstructions, perfabi.FlagExcludeHV, perfabi.FlagExcludeUser|perfabi.FlagExcludeKern)
	if evs[4].Attr.PreciseIP() != 3 {
		t.Errorf("ppp precise = %d", evs[4].Attr.PreciseIP())
	}
	if _, err := ParseEvents("cycles:pppp"); err == nil {
		t.Error("pppp accepted")
	}
}

func TestUnknownNamesSuggest(t *testing.T) {
	_, err := ParseEvents("page-fault")
	if err == nil || !strings.Contains(err.Error(), "page-faults") {
		t.Fatalf("error %v should suggest page-faults", err)
	}
	testutil.RequireRoot(t, whyRoot)
	_, err = ParseEvents("sched:sched_swich")
	if err == nil || !strings.Contains(err.Error(), "sched:sched_switch") {
		t.Fatalf("error %v should suggest sched:sched_switch", err)
	}
}

func TestTracepointGlob(t *testing.T) {
	testutil.RequireRoot(t, whyRoot)
	evs, err := ParseEvents("{syscalls:sys_enter_get*id}")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range evs {
		names[e.Name] = true
		if e.Attr.Type != TypeTracepoint || e.Group != 0 || !e.Grouped {
			t.Errorf("%s: %+v", e.Name, e)
		}
	}
	for _, want := range []string{"syscalls:sys_enter_getpid", "syscalls:sys_enter_getppid", "syscalls:sys_enter_getuid"} {
		if !names[want] {
			t.Errorf("glob missed %s (got %v)", want, names)
		}
	}
}

func TestPMUTermsFromFixture(t *testing.T) {
	dir := t.TempDir()
	pmu := filepath.Join(dir, "fakecpu")
	must := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(filepath.Join(pmu, "type"), "42\n")
	must(filepath.Join(pmu, "format", "event"), "config:0-7,32-35\n")
	must(filepath.Join(pmu, "format", "umask"), "config:8-15\n")
	must(filepath.Join(pmu, "format", "edge"), "config:18\n")
	must(filepath.Join(pmu, "format", "ldlat"), "config1:0-15\n")
	must(filepath.Join(pmu, "events", "mem-loads"), "event=0x1cd,umask=0x1\n")
	r := Resolver{SysfsPMUDir: dir, TracefsDir: dir}
	evs, err := r.ParseEvents("fakecpu/event=0x13c,umask=0x2,edge/,fakecpu/mem-loads,ldlat=3/u,mem-loads")
	if err != nil {
		t.Fatal(err)
	}
	if a := evs[0].Attr; a.Type != 42 || a.Config != 0x3c|1<<32|0x2<<8|1<<18 {
		t.Errorf("event 0 config %#x type %d", a.Config, a.Type)
	}
	if a := evs[1].Attr; a.Config != 0xcd|1<<32|0x1<<8 || a.Config1 != 3 || a.Flags&perfabi.FlagExcludeKern == 0 {
		t.Errorf("event 1 %+v", a)
	}
	if evs[1].Name != "fakecpu/mem-loads,ldlat=3/u" {
		t.Errorf("event 1 named %q", evs[1].Name)
	}
	if evs[2].Attr.Config != evs[1].Attr.Config {
		t.Errorf("bare alias resolved to %#x", evs[2].Attr.Config)
	}
	named, err := r.ParseEvents("fakecpu/event=1,name=my-event/")
	if err != nil || named[0].Name != "my-event" {
		t.Errorf("name= term: %+v %v", named, err)
	}
	for _, bad := range []string{"fakecpu/event=0x1000/", "fakecpu/evnt=1/", "nopmu/event=1/", "fakecpu/../type/", "fakecpu/event=zz/"} {
		if _, err := r.ParseEvents(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	_, err = r.ParseEvents("fakecpu/umsk=1/")
	if err == nil || !strings.Contains(err.Error(), "umask") {
		t.Errorf("error %v should suggest umask", err)
	}
}

func TestRealPMUAlias(t *testing.T) {
	// msr/tsc/ exists on x86 VMs too; resolve it through sysfs and compare with sysfs type.
	b, err := os.ReadFile("/sys/bus/event_source/devices/msr/type")
	if err != nil {
		t.Skip("no msr PMU in sysfs on this machine")
	}
	evs, err := ParseEvents("msr/tsc/")
	if err != nil {
		t.Fatal(err)
	}
	if strconv.Itoa(int(evs[0].Attr.Type)) != strings.TrimSpace(string(b)) {
		t.Fatalf("msr type %d vs sysfs %s", evs[0].Attr.Type, b)
	}
}

func FuzzParseList(f *testing.F) {
	for _, s := range []string{"cycles:u,{page-faults,cs}:k", "cpu/event=0x3c,umask=1/k", "syscalls:sys_enter_*", "r1a8", "{a,b},c", "L1-dcache-load-misses:u"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		specs, err := ParseList(s)
		if err != nil {
			return
		}
		prev := -1
		for _, sp := range specs {
			if sp.Text == "" || sp.Group < prev {
				t.Fatalf("bad spec %+v from %q", sp, s)
			}
			prev = sp.Group
		}
	})
}

func FuzzDecodeReading(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0}, uint64(perfabi.FormatGroup))
	f.Fuzz(func(t *testing.T, b []byte, rf uint64) {
		var r Reading
		if err := DecodeReading(b, rf, &r); err == nil && perfabi.ReadSize(rf, len(r.Values)) > len(b) {
			t.Fatalf("decoded %d values from %d bytes", len(r.Values), len(b))
		}
	})
}

// FuzzResolvePMU resolves arbitrary event lists against a fixture PMU and tracefs: sysfs
// format specs, aliases and term values are parsed here, and must never panic.
func FuzzResolvePMU(f *testing.F) {
	dir := f.TempDir()
	files := map[string]string{
		"fakecpu/type":            "42\n",
		"fakecpu/format/event":    "config:0-7,32-35\n",
		"fakecpu/format/umask":    "config:8-15\n",
		"fakecpu/format/bad":      "config9:0-70\n",
		"fakecpu/events/loop":     "loop\n",
		"fakecpu/events/loads":    "event=0x1cd,umask=0x1\n",
		"events/sched/switch/id":  "77\n",
		"events/sched/wakeup/id":  "notanumber\n",
		"events/syscalls/x_y/id":  "5\n",
		"events/syscalls/x_z/id":  "6\n",
		"events/syscalls/x_z/foo": "",
	}
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	for _, s := range []string{"fakecpu/event=0x3c,umask=1/u", "fakecpu/loads/", "fakecpu/loop/", "fakecpu/bad=1/", "sched:*", "syscalls:x_?", "loads", "{sched:switch,cs}:k"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r := Resolver{SysfsPMUDir: dir, TracefsDir: dir, NoMount: true}
		evs, err := r.ParseEvents(s)
		if err != nil {
			return
		}
		for _, e := range evs {
			if e.Attr.Size != perfabi.AttrSize || e.Name == "" {
				t.Fatalf("bad resolution of %q: %+v", s, e)
			}
		}
	})
}
