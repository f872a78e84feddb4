package report

import (
	"cmp"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
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

// WriteRunFigures draws the figures of one scenario's run into dir (which must
// exist), each as NAME.png and NAME.svg, and returns the base names of the files
// it wrote, sorted. Policies whose Error is set are left out of every figure;
// a policy keeps the colour of its index in s.Policies throughout. The figures:
//
//   - throughput: tokens/day (billions) per policy, bars with value labels.
//   - breakdown: the iteration's shares (compute, exposed comm, PP bubble, DP
//     bubble, planner stall, grad sync + optimizer) per policy, stacked, in %.
//   - step-time: step time (s) per iteration and policy, from rows: measured
//     iterations as a line with filled points, warm-up iterations as open
//     rings, unconnected.
//   - mb-time: empirical CDF of each policy's microbatch times
//     (PolicySummary.MBSeconds), log-scale x when they span more than 20×.
//   - cp-degrees: share of GPU-slots (%) at each CP degree, bars grouped by
//     degree, one bar per policy.
//   - timeline-POLICY for each timeline (timeline-POLICY-itN when a policy has
//     several): the pipeline of one iteration, one track per (stage,
//     representative rank), stage 0 on top; forward ops light and backward
//     ops dark in the policy's colour, planner stall, grad-sync and optimizer
//     in three greys.
//
// A figure with nothing to draw (no rows, no microbatch times, no degree shares,
// a timeline without slices) is skipped. On an error it returns the files
// written so far and the error.
func WriteRunFigures(dir string, s *Summary, rows []IterationRow, tls []Timeline) ([]string, error) {
	if s == nil {
		return nil, fmt.Errorf("report: WriteRunFigures: nil summary")
	}
	var figs []figure
	for _, build := range []func(*Summary) (*figure, error){throughputFigure, breakdownFigure, mbTimeFigure, cpDegreesFigure} {
		f, err := build(s)
		if err != nil {
			return nil, err
		}
		if f != nil {
			figs = append(figs, *f)
		}
	}
	f, err := stepTimeFigure(s, rows)
	if err != nil {
		return nil, err
	}
	if f != nil {
		figs = append(figs, *f)
	}
	tfs, err := timelineFigures(s, tls)
	if err != nil {
		return nil, err
	}
	figs = append(figs, tfs...)
	return writeFigures(dir, figs)
}

// WriteSweepFigures draws the figures of a sweep into dir (which must exist),
// each as NAME.png and NAME.svg, and returns the base names of the files it
// wrote, sorted. A policy keeps one colour throughout, by its first appearance
// over the points in Index order; failed policies are left out. When points
// that share a figure's x value differ in other swept axes, those axes' values
// name separate lines (e.g. "hydra (ctx=128k)"); what remains is averaged. The
// figures:
//
//   - sweep-throughput: tokens/day (billions) vs GPUs, one line per policy and
//     model ("policy (model)" when there are several models); only with at
//     least two distinct GPU counts.
//   - sweep-planner: the planner's time per iteration (s, log scale) vs GPUs,
//     modelled (PlannerModeledSeconds) solid and our Go implementation's wall
//     time (PlannerGoSeconds) dashed; non-positive values are left out; only
//     with at least two distinct GPU counts.
//   - sweep-cap: HyDra's mean step time (s) vs the forced cap C (points with
//     HydraCap > 0; log2 x), with the closed-form C* (the most common
//     HydraClosedFormCap of those points) as a dashed vertical line; only with
//     at least two distinct caps.
func WriteSweepFigures(dir string, pts []SweepPoint) ([]string, error) {
	pts = slices.Clone(pts)
	slices.SortStableFunc(pts, func(a, b SweepPoint) int { return cmp.Compare(a.Index, b.Index) })
	colors := sweepPolicyColors(pts)
	var figs []figure
	for _, build := range []func([]SweepPoint, map[string]int) (*figure, error){sweepThroughputFigure, sweepPlannerFigure, sweepCapFigure} {
		f, err := build(pts, colors)
		if err != nil {
			return nil, err
		}
		if f != nil {
			figs = append(figs, *f)
		}
	}
	return writeFigures(dir, figs)
}

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
	return WriteFileAtomic(path, func(w io.Writer) error {
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

// runTitle is what + the scenario's name, when it has one.
func runTitle(s *Summary, what string) string {
	if s.Scenario == "" {
		return what
	}
	return what + " (" + s.Scenario + ")"
}

// okPolicy is a policy of a Summary that did not fail, with its index.
type okPolicy struct {
	idx int
	ps  *PolicySummary
}

// okPolicies are s's policies without an Error, in order.
func okPolicies(s *Summary) []okPolicy {
	var ok []okPolicy
	for i := range s.Policies {
		if s.Policies[i].Error == "" {
			ok = append(ok, okPolicy{i, &s.Policies[i]})
		}
	}
	return ok
}

// policyIndex maps policy names onto colour indices: a policy of s gets its
// index (its first, if repeated); failed reports whether it failed.
func policyIndex(s *Summary) (idx map[string]int, failed map[string]bool) {
	idx, failed = map[string]int{}, map[string]bool{}
	for i, p := range s.Policies {
		if _, dup := idx[p.Policy]; !dup {
			idx[p.Policy] = i
		}
		if p.Error != "" {
			failed[p.Policy] = true
		}
	}
	return idx, failed
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

// throughputFigure is tokens/day per policy; nil without policies.
func throughputFigure(s *Summary) (*figure, error) {
	ok := okPolicies(s)
	if len(ok) == 0 {
		return nil, nil
	}
	w := nominalWidth(len(ok), 0.9*vg.Inch)
	p := plot.New()
	p.Title.Text = runTitle(s, "throughput")
	p.X.Label.Text = "policy"
	p.Y.Label.Text = "tokens/day (billions)"
	p.Add(hGrid())
	bw := barWidth(w, len(ok), 0.6, vg.Points(48))
	var names []string
	var lbl plotter.XYLabels
	for i, op := range ok {
		v := finite(op.ps.TokensPerDay / 1e9)
		b, err := plotter.NewBarChart(plotter.Values{v}, bw)
		if err != nil {
			return nil, fmt.Errorf("report: throughput figure: %w", err)
		}
		b.XMin = float64(i)
		b.Color = policyColor(op.idx)
		b.LineStyle.Width = 0
		p.Add(b)
		names = append(names, op.ps.Policy)
		lbl.XYs = append(lbl.XYs, plotter.XY{X: float64(i), Y: v})
		lbl.Labels = append(lbl.Labels, formatValue(v))
	}
	labels, err := plotter.NewLabels(lbl)
	if err != nil {
		return nil, fmt.Errorf("report: throughput figure: %w", err)
	}
	for i := range labels.TextStyle {
		labels.TextStyle[i].XAlign = draw.XCenter
	}
	labels.Offset = vg.Point{Y: vg.Points(3)}
	p.Add(labels)
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min = 0
	return &figure{name: "throughput", p: p, w: w, h: figH}, nil
}

// breakdownParts are the parts of an iteration, bottom to top, with their
// colours.
var breakdownParts = []struct {
	name  string
	color color.Color
	share func(*PolicySummary) float64
}{
	{"compute", color.RGBA{0, 114, 178, 255}, func(p *PolicySummary) float64 { return p.ComputeShare }},
	{"exposed comm", color.RGBA{213, 94, 0, 255}, func(p *PolicySummary) float64 { return p.ExposedCommShare }},
	{"PP bubble", color.RGBA{230, 159, 0, 255}, func(p *PolicySummary) float64 { return p.PPBubbleShare }},
	{"DP bubble", color.RGBA{240, 228, 66, 255}, func(p *PolicySummary) float64 { return p.DPBubbleShare }},
	{"planner stall", color.RGBA{110, 110, 110, 255}, func(p *PolicySummary) float64 { return p.PlannerStallShare }},
	{"grad sync + optimizer", color.RGBA{204, 121, 167, 255}, func(p *PolicySummary) float64 { return p.SyncShare }},
}

// breakdownFigure is the iteration's shares per policy, stacked; nil without
// policies.
func breakdownFigure(s *Summary) (*figure, error) {
	ok := okPolicies(s)
	if len(ok) == 0 {
		return nil, nil
	}
	w := nominalWidth(len(ok), 0.9*vg.Inch)
	p := plot.New()
	p.Title.Text = runTitle(s, "iteration breakdown")
	p.X.Label.Text = "policy"
	p.Y.Label.Text = "share of iteration (%)"
	p.Add(hGrid())
	bw := barWidth(w, len(ok), 0.6, vg.Points(48))
	leg := newLegend()
	var below *plotter.BarChart
	bars := make([]*plotter.BarChart, len(breakdownParts))
	top := 100.0
	sums := make([]float64, len(ok))
	for k, part := range breakdownParts {
		vals := make(plotter.Values, len(ok))
		for i, op := range ok {
			vals[i] = finite(100 * part.share(op.ps))
			sums[i] += vals[i]
		}
		b, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			return nil, fmt.Errorf("report: breakdown figure: %w", err)
		}
		b.Color = part.color
		b.LineStyle.Width = 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		bars[k] = b
		p.Add(b)
	}
	for k := len(breakdownParts) - 1; k >= 0; k-- {
		leg.Add(breakdownParts[k].name, bars[k])
	}
	for _, v := range sums {
		top = max(top, v)
	}
	names := make([]string, len(ok))
	for i, op := range ok {
		names[i] = op.ps.Policy
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min, p.Y.Max = 0, top
	return &figure{name: "breakdown", p: p, legend: leg, w: w, h: figH}, nil
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

// stepTimeFigure is the step time per iteration and policy; nil without rows of
// policies that did not fail.
func stepTimeFigure(s *Summary, rows []IterationRow) (*figure, error) {
	idx, failed := policyIndex(s)
	var order []string
	byPolicy := map[string][]IterationRow{}
	for _, r := range rows {
		if failed[r.Policy] || math.IsNaN(r.StepSeconds) || math.IsInf(r.StepSeconds, 0) {
			continue
		}
		if _, seen := byPolicy[r.Policy]; !seen {
			order = append(order, r.Policy)
			if _, known := idx[r.Policy]; !known {
				idx[r.Policy] = len(s.Policies) + len(idx)
			}
		}
		byPolicy[r.Policy] = append(byPolicy[r.Policy], r)
	}
	if len(order) == 0 {
		return nil, nil
	}
	// Policies in the summary's order, then the others as they came.
	slices.SortStableFunc(order, func(a, b string) int { return cmp.Compare(idx[a], idx[b]) })
	p := plot.New()
	p.Title.Text = runTitle(s, "step time")
	p.X.Label.Text = "iteration"
	p.Y.Label.Text = "step time (s)"
	p.X.Tick.Marker = integerTicks
	p.Add(plotter.NewGrid())
	leg := newLegend()
	anyWarmup := false
	for _, pol := range order {
		rs := byPolicy[pol]
		slices.SortStableFunc(rs, func(a, b IterationRow) int { return cmp.Compare(a.Iteration, b.Iteration) })
		var measured, warm plotter.XYs
		for _, r := range rs {
			pt := plotter.XY{X: float64(r.Iteration), Y: r.StepSeconds}
			if r.Warmup {
				warm = append(warm, pt)
			} else {
				measured = append(measured, pt)
			}
		}
		col := policyColor(idx[pol])
		var thumbs []plot.Thumbnailer
		if len(measured) > 0 {
			l, sc, err := plotter.NewLinePoints(measured)
			if err != nil {
				return nil, fmt.Errorf("report: step-time figure: %w", err)
			}
			l.Color, l.Width = col, vg.Points(1.5)
			sc.Color, sc.Shape, sc.Radius = col, draw.CircleGlyph{}, vg.Points(2.5)
			p.Add(l, sc)
			thumbs = append(thumbs, l, sc)
		}
		if len(warm) > 0 {
			anyWarmup = true
			sc, err := plotter.NewScatter(warm)
			if err != nil {
				return nil, fmt.Errorf("report: step-time figure: %w", err)
			}
			sc.Color, sc.Shape, sc.Radius = col, draw.RingGlyph{}, vg.Points(3)
			p.Add(sc)
			if len(thumbs) == 0 {
				thumbs = append(thumbs, sc)
			}
		}
		leg.Add(pol, thumbs...)
	}
	if anyWarmup {
		leg.Add("warm-up (open)", &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: color.Gray{100}, Shape: draw.RingGlyph{}, Radius: vg.Points(3)}})
	}
	return &figure{name: "step-time", p: p, legend: leg, w: figW, h: figH}, nil
}

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

// mbTimeFigure is the empirical CDF of each policy's microbatch times; nil
// when no policy has any.
func mbTimeFigure(s *Summary) (*figure, error) {
	lo, hi := math.Inf(1), math.Inf(-1)
	var with []okPolicy
	for _, op := range okPolicies(s) {
		n := 0
		for _, v := range op.ps.MBSeconds {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			n++
			lo, hi = min(lo, v), max(hi, v)
		}
		if n > 0 {
			with = append(with, op)
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	logX := lo > 0 && hi > 20*lo
	p := plot.New()
	p.Title.Text = runTitle(s, "microbatch times")
	p.X.Label.Text = "microbatch time (s)"
	if logX {
		p.X.Label.Text = "microbatch time (s, log scale)"
	}
	p.Y.Label.Text = "cumulative fraction of microbatches"
	p.Add(plotter.NewGrid())
	leg := newLegend()
	for _, op := range with {
		pts := ecdfPoints(op.ps.MBSeconds, logX)
		if logX {
			for i := range pts {
				pts[i].X = math.Log10(pts[i].X)
			}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, fmt.Errorf("report: mb-time figure: %w", err)
		}
		l.StepStyle = plotter.PostStep
		l.Color, l.Width = policyColor(op.idx), vg.Points(1.5)
		p.Add(l)
		leg.Add(op.ps.Policy, l)
	}
	if logX {
		setLogRange(&p.X, lo, hi)
	}
	p.Y.Min, p.Y.Max = 0, 1
	return &figure{name: "mb-time", p: p, legend: leg, w: figW, h: figH}, nil
}

// cpDegreesFigure is the share of GPU-slots at each CP degree, bars grouped by
// degree; nil when no policy has degree shares.
func cpDegreesFigure(s *Summary) (*figure, error) {
	var with []okPolicy
	var degrees []int
	for _, op := range okPolicies(s) {
		if len(op.ps.DegreeShares) == 0 {
			continue
		}
		with = append(with, op)
		for _, d := range op.ps.DegreeShares {
			degrees = append(degrees, d.Degree)
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	slices.Sort(degrees)
	degrees = slices.Compact(degrees)
	pos := map[int]int{}
	names := make([]string, len(degrees))
	for i, d := range degrees {
		pos[d] = i
		names[i] = strconv.Itoa(d)
	}
	w := nominalWidth(len(degrees)*len(with), 0.3*vg.Inch)
	group := barWidth(w, len(degrees), 0.8, vg.Length(len(with))*vg.Points(28))
	bw := group / vg.Length(len(with))
	p := plot.New()
	p.Title.Text = runTitle(s, "CP degrees")
	p.X.Label.Text = "CP degree"
	p.Y.Label.Text = "share of GPU-slots (%)"
	p.Add(hGrid())
	leg := newLegend()
	for j, op := range with {
		vals := make(plotter.Values, len(degrees))
		for _, d := range op.ps.DegreeShares {
			vals[pos[d.Degree]] += finite(100 * d.Share)
		}
		b, err := plotter.NewBarChart(vals, bw)
		if err != nil {
			return nil, fmt.Errorf("report: cp-degrees figure: %w", err)
		}
		b.Color = policyColor(op.idx)
		b.LineStyle.Width = 0
		b.Offset = (vg.Length(j) - vg.Length(len(with)-1)/2) * bw
		p.Add(b)
		leg.Add(op.ps.Policy, b)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5
	p.Y.Min = 0
	return &figure{name: "cp-degrees", p: p, legend: leg, w: w, h: figH}, nil
}

// ganttBar is one filled rectangle of a gantt plot, in data coordinates, with
// the index of its colour.
type ganttBar struct {
	X0, X1, Y0, Y1 float64
	Fill           int
}

// gantt is a plot.Plotter of filled rectangles (the ops of a pipeline
// timeline). It fills all the rectangles of one colour as one path, so ~10^4
// of them draw quickly.
type gantt struct {
	Bars   []ganttBar
	Colors []color.Color
	// Gap is cut off each side of a rectangle wider than 4 gaps so that
	// neighbours stay apart; MinWidth is the least width drawn.
	Gap, MinWidth vg.Length
	// XMin, XMax, YMin and YMax are bounds DataRange covers beyond the bars.
	XMin, XMax, YMin, YMax float64
}

// Plot implements plot.Plotter.
func (g *gantt) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, trY := plt.Transforms(&c)
	paths := make([]vg.Path, len(g.Colors))
	for _, b := range g.Bars {
		x0, x1 := trX(b.X0), trX(b.X1)
		y0, y1 := trY(b.Y0), trY(b.Y1)
		if x1 < x0 {
			x0, x1 = x1, x0
		}
		if y1 < y0 {
			y0, y1 = y1, y0
		}
		if x1-x0 > 4*g.Gap {
			x0, x1 = x0+g.Gap, x1-g.Gap
		}
		if w := x1 - x0; w < g.MinWidth {
			x0, x1 = x0-(g.MinWidth-w)/2, x1+(g.MinWidth-w)/2
		}
		x0, x1 = max(x0, c.Min.X), min(x1, c.Max.X)
		y0, y1 = max(y0, c.Min.Y), min(y1, c.Max.Y)
		if x1 <= x0 || y1 <= y0 || b.Fill < 0 || b.Fill >= len(paths) {
			continue
		}
		p := &paths[b.Fill]
		p.Move(vg.Point{X: x0, Y: y0})
		p.Line(vg.Point{X: x1, Y: y0})
		p.Line(vg.Point{X: x1, Y: y1})
		p.Line(vg.Point{X: x0, Y: y1})
		p.Close()
	}
	for i, p := range paths {
		if len(p) > 0 {
			c.SetColor(g.Colors[i])
			c.Fill(p)
		}
	}
}

// DataRange implements plot.DataRanger: the bars and the bounds.
func (g *gantt) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = g.XMin, g.XMax, g.YMin, g.YMax
	for _, b := range g.Bars {
		xmin, xmax = min(xmin, b.X0, b.X1), max(xmax, b.X0, b.X1)
		ymin, ymax = min(ymin, b.Y0, b.Y1), max(ymax, b.Y0, b.Y1)
	}
	return xmin, xmax, ymin, ymax
}

// swatch is a legend thumbnail filled with one colour.
type swatch struct{ color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(s.Color, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// The greys of the timeline's non-compute slices.
var (
	plannerGrey   = color.RGBA{77, 77, 77, 255}
	gradSyncGrey  = color.RGBA{140, 140, 140, 255}
	optimizerGrey = color.RGBA{191, 191, 191, 255}
)

// timelineTrack is one track of a timeline figure, centred at y = Y.
type timelineTrack struct {
	Stage, Rank int
	Y           float64
}

// timelineGantt lays tl out: one track per (stage, rank) (its stages and
// ranks, and any more its slices name), stage 0 and the lowest rank on top,
// one unit apart, stages half a unit further apart when they have several
// ranks; x in seconds. The planner stall is
// drawn on every track when tl has one and no PlannerStall slices. The bars'
// colours are indexed by SliceKind; kinds lists those present, in order.
func timelineGantt(tl Timeline, base color.Color) (g *gantt, tracks []timelineTrack, kinds []SliceKind) {
	stages := max(tl.Stages, 0)
	ranks := slices.Clone(tl.Ranks)
	hasPlanner := false
	for _, sl := range tl.Slices {
		stages = max(stages, sl.Stage+1)
		ranks = append(ranks, sl.Rank)
		hasPlanner = hasPlanner || sl.Kind == PlannerStall
	}
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	if len(ranks) == 0 {
		ranks = []int{0}
	}
	stages = max(stages, 1)
	rankPos := map[int]int{}
	for i, r := range ranks {
		rankPos[r] = i
	}
	stageGap := 0.0
	if len(ranks) > 1 {
		stageGap = 0.5
	}
	trackY := func(stage, rank int) float64 {
		return float64((stages-1-stage)*len(ranks)+len(ranks)-1-rankPos[rank]) + float64(stages-1-stage)*stageGap
	}
	for s := range stages {
		for _, r := range ranks {
			tracks = append(tracks, timelineTrack{s, r, trackY(s, r)})
		}
	}
	const half = 0.4
	g = &gantt{
		Colors: []color.Color{
			Forward:      mix(base, color.White, 0.55),
			Backward:     mix(base, color.Black, 0.15),
			GradSync:     gradSyncGrey,
			Optimizer:    optimizerGrey,
			PlannerStall: plannerGrey,
		},
		Gap:      vg.Points(0.2),
		MinWidth: vg.Points(0.3),
		XMin:     0,
		XMax:     float64(max(tl.IterationNanos, 0)) / 1e9,
		YMin:     -0.5,
		YMax:     tracks[0].Y + 0.5,
	}
	present := make([]bool, len(g.Colors))
	add := func(stage, rank int, kind SliceKind, start, end int64) {
		if stage < 0 || int(kind) < 0 || int(kind) >= len(g.Colors) {
			return
		}
		y := trackY(stage, rank)
		g.Bars = append(g.Bars, ganttBar{X0: float64(start) / 1e9, X1: float64(end) / 1e9, Y0: y - half, Y1: y + half, Fill: int(kind)})
		present[kind] = true
	}
	if tl.PlannerStallNanos > 0 && !hasPlanner {
		for _, t := range tracks {
			add(t.Stage, t.Rank, PlannerStall, 0, tl.PlannerStallNanos)
		}
	}
	for _, sl := range tl.Slices {
		add(sl.Stage, sl.Rank, sl.Kind, sl.StartNanos, sl.EndNanos)
	}
	for k, ok := range present {
		if ok {
			kinds = append(kinds, SliceKind(k))
		}
	}
	return g, tracks, kinds
}

// timelineFigures are the pipeline timelines of the policies that did not
// fail, one per timeline with slices.
func timelineFigures(s *Summary, tls []Timeline) ([]figure, error) {
	idx, failed := policyIndex(s)
	count := map[string]int{}
	for _, tl := range tls {
		count[SafeName(tl.Policy)]++
	}
	used := map[string]bool{}
	var figs []figure
	for _, tl := range tls {
		if failed[tl.Policy] || (len(tl.Slices) == 0 && tl.PlannerStallNanos <= 0) {
			continue
		}
		ci, known := idx[tl.Policy]
		if !known {
			ci = len(s.Policies) + len(idx)
			idx[tl.Policy] = ci
		}
		g, tracks, kinds := timelineGantt(tl, policyColor(ci))
		if len(g.Bars) == 0 {
			continue
		}
		p := plot.New()
		p.Title.Text = fmt.Sprintf("pipeline timeline: %s, iteration %d", tl.Policy, tl.Iteration)
		p.X.Label.Text = "time in iteration (s)"
		p.Y.Label.Text = "pipeline stage, rank"
		grid := plotter.NewGrid()
		grid.Horizontal.Color = nil
		p.Add(grid, g)
		ticks := make([]plot.Tick, len(tracks))
		for i, t := range tracks {
			label := fmt.Sprintf("stage %d, rank %d", t.Stage, t.Rank)
			ticks[i] = plot.Tick{Value: t.Y, Label: label}
		}
		p.Y.Tick.Marker = plot.ConstantTicks(ticks)
		p.Y.Tick.Length = 0
		leg := newLegend()
		kindName := map[SliceKind]string{Forward: "forward", Backward: "backward", GradSync: "grad sync", Optimizer: "optimizer", PlannerStall: "planner stall"}
		for _, k := range kinds {
			leg.Add(kindName[k], swatch{g.Colors[k]})
		}
		name := "timeline-" + SafeName(tl.Policy)
		if count[SafeName(tl.Policy)] > 1 {
			name += fmt.Sprintf("-it%d", tl.Iteration)
		}
		for base, k := name, 2; used[name]; k++ {
			name = fmt.Sprintf("%s-%d", base, k)
		}
		used[name] = true
		h := min(max(figH-vg.Inch, 1.2*vg.Inch+vg.Length(len(tracks))*0.28*vg.Inch), 30*vg.Inch)
		figs = append(figs, figure{name: name, p: p, legend: leg, w: 10 * vg.Inch, h: h})
	}
	return figs, nil
}

// sweepPolicyColors maps each policy onto the colour index of its first
// appearance over pts.
func sweepPolicyColors(pts []SweepPoint) map[string]int {
	idx := map[string]int{}
	for _, pt := range pts {
		for _, ps := range pt.Summary.Policies {
			if _, ok := idx[ps.Policy]; !ok {
				idx[ps.Policy] = len(idx)
			}
		}
	}
	return idx
}

// axisValue is pt's value of the swept key (""  when it has none).
func axisValue(pt *SweepPoint, key string) string {
	for _, a := range pt.Axes {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// axisTied reports whether key's value and f are one-to-one over pts.
func axisTied(pts []SweepPoint, key string, f func(*SweepPoint) string) bool {
	fwd, back := map[string]string{}, map[string]string{}
	for i := range pts {
		v, w := axisValue(&pts[i], key), f(&pts[i])
		if x, ok := fwd[v]; ok && x != w {
			return false
		}
		if x, ok := back[w]; ok && x != v {
			return false
		}
		fwd[v], back[w] = w, v
	}
	return true
}

// varyingAxes are the keys, in order of first appearance, whose values differ
// over pts.
func varyingAxes(pts []SweepPoint) []string {
	var keys []string
	vals := map[string]map[string]bool{}
	for i := range pts {
		for _, a := range pts[i].Axes {
			if vals[a.Key] == nil {
				vals[a.Key] = map[string]bool{}
				keys = append(keys, a.Key)
			}
		}
	}
	var out []string
	for _, k := range keys {
		for i := range pts {
			vals[k][axisValue(&pts[i], k)] = true
		}
		if len(vals[k]) > 1 {
			out = append(out, k)
		}
	}
	return out
}

// The fields of a sweep point that figures put on an axis or in a label.
var (
	gpusField  = func(p *SweepPoint) string { return strconv.Itoa(p.GPUs) }
	modelField = func(p *SweepPoint) string { return p.Model }
	capField   = func(p *SweepPoint) string { return strconv.Itoa(p.HydraCap) }
)

// variantKeys are the varying axes of pts not tied to one of fields.
func variantKeys(pts []SweepPoint, fields ...func(*SweepPoint) string) []string {
	var out []string
	for _, k := range varyingAxes(pts) {
		if !slices.ContainsFunc(fields, func(f func(*SweepPoint) string) bool { return axisTied(pts, k, f) }) {
			out = append(out, k)
		}
	}
	return out
}

// variantOf is "k=v, ..." of pt's values of keys.
func variantOf(pt *SweepPoint, keys []string) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+axisValue(pt, k))
	}
	return strings.Join(parts, ", ")
}

// sweepSeries is one line of a sweep figure: a policy, a model and a variant,
// with the values at each x (averaged when several).
type sweepSeries struct {
	policy, model, variant string
	color, style           int
	sum                    map[float64][2]float64 // x → (Σ y, count)
}

// points are the series' (x, mean y), by x.
func (s *sweepSeries) points() plotter.XYs {
	xs := make([]float64, 0, len(s.sum))
	for x := range s.sum {
		xs = append(xs, x)
	}
	slices.Sort(xs)
	pts := make(plotter.XYs, len(xs))
	for i, x := range xs {
		pts[i] = plotter.XY{X: x, Y: s.sum[x][0] / s.sum[x][1]}
	}
	return pts
}

// seriesSet collects sweep series in order of first appearance; style numbers
// the (model, variant) pairs in order of first appearance.
type seriesSet struct {
	order  []*sweepSeries
	byKey  map[string]*sweepSeries
	styles map[string]int
	models map[string]bool
}

func newSeriesSet() *seriesSet {
	return &seriesSet{byKey: map[string]*sweepSeries{}, styles: map[string]int{}, models: map[string]bool{}}
}

// add puts (x, y) on the series of (policy, model, variant).
func (ss *seriesSet) add(policy string, color int, model, variant string, x, y float64) {
	key := policy + "\x00" + model + "\x00" + variant
	s := ss.byKey[key]
	if s == nil {
		sk := model + "\x00" + variant
		st, ok := ss.styles[sk]
		if !ok {
			st = len(ss.styles)
			ss.styles[sk] = st
		}
		s = &sweepSeries{policy: policy, model: model, variant: variant, color: color, style: st, sum: map[float64][2]float64{}}
		ss.byKey[key] = s
		ss.order = append(ss.order, s)
		ss.models[model] = true
	}
	v := s.sum[x]
	s.sum[x] = [2]float64{v[0] + y, v[1] + 1}
}

// label is "policy", or "policy (model, variant)" with the model when the set
// has several.
func (ss *seriesSet) label(s *sweepSeries) string {
	var parts []string
	if len(ss.models) > 1 {
		parts = append(parts, s.model)
	}
	if s.variant != "" {
		parts = append(parts, s.variant)
	}
	if len(parts) == 0 {
		return s.policy
	}
	return s.policy + " (" + strings.Join(parts, ", ") + ")"
}

// Line styles of the (model, variant) pairs of a sweep figure.
var (
	seriesDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)}, {vg.Points(6), vg.Points(2), vg.Points(2), vg.Points(2)}}
	seriesGlyphs = []draw.GlyphDrawer{draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{}}
)

// measuredLine is the line style of measured (not modelled) values in a
// figure that shows both: thin and dotted, unlike any series style.
var measuredLine = draw.LineStyle{Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(2.5)}}

// addSeriesLine draws pts as a line with points in series s's colour and
// style and returns the thumbnails. With line set, its width and dashes
// replace the series' (markers still tell the series apart).
func addSeriesLine(p *plot.Plot, pts plotter.XYs, s *sweepSeries, line *draw.LineStyle) ([]plot.Thumbnailer, error) {
	l, sc, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	col := policyColor(s.color)
	l.Color, l.Width = col, vg.Points(1.5)
	l.Dashes = seriesDashes[s.style%len(seriesDashes)]
	if line != nil {
		l.Width, l.Dashes = line.Width, line.Dashes
	}
	sc.Color, sc.Radius = col, vg.Points(2.5)
	sc.Shape = seriesGlyphs[s.style%len(seriesGlyphs)]
	p.Add(l, sc)
	return []plot.Thumbnailer{l, sc}, nil
}

// gpuAxis puts GPU counts xs (distinct, ascending) on a and returns the x of a
// GPU count: log10 of it (a log scale) when they span 4× or more; ticks at each
// count when there are at most 12.
func gpuAxis(a *plot.Axis, xs []float64) func(float64) float64 {
	a.Label.Text = "GPUs"
	tr := func(x float64) float64 { return x }
	if xs[0] > 0 && xs[len(xs)-1] >= 4*xs[0] {
		tr = math.Log10
		a.Label.Text = "GPUs (log scale)"
		a.Tick.Marker = log10Ticks
	}
	if len(xs) <= 12 {
		ticks := make([]plot.Tick, len(xs))
		for i, x := range xs {
			ticks[i] = plot.Tick{Value: tr(x), Label: strconv.FormatFloat(x, 'f', -1, 64)}
		}
		a.Tick.Marker = plot.ConstantTicks(ticks)
	}
	return tr
}

// distinctGPUs are the distinct GPU counts of pts, ascending.
func distinctGPUs(pts []SweepPoint) []float64 {
	var xs []float64
	for _, pt := range pts {
		xs = append(xs, float64(pt.GPUs))
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// gpuSeries adds to ss, for each policy that did not fail, value(policy) > 0 (when
// positive is set) against the point's GPUs into series by policy, model and
// variant, with x = trX(GPUs), and returns ss. The variant leaves out the axes tied to GPUs or the model, and for
// policies other than "hydra" the axis tied to HyDra's cap.
func gpuSeries(ss *seriesSet, pts []SweepPoint, colors map[string]int, value func(*PolicySummary) float64, positive bool, trX func(float64) float64) *seriesSet {
	keys := variantKeys(pts, gpusField, modelField)
	capKeys := variantKeys(pts, gpusField, modelField, capField)
	for i := range pts {
		pt := &pts[i]
		for j := range pt.Summary.Policies {
			ps := &pt.Summary.Policies[j]
			y := value(ps)
			if ps.Error != "" || math.IsNaN(y) || math.IsInf(y, 0) || (positive && y <= 0) {
				continue
			}
			k := capKeys
			if ps.Policy == "hydra" {
				k = keys
			}
			ss.add(ps.Policy, colors[ps.Policy], pt.Model, variantOf(pt, k), trX(float64(pt.GPUs)), y)
		}
	}
	return ss
}

// sweepThroughputFigure is tokens/day vs GPUs; nil with fewer than two GPU
// counts.
func sweepThroughputFigure(pts []SweepPoint, colors map[string]int) (*figure, error) {
	xs := distinctGPUs(pts)
	if len(xs) < 2 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "throughput vs scale"
	p.Y.Label.Text = "tokens/day (billions)"
	trX := gpuAxis(&p.X, xs)
	ss := gpuSeries(newSeriesSet(), pts, colors, func(ps *PolicySummary) float64 { return ps.TokensPerDay / 1e9 }, false, trX)
	if len(ss.order) == 0 {
		return nil, nil
	}
	p.Add(plotter.NewGrid())
	leg := newLegend()
	for _, s := range ss.order {
		th, err := addSeriesLine(p, s.points(), s, nil)
		if err != nil {
			return nil, fmt.Errorf("report: sweep-throughput figure: %w", err)
		}
		leg.Add(ss.label(s), th...)
	}
	p.Y.Min = 0
	return &figure{name: "sweep-throughput", p: p, legend: leg, w: figW, h: figH}, nil
}

// sweepPlannerFigure is the planner's modelled and Go time vs GPUs on a log y
// axis; nil with fewer than two GPU counts or no positive time.
func sweepPlannerFigure(pts []SweepPoint, colors map[string]int) (*figure, error) {
	xs := distinctGPUs(pts)
	if len(xs) < 2 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "planner time vs scale"
	p.Y.Label.Text = "planner time per iteration (s, log scale)"
	trX := gpuAxis(&p.X, xs)
	// The two sets share their styles and models so a series looks (and is
	// labelled) the same in both.
	modeled := gpuSeries(newSeriesSet(), pts, colors, func(ps *PolicySummary) float64 { return ps.PlannerModeledSeconds }, true, trX)
	goTime := newSeriesSet()
	goTime.styles, goTime.models = modeled.styles, modeled.models
	gpuSeries(goTime, pts, colors, func(ps *PolicySummary) float64 { return ps.PlannerGoSeconds }, true, trX)
	if len(modeled.order) == 0 && len(goTime.order) == 0 {
		return nil, nil
	}
	p.Add(plotter.NewGrid())
	leg := newLegend()
	lo, hi := math.Inf(1), math.Inf(-1)
	labelled := map[string]bool{}
	solid := draw.LineStyle{Width: vg.Points(1.5)}
	for _, set := range []struct {
		ss   *seriesSet
		line *draw.LineStyle
	}{{modeled, &solid}, {goTime, &measuredLine}} {
		for _, s := range set.ss.order {
			sp := s.points()
			for i, pt := range sp {
				lo, hi = min(lo, pt.Y), max(hi, pt.Y)
				sp[i].Y = math.Log10(pt.Y)
			}
			th, err := addSeriesLine(p, sp, s, set.line)
			if err != nil {
				return nil, fmt.Errorf("report: sweep-planner figure: %w", err)
			}
			// One entry per series, with the solid line's style; the two
			// entries below say which style is modelled and which is Go.
			if label := set.ss.label(s); !labelled[label] {
				labelled[label] = true
				leg.Add(label, th...)
			}
		}
	}
	black := color.Gray{0}
	leg.Add("modelled (on critical path)", &plotter.Line{LineStyle: draw.LineStyle{Color: black, Width: vg.Points(1.5)}})
	measured := measuredLine
	measured.Color = black
	leg.Add("Go wall time (measured)", &plotter.Line{LineStyle: measured})
	setLogRange(&p.Y, lo, hi)
	return &figure{name: "sweep-planner", p: p, legend: leg, w: figW, h: figH}, nil
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

// mostCommon is the most frequent value of vs (the least on a tie); 0 for none.
func mostCommon(vs []int) int {
	n := map[int]int{}
	best, bestN := 0, 0
	for _, v := range vs {
		n[v]++
	}
	for v, c := range n {
		if c > bestN || (c == bestN && v < best) {
			best, bestN = v, c
		}
	}
	return best
}

// sweepCapFigure is HyDra's mean step time vs its forced cap, with the closed
// form's C*; nil with fewer than two distinct caps.
func sweepCapFigure(pts []SweepPoint, colors map[string]int) (*figure, error) {
	var sel []SweepPoint
	for _, pt := range pts {
		if pt.HydraCap <= 0 {
			continue
		}
		if slices.ContainsFunc(pt.Summary.Policies, func(ps PolicySummary) bool { return ps.Policy == "hydra" && ps.Error == "" }) {
			sel = append(sel, pt)
		}
	}
	var caps, closed []int
	for _, pt := range sel {
		caps = append(caps, pt.HydraCap)
		if pt.HydraClosedFormCap > 0 {
			closed = append(closed, pt.HydraClosedFormCap)
		}
	}
	slices.Sort(caps)
	if len(slices.Compact(caps)) < 2 {
		return nil, nil
	}
	keys := variantKeys(sel, capField, modelField)
	ss := newSeriesSet()
	for i := range sel {
		pt := &sel[i]
		for _, ps := range pt.Summary.Policies {
			if ps.Policy == "hydra" && ps.Error == "" && !math.IsNaN(ps.StepSecondsMean) && !math.IsInf(ps.StepSecondsMean, 0) {
				ss.add(ps.Policy, colors[ps.Policy], pt.Model, variantOf(pt, keys), math.Log2(float64(pt.HydraCap)), ps.StepSecondsMean)
			}
		}
	}
	p := plot.New()
	p.Title.Text = "HyDra step time vs cap C"
	p.X.Label.Text = "HyDra cap C (log2 scale)"
	p.Y.Label.Text = "mean step time (s)"
	p.X.Tick.Marker = pow2Ticks
	p.Add(plotter.NewGrid())
	leg := newLegend()
	ylo, yhi := math.Inf(1), math.Inf(-1)
	for _, s := range ss.order {
		sp := s.points()
		for _, pt := range sp {
			ylo, yhi = min(ylo, pt.Y), max(yhi, pt.Y)
		}
		th, err := addSeriesLine(p, sp, s, nil)
		if err != nil {
			return nil, fmt.Errorf("report: sweep-cap figure: %w", err)
		}
		leg.Add(ss.label(s), th...)
	}
	if cs := mostCommon(closed); cs > 0 && !math.IsInf(ylo, 0) {
		x := math.Log2(float64(cs))
		vl, err := plotter.NewLine(plotter.XYs{{X: x, Y: ylo}, {X: x, Y: yhi}})
		if err != nil {
			return nil, fmt.Errorf("report: sweep-cap figure: %w", err)
		}
		vl.Color, vl.Width = color.Gray{60}, vg.Points(1)
		vl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: yhi}}, Labels: []string{"closed-form C* = " + strconv.Itoa(cs)}})
		if err != nil {
			return nil, fmt.Errorf("report: sweep-cap figure: %w", err)
		}
		lbl.TextStyle[0].YAlign = text.YTop
		lbl.TextStyle[0].Font = font.From(plot.DefaultFont, vg.Points(9))
		lbl.Offset = vg.Point{X: vg.Points(3)}
		p.Add(vl, lbl)
	}
	return &figure{name: "sweep-cap", p: p, legend: leg, w: figW, h: figH}, nil
}
