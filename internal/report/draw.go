package report

// The drawing helpers every figure shares: the figure type and its writer
// (plot on the left, legend in a column on the right, every format written
// atomically), policy colours, bar widths, value labels and axis tickers.

import (
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Figure sizes: most figures are figW × figH plus the width of their legend,
// which is drawn to the right of the data so it never hides a bar or a line.
const (
	figW = 6 * vg.Inch
	figH = 4 * vg.Inch
)

// figureFormats are the formats every figure is written in, as NAME.EXT.
var figureFormats = []string{"png", "svg"}

// figure is a plot to write under a file name, with an optional legend drawn
// to the right of the plot.
type figure struct {
	name   string
	p      *plot.Plot
	legend *plot.Legend
	w, h   vg.Length
}

// writeFigures writes every figure in every format and returns the sorted base
// names written (those written so far on an error).
func writeFigures(dir string, figs []figure) ([]string, error) {
	var names []string
	for _, f := range figs {
		for _, ext := range figureFormats {
			name := f.name + "." + ext
			if err := writeFigure(filepath.Join(dir, name), f, ext); err != nil {
				slices.Sort(names)
				return names, err
			}
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// writeFigure draws f onto a canvas of format ext and writes it to path
// atomically. The legend, if any, gets a column of its own on the right.
func writeFigure(path string, f figure, ext string) error {
	var legendW vg.Length
	if f.legend != nil {
		legendW = f.legend.Rectangle(draw.Canvas{}).Size().X + 0.25*vg.Inch
	}
	c, err := draw.NewFormattedCanvas(f.w+legendW, f.h, ext)
	if err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	dc := draw.New(c)
	f.p.Draw(draw.Crop(dc, 0, -legendW, 0, 0))
	if f.legend != nil {
		var top vg.Length
		if f.p.Title.Text != "" {
			top = f.p.Title.TextStyle.Rectangle(f.p.Title.Text).Size().Y + f.p.Title.Padding
		}
		f.legend.Draw(draw.Crop(dc, f.w+0.1*vg.Inch, 0, 0, -top-0.1*vg.Inch))
	}
	return safeio.WriteFileAtomic(path, func(w io.Writer) error {
		_, err := c.WriteTo(w)
		return err
	})
}

// newLegend returns an empty legend for the column right of a plot.
func newLegend() *plot.Legend {
	l := plot.NewLegend()
	l.Top, l.Left = true, true
	l.TextStyle.Font.Size = vg.Points(10)
	l.Padding = vg.Points(2)
	return &l
}

// policyColor is the colour of the policy at index i.
func policyColor(i int) color.Color { return palette[i%len(palette)] }

// mix blends c with with, by t in [0, 1] (0: c).
func mix(c, with color.Color, t float64) color.Color {
	r1, g1, b1, _ := c.RGBA()
	r2, g2, b2, _ := with.RGBA()
	f := func(a, b uint32) uint8 { return uint8(math.Round(((1-t)*float64(a) + t*float64(b)) / 257)) }
	return color.RGBA{f(r1, r2), f(g1, g2), f(b1, b2), 255}
}

// barWidth is the width of n bars side by side filling frac of a plot of
// width w, at most maxW.
func barWidth(w vg.Length, n int, frac float64, maxW vg.Length) vg.Length {
	bw := vg.Length(frac) * (w - vg.Inch) / vg.Length(max(n, 1))
	return max(min(bw, maxW), vg.Points(1))
}

// nominalWidth is the width of a figure with n categories on x.
func nominalWidth(n int, per vg.Length) vg.Length {
	return max(figW, vg.Inch+vg.Length(n)*per)
}

// finite is v, or 0 when v is NaN or infinite.
func finite(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return v
}

// formatValue prints a bar's value with about three significant digits.
func formatValue(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// hGrid is a grid of horizontal lines only, for bars over categories.
func hGrid() *plotter.Grid {
	g := plotter.NewGrid()
	g.Vertical.Color = nil
	return g
}

// integerTicks are the default ticks at integer values only.
var integerTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(lo, hi) {
		if t.Value == math.Trunc(t.Value) {
			out = append(out, t)
		}
	}
	return out
})

// ecdfPoints are the points of the empirical CDF of vals (finite values only;
// non-positive ones too when positiveOnly), at most about 2000, starting at
// (min, 0); draw them as a post-step line.
func ecdfPoints(vals []float64, positiveOnly bool) plotter.XYs {
	var s []float64
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || (positiveOnly && v <= 0) {
			continue
		}
		s = append(s, v)
	}
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	n := len(s)
	const maxPoints = 2000
	step := max(1, n/maxPoints)
	pts := plotter.XYs{{X: s[0], Y: 0}}
	last := -step
	for i, v := range s {
		if i != n-1 && (s[i+1] == v || i-last < step) {
			continue
		}
		last = i
		pts = append(pts, plotter.XY{X: v, Y: float64(i+1) / float64(n)})
	}
	return pts
}

// logTicks labels the powers of ten in [lo, hi] (and 2× and 5× them when fewer
// than two powers fall inside), with minor ticks at the other multiples.
var logTicks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= 0 || lo > hi {
		return nil
	}
	k0, k1 := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	inside := 0
	for k := k0; k <= k1; k++ {
		if v := math.Pow10(k); v >= lo && v <= hi {
			inside++
		}
	}
	var ticks []plot.Tick
	for k := k0; k <= k1; k++ {
		dec := math.Pow10(k)
		for m := 1; m < 10; m++ {
			v := dec * float64(m)
			if v < lo/1.0001 || v > hi*1.0001 {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (inside < 2 && (m == 2 || m == 5)) {
				t.Label = strconv.FormatFloat(v, 'g', 3, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
})

// Log-scale axes are linear axes over log10 of the data, with ticks labelled
// with the data's values: gonum/plot places an axis label by the linear
// midpoint of its range, which on a plot.LogScale axis squeezes the plot.

// log10Ticks are logTicks over [10^lo, 10^hi], at log10 of their values.
var log10Ticks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	ticks := logTicks.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ticks {
		ticks[i].Value = math.Log10(ticks[i].Value)
	}
	return ticks
})

// setLogRange makes a a log-scale axis over [lo, hi] (widened when empty), for
// data plotted as log10 of its values.
func setLogRange(a *plot.Axis, lo, hi float64) {
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	a.Min, a.Max = math.Log10(lo), math.Log10(hi)
	a.Tick.Marker = log10Ticks
}

// pow2Ticks are the ticks of a log2-scale axis over [lo, hi] (data plotted as
// log2 of its values): at each integer k labelled 2^k, and at lo and hi when
// fewer than two integers fall inside.
var pow2Ticks = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
	if lo > hi {
		return nil
	}
	label := func(k float64) string { return strconv.FormatFloat(math.Exp2(k), 'g', 3, 64) }
	var ticks []plot.Tick
	for k := math.Ceil(lo - 1e-9); k <= math.Floor(hi+1e-9); k++ {
		ticks = append(ticks, plot.Tick{Value: k, Label: label(k)})
	}
	if len(ticks) < 2 {
		ticks = append(ticks, plot.Tick{Value: lo, Label: label(lo)}, plot.Tick{Value: hi, Label: label(hi)})
	}
	return ticks
})
