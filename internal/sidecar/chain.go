package sidecar

import (
	"strings"
	"time"

	"github.com/bayesperf/bayesperf/shim"
)

// Chain runs stages one after the other on the same values: each corrects what the one
// before it left. It forwards the optional interfaces the server asks for: CorrectCall
// to every CallCorrector (Correct to the others), Forget to every Forgetter,
// Unregistered to every Unregisterer, Sample to every Sampler, KernelExact only when
// every stage is, Pace as the shortest any stage asks, Sync when any stage asks. (`bayesperf run --virtual-counters N
// --infer-from values` chains the virtual PMU, which presents what a multiplexing
// kernel would, and the stage that corrects the kernel's multiplexing from those
// values alone.)
type Chain []Stage

var (
	_ Stage         = Chain(nil)
	_ CallCorrector = Chain(nil)
	_ Forgetter     = Chain(nil)
	_ Unregisterer  = Chain(nil)
	_ KernelExact   = Chain(nil)
	_ Pacer         = Chain(nil)
	_ Syncer        = Chain(nil)
	_ Sampler       = Chain(nil)
)

// Name joins the stages' names with "+".
func (ch Chain) Name() string {
	names := make([]string, len(ch))
	for i, st := range ch {
		names[i] = st.Name()
	}
	return strings.Join(names, "+")
}

// Correct runs every stage in order.
func (ch Chain) Correct(timeNs int64, events []Event, values []shim.Values) {
	for _, st := range ch {
		st.Correct(timeNs, events, values)
	}
}

// CorrectCall runs every stage in order, telling those that ask what the call is.
func (ch Chain) CorrectCall(timeNs int64, call Call, events []Event, values []shim.Values) {
	for _, st := range ch {
		correctStage(st, timeNs, call, events, values)
	}
}

// Sample tells every stage that samples its own counters before a call.
func (ch Chain) Sample(call Call, events []Event) {
	for _, st := range ch {
		if sp, ok := st.(Sampler); ok {
			sp.Sample(call, events)
		}
	}
}

// Unregistered tells every stage that keeps per-event state.
func (ch Chain) Unregistered(e Event) {
	for _, st := range ch {
		if u, ok := st.(Unregisterer); ok {
			u.Unregistered(e)
		}
	}
}

// Forget tells every stage that keeps per-client state.
func (ch Chain) Forget(client int) {
	for _, st := range ch {
		if f, ok := st.(Forgetter); ok {
			f.Forget(client)
		}
	}
}

// KernelExact is true when every stage publishes the kernel's values unchanged.
func (ch Chain) KernelExact() bool {
	for _, st := range ch {
		if ke, ok := st.(KernelExact); !ok || !ke.KernelExact() {
			return false
		}
	}
	return true
}

// Sync is true when a stage says so.
func (ch Chain) Sync(e Event) bool {
	for _, st := range ch {
		if sy, ok := st.(Syncer); ok && sy.Sync(e) {
			return true
		}
	}
	return false
}

// Pace is the shortest period any stage asks for the client (0: none asks).
func (ch Chain) Pace(client int) time.Duration {
	var out time.Duration
	for _, st := range ch {
		if p, ok := st.(Pacer); ok {
			if d := p.Pace(client); d > 0 && (out == 0 || d < out) {
				out = d
			}
		}
	}
	return out
}
