package model

import (
	"math"
	"slices"

	"github.com/bayesperf/bayesperf/inference"
)

// history keeps, per slice, what the smoother needs: the predicted and filtered means
// and covariances, the persistence used, the slice's duration, and the counts of events
// counted whole (NaN otherwise, for exact reporting). All of it is kept for the last
// few thousand slices only (bounded memory, see Options.History); older slices are
// frozen into per-event sums over blocks of slices (frozen), smoothed if a smoothing
// pass had reached them, filtered otherwise. Storage is reused, so a slice costs no
// allocation of its own once the buffers have grown.
type history struct {
	k, n   int
	t      int       // slices recorded
	lo     int       // first slice whose covariances are kept
	limit  int       // most slices with covariances kept
	d      []float64 // (t−lo): durations
	exact  []float64 // (t−lo)·n
	z      []float64 // scratch of derive
	a      []float64 // (t−lo)·k: persistence used to predict the slice
	qs     []float64 // (t−lo)·k: step standard deviations used to predict the slice
	qb     []float64 // (t−lo)·k: extra (burst) step variances, on the diagonal
	rid    []int     // (t−lo): id of the step correlation matrix used
	mp, mf []float64 // (t−lo)·k
	pf     []float64 // (t−lo)·k·k; predicted covariances are recomputed from these
	vf     []float64 // (t−lo)·n: per event, its rate's filtered variance (from pf)
	frozen frozen    // slices [0, lo)
}

// frozen is what is left of slices whose covariances were dropped: per block of
// consecutive slices and per event, sums over the block. A block is one slice, or with
// Options.Marked every slice from one mark to the next (Mark), so that a run of any
// length keeps as many blocks as the reader asked for boundaries.
type frozen struct {
	marked  bool
	start   []int     // per block: its first slice (a block ends where the next begins, the last at lo)
	m       []float64 // blocks·n: count mean
	sd      []float64 // blocks·n: sum of the slices' count standard deviations
	counted []float64 // blocks·n: counts of the slices in which the event was counted whole
	un      []float64 // blocks·n: slices in which it was not
	level   []float64 // blocks·n: level error (levelError) over the block, as it was at freezing
	last    []int     // per event: the last frozen slice it was counted whole in, −1 if none
	marks   []int     // boundaries asked for (Mark) not frozen yet, ascending
}

// blocks returns the frozen blocks [b0, b1) that span [from, to) covers: a span end
// inside a block is taken at the block's start.
func (f *frozen) blocks(from, to, lo int) (b0, b1 int) {
	if from >= lo || len(f.start) == 0 {
		return 0, 0
	}
	at := func(t int) int { // the block containing slice t < lo
		i, _ := slices.BinarySearch(f.start, t+1)
		return i - 1
	}
	b0 = max(at(max(from, 0)), 0)
	b1 = len(f.start)
	if to < lo {
		b1 = at(to) // to inside block b1 is rounded down to its start: b1 is out
	}
	return b0, max(b1, b0)
}

func grow(s []float64, add int) []float64 {
	if cap(s)-len(s) < add {
		ns := make([]float64, len(s), 2*cap(s)+add)
		copy(ns, s)
		s = ns
	}
	return s
}

// rowVar is the variance of an event's rate, row·P·rowᵀ, for a k×k covariance P.
func rowVar(row []entry, p []float64, k int) float64 {
	v := 0.0
	for _, a := range row {
		for _, b := range row {
			v += a.c * b.c * p[a.i*k+b.i]
		}
	}
	return v
}

// extend appends n zeros to s, doubling its storage when it must grow: unmarked, the
// frozen sums gain a block every slice for the whole run.
func extend(s []float64, n int) []float64 {
	s = grow(s, n)
	s = s[:len(s)+n]
	clear(s[len(s)-n:])
	return s
}

func (h *history) pushPredicted(m, qs, qb, a []float64, rid int, d float64) {
	h.qb = append(grow(h.qb, len(qb)), qb...)
	h.d = append(h.d, d)
	h.a = append(grow(h.a, len(a)), a...)
	h.qs = append(grow(h.qs, len(qs)), qs...)
	h.rid = append(h.rid, rid)
	h.mp = append(grow(h.mp, len(m)), m...)
}

// predicted recomputes the predicted covariance of kept slice i (i >= 1) into p:
// F·Pf(i−1)·F + diag(qs)·R·diag(qs).
func (md *Model) predicted(i int, p []float64) {
	h := &md.hist
	k, kk := md.k, md.k*md.k
	pf := h.pf[(i-1)*kk : i*kk]
	a := h.a[i*k : (i+1)*k]
	qs := h.qs[i*k : (i+1)*k]
	qb := h.qb[i*k : (i+1)*k]
	r := md.lrn.rvers[h.rid[i]]
	for x := range k {
		ax, qx := a[x], qs[x]
		row := p[x*k : x*k+k]
		prow := pf[x*k : x*k+k]
		rrow := r[x*k : x*k+k]
		for y := range k {
			row[y] = ax*a[y]*prow[y] + qx*qs[y]*rrow[y]
		}
		row[x] += qb[x]
	}
}

func (h *history) pushFiltered(m, p []float64, s inference.Slice, n int, same [][2]int, rows [][]entry) {
	h.mf = append(grow(h.mf, len(m)), m...)
	h.pf = append(grow(h.pf, len(p)), p...)
	// Each event's variance now, while p is in cache: freeze would otherwise read a
	// few scattered rows of every frozen slice's covariance, one cache miss each. (It
	// costs a few instructions more than it saves, 113.7k against 112.8k a slice at 35
	// events by bench_ir.sh, and saves time: 6 interleaved runs, median 21.3 µs against
	// 23.3 for BenchmarkSlice, 19.9 against 21.3 for BenchmarkSliceLive.) A live
	// reader's smoothing reaches back only over its latest interval, so the slices that
	// freeze are rarely smoothed ones, whose variance freeze takes from the smoother.
	k := len(m)
	vbase := len(h.vf)
	h.vf = grow(h.vf, n)[:vbase+n]
	for e, row := range rows[:n] {
		h.vf[vbase+e] = rowVar(row, p, k)
	}
	base := len(h.exact)
	h.exact = grow(h.exact, n)[:base+n]
	ex := h.exact[base:]
	for i := range ex {
		ex[i] = math.NaN()
	}
	for _, r := range s.Readings {
		// Counted whole: running the whole of its enabled time, which may be none (the
		// target never ran in the slice, and nothing was counted that a counter missed).
		if int(r.Event) >= 0 && int(r.Event) < n && r.Running >= r.Enabled {
			ex[r.Event] = float64(r.Count)
		}
	}
	// An event listed twice: a reading of either copy is the other's count too.
	for _, d := range same {
		if math.IsNaN(ex[d[0]]) {
			ex[d[0]] = ex[d[1]]
		} else if math.IsNaN(ex[d[1]]) {
			ex[d[1]] = ex[d[0]]
		}
	}
	h.z = derive(ex, rows, h.z)
	h.t++
}

// derive fills in ex (a slice's whole counts, NaN where an event was not counted) the
// counts that exact identities determine from the others: a repeat (x#2 = x) from its
// copy, a sum from its terms, a term from its sum and the
// other terms. These are as exact as the counts they come from (the identities are
// the state space), so they are reported as counted (withCounts, countedIn). The
// filter skips readings of a slice far shorter than usual (see Observe): without this,
// an event tied exactly to one counted there got the walk's rate, carried over from
// another phase (the arm64 testbed's sleep phases, about 40µs of running time per 4ms
// slice: instructions:u estimated 140% high and instructions:k 80% low in intervals
// where each was counted whole or exactly determined in every slice). z is scratch,
// returned for reuse; a count that would come out negative (counts read at slightly
// different instants) is left undetermined.
func derive(ex []float64, rows [][]entry, z []float64) []float64 {
	k := 0
	for _, row := range rows {
		for _, a := range row {
			k = max(k, a.i+1)
		}
	}
	z = slices.Grow(z[:0], k)[:k]
	for i := range z {
		z[i] = math.NaN()
	}
	// z[i] is state component i's count in the slice, once a counted event pins it.
	for changed := true; changed; {
		changed = false
		for e, row := range rows {
			x := ex[e]
			if math.IsNaN(x) || len(row) == 0 {
				continue
			}
			u := -1
			for j, a := range row {
				if math.IsNaN(z[a.i]) {
					if u >= 0 {
						u = -2 // two unknowns: not yet
						break
					}
					u = j
				} else {
					x -= a.c * z[a.i]
				}
			}
			if u < 0 || row[u].c == 0 {
				continue
			}
			if v := x / row[u].c; v >= 0 {
				z[row[u].i] = v
				changed = true
			}
		}
	}
	for e, row := range rows {
		if !math.IsNaN(ex[e]) || len(row) == 0 {
			continue
		}
		v := 0.0
		for _, a := range row {
			v += a.c * z[a.i] // NaN if any term is undetermined
		}
		if v >= 0 {
			ex[e] = v
		}
	}
	return z
}

// Mark says that Estimate will be asked about spans beginning or ending at slice
// boundary t (slice t's start). With Options.Marked, frozen slices are merged between
// marks, so it must be called before slice t freezes (while t > the first slice whose
// covariances are kept, or at the latest slice); a mark at a boundary frozen already
// cannot split its block and is ignored. Boundary 0 and the end of the run are always
// marks. Without Options.Marked every boundary is one and Mark does nothing.
func (md *Model) Mark(t int) {
	f := &md.hist.frozen
	if !f.marked || t <= md.hist.lo {
		return
	}
	if n := len(f.marks); n == 0 || f.marks[n-1] < t {
		f.marks = append(f.marks, t)
		return
	}
	if i, ok := slices.BinarySearch(f.marks, t); !ok {
		f.marks = slices.Insert(f.marks, i, t)
	}
}

// freeze drops the covariances of the oldest w kept slices, keeping per-event sums of
// their count means, standard deviations, counts and level errors in blocks (frozen).
func (md *Model) freeze(w int) {
	h := &md.hist
	f := &h.frozen
	c := &md.cache
	n, k, kk := md.n, md.k, md.k*md.k
	if f.last == nil {
		f.last = make([]int, n)
		for e := range f.last {
			f.last[e] = -1
		}
	}
	// Unmarked, every slice is a block of its own: its level error, per event, in one
	// sweep over the window.
	pw := md.levelPowers()
	var each []float64
	if !f.marked {
		each = make([]float64, n*w)
		for e := range n {
			md.keptLevelErrorEach(e, h.lo, h.lo+w, each[e*w:(e+1)*w], pw)
		}
	}
	// Freeze smoothed values where the last smoothing pass (a live reader's Estimate)
	// reached these slices: given a little less data than now, still far better than
	// filtered ones. Elsewhere the filtered values stay: smoothing here would stall
	// Observe for a whole window (O(window·k³)).
	for s := h.lo; s < h.lo+w; s++ {
		i := s - h.lo
		newBlock := !f.marked || len(f.start) == 0
		for len(f.marks) > 0 && f.marks[0] <= s {
			newBlock = newBlock || f.marks[0] == s
			f.marks = f.marks[1:]
		}
		if newBlock {
			f.start = append(f.start, s)
			for _, arr := range []*[]float64{&f.m, &f.sd, &f.counted, &f.un, &f.level} {
				*arr = extend(*arr, n)
			}
		}
		b := len(f.start) - 1
		if newBlock || s == h.lo {
			// The level error of the block's slices in this chunk, taken while the
			// slices around them are still kept (it looks up to `reach` either side).
			end := s + 1
			if f.marked {
				end = h.lo + w
				if len(f.marks) > 0 {
					end = min(end, f.marks[0])
				}
			}
			for e := range n {
				if each != nil {
					f.level[b*n+e] += each[e*w+i]
				} else {
					f.level[b*n+e] += md.keptLevelError(e, s, end, pw)
				}
			}
		}
		m, vf := h.mf[i*k:(i+1)*k], h.vf[i*n:(i+1)*n]
		var ps []float64 // smoothed covariance, if any
		if c.base == h.lo && c.lo <= s && c.upTo > s {
			m, ps = c.ms[i*k:(i+1)*k], c.ps[i*kk:(i+1)*kk]
		}
		d := h.d[i]
		for e := range n {
			v := 0.0
			for _, a := range md.rows[e] {
				v += a.c * m[a.i]
			}
			vr := vf[e]
			if ps != nil {
				vr = rowVar(md.rows[e], ps, k)
			}
			f.m[b*n+e] += d * v
			f.sd[b*n+e] += d * math.Sqrt(max(vr, 0))
			if x := h.exact[i*n+e]; math.IsNaN(x) {
				f.un[b*n+e]++
			} else {
				f.counted[b*n+e] += x
				f.last[e] = s
			}
		}
	}
	h.d = h.d[:copy(h.d, h.d[w:])]
	h.exact = h.exact[:copy(h.exact, h.exact[w*n:])]
	h.a = h.a[:copy(h.a, h.a[w*k:])]
	h.qs = h.qs[:copy(h.qs, h.qs[w*k:])]
	h.qb = h.qb[:copy(h.qb, h.qb[w*k:])]
	h.rid = h.rid[:copy(h.rid, h.rid[w:])]
	h.mp = h.mp[:copy(h.mp, h.mp[w*k:])]
	h.mf = h.mf[:copy(h.mf, h.mf[w*k:])]
	h.pf = h.pf[:copy(h.pf, h.pf[w*kk:])]
	h.vf = h.vf[:copy(h.vf, h.vf[w*n:])]
	h.lo += w
	// Correlation matrices no kept slice refers to can go.
	if len(h.rid) > 0 {
		for id := range md.lrn.rvers {
			if id < h.rid[0] && id != md.lrn.rid {
				md.lrn.spare = md.lrn.rvers[id]
				delete(md.lrn.rvers, id)
			}
		}
	}
	c.valid = false
}
