package sidecar

import (
	"strconv"
	"time"

	"github.com/bayesperf/bayesperf/shim"
)

// Event describes one registered perf event as the client opened it.
type Event struct {
	Client      int    // client id, unique within the server's life
	ClientPid   int32  // the tool process
	Handle      uint32 // the shim's handle, unique within its client
	GroupHandle uint32 // leader's handle, 0 when the event leads or is alone
	Pid         int32  // perf_event_open pid argument
	CPU         int32  // perf_event_open cpu argument
	Attr        shim.Attr
}

// Stage is the correction stage between the kernel's counts and the mirrors.
//
// Correct is called with events and the raw values just read from the kernel for them
// (same length, same order) at CLOCK_MONOTONIC time timeNs, and corrects values in place;
// what it leaves there is what the mirrors publish. A periodic round passes all live
// events of one client; a synchronous refresh passes only the event being read; an
// event's registration passes that event. A stage that must tell them apart implements
// CallCorrector, which the server calls instead of Correct with what the call is (from
// the number of events alone, a round of a client with one live event looks like a
// read).
// Members of a group read (PERF_FORMAT_GROUP) are in values[i].Members, leader first.
// A Stage must not keep the slices after returning. It is called for one client by one
// goroutine at a time (every call, the optional interfaces' included, names one client:
// a call's events are all that client's), and for different clients concurrently: it
// guards the state its clients share, and should not hold a lock shared by all of them
// across a system call.
//
// The virtual PMU (internal/vpmu/vstage) and the correction of the kernel's
// multiplexing (internal/kstage) implement Stage: a stage may replace a member's Value
// (and Enabled/Running, to present a multiplexed view) but must keep the slice lengths.
type Stage interface {
	Name() string
	Correct(timeNs int64, events []Event, values []shim.Values)
}

// Call says why the server calls a Stage.
type Call uint8

const (
	// CallRound is a periodic round: every live event of one client.
	CallRound Call = iota + 1
	// CallRead is a synchronous refresh (the shim's REFRESH before a tool's read): the
	// one event being read, the instant its values must refer to.
	CallRead
	// CallRegister is an event's first publication while it is being registered, before
	// the tool can read it: that event alone.
	CallRegister
)

func (c Call) String() string {
	switch c {
	case CallRound:
		return "round"
	case CallRead:
		return "read"
	case CallRegister:
		return "register"
	}
	return "call(" + strconv.Itoa(int(c)) + ")"
}

// CallCorrector is implemented by stages that need to know whether a call is a round
// or a read: the server then calls CorrectCall, with what the call is, instead of
// Correct. CorrectCall's contract is Correct's.
type CallCorrector interface {
	CorrectCall(timeNs int64, call Call, events []Event, values []shim.Values)
}

// correctStage runs st on one call: CorrectCall when st has it, else Correct.
func correctStage(st Stage, timeNs int64, call Call, events []Event, values []shim.Values) {
	if cc, ok := st.(CallCorrector); ok {
		cc.CorrectCall(timeNs, call, events, values)
		return
	}
	st.Correct(timeNs, events, values)
}

// Identity publishes the kernel's values unchanged.
type Identity struct{}

func (Identity) Name() string                          { return "identity" }
func (Identity) Correct(int64, []Event, []shim.Values) {}

// KernelExact is implemented by stages that publish the kernel's values unchanged
// (Identity), or that let reads of events counting the reader itself keep them (the
// drop-in path's correction of the kernel's multiplexing, internal/kstage). The shim
// may then read such events straight from the kernel; with any other stage it
// refreshes their mirrors synchronously, so that every value a tool sees went through
// the stage. Config.AllowUIDs needs such a stage: it opens no events of its own.
type KernelExact interface {
	KernelExact() bool
}

// KernelExact is true: Identity changes nothing.
func (Identity) KernelExact() bool { return true }

// Forgetter is implemented by stages that keep per-client state: the server calls
// Forget when a client is gone (its events are closed).
type Forgetter interface {
	Forget(client int)
}

// Unregisterer is implemented by stages that keep per-event state: the server calls
// Unregistered when a client unregisters an event (the tool closed its fd), after which
// no call passes it. An event kept alive by its mapped ring is unregistered at once all
// the same: it leaves the counting rounds then. The events of a client that is gone are
// not unregistered one by one: Forget is called.
type Unregisterer interface {
	Unregistered(e Event)
}

// Syncer is implemented by stages whose values for some events are estimates as of the
// instant a read asks for them (a running total that a read's refresh recomputes from
// everything seen so far): after each Correct the server marks those events' mirrors
// with shim.MirrorSync, and the shim then refreshes before every read of them
// whatever Config.StaleBound, so that every read of them is a synchronous refresh.
type Syncer interface {
	Sync(e Event) bool
}

// Pacer is implemented by stages that need the live events of some clients re-read at
// least every Pace(client) even while no client reads (Config.IdlePeriod would
// otherwise apply): a stage that infers from the successive values it is given needs
// them about as often as the kernel rotates its multiplexed events to see that
// rotation. 0 asks for nothing. The server asks after each periodic round of the
// client; a Pace only ever shortens the idle period: rounds still come no more often
// than Config.Period (a shorter Pace is rounded up to it), and never less often than
// they would without it.
type Pacer interface {
	Pace(client int) time.Duration
}

// Sampler is implemented by stages that compare counters of their own with the tool's
// events: the server calls Sample with a call's events just before it reads their
// kernel values (then calls Correct with them), so that what the stage reads in Sample
// is never more recent than the tool's counts it is given.
type Sampler interface {
	Sample(call Call, events []Event)
}
