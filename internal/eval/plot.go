package eval

import (
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/bayesperf/bayesperf/internal/plotfile"
)

// worstEvents is how many events the plot shows over time.
const worstEvents = 4

var palette = map[string]color.Color{
	"truth":     color.Black,
	Linux:       color.RGBA{R: 214, G: 39, B: 40, A: 255},
	Fixed:       color.RGBA{R: 255, G: 127, B: 14, A: 255},
	Linear:      color.RGBA{R: 148, G: 103, B: 189, A: 255},
	BayesPerfRR: color.RGBA{R: 31, G: 119, B: 180, A: 255},
	LinuxOwn:    color.RGBA{R: 140, G: 86, B: 75, A: 255},
	BayesPerf:   color.RGBA{R: 44, G: 160, B: 44, A: 255},
}

// Plot draws, for the events Linux scaling gets most wrong (by WAPE), the truth and every
// estimator per reporting interval, a bar chart of each estimator's mean and median
// WAPE, and one of each estimator's worst ratio to Linux with its count of harmed events.
// The format follows the file's extension: .png or .svg.
func Plot(r *Result, file string) error {
	if err := plotfile.Check(file); err != nil {
		return err
	}
	var evs []int
	for i, pe := range r.PerEvent {
		if pe.Defined {
			evs = append(evs, i)
		}
	}
	sort.SliceStable(evs, func(a, b int) bool {
		return r.PerEvent[evs[a]].Metrics[Linux].WAPE > r.PerEvent[evs[b]].Metrics[Linux].WAPE
	})
	evs = evs[:min(len(evs), worstEvents)]
	var plots []*plot.Plot
	for _, e := range evs {
		p, err := seriesPlot(r, r.PerEvent[e])
		if err != nil {
			return err
		}
		plots = append(plots, p)
	}
	bars, err := errorPlot(r)
	if err != nil {
		return err
	}
	harm, err := harmPlot(r)
	if err != nil {
		return err
	}
	plots = append(plots, bars, harm)
	const cols = 2
	rows := (len(plots) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range plots {
		grid[i/cols][i%cols] = p
	}
	w, h := 28*vg.Centimeter, vg.Length(rows)*9*vg.Centimeter
	tiles := draw.Tiles{PadX: vg.Centimeter, PadY: vg.Centimeter,
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(4)}
	return plotfile.Save(file, grid, w, h, tiles)
}

func line(name string, ys []float64) (*plotter.Line, error) {
	pts := make(plotter.XYs, len(ys))
	for i, y := range ys {
		pts[i] = plotter.XY{X: float64(i), Y: y}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("plot %s: %w", name, err)
	}
	l.Color = palette[name]
	l.Width = vg.Points(1)
	if name == "truth" {
		l.Width = vg.Points(2)
	}
	return l, nil
}

func seriesPlot(r *Result, pe PerEvent) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s (linux WAPE %.0f%%)", pe.Event, 100*pe.Metrics[Linux].WAPE)
	p.X.Label.Text = "reporting interval"
	p.Y.Label.Text = "count"
	l, err := line("truth", pe.Truths)
	if err != nil {
		return nil, err
	}
	p.Add(l)
	p.Legend.Add("truth", l)
	for _, n := range r.Names {
		l, err := line(n, pe.Series[n])
		if err != nil {
			return nil, err
		}
		p.Add(l)
		p.Legend.Add(n, l)
	}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(7)
	return p, nil
}

func errorPlot(r *Result) (*plot.Plot, error) {
	p := newPlot("error by estimator (mean and median WAPE over events)", "WAPE")
	mean := make(plotter.Values, len(r.Names))
	med := make(plotter.Values, len(r.Names))
	for i, n := range r.Names {
		mean[i], med[i] = r.Estimators[n].WAPE, r.Estimators[n].MedianWAPE
	}
	w := vg.Points(12)
	b1, err := plotter.NewBarChart(mean, w)
	if err != nil {
		return nil, fmt.Errorf("plot errors: %w", err)
	}
	b1.Color, b1.Offset = color.RGBA{R: 31, G: 119, B: 180, A: 255}, -w/2
	b2, err := plotter.NewBarChart(med, w)
	if err != nil {
		return nil, fmt.Errorf("plot errors: %w", err)
	}
	b2.Color, b2.Offset = color.RGBA{R: 174, G: 199, B: 232, A: 255}, w/2
	p.Add(b1, b2)
	p.Legend.Add("mean", b1)
	p.Legend.Add("median", b2)
	p.Legend.Top = true
	p.NominalX(r.Names...)
	return p, nil
}

// harmPlot draws each estimator's worst_ratio as a bar labelled with its harmed count,
// and a line at 1 (as bad as Linux on its worst event): the geometric-mean error
// reduction of the other panel can hide one event made far worse.
func harmPlot(r *Result) (*plot.Plot, error) {
	p := newPlot("do no harm: worst WAPE / linux WAPE over events", "worst ratio")
	ratios := make(plotter.Values, len(r.Names))
	labels := make([]string, len(r.Names))
	for i, n := range r.Names {
		s := r.Estimators[n]
		labels[i] = n
		if s.WorstRatio != nil {
			ratios[i] = *s.WorstRatio
		}
		if s.Harmed != nil {
			labels[i] = fmt.Sprintf("%s\n%d harmed", n, *s.Harmed)
		}
	}
	b, err := plotter.NewBarChart(ratios, vg.Points(16))
	if err != nil {
		return nil, fmt.Errorf("plot harm: %w", err)
	}
	b.Color = palette[Linux]
	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(r.Names)) - 0.5, Y: 1}})
	if err != nil {
		return nil, fmt.Errorf("plot harm: %w", err)
	}
	one.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
	p.Add(b, one)
	p.NominalX(labels...)
	return p, nil
}

// newPlot is an empty plot with its title and y axis label.
func newPlot(title, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = y
	return p
}
