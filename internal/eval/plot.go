package eval

import "errors"

// Plot draws the result to a PNG or SVG file.
func Plot(r *Result, file string) error {
	return errors.New("plot: not implemented yet")
}
