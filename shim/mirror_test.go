package shim

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/bayesperf/bayesperf/perfabi"
)

func page(t testing.TB) []byte {
	// A []uint64 backing array is 8-byte aligned, like a page mapping.
	return func() []byte {
		w := make([]uint64, PageSize/8)
		return unsafeBytes(w)
	}()
}

func TestMirrorPublishSnapshot(t *testing.T) {
	m, err := NewMirror(page(t))
	if err != nil {
		t.Fatal(err)
	}
	m.Init(perfabi.FormatGroup | perfabi.FormatID)
	h, _, ok := m.Snapshot()
	if !ok || h.State != MirrorEmpty || h.Magic != MirrorMagic || h.ReadFormat != perfabi.FormatGroup|perfabi.FormatID {
		t.Fatalf("fresh page: %+v ok=%v", h, ok)
	}
	v := Values{Enabled: 10, Running: 9, Members: []MirrorValue{{Value: 5, ID: 100}, {Value: 6, ID: 101}, {Value: 7, ID: 102}}}
	m.Publish(MirrorOK, MirrorFinal, 1234, v)
	h, got, ok := m.Snapshot()
	if !ok || h.State != MirrorOK || h.Flags != MirrorFinal || h.UpdateNs != 1234 || h.Nr != 3 || h.Generation != 1 || h.Seq != 2 {
		t.Fatalf("after publish: %+v ok=%v", h, ok)
	}
	if got.Enabled != 10 || got.Running != 9 || len(got.Members) != 3 || got.Members[2] != (MirrorValue{Value: 7, ID: 102}) {
		t.Errorf("snapshot %+v, want %+v", got, v)
	}
	// A group too big for the page is not truncated: the shim is told to read the kernel.
	m.Publish(MirrorOK, 0, 1, Values{Members: make([]MirrorValue, MirrorMaxValues+1)})
	if h, _, _ := m.Snapshot(); h.State != MirrorKernel || h.Nr != 0 {
		t.Errorf("oversized group published as %+v, want state MirrorKernel nr 0", h)
	}
}

// TestMirrorSeqlockConsistent has one writer publish values whose fields are all equal
// and readers check they never see a mix of two publishes.
func TestMirrorSeqlockConsistent(t *testing.T) {
	m, _ := NewMirror(page(t))
	m.Init(perfabi.FormatGroup)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var torn, reads atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				h, v, ok := m.Snapshot()
				if !ok || h.State != MirrorOK {
					continue
				}
				reads.Add(1)
				for _, mv := range v.Members {
					if mv.Value != v.Enabled || mv.ID != v.Enabled {
						torn.Add(1)
					}
				}
			}
		}()
	}
	members := make([]MirrorValue, 8)
	for i := uint64(1); i <= 20000; i++ {
		for j := range members {
			members[j] = MirrorValue{Value: i, ID: i}
		}
		m.Publish(MirrorOK, 0, i, Values{Enabled: i, Running: i, Members: members})
	}
	stop.Store(true)
	wg.Wait()
	if torn.Load() != 0 {
		t.Errorf("%d torn members seen in %d reads", torn.Load(), reads.Load())
	}
}

func BenchmarkMirrorSnapshot(b *testing.B) {
	m, _ := NewMirror(page(b))
	m.Init(perfabi.FormatTotalTimeEnabled | perfabi.FormatTotalTimeRunning)
	m.Publish(MirrorOK, 0, 1, Values{Enabled: 1, Running: 1, Members: []MirrorValue{{Value: 1}}})
	b.ReportAllocs()
	for b.Loop() {
		m.Snapshot()
	}
}
