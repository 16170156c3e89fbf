package model

import (
	"math"

	"github.com/bayesperf/bayesperf/inference"
)

// history keeps, per slice, what the smoother needs: the predicted and filtered means
// and covariances, the slice's duration, and the counts of events counted whole (NaN
// otherwise, for exact reporting). Storage grows in chunks, so a slice costs no
// allocation of its own once a chunk is there.
type history struct {
	k, n   int
	t      int // slices recorded
	d      []float64
	mp, mf []float64 // t·k
	a      []float64 // t·k: persistence used to predict slice t
	pp, pf []float64 // t·k·k
	exact  []float64 // t·n
}

func grow(s []float64, add int) []float64 {
	if cap(s)-len(s) < add {
		ns := make([]float64, len(s), 2*cap(s)+add)
		copy(ns, s)
		s = ns
	}
	return s
}

func (h *history) pushPredicted(m, p, a []float64, d float64) {
	h.d = append(h.d, d)
	h.a = append(grow(h.a, len(a)), a...)
	h.mp = append(grow(h.mp, len(m)), m...)
	h.pp = append(grow(h.pp, len(p)), p...)
}

func (h *history) pushFiltered(m, p []float64, s inference.Slice, n int) {
	h.mf = append(grow(h.mf, len(m)), m...)
	h.pf = append(grow(h.pf, len(p)), p...)
	base := len(h.exact)
	h.exact = grow(h.exact, n)[:base+n]
	ex := h.exact[base:]
	for i := range ex {
		ex[i] = math.NaN()
	}
	for _, r := range s.Readings {
		if int(r.Event) >= 0 && int(r.Event) < n && r.Running > 0 && r.Running >= r.Enabled {
			ex[r.Event] = float64(r.Count)
		}
	}
	h.t++
}

// smoothCache holds the RTS smoother's output for slices [lo, upTo) computed when upTo
// slices had been observed.
type smoothCache struct {
	valid bool
	lo    int
	upTo  int
	ms    []float64 // per slice k
	ps    []float64 // per slice k·k
	j     []float64 // per slice k·k: smoother gain to the next slice
}

// smooth runs the Rauch-Tung-Striebel smoother back from the last slice to slice lo.
func (md *Model) smooth(lo int) {
	h := &md.hist
	k, T := md.k, h.t
	c := &md.cache
	if c.valid && c.upTo == T && c.lo <= lo {
		return
	}
	kk := k * k
	if len(c.ms) < T*k {
		c.ms = make([]float64, T*k)
		c.ps = make([]float64, T*kk)
		c.j = make([]float64, T*kk)
	}
	c.valid, c.upTo, c.lo = true, T, lo
	copy(c.ms[(T-1)*k:T*k], h.mf[(T-1)*k:T*k])
	copy(c.ps[(T-1)*kk:T*kk], h.pf[(T-1)*kk:T*kk])
	clear(c.j[(T-1)*kk : T*kk])
	chol := make([]float64, kk)
	diff := make([]float64, kk)
	tmp := make([]float64, kk)
	for t := T - 2; t >= lo; t-- {
		pf := h.pf[t*kk : (t+1)*kk]
		pp := h.pp[(t+1)*kk : (t+2)*kk]
		J := c.j[t*kk : (t+1)*kk]
		a := h.a[(t+1)*k : (t+2)*k]
		// J = a·Pf·Pp⁻¹, i.e. Pp·Jᵀ = a·Pf (Pp and Pf symmetric).
		copy(chol, pp)
		if !cholesky(chol, k) {
			copy(chol, pp)
			jit := 0.0
			for i := range k {
				jit = math.Max(jit, pp[i*k+i])
			}
			for i := range k {
				chol[i*k+i] += 1e-12*jit + 1e-300
			}
			if !cholesky(chol, k) {
				clear(J)
			} else {
				cholSolveRows(chol, k, pf, a, J)
			}
		} else {
			cholSolveRows(chol, k, pf, a, J)
		}
		// ms = mf + J (ms' − mp')
		ms := c.ms[t*k : (t+1)*k]
		copy(ms, h.mf[t*k:(t+1)*k])
		msn := c.ms[(t+1)*k : (t+2)*k]
		mpn := h.mp[(t+1)*k : (t+2)*k]
		for i := range k {
			s := 0.0
			row := J[i*k : i*k+k]
			for j := range k {
				s += row[j] * (msn[j] - mpn[j])
			}
			ms[i] += s
		}
		// Ps = Pf + J (Ps' − Pp') Jᵀ
		psn := c.ps[(t+1)*kk : (t+2)*kk]
		for i := range diff {
			diff[i] = psn[i] - pp[i]
		}
		matMul(J, diff, tmp, k)     // tmp = J·diff
		ps := c.ps[t*kk : (t+1)*kk] // ps = Pf + tmp·Jᵀ
		copy(ps, pf)
		for i := range k {
			ti := tmp[i*k : i*k+k]
			for j := range k {
				Jj := J[j*k : j*k+k]
				s := 0.0
				for p := range k {
					s += ti[p] * Jj[p]
				}
				ps[i*k+j] += s
			}
		}
		for i := range k {
			if ps[i*k+i] < 0 {
				ps[i*k+i] = 0
			}
		}
	}
}

// cholSolveRows sets X = B·F·Pp⁻¹ given the Cholesky factor of Pp (lower triangle of
// l), with F = diag(a): row i of X solves Pp·xᵢ = (row i of B)⊙a, Pp being symmetric.
func cholSolveRows(l []float64, k int, b []float64, a []float64, x []float64) {
	for i := range k {
		xi := x[i*k : i*k+k]
		bi := b[i*k : i*k+k]
		for r := range k {
			s := a[r] * bi[r]
			lr := l[r*k : r*k+r]
			for p, v := range lr {
				s -= v * xi[p]
			}
			xi[r] = s / l[r*k+r]
		}
		for r := k - 1; r >= 0; r-- {
			s := xi[r]
			for p := r + 1; p < k; p++ {
				s -= l[p*k+r] * xi[p]
			}
			xi[r] = s / l[r*k+r]
		}
	}
}

// matMul sets c = a·b for k×k row-major matrices.
func matMul(a, b, c []float64, k int) {
	clear(c)
	for i := range k {
		ci := c[i*k : i*k+k]
		for p := range k {
			v := a[i*k+p]
			if v == 0 {
				continue
			}
			bp := b[p*k : p*k+k]
			for j := range k {
				ci[j] += v * bp[j]
			}
		}
	}
}

// Estimate returns per event the posterior mean of its count over slices [from, to)
// given everything observed so far, with a Level interval. An event counted whole in
// every slice of the range is reported exactly as counted.
func (md *Model) Estimate(from, to int) []inference.Estimate {
	out := make([]inference.Estimate, md.n)
	h := &md.hist
	from, to = max(from, 0), min(to, h.t)
	if from >= to {
		return out
	}
	md.smooth(from)
	c := &md.cache
	k, kk := md.k, md.k*md.k
	// Mean: Σ_t d_t x_t. Variance: with G_t = Σ_{u≥t} d_u Cov(x_t, x_u), G_t = d_t Ps_t +
	// J_t G_{t+1} and Var = Σ_t d_t (G_t + J_t G_{t+1}).
	mean := make([]float64, k)
	g := make([]float64, kk)
	jg := make([]float64, kk)
	v := make([]float64, kk)
	for t := to - 1; t >= from; t-- {
		d := h.d[t]
		ms := c.ms[t*k : (t+1)*k]
		for i := range k {
			mean[i] += d * ms[i]
		}
		ps := c.ps[t*kk : (t+1)*kk]
		if t == to-1 {
			clear(jg)
		} else {
			matMul(c.j[t*kk:(t+1)*kk], g, jg, k)
		}
		for i := range kk {
			g[i] = d*ps[i] + jg[i]
			v[i] += d * (g[i] + jg[i])
		}
	}
	q0 := md.quantQ
	for e := range md.n {
		row := md.rows[e]
		val, vr := 0.0, 0.0
		for _, a := range row {
			val += a.c * mean[a.i]
			for _, b := range row {
				vr += a.c * b.c * v[a.i*k+b.i]
			}
		}
		exact, all := 0.0, true
		for t := from; t < to; t++ {
			x := h.exact[t*md.n+e]
			if math.IsNaN(x) {
				all = false
				break
			}
			exact += x
		}
		if all {
			out[e] = inference.Estimate{Value: exact, Lo: exact, Hi: exact, HasInterval: true, Status: inference.StatusExact}
			continue
		}
		sd := math.Sqrt(math.Max(vr, 0))
		q := q0 * md.lrn.intervalScale(e)
		est := inference.Estimate{Value: val, Lo: val - q*sd, Hi: val + q*sd, HasInterval: true, Status: inference.StatusInferred}
		if !md.opt.AllowNegative {
			est.Value = math.Max(est.Value, 0)
			est.Lo = math.Max(est.Lo, 0)
			est.Hi = math.Max(est.Hi, 0)
		}
		if math.IsNaN(est.Value) || math.IsInf(est.Value, 0) || math.IsNaN(sd) {
			est = inference.Estimate{Status: inference.StatusNotCounted}
		}
		out[e] = est
	}
	return out
}

// Finish marks the end of the run; Estimate then returns smoothed values over the whole
// run (it already does for everything observed so far, so Finish only drops nothing).
func (md *Model) Finish() { md.finished = true }

// tQuantile returns the p-quantile of Student's t with dof degrees of freedom (dof <= 0
// or large: the normal quantile), by the Cornish-Fisher expansion, accurate to about
// 1e-3 for dof >= 3.
func tQuantile(p, dof float64) float64 {
	z := math.Sqrt2 * math.Erfinv(2*p-1)
	if dof <= 0 || dof > 1e6 {
		return z
	}
	z3, z5, z7 := z*z*z, z*z*z*z*z, z*z*z*z*z*z*z
	return z + (z3+z)/(4*dof) + (5*z5+16*z3+3*z)/(96*dof*dof) + (3*z7+19*z5+17*z3-15*z)/(384*dof*dof*dof)
}
