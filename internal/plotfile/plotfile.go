// Package plotfile writes a grid of gonum plots to one image file, PNG or SVG as the
// file's extension says. It exists so that every report (eval, bench) draws and saves its
// charts the same way.
//
// Errors name the file; nothing here keeps state, so it is safe for concurrent use.
package plotfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Check says whether file names a format Save can write (.png or .svg), so callers can
// refuse a bad name before they compute anything.
func Check(file string) error {
	switch strings.ToLower(filepath.Ext(file)) {
	case ".png", ".svg":
		return nil
	}
	return fmt.Errorf("plot to %s: want a .png or .svg file", file)
}

// Save draws grid (rows of plots; a nil plot leaves its tile empty) on a w×h canvas laid
// out by tiles, whose Rows and Cols are taken from grid, and writes it to file.
func Save(file string, grid [][]*plot.Plot, w, h vg.Length, tiles draw.Tiles) error {
	if err := Check(file); err != nil {
		return err
	}
	var (
		c  draw.Canvas
		wt io.WriterTo
	)
	if strings.ToLower(filepath.Ext(file)) == ".svg" {
		sc := vgsvg.New(w, h)
		c, wt = draw.New(sc), sc
	} else {
		ic := vgimg.New(w, h)
		c, wt = draw.New(ic), vgimg.PngCanvas{Canvas: ic}
	}
	tiles.Rows = len(grid)
	if len(grid) > 0 {
		tiles.Cols = len(grid[0])
	}
	canvases := plot.Align(grid, tiles, c)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("create plot file: %w", err)
	}
	if _, err := wt.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("write plot %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write plot %s: %w", file, err)
	}
	return nil
}
