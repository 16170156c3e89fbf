package bench

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlotRead(t *testing.T) {
	raw, err := ParseRaw(strings.NewReader(output(100,
		map[string][]float64{Native: {1000, 1500, 1200}, Shim: {30, 40, 35}, Floor: {1, 2, 1.5}, Clock: {20, 21, 25}},
		[]float64{10, 500, 900, 1200}, "no PMU")))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	svg := filepath.Join(dir, "l.svg")
	png := filepath.Join(dir, "l.png")
	for _, f := range []string{svg, png} {
		if err := PlotRead(raw, f); err != nil {
			t.Fatalf("PlotRead(%s): %v", f, err)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	// The methods' labels carry their medians, and the age panel its quantiles.
	for _, want := range []string{"<svg", "native read(2)", "1200.0", "35.0", "p50 700 us"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("svg lacks %q", want)
		}
	}
	if p, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(p, []byte("\x89PNG")) {
		t.Errorf("png: %v, %d bytes", err, len(p))
	}
	if err := PlotRead(raw, filepath.Join(dir, "l.jpg")); err == nil {
		t.Errorf("PlotRead wrote a .jpg")
	}
}
