package learned

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/bayesperf/bayesperf/inference"
)

// Config sets how Train fits the networks. The zero value of a field means its default
// (DefaultConfig).
type Config struct {
	Seed   uint64 `json:"seed"`
	Window int    `json:"window"` // MLP: slices each side of the predicted one
	// MLP (paper table 1: hidden 128 and 64, dropout 0.3, learning rate 3e-3).
	MLPHidden  []int   `json:"mlp_hidden"`
	Dropout    float64 `json:"dropout"`
	MLPRate    float64 `json:"mlp_rate"`
	MLPEpochs  int     `json:"mlp_epochs"`
	MLPSamples int     `json:"mlp_samples"` // slices drawn per epoch
	MLPBatch   int     `json:"mlp_batch"`
	// Bi-GRU (paper table 2: hidden 64, 3 layers, learning rate 5e-3); one layer here.
	GRUHidden   int     `json:"gru_hidden"`
	GRURate     float64 `json:"gru_rate"`
	GRUEpochs   int     `json:"gru_epochs"`
	GRUChunks   int     `json:"gru_chunks"`    // sequences drawn per epoch
	GRUChunkLen int     `json:"gru_chunk_len"` // slices per training sequence
	GRUBatch    int     `json:"gru_batch"`
}

// DefaultConfig is what `bayesperf train` uses: 8 to 18 s on one core of the project's
// VMs, whatever the number of training runs (each epoch draws a fixed number of slices).
// The networks are smaller than the paper's (MLP 64 and 32 units against 128 and 64; one
// GRU layer of 16 units against three of 64) and see fewer epochs (30 against 1200 and
// 600): the paper trains one model per event per application on tiny data sets, and these
// sizes keep a corpus-wide model within seconds; larger ones were not measured.
func DefaultConfig() Config {
	return Config{Seed: 1, Window: 8,
		MLPHidden: []int{64, 32}, Dropout: 0.1, MLPRate: 3e-3, MLPEpochs: 30, MLPSamples: 20000, MLPBatch: 32,
		GRUHidden: 16, GRURate: 5e-3, GRUEpochs: 30, GRUChunks: 400, GRUChunkLen: 64, GRUBatch: 8}
}

func (c Config) withDefaults() Config {
	d := DefaultConfig()
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if len(c.MLPHidden) == 0 {
		c.MLPHidden = d.MLPHidden
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		c.Dropout = 0
	}
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	setf := func(v *float64, def float64) {
		if !(*v > 0) {
			*v = def
		}
	}
	setf(&c.MLPRate, d.MLPRate)
	set(&c.MLPEpochs, d.MLPEpochs)
	set(&c.MLPSamples, d.MLPSamples)
	set(&c.MLPBatch, d.MLPBatch)
	set(&c.GRUHidden, d.GRUHidden)
	setf(&c.GRURate, d.GRURate)
	set(&c.GRUEpochs, d.GRUEpochs)
	set(&c.GRUChunks, d.GRUChunks)
	set(&c.GRUChunkLen, d.GRUChunkLen)
	set(&c.GRUBatch, d.GRUBatch)
	return c
}

// Run is one training run: the kernel's multiplexed observations and the truth.
type Run struct {
	Name   string
	Events int
	Slices []inference.Slice
	Truth  [][]uint64 // [slice][event]
}

// trainSeq is one event of one run, prepared for training.
type trainSeq struct {
	s series
	y []float64 // target, log1p units
}

// Train fits both networks on runs. Log, when non-nil, receives progress lines.
func Train(runs []Run, cfg Config, log func(string)) (*Model, error) {
	cfg = cfg.withDefaults()
	if log == nil {
		log = func(string) {}
	}
	seqs, names, err := trainingSeqs(runs)
	if err != nil {
		return nil, err
	}
	var pool []trainSample
	for q, sq := range seqs {
		for t, w := range sq.s.whole {
			if !w {
				pool = append(pool, trainSample{q, t})
			}
		}
	}
	if len(pool) == 0 {
		return nil, errors.New("train: no slice to learn from (every event counted whole, or none counted)")
	}
	m := &Model{Format: Format, Version: Version, Inputs: append([]string(nil), Inputs...), Window: cfg.Window}
	m.Training = TrainInfo{Config: cfg, Runs: names, Samples: len(pool)}
	m.trainMLP(cfg, seqs, pool, log)
	m.trainGRU(cfg, seqs, log)
	m.finalLosses(cfg, seqs, len(pool), log)
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("train: %w (training diverged?)", err)
	}
	return m, nil
}

// trainSample is one slice to learn from: slice t of seqs[q], not counted whole.
type trainSample struct{ q, t int }

// trainingSeqs prepares every event of every run that has a slice not counted whole.
func trainingSeqs(runs []Run) ([]trainSeq, []string, error) {
	var seqs []trainSeq
	var names []string
	for _, r := range runs {
		if len(r.Truth) != len(r.Slices) {
			return nil, nil, fmt.Errorf("train on %s: %d truth rows for %d slices", r.Name, len(r.Truth), len(r.Slices))
		}
		st := newStore(r.Events)
		for _, s := range r.Slices {
			if err := st.observe(s); err != nil {
				return nil, nil, fmt.Errorf("train on %s: %w", r.Name, err)
			}
		}
		names = append(names, r.Name)
		for e, s := range runSeries(st) {
			if s.none {
				continue
			}
			y := make([]float64, len(s.x))
			use := false
			for t := range y {
				if e < len(r.Truth[t]) {
					y[t] = log1p(float64(r.Truth[t][e]) / s.unit)
				}
				use = use || !s.whole[t]
			}
			if use {
				seqs = append(seqs, trainSeq{s, y})
			}
		}
	}
	return seqs, names, nil
}

// trainMLP fits the MLP on windows around the samples in pool.
func (m *Model) trainMLP(cfg Config, seqs []trainSeq, pool []trainSample, log func(string)) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 1))
	sizes := append(append([]int{(2*cfg.Window + 1) * nIn}, cfg.MLPHidden...), 1)
	m.MLP = newMLP(sizes, rng)
	opt := newAdam(len(m.MLP.Params), cfg.MLPRate)
	grad := make([]float64, len(m.MLP.Params))
	cache := newMLPCache(sizes)
	var buf []float64
	for ep := range cfg.MLPEpochs {
		loss := 0.0
		for b := 0; b < cfg.MLPSamples; b += cfg.MLPBatch {
			clear(grad)
			n := min(cfg.MLPBatch, cfg.MLPSamples-b)
			for range n {
				sm := pool[rng.IntN(len(pool))]
				sq := &seqs[sm.q]
				buf = window(sq.s.x, sm.t, cfg.Window, buf)
				d := sq.s.base[sm.t] + m.MLP.forward(m.MLP.Params, buf, cache, cfg.Dropout, rng) - sq.y[sm.t]
				loss += d * d
				m.MLP.backward(m.MLP.Params, cache, 2*d/float64(n), grad)
			}
			clipNorm(grad, 5)
			opt.step(m.MLP.Params, grad)
		}
		if ep%10 == 9 || ep == cfg.MLPEpochs-1 {
			log(fmt.Sprintf("mlp epoch %d/%d: training mse %.4f", ep+1, cfg.MLPEpochs, loss/float64(cfg.MLPSamples)))
		}
	}

}

// trainGRU fits the bidirectional GRU on chunks of the sequences.
func (m *Model) trainGRU(cfg Config, seqs []trainSeq, log func(string)) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 2))
	m.GRU = newGRU(nIn, cfg.GRUHidden, rng)
	opt := newAdam(len(m.GRU.Params), cfg.GRURate)
	grad := make([]float64, len(m.GRU.Params))
	var run gruRun
	out, dout := make([]float64, cfg.GRUChunkLen), make([]float64, cfg.GRUChunkLen)
	for ep := range cfg.GRUEpochs {
		loss, cnt := 0.0, 0
		for b := 0; b < cfg.GRUChunks; b += cfg.GRUBatch {
			clear(grad)
			n := min(cfg.GRUBatch, cfg.GRUChunks-b)
			for range n {
				sq := &seqs[rng.IntN(len(seqs))]
				T := len(sq.y)
				L := min(cfg.GRUChunkLen, T)
				start := rng.IntN(T - L + 1)
				x := sq.s.x[start : start+L]
				o, do := out[:L], dout[:L]
				m.GRU.forward(m.GRU.Params, x, &run, o)
				k := 0
				for t := range L {
					if !sq.s.whole[start+t] {
						k++
					}
				}
				for t := range L {
					do[t] = 0
					if sq.s.whole[start+t] || k == 0 {
						continue
					}
					d := sq.s.base[start+t] + o[t] - sq.y[start+t]
					loss += d * d
					cnt++
					do[t] = 2 * d / float64(k*n)
				}
				m.GRU.backward(m.GRU.Params, x, &run, do, grad)
			}
			clipNorm(grad, 5)
			opt.step(m.GRU.Params, grad)
		}
		if ep%10 == 9 || ep == cfg.GRUEpochs-1 {
			log(fmt.Sprintf("bigru epoch %d/%d: training mse %.4f", ep+1, cfg.GRUEpochs, loss/float64(max(cnt, 1))))
		}
	}

}

// finalLosses records the losses over the whole training set (samples slices), against
// the fixed interpolation's.
func (m *Model) finalLosses(cfg Config, seqs []trainSeq, samples int, log func(string)) {
	sizes := append(append([]int{(2*cfg.Window + 1) * nIn}, cfg.MLPHidden...), 1)
	cache := newMLPCache(sizes)
	var buf []float64
	var run gruRun
	var fl, ml, gl float64
	for _, sq := range seqs {
		o := make([]float64, len(sq.y))
		m.GRU.forward(m.GRU.Params, sq.s.x, &run, o)
		for t := range sq.y {
			if sq.s.whole[t] {
				continue
			}
			buf = window(sq.s.x, t, cfg.Window, buf)
			f := sq.s.base[t] - sq.y[t]
			fl += f * f
			d := f + m.MLP.forward(m.MLP.Params, buf, cache, 0, nil)
			ml += d * d
			g := f + o[t]
			gl += g * g
		}
	}
	N := float64(samples)
	m.Training.FixedLoss, m.Training.MLPLoss, m.Training.GRULoss = fl/N, ml/N, gl/N
	log(fmt.Sprintf("training mse over %d slices: fixed %.4f, mlp %.4f, bigru %.4f", samples, fl/N, ml/N, gl/N))
}

// adam is the Adam optimiser (Kingma and Ba) with the usual constants.
type adam struct {
	m, v []float64
	t    int
	rate float64
}

func newAdam(n int, rate float64) *adam {
	return &adam{m: make([]float64, n), v: make([]float64, n), rate: rate}
}

func (a *adam) step(p, g []float64) {
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	c1 := 1 - math.Pow(b1, float64(a.t))
	c2 := 1 - math.Pow(b2, float64(a.t))
	for i, gi := range g {
		a.m[i] = b1*a.m[i] + (1-b1)*gi
		a.v[i] = b2*a.v[i] + (1-b2)*gi*gi
		p[i] -= a.rate * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + eps)
	}
}

// clipNorm scales g down to norm at most c.
func clipNorm(g []float64, c float64) {
	s := 0.0
	for _, v := range g {
		s += v * v
	}
	if n := math.Sqrt(s); n > c {
		for i := range g {
			g[i] *= c / n
		}
	}
}
