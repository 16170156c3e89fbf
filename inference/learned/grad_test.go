package learned

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The backward passes are checked against central finite differences of the forward
// passes: this is what shows that backpropagation (through time, for the GRU) is right.

func randomSeq(rng *rand.Rand, T int) [][nIn]float64 {
	x := make([][nIn]float64, T)
	for t := range x {
		for i := range nIn {
			x[t][i] = rng.Float64()*2 - 0.5
		}
	}
	return x
}

// checkGrad compares analytic and numeric gradients of loss over every parameter: the
// relative error max |a - n| / max(|a|, |n|, 1e-4) must stay under 1e-5 (central
// differences with h = 1e-6 have an error of order h² times the third derivative, far
// below that; a wrong term in a backward pass gives errors of order 1).
func checkGrad(t *testing.T, who string, p, analytic []float64, loss func() float64) {
	t.Helper()
	const h = 1e-6
	worst := 0.0
	for i := range p {
		old := p[i]
		p[i] = old + h
		lp := loss()
		p[i] = old - h
		lm := loss()
		p[i] = old
		num := (lp - lm) / (2 * h)
		rel := math.Abs(num-analytic[i]) / math.Max(math.Max(math.Abs(num), math.Abs(analytic[i])), 1e-4)
		if rel > worst {
			worst = rel
		}
		if rel > 1e-5 {
			t.Errorf("%s: parameter %d: backward %.9g, finite difference %.9g", who, i, analytic[i], num)
			return
		}
	}
	t.Logf("%s: %d parameters, worst relative error %.2g", who, len(p), worst)
}

func TestMLPGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{3 * nIn, 7, 5, 1}
	m := newMLP(sizes, rng)
	for i := range m.Params { // a larger output layer than at initialisation
		m.Params[i] += rng.NormFloat64() * 0.3
	}
	xs := [][]float64{}
	ys := []float64{}
	for range 6 {
		x := make([]float64, sizes[0])
		for i := range x {
			x[i] = rng.Float64()*2 - 0.5
		}
		xs = append(xs, x)
		ys = append(ys, rng.Float64())
	}
	c := newMLPCache(sizes)
	loss := func() float64 {
		l := 0.0
		for k, x := range xs {
			d := m.forward(m.Params, x, c, 0, nil) - ys[k]
			l += d * d
		}
		return l
	}
	grad := make([]float64, len(m.Params))
	for k, x := range xs {
		d := m.forward(m.Params, x, c, 0, nil) - ys[k]
		m.backward(m.Params, c, 2*d, grad)
	}
	checkGrad(t, "mlp", m.Params, grad, loss)
}

func TestGRUGradient(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := newGRU(nIn, 4, rng)
	for i := range g.Params {
		g.Params[i] += rng.NormFloat64() * 0.3
	}
	const T = 7
	x := randomSeq(rng, T)
	y := make([]float64, T)
	mask := make([]bool, T)
	for t := range y {
		y[t] = rng.Float64()
		mask[t] = t != 2 // one step out of the loss, as a slice counted whole is
	}
	var run gruRun
	out := make([]float64, T)
	loss := func() float64 {
		g.forward(g.Params, x, &run, out)
		l := 0.0
		for t := range out {
			if mask[t] {
				d := out[t] - y[t]
				l += d * d
			}
		}
		return l
	}
	g.forward(g.Params, x, &run, out)
	dout := make([]float64, T)
	for t := range out {
		if mask[t] {
			dout[t] = 2 * (out[t] - y[t])
		}
	}
	grad := make([]float64, len(g.Params))
	g.backward(g.Params, x, &run, dout, grad)
	checkGrad(t, "bigru", g.Params, grad, loss)
}
