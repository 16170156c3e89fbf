package bench

import (
	"fmt"
	"image/color"
	"slices"

	"github.com/bayesperf/bayesperf/internal/plotfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// PlotRead draws a run: the ns per read of every batch of each method as box plots on a
// log scale, and the distribution (CDF) of the age of the values shim reads returned.
// The format follows the file's extension: .png or .svg.
func PlotRead(raw *Raw, file string) error {
	if err := plotfile.Check(file); err != nil {
		return err
	}
	cost, err := costPlot(raw)
	if err != nil {
		return err
	}
	plots := []*plot.Plot{cost}
	if len(raw.AgeUs) > 0 {
		age, err := agePlot(raw.AgeUs)
		if err != nil {
			return err
		}
		plots = append(plots, age)
	}
	w, h := vg.Length(len(plots))*13*vg.Centimeter, 10*vg.Centimeter
	tiles := draw.Tiles{PadX: vg.Centimeter,
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	return plotfile.Save(file, [][]*plot.Plot{plots}, w, h, tiles)
}

var labels = map[string]string{
	Native: "native read(2)", Shim: "shim read()", Floor: "seqlock floor",
	Clock: "coarse clock", Precise: "precise clock", Rdpmc: "rdpmc",
}

func costPlot(raw *Raw) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = fmt.Sprintf("ns per read (%d reads per batch, one box per method)", raw.BatchReads)
	p.Y.Label.Text = "ns per read (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	var names []string
	for _, m := range methods {
		xs := raw.Batches[m]
		if len(xs) == 0 {
			continue
		}
		b, err := plotter.NewBoxPlot(vg.Points(28), float64(len(names)), plotter.Values(xs))
		if err != nil {
			return nil, fmt.Errorf("plot %s: %w", m, err)
		}
		b.FillColor = color.RGBA{R: 31, G: 119, B: 180, A: 90}
		p.Add(b)
		names = append(names, fmt.Sprintf("%s\n%.1f", labels[m], Quantile(xs, 0.5)))
	}
	p.NominalX(names...)
	p.Add(plotter.NewGrid())
	return p, nil
}

func agePlot(ages []float64) (*plot.Plot, error) {
	s := slices.Clone(ages)
	slices.Sort(s)
	pts := make(plotter.XYs, len(s))
	for i, a := range s {
		pts[i] = plotter.XY{X: a, Y: float64(i+1) / float64(len(s))}
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, fmt.Errorf("plot ages: %w", err)
	}
	l.Color = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	l.Width = vg.Points(1.5)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("age of the values shim reads return (%d reads)", len(s))
	p.X.Label.Text = "age (us): read time - time of the sidecar's kernel read"
	p.Y.Label.Text = "fraction of reads"
	p.Y.Min, p.Y.Max = 0, 1
	p.X.Tick.Marker = wholeTicks{}
	p.Add(l, plotter.NewGrid())
	for _, q := range []float64{0.5, 0.99} {
		v := Quantile(ages, q)
		ql, err := plotter.NewLine(plotter.XYs{{X: v, Y: 0}, {X: v, Y: 1}})
		if err != nil {
			return nil, fmt.Errorf("plot age quantile: %w", err)
		}
		ql.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		ql.Color = color.Gray{Y: 120}
		p.Add(ql)
		p.Legend.Add(fmt.Sprintf("p%.0f %.0f us", 100*q, v), ql)
	}
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs = -vg.Points(4)
	p.Legend.YOffs = vg.Points(20)
	return p, nil
}

// wholeTicks are the default ticks labelled without decimals (µs need none).
type wholeTicks struct{}

func (wholeTicks) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = fmt.Sprintf("%.0f", ts[i].Value)
		}
	}
	return ts
}
