package learned

import (
	"math"
	"math/rand/v2"
)

// GRU is a one-layer bidirectional GRU with a linear output on both directions' hidden
// states, its weights in one flat slice: per direction (forwards, then backwards) the
// update gate (W x: hidden x in, U h: hidden x hidden, bias), the reset gate and the
// candidate, each laid out the same; then the output weights (2 hidden) and bias.
//
// One step, per direction (the candidate resets h before U, as in Cho et al.):
//
//	z = σ(Wz x + Uz h + bz)
//	r = σ(Wr x + Ur h + br)
//	n = tanh(Wn x + Un (r ⊙ h) + bn)
//	h' = (1 - z) ⊙ n + z ⊙ h
type GRU struct {
	In     int       `json:"in"`
	Hidden int       `json:"hidden"`
	Params []float64 `json:"params"`
}

func gruParams(in, hid int) int { return 2*3*(hid*in+hid*hid+hid) + 2*hid + 1 }

func newGRU(in, hid int, rng *rand.Rand) *GRU {
	g := &GRU{In: in, Hidden: hid, Params: make([]float64, gruParams(in, hid))}
	sd := 1 / math.Sqrt(float64(hid))
	gate := hid*in + hid*hid + hid
	for d := range 2 {
		for k := range 3 {
			o := d*3*gate + k*gate
			for i := range hid*in + hid*hid {
				g.Params[o+i] = (2*rng.Float64() - 1) * sd
			}
		}
	}
	o := 2 * 3 * gate
	for i := range 2 * hid {
		g.Params[o+i] = rng.NormFloat64() * 0.01
	}
	return g
}

// gate views one gate's weights in p.
type gate struct{ W, U, b []float64 }

func (g *GRU) gates(p []float64, d int) [3]gate {
	H, I := g.Hidden, g.In
	size := H*I + H*H + H
	var out [3]gate
	for k := range 3 {
		o := d*3*size + k*size
		out[k] = gate{p[o : o+H*I], p[o+H*I : o+H*I+H*H], p[o+H*I+H*H : o+size]}
	}
	return out
}

func (g *GRU) output(p []float64) (w []float64, b *float64) {
	o := 2 * 3 * (g.Hidden*g.In + g.Hidden*g.Hidden + g.Hidden)
	return p[o : o+2*g.Hidden], &p[o+2*g.Hidden]
}

// gruRun holds one pass over a sequence: per direction, per step, the previous hidden
// state, the gates and the new state.
type gruRun struct {
	hprev, z, r, n, h [2][][]float64
}

func (c *gruRun) reset(T, H int) {
	for d := range 2 {
		for _, f := range []*[2][][]float64{&c.hprev, &c.z, &c.r, &c.n, &c.h} {
			v := f[d]
			if cap(v) < T {
				v = make([][]float64, T)
			}
			v = v[:T]
			for t := range v {
				if len(v[t]) != H {
					v[t] = make([]float64, H)
				}
			}
			f[d] = v
		}
	}
}

func sigmoid(v float64) float64 { return 1 / (1 + math.Exp(-v)) }

// forward writes into out[t] the network's output at every step of x (without the
// fixed-interpolation base).
func (g *GRU) forward(p []float64, x [][nIn]float64, c *gruRun, out []float64) {
	T, H := len(x), g.Hidden
	c.reset(T, H)
	rh := make([]float64, H)
	for d := range 2 {
		gs := g.gates(p, d)
		var prev []float64
		zero := make([]float64, H)
		for s := range T {
			t := s
			if d == 1 {
				t = T - 1 - s
			}
			if s == 0 {
				prev = zero
			}
			copy(c.hprev[d][t], prev)
			xt := x[t][:g.In]
			z, r, n, h := c.z[d][t], c.r[d][t], c.n[d][t], c.h[d][t]
			for j := range H {
				az := gs[0].b[j] + dot(gs[0].W[j*g.In:(j+1)*g.In], xt) + dot(gs[0].U[j*H:(j+1)*H], prev)
				ar := gs[1].b[j] + dot(gs[1].W[j*g.In:(j+1)*g.In], xt) + dot(gs[1].U[j*H:(j+1)*H], prev)
				z[j], r[j] = sigmoid(az), sigmoid(ar)
				rh[j] = r[j] * prev[j]
			}
			for j := range H {
				an := gs[2].b[j] + dot(gs[2].W[j*g.In:(j+1)*g.In], xt) + dot(gs[2].U[j*H:(j+1)*H], rh)
				n[j] = math.Tanh(an)
				h[j] = (1-z[j])*n[j] + z[j]*prev[j]
			}
			prev = h
		}
	}
	w, b := g.output(p)
	for t := range T {
		out[t] = *b + dot(w[:H], c.h[0][t]) + dot(w[H:], c.h[1][t])
	}
}

// backward adds to grad the gradient of Σ_t dout[t] * out[t] for the last forward pass
// (backpropagation through time in both directions).
func (g *GRU) backward(p []float64, x [][nIn]float64, c *gruRun, dout []float64, grad []float64) {
	T, H, I := len(x), g.Hidden, g.In
	w, _ := g.output(p)
	gw, gb := g.output(grad)
	for t := range T {
		*gb += dout[t]
		for j := range H {
			gw[j] += dout[t] * c.h[0][t][j]
			gw[H+j] += dout[t] * c.h[1][t][j]
		}
	}
	dh := make([]float64, H)
	dnp, dzp, drp, drh, rh := make([]float64, H), make([]float64, H), make([]float64, H), make([]float64, H), make([]float64, H)
	for d := range 2 {
		gs, gg := g.gates(p, d), g.gates(grad, d)
		wd := w[d*H : (d+1)*H]
		clear(dh)
		// Walk the direction's steps backwards.
		for s := T - 1; s >= 0; s-- {
			t := s
			if d == 1 {
				t = T - 1 - s
			}
			prev, z, r, n := c.hprev[d][t], c.z[d][t], c.r[d][t], c.n[d][t]
			for j := range H {
				dh[j] += dout[t] * wd[j]
			}
			for j := range H {
				dn := dh[j] * (1 - z[j])
				dz := dh[j] * (prev[j] - n[j])
				dnp[j] = dn * (1 - n[j]*n[j])
				dzp[j] = dz * z[j] * (1 - z[j])
				rh[j] = r[j] * prev[j]
			}
			// Candidate: through Un (r ⊙ h).
			clear(drh)
			for j := range H {
				if dnp[j] == 0 {
					continue
				}
				gg[2].b[j] += dnp[j]
				axpy(gg[2].W[j*I:(j+1)*I], dnp[j], x[t][:I])
				axpy(gg[2].U[j*H:(j+1)*H], dnp[j], rh)
				axpy(drh, dnp[j], gs[2].U[j*H:(j+1)*H])
			}
			for j := range H {
				drp[j] = drh[j] * prev[j] * r[j] * (1 - r[j])
			}
			// dh now becomes d loss / d prev.
			for j := range H {
				dh[j] = dh[j]*z[j] + drh[j]*r[j]
			}
			for j := range H {
				gg[0].b[j] += dzp[j]
				axpy(gg[0].W[j*I:(j+1)*I], dzp[j], x[t][:I])
				axpy(gg[0].U[j*H:(j+1)*H], dzp[j], prev)
				axpy(dh, dzp[j], gs[0].U[j*H:(j+1)*H])
				gg[1].b[j] += drp[j]
				axpy(gg[1].W[j*I:(j+1)*I], drp[j], x[t][:I])
				axpy(gg[1].U[j*H:(j+1)*H], drp[j], prev)
				axpy(dh, drp[j], gs[1].U[j*H:(j+1)*H])
			}
		}
	}
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

// axpy adds a*x to y.
func axpy(y []float64, a float64, x []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}
