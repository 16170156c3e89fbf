package model

import (
	"math"
)

// smoothCache holds the RTS smoother's output for slices [lo, upTo) computed when upTo
// slices had been observed; arrays are indexed from slice base (the history's lo then).
type smoothCache struct {
	valid               bool
	lo                  int
	upTo                int
	base                int
	ms                  []float64 // per slice k
	ps                  []float64 // per slice k·k
	j                   []float64 // per slice k·k: smoother gain to the next slice
	chol, diff, tmp, pp []float64
}

// smooth runs the Rauch-Tung-Striebel smoother back from the last slice to slice lo
// (lo >= the history's lo).
func (md *Model) smooth(lo int) {
	h := &md.hist
	k := md.k
	c := &md.cache
	if c.valid && c.upTo == h.t && c.lo <= lo && c.base == h.lo {
		return
	}
	kk := k * k
	T := h.t - h.lo // kept slices, indexed from 0
	L := lo - h.lo
	if cap(c.ms) < T*k {
		c.ms = make([]float64, T*k, 2*T*k)
		c.ps = make([]float64, T*kk, 2*T*kk)
		c.j = make([]float64, T*kk, 2*T*kk)
		c.chol = make([]float64, kk)
		c.diff = make([]float64, kk)
		c.tmp = make([]float64, kk)
		c.pp = make([]float64, kk)
	}
	c.ms, c.ps, c.j = c.ms[:T*k], c.ps[:T*kk], c.j[:T*kk]
	c.valid, c.upTo, c.lo, c.base = true, h.t, lo, h.lo
	copy(c.ms[(T-1)*k:T*k], h.mf[(T-1)*k:T*k])
	copy(c.ps[(T-1)*kk:T*kk], h.pf[(T-1)*kk:T*kk])
	clear(c.j[(T-1)*kk : T*kk])
	chol, diff, tmp, pp := c.chol, c.diff, c.tmp, c.pp
	for t := T - 2; t >= L; t-- {
		pf := h.pf[t*kk : (t+1)*kk]
		md.predicted(t+1, pp)
		J := c.j[t*kk : (t+1)*kk]
		a := h.a[(t+1)*k : (t+2)*k]
		// J = Pf·F·Pp⁻¹ with F = diag(a). Pp is nearly singular whenever counted rates
		// pin directions down exactly and steps are strongly correlated; a relative
		// jitter on its diagonal keeps the solve from amplifying rounding errors.
		copy(chol, pp)
		for i := range k {
			chol[i*k+i] += 1e-7*pp[i*k+i] + 1e-300
		}
		if cholesky(chol, k) {
			cholSolveRows(chol, k, pf, a, J)
		} else {
			clear(J)
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
		matMul(J, diff, tmp, k)
		ps := c.ps[t*kk : (t+1)*kk]
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
		// A smoothed variance can only be below the filtered one, and a smoothed mean
		// only a few standard deviations away from the filtered one: anything else is
		// rounding gone wild, and this step keeps the filtered values.
		bad := false
		for i := range k {
			fv := pf[i*k+i]
			if !(ps[i*k+i] <= fv*(1+1e-6)+1e-300) || math.Abs(ms[i]-h.mf[t*k+i]) > 50*math.Sqrt(fv)+1e-300 {
				bad = true
				break
			}
		}
		if bad {
			clear(J)
			copy(ms, h.mf[t*k:(t+1)*k])
			copy(ps, pf)
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
