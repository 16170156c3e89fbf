package learned

import (
	"math"
	"math/rand/v2"
)

// MLP is a fully connected network with ReLU hidden layers and one linear output, its
// weights in one flat slice: per layer, the out x in weights row-major, then the out
// biases.
type MLP struct {
	Sizes  []int     `json:"sizes"` // input, hidden..., 1
	Params []float64 `json:"params"`
}

func mlpParams(sizes []int) int {
	n := 0
	for l := 0; l+1 < len(sizes); l++ {
		n += sizes[l+1]*sizes[l] + sizes[l+1]
	}
	return n
}

func newMLP(sizes []int, rng *rand.Rand) *MLP {
	m := &MLP{Sizes: append([]int(nil), sizes...), Params: make([]float64, mlpParams(sizes))}
	off := 0
	for l := 0; l+1 < len(sizes); l++ {
		in, out := sizes[l], sizes[l+1]
		// He initialisation for ReLU layers; the output starts small, so that an
		// untrained network predicts the fixed interpolation.
		sd := math.Sqrt(2 / float64(in))
		if l+2 == len(sizes) {
			sd = 0.01
		}
		for i := range out * in {
			m.Params[off+i] = rng.NormFloat64() * sd
		}
		off += out*in + out
	}
	return m
}

// mlpCache holds one forward pass for the backward pass.
type mlpCache struct {
	a [][]float64 // a[0] the input, a[l] the output of hidden layer l
	g [][]float64 // g[l][j]: d a[l][j] / d pre-activation (ReLU slope times dropout scale)
	d [2][]float64
}

func newMLPCache(sizes []int) *mlpCache {
	c := &mlpCache{a: make([][]float64, len(sizes)-1), g: make([][]float64, len(sizes)-1)}
	w := 0
	for l := 1; l < len(sizes)-1; l++ {
		c.a[l] = make([]float64, sizes[l])
		c.g[l] = make([]float64, sizes[l])
		w = max(w, sizes[l])
	}
	c.d = [2][]float64{make([]float64, max(w, 1)), make([]float64, max(w, 1))}
	return c
}

// forward returns the network's output for x. With drop > 0 and rng non-nil, hidden
// units are dropped with probability drop (inverted dropout, training only).
func (m *MLP) forward(p, x []float64, c *mlpCache, drop float64, rng *rand.Rand) float64 {
	c.a[0] = x
	off := 0
	L := len(m.Sizes) - 1
	for l := range L {
		in, out := m.Sizes[l], m.Sizes[l+1]
		W, b := p[off:off+out*in], p[off+out*in:off+out*in+out]
		off += out*in + out
		a := c.a[l]
		if l == L-1 {
			s := b[0]
			for i, v := range a {
				s += W[i] * v
			}
			return s
		}
		nx, g := c.a[l+1], c.g[l+1]
		for j := range out {
			s := b[j]
			row := W[j*in : (j+1)*in]
			for i, v := range a {
				s += row[i] * v
			}
			scale := 1.0
			if drop > 0 && rng != nil {
				if rng.Float64() < drop {
					scale = 0
				} else {
					scale = 1 / (1 - drop)
				}
			}
			if s > 0 {
				nx[j], g[j] = s*scale, scale
			} else {
				nx[j], g[j] = 0, 0
			}
		}
	}
	return 0
}

// backward adds to grad the gradient of dout times the last forward's output.
func (m *MLP) backward(p []float64, c *mlpCache, dout float64, grad []float64) {
	L := len(m.Sizes) - 1
	offs := make([]int, L)
	off := 0
	for l := range L {
		offs[l] = off
		off += m.Sizes[l+1]*m.Sizes[l] + m.Sizes[l+1]
	}
	cur, other := c.d[0], c.d[1]
	delta := cur[:1]
	delta[0] = dout
	for l := L - 1; l >= 0; l-- {
		in, out := m.Sizes[l], m.Sizes[l+1]
		o := offs[l]
		W := p[o : o+out*in]
		gW, gb := grad[o:o+out*in], grad[o+out*in:o+out*in+out]
		a := c.a[l]
		for j, dj := range delta {
			if dj == 0 {
				continue
			}
			gb[j] += dj
			row := gW[j*in : (j+1)*in]
			for i, v := range a {
				row[i] += dj * v
			}
		}
		if l == 0 {
			break
		}
		nd := other[:in]
		clear(nd)
		for j, dj := range delta {
			if dj == 0 {
				continue
			}
			row := W[j*in : (j+1)*in]
			for i := range nd {
				nd[i] += dj * row[i]
			}
		}
		for i := range nd {
			nd[i] *= c.g[l][i]
		}
		delta = nd
		cur, other = other, cur
	}
}
