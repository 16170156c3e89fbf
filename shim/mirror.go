package shim

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// Mirror is the sidecar's view of one counting mirror page (struct bp_mirror_page),
// usually in a shared memfd mapping. The sidecar is the page's only writer and plays the
// kernel's part: it publishes values under the page's seqlock, and the shim in the tool
// copies them out without a system call.
//
// Memory ordering (pairs with mirror_copy and fast_copy in shim/preload/read.c): Publish
// makes seq odd, stores the fields, then makes seq even, every store a sequentially
// consistent atomic, so a reader that loads seq with acquire semantics, copies the fields
// and loads seq again after an acquire fence sees either all of one publish or a changed
// seq. Only one goroutine may call Publish at a time; Snapshot may run anywhere,
// concurrently.
type Mirror struct {
	p *MirrorPage
}

// NewMirror wraps mem, which must be at least PageSize bytes and 8-byte aligned (a page
// mapping is), and must outlive the Mirror.
func NewMirror(mem []byte) (*Mirror, error) {
	if len(mem) < PageSize {
		return nil, fmt.Errorf("wrap mirror page: %d bytes, want %d", len(mem), PageSize)
	}
	if uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return nil, fmt.Errorf("wrap mirror page: memory not 8-byte aligned")
	}
	return &Mirror{p: (*MirrorPage)(unsafe.Pointer(&mem[0]))}, nil
}

// Init marks a fresh page as a mirror of an event with readFormat that has no values yet.
func (m *Mirror) Init(readFormat uint64) {
	h := &m.p.Hdr
	atomic.StoreUint64(&h.ReadFormat, readFormat)
	atomic.StoreUint32(&h.State, MirrorEmpty)
	atomic.StoreUint32(&h.Magic, MirrorMagic)
}

// Publish stores one read under the seqlock. State MirrorOK requires 1 ≤ len(v.Members) ≤
// MirrorMaxValues; with more members the page is published as MirrorKernel instead, so the
// shim reads the kernel rather than a truncated group.
func (m *Mirror) Publish(state, flags uint32, nowNs uint64, v Values) {
	if state == MirrorOK && (len(v.Members) == 0 || len(v.Members) > MirrorMaxValues) {
		state = MirrorKernel
	}
	h := &m.p.Hdr
	seq := atomic.LoadUint32(&h.Seq)
	if seq&1 != 0 { // a writer died mid-publish (cannot happen in-process); restart even
		seq++
	}
	atomic.StoreUint32(&h.Seq, seq+1)
	atomic.StoreUint32(&h.State, state)
	atomic.StoreUint32(&h.Flags, flags)
	atomic.StoreUint64(&h.UpdateNs, nowNs)
	atomic.StoreUint64(&h.Enabled, v.Enabled)
	atomic.StoreUint64(&h.Running, v.Running)
	nr := 0
	if state == MirrorOK {
		nr = len(v.Members)
		for i, mv := range v.Members {
			d := &m.p.Values[i]
			atomic.StoreUint64(&d.Value, mv.Value)
			atomic.StoreUint64(&d.ID, mv.ID)
			atomic.StoreUint64(&d.Lost, mv.Lost)
		}
	}
	atomic.StoreUint32(&h.Nr, uint32(nr))
	atomic.AddUint64(&h.Generation, 1)
	atomic.StoreUint32(&h.Seq, seq+2)
}

// Snapshot copies a consistent view of the page, as the shim does. ok is false when no
// consistent copy could be taken in a bounded number of tries (a writer stuck mid-publish).
func (m *Mirror) Snapshot() (h MirrorHdr, v Values, ok bool) {
	src := &m.p.Hdr
	for try := 0; try < 1000; try++ {
		s1 := atomic.LoadUint32(&src.Seq)
		if s1&1 != 0 {
			runtime.Gosched()
			continue
		}
		h = MirrorHdr{
			Seq:        s1,
			Magic:      atomic.LoadUint32(&src.Magic),
			State:      atomic.LoadUint32(&src.State),
			Flags:      atomic.LoadUint32(&src.Flags),
			UpdateNs:   atomic.LoadUint64(&src.UpdateNs),
			ReadFormat: atomic.LoadUint64(&src.ReadFormat),
			Enabled:    atomic.LoadUint64(&src.Enabled),
			Running:    atomic.LoadUint64(&src.Running),
			Nr:         atomic.LoadUint32(&src.Nr),
			Generation: atomic.LoadUint64(&src.Generation),
		}
		nr := min(int(h.Nr), MirrorMaxValues)
		v = Values{Enabled: h.Enabled, Running: h.Running, Members: make([]MirrorValue, nr)}
		for i := range v.Members {
			s := &m.p.Values[i]
			v.Members[i] = MirrorValue{Value: atomic.LoadUint64(&s.Value), ID: atomic.LoadUint64(&s.ID), Lost: atomic.LoadUint64(&s.Lost)}
		}
		if atomic.LoadUint32(&src.Seq) == s1 {
			return h, v, true
		}
	}
	return h, v, false
}

// ClientCounters reads the counters the shim keeps in a client page (struct
// bp_client_page), atomically field by field. MirrorReads is the total: the field plus
// every per-thread shard (the returned shards are zero).
func ClientCounters(mem []byte) (ClientPage, error) {
	var c ClientPage
	if len(mem) < int(unsafe.Sizeof(c)) || uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return c, fmt.Errorf("read client page: %d bytes or unaligned", len(mem))
	}
	p := (*ClientPage)(unsafe.Pointer(&mem[0]))
	c.Magic = atomic.LoadUint32(&p.Magic)
	c.Version = atomic.LoadUint32(&p.Version)
	c.MirrorReads = atomic.LoadUint64(&p.MirrorReads)
	for i := range p.MirrorReadShards {
		c.MirrorReads += atomic.LoadUint64(&p.MirrorReadShards[i])
	}
	c.PassthroughReads = atomic.LoadUint64(&p.PassthroughReads)
	c.SyncRefreshes = atomic.LoadUint64(&p.SyncRefreshes)
	c.RingFlushes = atomic.LoadUint64(&p.RingFlushes)
	c.SelfReads = atomic.LoadUint64(&p.SelfReads)
	c.PreciseClockReads = atomic.LoadUint64(&p.PreciseClockReads)
	c.SelfPauses = atomic.LoadUint64(&p.SelfPauses)
	return c, nil
}

// ClientIoctlCount returns how many perf ioctls of the event with handle h that change
// what it counts the shim has counted in the client page mem (struct bp_client_page):
// resets (PERF_EVENT_IOC_RESET) and switches (ENABLE, DISABLE, REFRESH), each modulo
// 2^16; ok is false for a handle it does not count them for (0, or ClientIoctls and
// above) or a page too short.
func ClientIoctlCount(mem []byte, h uint32) (resets, switches uint16, ok bool) {
	if h == 0 || h >= ClientIoctls || len(mem) < int(unsafe.Sizeof(ClientPage{})) || uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return 0, 0, false
	}
	p := (*ClientPage)(unsafe.Pointer(&mem[0]))
	n := atomic.LoadUint32(&p.Ioctls[h])
	return uint16(n), uint16(n >> 16), true
}

// InitClientPage stamps a fresh client page with its magic and version.
func InitClientPage(mem []byte) error {
	if len(mem) < int(unsafe.Sizeof(ClientPage{})) || uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
		return fmt.Errorf("init client page: %d bytes or unaligned", len(mem))
	}
	p := (*ClientPage)(unsafe.Pointer(&mem[0]))
	atomic.StoreUint32(&p.Version, uint32(ABIVersion))
	atomic.StoreUint32(&p.Magic, ClientMagic)
	return nil
}

// unsafeBytes views a []uint64 as bytes (8-byte aligned memory for tests and callers that
// need a private page).
func unsafeBytes(w []uint64) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
}
