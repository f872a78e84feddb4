package report

// A validation's results folder (dcpsim validate --out DIR): every run with
// what the table output prints, as JSON and CSV, and predicted against
// measured on log-log axes.

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"image/color"
	"math"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ValidationFigures draws the predicted-vs-measured figure (PNG and SVG)
// of a validation into dir and returns the names written, sorted.
func ValidationFigures(dir string, rs []results.ValidationResult) ([]string, error) {
	fig, err := validationFigure(rs)
	if err != nil {
		return nil, err
	}
	names, err := writeFigures(dir, []figure{*fig})
	slices.Sort(names)
	return names, err
}

// validationFigure plots predicted against measured seconds per step on
// log-log axes, one colour per kind, with y = x and the ±25% band.
func validationFigure(rs []results.ValidationResult) (*figure, error) {
	p := plot.New()
	p.Title.Text = "Predicted against published step times"
	p.X.Label.Text = "measured (s per step)"
	p.Y.Label.Text = "predicted (s per step)"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	lo, hi := math.Inf(1), 0.0
	for _, r := range rs {
		for _, v := range []float64{r.MeasuredSeconds, r.PredictedSeconds} {
			if v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	if hi == 0 {
		return nil, fmt.Errorf("report: validation figure: no run with positive seconds")
	}
	lo, hi = lo/1.5, hi*1.5
	legend := newLegend()
	for i, band := range []float64{1, 0.75, 1.25} {
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo * band}, {X: hi, Y: hi * band}})
		if err != nil {
			return nil, err
		}
		l.Color = mix(policyColor(0), color.White, 0.6)
		if i == 0 {
			l.Color = policyColor(0)
		} else {
			l.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
		}
		p.Add(l)
		if i == 0 {
			legend.Add("y = x", l)
		} else if i == 1 {
			legend.Add("±25%", l)
		}
	}
	kinds := map[string]plotter.XYs{}
	for _, r := range rs {
		if r.MeasuredSeconds > 0 && r.PredictedSeconds > 0 {
			kinds[r.Kind] = append(kinds[r.Kind], plotter.XY{X: r.MeasuredSeconds, Y: r.PredictedSeconds})
		}
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	slices.Sort(names)
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}}
	for i, k := range names {
		s, err := plotter.NewScatter(kinds[k])
		if err != nil {
			return nil, err
		}
		s.GlyphStyle.Color = policyColor(i + 1)
		s.GlyphStyle.Shape = shapes[i%len(shapes)]
		s.GlyphStyle.Radius = vg.Points(3.5)
		p.Add(s)
		legend.Add(k, s)
	}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
	return &figure{name: results.ValidationFigure, p: p, legend: legend, w: figH + vg.Inch, h: figH + vg.Inch}, nil
}
