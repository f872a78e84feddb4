package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// LengthCDF draws the empirical CDF of sequence lengths (log-scale x axis) and the
// cumulative share of tokens and of attention work (Σ s²) held by sequences up to
// each length: the three curves that show why a few long sequences dominate.
func LengthCDF(lengths []int, title string) (*plot.Plot, error) {
	if len(lengths) == 0 {
		return nil, fmt.Errorf("report: LengthCDF: no lengths")
	}
	seqPts, tokPts, sqPts := lengthCurves(lengths)
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "sequence length (tokens, log scale)"
	p.Y.Label.Text = "cumulative fraction"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min = math.Max(1, seqPts[0].X)
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	for i, c := range []struct {
		name string
		pts  plotter.XYs
	}{{"sequences", seqPts}, {"tokens (Σ s)", tokPts}, {"attention work (Σ s²)", sqPts}} {
		l, err := plotter.NewLine(c.pts)
		if err != nil {
			return nil, fmt.Errorf("report: LengthCDF: %w", err)
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.name, l)
	}
	p.Legend.Top = true
	p.Legend.Left = true
	return p, nil
}

// lengthCurves returns the points of the three cumulative curves of LengthCDF
// over sorted lengths: fraction of sequences, of tokens and of Σ s² at or below
// each length.
func lengthCurves(lengths []int) (seqPts, tokPts, sqPts plotter.XYs) {
	sorted := slices.Clone(lengths)
	slices.Sort(sorted)
	var tokens, squares float64
	for _, s := range sorted {
		tokens += float64(s)
		squares += float64(s) * float64(s)
	}
	// About 2000 points per curve plus one per 2% of length: the last index of a
	// distinct length, at least step indices or 2% longer than the previous point
	// (and always the final one), so the sparse long tail keeps its shape.
	const maxPoints = 2000
	step := max(1, len(sorted)/maxPoints)
	var cumTok, cumSq float64
	last, lastX := -step, 0.0
	for i, s := range sorted {
		cumTok += float64(s)
		cumSq += float64(s) * float64(s)
		final := i == len(sorted)-1
		x := float64(s)
		if !final && (sorted[i+1] == s || (i-last < step && x < 1.02*lastX)) {
			continue
		}
		last, lastX = i, x
		seqPts = append(seqPts, plotter.XY{X: x, Y: float64(i+1) / float64(len(sorted))})
		tokPts = append(tokPts, plotter.XY{X: x, Y: cumTok / tokens})
		sqPts = append(sqPts, plotter.XY{X: x, Y: cumSq / squares})
	}
	return seqPts, tokPts, sqPts
}

// SavePlot writes p to path (its extension picks the format: .png, .svg) through a
// temporary file.
func SavePlot(p *plot.Plot, path string, width, height vg.Length) error {
	ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	switch ext {
	case "png", "svg":
	default:
		return fmt.Errorf("report: %s: unsupported figure format %q (allowed: png, svg)", path, ext)
	}
	w, err := p.WriterTo(width, height, ext)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return safeio.WriteFileAtomic(path, func(f io.Writer) error {
		_, err := w.WriteTo(f)
		return err
	})
}
