package kstage

import (
	"math"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/bayesperf/bayesperf/inference/relation"
	"github.com/bayesperf/bayesperf/internal/perf"
	"github.com/bayesperf/bayesperf/internal/sidecar"
	"github.com/bayesperf/bayesperf/perfabi"
	"github.com/bayesperf/bayesperf/shim"
)

// kernel simulates what the sidecar reads of one client's events on a PMU that
// multiplexes them: every round 1 ms of the target's time passes; an event counts (and
// its running time advances) only in the rounds on(round, j) says; its true count grows
// by rate(round, j) per round either way.
type kernel struct {
	t      *testing.T
	st     *Stage
	evs    []sidecar.Event
	groups map[uint32][]int // leader handle -> indices of the group, leader first
	rate   func(round, j int) float64
	on     func(round, j int) bool

	sub int // sub-steps per round: on is asked per sub-step (rotations inside rounds)
	// told passes the stage what each call is (CorrectCall: step a round, read a
	// read), as the sidecar does; else Correct, which guesses.
	told    bool
	closed  map[int]bool // events the tool closed (close): in no call since
	round   int
	enabled uint64
	running []uint64
	value   []uint64
	counted []float64 // what the kernel counted, before rounding to value
	truth   []float64
	pub     []uint64 // last value published per event
}

func newKernel(t *testing.T, pid int32, configs []uint64) *kernel {
	k := &kernel{t: t, st: &Stage{Relations: relation.Builtins(), Unit: 4 * time.Millisecond}, groups: map[uint32][]int{}}
	for j, c := range configs {
		k.evs = append(k.evs, sidecar.Event{Client: 1, ClientPid: int32(os.Getpid()), Handle: uint32(j + 1), Pid: pid, CPU: -1,
			Attr: shim.Attr{Type: perf.TypeSoftware, Config: c, ReadFormat: perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning | perfabi.FormatID | perfabi.FormatLost}})
	}
	k.running, k.value, k.truth, k.pub = make([]uint64, len(configs)), make([]uint64, len(configs)), make([]float64, len(configs)), make([]uint64, len(configs))
	k.counted = make([]float64, len(configs))
	return k
}

// group makes events idx (leader first) a group read with PERF_FORMAT_GROUP.
func (k *kernel) group(idx ...int) {
	lead := k.evs[idx[0]].Handle
	for _, j := range idx {
		k.evs[j].Attr.ReadFormat |= perfabi.FormatGroup
		if j != idx[0] {
			k.evs[j].GroupHandle = lead
		}
	}
	k.groups[lead] = idx
}

// values is what the sidecar reads for events sel now.
func (k *kernel) values(sel []int) ([]sidecar.Event, []shim.Values) {
	var evs []sidecar.Event
	var vals []shim.Values
	for _, j := range sel {
		e := k.evs[j]
		members := []int{j}
		if e.Attr.ReadFormat&perfabi.FormatGroup != 0 {
			lead := e.Handle
			if e.GroupHandle != 0 {
				lead = e.GroupHandle
			}
			members = k.groups[lead]
		}
		v := shim.Values{Enabled: k.enabled, Running: k.running[members[0]]}
		for _, m := range members {
			v.Members = append(v.Members, shim.MirrorValue{Value: k.value[m], ID: 1000 + uint64(m), Lost: 7})
		}
		evs, vals = append(evs, e), append(vals, v)
	}
	return evs, vals
}

// step advances one round and runs the stage's periodic round; it returns what the
// kernel gave and what the stage published.
func (k *kernel) step() (kern, got []shim.Values) {
	sub := max(k.sub, 1)
	for j := range k.evs {
		r := k.rate(k.round, j) / float64(sub)
		for q := range sub {
			k.truth[j] += r
			if k.on(k.round*sub+q, j) {
				k.counted[j] += r
				k.value[j] = uint64(k.counted[j])
				k.running[j] += 1e6 / uint64(sub)
			}
		}
	}
	k.enabled += 1e6
	k.round++
	var all []int
	for j := range k.evs {
		if !k.closed[j] {
			all = append(all, j)
		}
	}
	return k.call(sidecar.CallRound, all)
}

// close closes event j as the tool does: the sidecar unregisters it.
func (k *kernel) close(j int) {
	if k.closed == nil {
		k.closed = map[int]bool{}
	}
	k.closed[j] = true
	k.st.Unregistered(k.evs[j])
}

// call is correct, told what the call is when k.told.
func (k *kernel) call(c sidecar.Call, sel []int) (kern, got []shim.Values) {
	k.t.Helper()
	if !k.told {
		c = 0
	}
	return k.correctAs(c, sel)
}

// correct passes events sel to the stage and checks what holds of every publication:
// IDs and lost counts are the kernel's, values never decrease.
func (k *kernel) correct(sel []int) (kern, got []shim.Values) {
	k.t.Helper()
	return k.correctAs(0, sel)
}

// correctAs is correct through CorrectCall as call c (0: through Correct).
func (k *kernel) correctAs(c sidecar.Call, sel []int) (kern, got []shim.Values) {
	k.t.Helper()
	evs, vals := k.values(sel)
	_, kern = k.values(sel)
	if c == 0 {
		k.st.Correct(0, evs, vals)
	} else {
		k.st.CorrectCall(0, c, evs, vals)
	}
	for i, v := range vals {
		if len(v.Members) != len(kern[i].Members) {
			k.t.Fatalf("round %d: event %d: %d members published, the kernel gave %d", k.round, sel[i], len(v.Members), len(kern[i].Members))
		}
		for m, mv := range v.Members {
			if mv.ID != kern[i].Members[m].ID || mv.Lost != kern[i].Members[m].Lost {
				k.t.Errorf("round %d: event %d member %d: id %d lost %d published, the kernel's are %d and %d", k.round, sel[i], m, mv.ID, mv.Lost, kern[i].Members[m].ID, kern[i].Members[m].Lost)
			}
		}
		if j := sel[i]; len(v.Members) == 1 {
			if v.Members[0].Value < k.pub[j] {
				k.t.Errorf("round %d: event %d published %d after %d", k.round, j, v.Members[0].Value, k.pub[j])
			}
			k.pub[j] = v.Members[0].Value
		}
	}
	return kern, vals
}

// read is what the tool gets when it reads events sel one by one (each read a refresh,
// as MirrorSync makes it), and what the kernel had.
func (k *kernel) read(sel ...int) (kern, got []shim.Values) {
	for _, j := range sel {
		kv, gv := k.call(sidecar.CallRead, []int{j})
		kern, got = append(kern, kv...), append(got, gv...)
	}
	return kern, got
}

// TestNeverMultiplexed: events that always count are published bit for bit, in rounds
// and refreshes, and the stage asks only for the watch's rounds, not one per rotation.
func TestNeverMultiplexed(t *testing.T) {
	k := newKernel(t, int32(os.Getpid()), []uint64{perf.SWTaskClock, perf.SWPageFaults, perf.SWPageFaultsMin})
	k.rate = func(r, j int) float64 { return float64(10 * (j + 1) * (1 + r%3)) }
	k.on = func(int, int) bool { return true }
	k.group(1, 2)
	for range 50 {
		kern, got := k.step()
		if !reflect.DeepEqual(kern, got) {
			t.Fatalf("round %d: published %+v, the kernel's values are %+v", k.round, got, kern)
		}
		kern, got = k.correct([]int{1})
		if !reflect.DeepEqual(kern, got) {
			t.Fatalf("refresh after round %d: published %+v, the kernel's values are %+v", k.round, got, kern)
		}
	}
	if p := k.st.Pace(1); p != watchEvery {
		t.Errorf("pace %v for a client never multiplexed, want the watch's %v (not every rotation)", p, watchEvery)
	}
	if k.st.Sync(k.evs[1]) {
		t.Errorf("Sync for an event never multiplexed: its reads need no refresh")
	}
}

// mixed is a client of 6 software events on 2 counters, rotated every 4 rounds as the
// kernel rotates single-event groups; page-faults = minor-faults + major-faults holds
// and page-faults' rate triples halfway; cpu-migrations is never scheduled (nothing
// ties it to the others, so the model knows nothing of it).
func mixed(t *testing.T, pid int32) *kernel {
	k := newKernel(t, pid, []uint64{perf.SWTaskClock, perf.SWPageFaults, perf.SWPageFaultsMin, perf.SWPageFaultsMaj, perf.SWContextSwitches, perf.SWCPUMigrations})
	k.rate = func(r, j int) float64 {
		phase := 1.0
		if r >= 200 {
			phase = 3
		}
		switch j {
		case 0:
			return 1e6 // task-clock: ns of running
		case 1:
			return 40*phase + 2
		case 2:
			return 40 * phase
		case 3:
			return 2
		case 4:
			return 5 + float64(r%7)
		}
		return 3
	}
	k.on = func(r, j int) bool {
		if j == 5 {
			return false
		}
		rot := (r / 4) % 5 // 5 events on 2 counters: slots (0,1) (2,3) (4,0) (1,2) (3,4)
		return j == (2*rot)%5 || j == (2*rot+1)%5
	}
	return k
}

// TestMultiplexed: multiplexed events are published as the model's running totals with
// time_running = time_enabled, monotonically, close to the truth; the never-scheduled
// event keeps the kernel's values; a refresh adds the kernel's scaled delta since the
// round.
func TestMultiplexed(t *testing.T) {
	k := mixed(t, int32(os.Getpid()))
	for range 400 {
		k.step()
	}
	if p := k.st.Pace(1); p != 4*time.Millisecond {
		t.Errorf("pace %v while correcting, want the multiplexing interval 4ms", p)
	}
	if !k.st.Sync(k.evs[1]) {
		t.Errorf("no Sync for a corrected event: reads would not ask for the smoothed totals")
	}
	kern, got := k.read(0, 1, 2, 3, 4, 5)
	// The totals track the truth (the kernel's scaling is nearly exact on these
	// steady rates; the end-to-end test compares the two on a real workload).
	for j := range 5 {
		v := got[j]
		if v.Running != v.Enabled || v.Enabled != kern[j].Enabled {
			t.Errorf("event %d: enabled %d running %d published, want running = enabled = the kernel's %d", j, v.Enabled, v.Running, kern[j].Enabled)
		}
		b := float64(v.Members[0].Value)
		if math.Abs(b-k.truth[j]) > 0.03*k.truth[j] {
			t.Errorf("event %d: total %.0f, truth %.0f: off by more than 3%%", j, b, k.truth[j])
		}
		if j > 0 && v.Members[0].Value == kern[j].Members[0].Value {
			t.Errorf("event %d: published the kernel's raw value %d: not corrected", j, v.Members[0].Value)
		}
	}
	if !reflect.DeepEqual(got[5], kern[5]) {
		t.Errorf("the never-scheduled event: published %+v, want the kernel's %+v", got[5], kern[5])
	}
	// A refresh of page-faults after it counted 3 ms of 4 since the round: the
	// round's value plus the kernel's delta scaled by 4/3.
	before := k.pub[1]
	k.counted[1] += 300
	k.value[1] += 300
	k.running[1] += 3e6
	k.enabled += 4e6
	_, r := k.correct([]int{1})
	if want := before + 400; r[0].Members[0].Value != want || r[0].Running != r[0].Enabled {
		t.Errorf("refresh: published %d (running %d, enabled %d), want %d with running = enabled", r[0].Members[0].Value, r[0].Running, r[0].Enabled, want)
	}
}

// TestGroupMembers: a group read is corrected member by member, the same whichever
// member's fd is read; members the model knows nothing of keep the kernel's values.
func TestGroupMembers(t *testing.T) {
	k := mixed(t, int32(os.Getpid()))
	k.group(1, 2, 3) // page-faults, minor-faults, major-faults: scheduled together
	k.on = func(r, j int) bool {
		switch j {
		case 5:
			return false
		case 1, 2, 3:
			return (r/4)%3 == 0
		}
		return (r/4)%3 != 0
	}
	for range 300 {
		k.step()
	}
	kern, got := k.read(0, 1, 2, 3, 4, 5)
	lead, member := got[1], got[2]
	if !reflect.DeepEqual(lead, member) {
		t.Errorf("the group read through the leader %+v and through a member %+v differ", lead, member)
	}
	if lead.Running != lead.Enabled {
		t.Errorf("group: running %d, enabled %d: want equal once corrected", lead.Running, lead.Enabled)
	}
	for m, j := range []int{1, 2, 3} {
		b, kv := float64(lead.Members[m].Value), float64(kern[1].Members[m].Value)
		lx := kv * float64(kern[1].Enabled) / float64(kern[1].Running)
		if math.Abs(b-k.truth[j]) > math.Max(0.05*k.truth[j], math.Abs(lx-k.truth[j])) {
			t.Errorf("member %d: bayesperf %.0f, linux %.0f, truth %.0f", m, b, lx, k.truth[j])
		}
		if b == kv {
			t.Errorf("member %d: published the kernel's raw %v: not corrected", m, kv)
		}
	}
	if !reflect.DeepEqual(got[5], kern[5]) {
		t.Errorf("the never-scheduled event: published %+v, want the kernel's %+v", got[5], kern[5])
	}
}

// TestFinalTotals: once the target is gone, reads get the smoother's final totals (no
// lower than what was published), and the stage stops asking for rounds.
func TestFinalTotals(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("cannot run true:", err)
	}
	pid := int32(cmd.Process.Pid) // reaped: gone
	k := mixed(t, pid)
	// The target is "alive" for the stage while it runs: the exit check looks only
	// when the target did not run or at a refresh, which this test does last.
	for range 300 {
		k.step()
	}
	before := slicesOf(k.st)
	k.correct([]int{0, 1, 2, 3, 4}) // a round in which nothing ran: the target is gone
	_, r := k.correct([]int{4})
	if p := k.st.Pace(1); p != 0 {
		t.Errorf("pace %v after the target is gone, want 0", p)
	}
	if r[0].Running != r[0].Enabled {
		t.Errorf("final read: running %d enabled %d", r[0].Running, r[0].Enabled)
	}
	if before == 0 {
		t.Fatalf("no slice was fed")
	}
	for j := range 5 {
		if b := float64(k.pub[j]); math.Abs(b-k.truth[j]) > 0.05*k.truth[j] {
			t.Errorf("event %d: final %v, truth %.0f", j, b, k.truth[j])
		}
	}
}

func slicesOf(s *Stage) int {
	for _, c := range s.clients {
		for _, t := range c.targets {
			return t.fd.Slices
		}
	}
	return 0
}

// TestRotationInsideRounds: rotations that fall inside rounds (every 3.5 rounds) are
// cut out of them: about one slice per rotation, totals close to the truth.
func TestRotationInsideRounds(t *testing.T) {
	k := mixed(t, int32(os.Getpid()))
	k.sub = 4
	k.on = func(q, j int) bool { // q counts quarter rounds; a rotation every 14
		if j == 5 {
			return false
		}
		rot := (q / 14) % 5
		return j == (2*rot)%5 || j == (2*rot+1)%5
	}
	for range 700 {
		k.step()
	}
	_, got := k.read(0, 1, 2, 3, 4)
	rotations := 700 * 4 / 14
	if n := slicesOf(k.st); n < rotations*9/10 || n > rotations*11/10 {
		t.Errorf("%d slices for %d rotations: the rounds are not cut at the rotations", n, rotations)
	}
	for j := range 5 {
		if b := float64(got[j].Members[0].Value); math.Abs(b-k.truth[j]) > 0.03*k.truth[j] {
			t.Errorf("event %d: total %.0f, truth %.0f: off by more than 3%%", j, b, k.truth[j])
		}
	}
}

// TestRoundsKeepReads: while a target is corrected, periodic rounds publish the last
// read's values (no read serves them without a refresh, and a round's own totals could
// be above what the next read gets), and each read gets the smoother's running totals,
// never lower than before.
func TestRoundsKeepReads(t *testing.T) {
	k := mixed(t, int32(os.Getpid()))
	for range 100 {
		k.step()
	}
	_, r := k.read(1)
	first := r[0].Members[0].Value
	if r[0].Running != r[0].Enabled || math.Abs(float64(first)-k.truth[1]) > 0.05*k.truth[1] {
		t.Errorf("read: %d (running %d enabled %d), truth %.0f", first, r[0].Running, r[0].Enabled, k.truth[1])
	}
	for range 50 {
		_, got := k.step()
		if got[1].Members[0].Value != first {
			t.Fatalf("round %d published %d, want the last read's %d", k.round, got[1].Members[0].Value, first)
		}
	}
	_, r = k.read(1)
	if v := r[0].Members[0].Value; v < first || math.Abs(float64(v)-k.truth[1]) > 0.05*k.truth[1] {
		t.Errorf("second read: %d after %d, truth %.0f", v, first, k.truth[1])
	}
}

// mixedLate is mixed on this process with its fifth event held back, to be registered
// late, after 100 rounds of the first four.
func mixedLate(t *testing.T) (*kernel, sidecar.Event) {
	k := mixed(t, int32(os.Getpid()))
	late := k.evs[4]
	k.evs = k.evs[:4]
	for range 100 {
		k.step()
	}
	return k, late
}

// TestLateEvent: an event registered after the target's model started joins a rebuilt
// model; values stay monotonic and the totals close to the truth.
func TestLateEvent(t *testing.T) {
	k, late := mixedLate(t)
	k.evs = append(k.evs, late)
	for range 300 {
		k.step()
	}
	_, got := k.read(0, 1, 2, 3, 4)
	for j := range 4 {
		if b := float64(got[j].Members[0].Value); math.Abs(b-k.truth[j]) > 0.05*k.truth[j] {
			t.Errorf("event %d: total %.0f, truth %.0f", j, b, k.truth[j])
		}
	}
	if got[4].Running != got[4].Enabled {
		t.Errorf("the late event is not corrected: %+v", got[4])
	}
}

// TestSelfTargetsLeftAlone: with SelfFromKernel, events counting the tool itself (pid 0
// here) are read by the shim from the kernel, so the stage leaves them, multiplexed
// or not: no model, no pacing, the kernel's values.
func TestSelfTargetsLeftAlone(t *testing.T) {
	k := mixed(t, 0)
	k.st.SelfFromKernel = true
	for range 100 {
		kern, got := k.step()
		if !reflect.DeepEqual(kern, got) {
			t.Fatalf("round %d: published %+v, the kernel's values are %+v", k.round, got, kern)
		}
	}
	if k.st.Pace(1) != 0 || k.st.Sync(k.evs[1]) {
		t.Errorf("a target left alone is paced (%v) or synced (%v)", k.st.Pace(1), k.st.Sync(k.evs[1]))
	}
}

// TestSingleEventClient: a client with one event has every call be both a round and a
// read (the refresh of its only event); once corrected, its reads must still follow the
// count rather than keep the value published before the model started.
func TestSingleEventClient(t *testing.T) {
	k := newKernel(t, int32(os.Getpid()), []uint64{perf.SWPageFaults})
	k.rate = func(int, int) float64 { return 100 }
	k.on = func(r, _ int) bool { return (r/4)%2 == 0 } // on half the time: multiplexed
	for range 200 {
		k.step()
	}
	if !k.st.Sync(k.evs[0]) {
		t.Fatalf("the event is not corrected after 200 multiplexed rounds")
	}
	_, got := k.step()
	if b := float64(got[0].Members[0].Value); math.Abs(b-k.truth[0]) > 0.05*k.truth[0] {
		t.Errorf("read of the only event: %.0f, truth %.0f", b, k.truth[0])
	}
}

// TestReadAfterRebuild: a read right after a late event rebuilt the model (before the
// new model has a slice) gets the totals as of now, not the smoother's totals of the
// last read before the rebuild.
func TestReadAfterRebuild(t *testing.T) {
	k, late := mixedLate(t)
	k.read(1) // the smoother's totals as of round 100
	for range 200 {
		k.step()
	}
	k.evs = append(k.evs, late)
	k.step() // the late event: the model is rebuilt
	_, got := k.read(1)
	if b := float64(got[0].Members[0].Value); math.Abs(b-k.truth[1]) > 0.05*k.truth[1] {
		t.Errorf("read after the rebuild: %.0f, truth %.0f", b, k.truth[1])
	}
}

// TestOffAfterCorrection: a target that goes over MaxEvents after its events were
// corrected (a late event) falls back to the kernel's values scaled as the tool would
// scale them, with time_running still equal to time_enabled (going back to the
// kernel's running time would make it decrease) and values that keep following the
// count, never below what was published.
func TestOffAfterCorrection(t *testing.T) {
	k := mixed(t, int32(os.Getpid()))
	k.st.MaxEvents = 5
	late := k.evs[5]
	k.evs = k.evs[:5]
	for range 100 {
		k.step()
	}
	k.read(0, 1, 2, 3, 4)
	k.evs = append(k.evs, late) // 6 events: more than MaxEvents
	for range 200 {
		k.step()
	}
	kern, got := k.read(1)
	if got[0].Running != got[0].Enabled {
		t.Errorf("running %d, enabled %d: a corrected event's running time went back to the kernel's", got[0].Running, got[0].Enabled)
	}
	lx := float64(kern[0].Members[0].Value) * float64(kern[0].Enabled) / float64(kern[0].Running)
	if b := float64(got[0].Members[0].Value); math.Abs(b-lx) > 0.01*lx {
		t.Errorf("after the fallback: %.0f published, the kernel's scaled value is %.0f (truth %.0f)", b, lx, k.truth[1])
	}
	if p := k.st.Pace(1); p != 0 || k.st.Sync(k.evs[1]) {
		t.Errorf("a target no longer corrected is paced (%v) or synced (%v)", p, k.st.Sync(k.evs[1]))
	}
}

// TestClosedEvents: a client of three multiplexed events closes one, then another. Each
// close rebuilds the target's model over the events left, and the later rounds keep
// feeding it, also once a single event is left (its rounds pass as many events as a
// read: the sidecar says which they are); reads stay close to the truth.
func TestClosedEvents(t *testing.T) {
	k := newKernel(t, int32(os.Getpid()), []uint64{perf.SWPageFaults, perf.SWPageFaultsMin, perf.SWContextSwitches})
	k.told = true
	k.rate = func(r, j int) float64 { return float64(50*(j+1)) * (1 + 0.5*float64((r/50)%2)) }
	k.on = func(r, j int) bool { return (r/4)%3 != j } // 3 events on 2 counters, rotated every 4 rounds
	tgt := func() *target { return k.st.clients[1].targets[targetKey{k.evs[0].Pid, -1}] }
	check := func(when string, events int, live ...int) {
		t.Helper()
		tg := tgt()
		if tg == nil || tg.md == nil {
			t.Fatalf("%s: no model", when)
		}
		if tg.md.Events() != events || len(tg.handles) != events {
			t.Errorf("%s: a model of %d events for %d handles, want %d", when, tg.md.Events(), len(tg.handles), events)
		}
		before := tg.fd.Slices
		for range 150 {
			k.step()
		}
		if n := tgt().fd.Slices - before; n < 150/8 {
			t.Errorf("%s: %d slices fed in 150 rounds: the rounds do not feed the model", when, n)
		}
		if !k.st.Sync(k.evs[live[0]]) || k.st.Pace(1) == 0 {
			t.Errorf("%s: the target is no longer corrected (sync %v, pace %v)", when, k.st.Sync(k.evs[live[0]]), k.st.Pace(1))
		}
		_, got := k.read(live...)
		for i, j := range live {
			if b := float64(got[i].Members[0].Value); math.Abs(b-k.truth[j]) > 0.03*k.truth[j] {
				t.Errorf("%s: event %d: total %.0f, truth %.0f: off by more than 3%%", when, j, b, k.truth[j])
			}
		}
	}
	for range 100 {
		k.step()
	}
	check("three events", 3, 0, 1, 2)
	k.close(1)
	check("after closing one", 2, 0, 2)
	k.close(0)
	check("after closing two", 1, 2)
	if n := len(k.st.clients[1].events); n != 1 {
		t.Errorf("the client has %d events, want the one left", n)
	}
	k.close(2)
	if len(k.st.clients[1].targets) != 0 || k.st.Pace(1) != 0 {
		t.Errorf("every event closed: targets %v, pace %v; want none", k.st.clients[1].targets, k.st.Pace(1))
	}
}

// TestClosedLeavesExact: once the only multiplexed event is closed, the model is
// retired: what is left was never multiplexed and gets the kernel's values bit for
// bit, paced only by the watch.
func TestClosedLeavesExact(t *testing.T) {
	k := newKernel(t, int32(os.Getpid()), []uint64{perf.SWPageFaults, perf.SWContextSwitches})
	k.told = true
	k.rate = func(int, int) float64 { return 100 }
	k.on = func(r, j int) bool { return j == 0 || (r/4)%2 == 0 }
	for range 100 {
		k.step()
	}
	if !k.st.Sync(k.evs[1]) {
		t.Fatalf("the multiplexed event is not corrected after 100 rounds")
	}
	k.close(1)
	for range 20 {
		kern, got := k.step()
		if !reflect.DeepEqual(kern, got) {
			t.Fatalf("round %d: published %+v, the kernel's values are %+v", k.round, got, kern)
		}
	}
	if kern, got := k.read(0); !reflect.DeepEqual(kern, got) {
		t.Errorf("read: published %+v, the kernel's values are %+v", got, kern)
	}
	if p := k.st.Pace(1); p != watchEvery || k.st.Sync(k.evs[0]) {
		t.Errorf("a target left with exact events is paced at %v (want the watch's %v) or synced (%v)", p, watchEvery, k.st.Sync(k.evs[0]))
	}
}
