package learned

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// Format and Version identify a model file; Load rejects any other.
const (
	Format  = "bayesperf-learned"
	Version = 1
)

// Model is what `bayesperf train` writes: the feature spec, both networks and how they
// were trained. It is read-only once built.
type Model struct {
	Format  string   `json:"format"`
	Version int      `json:"version"`
	Inputs  []string `json:"inputs"` // per-slice inputs, in order (Inputs)
	Window  int      `json:"window"` // the MLP sees slices t-Window..t+Window
	MLP     *MLP     `json:"mlp"`
	GRU     *GRU     `json:"bigru"`
	// Training records how the weights were obtained (informative only).
	Training TrainInfo `json:"training"`
}

// TrainInfo is the training record kept in a model file.
type TrainInfo struct {
	Config  Config   `json:"config"`
	Runs    []string `json:"runs"`
	Samples int      `json:"samples"` // training slices (event, slice not counted whole)
	// Final mean squared errors on the training slices, log1p units.
	MLPLoss float64 `json:"mlp_loss"`
	GRULoss float64 `json:"bigru_loss"`
	// Baseline: the same for the fixed interpolation (the networks' starting point).
	FixedLoss float64 `json:"fixed_loss"`
}

// maxParams bounds the weights a file may hold (a model here has tens of thousands).
const maxParams = 1 << 22

// Write writes m as indented JSON.
func (m *Model) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("write model: %w", err)
	}
	return nil
}

// Load reads a model written by Write and checks that it is complete and that this
// version of bayesperf computes the inputs it was trained on.
func Load(r io.Reader) (*Model, error) {
	var m Model
	dec := json.NewDecoder(io.LimitReader(r, 256<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("load model: %w (want a JSON file written by bayesperf train)", err)
	}
	if err := m.check(); err != nil {
		return nil, fmt.Errorf("load model: %w", err)
	}
	return &m, nil
}

func (m *Model) check() error {
	if m.Format != Format {
		return fmt.Errorf("format %q, want %q (a file written by bayesperf train)", m.Format, Format)
	}
	if m.Version != Version {
		return fmt.Errorf("version %d, this bayesperf reads version %d: train the model again", m.Version, Version)
	}
	if !slices.Equal(m.Inputs, Inputs) {
		return fmt.Errorf("inputs %v, this bayesperf computes %v: train the model again", m.Inputs, Inputs)
	}
	if m.Window < 0 || m.Window > 1000 {
		return fmt.Errorf("window %d outside 0..1000", m.Window)
	}
	if m.MLP == nil || m.GRU == nil {
		return errors.New("the mlp or the bigru network is missing")
	}
	sz := m.MLP.Sizes
	if len(sz) < 2 || len(sz) > 8 || sz[0] != (2*m.Window+1)*nIn || sz[len(sz)-1] != 1 {
		return fmt.Errorf("mlp sizes %v: want %d inputs (window %d), hidden layers, 1 output", sz, (2*m.Window+1)*nIn, m.Window)
	}
	total := 0
	for _, s := range sz {
		if s < 1 || s > 4096 {
			return fmt.Errorf("mlp layer of %d units", s)
		}
	}
	total = mlpParams(sz)
	if total > maxParams || len(m.MLP.Params) != total {
		return fmt.Errorf("mlp has %d weights, sizes %v need %d", len(m.MLP.Params), sz, total)
	}
	if m.GRU.In != nIn || m.GRU.Hidden < 1 || m.GRU.Hidden > 1024 {
		return fmt.Errorf("bigru of %d inputs and %d hidden units: want %d inputs and 1..1024 units", m.GRU.In, m.GRU.Hidden, nIn)
	}
	if n := gruParams(m.GRU.In, m.GRU.Hidden); len(m.GRU.Params) != n {
		return fmt.Errorf("bigru has %d weights, %d hidden units need %d", len(m.GRU.Params), m.GRU.Hidden, n)
	}
	for _, ps := range [][]float64{m.MLP.Params, m.GRU.Params} {
		for i, v := range ps {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("weight %d is %v", i, v)
			}
		}
	}
	return nil
}
