package report

// The figures of a sweep (WriteSweepFigures): series of points over GPUs or
// HyDra's cap, split by the swept axes that are not on a figure's x axis. The
// figures per variant and over the context length are in sweepaxes.go.

import (
	"cmp"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
	"image/color"
	"math"
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
//   - sweep-planner: the planner's modelled time per iteration
//     (PlannerModeledSeconds, on the critical path; s, log scale) vs GPUs;
//     non-positive values are left out; only with at least two distinct GPU
//     counts. Our Go planner's measured wall time is in timings.json and its
//     own figure (WriteSweepTimingFigures), so these figures are the same
//     bytes on every rerun.
//   - sweep-<policy>-<key>, one per swept policy option (axis "<policy>.<key>",
//     sweep.options) with at least two distinct numeric values: that policy's
//     mean step time (s) vs the option's value (log2 x when every value is a
//     positive power of two, zeros then left out), with the value the policy chooses itself (the
//     most common ChosenOptions[key] of those points, e.g. HyDra's closed-form
//     C* for "cap") as a dashed vertical line.
//   - sweep-variants: tokens/day (billions) per variant ([[sweep.variant]]),
//     bars grouped by variant, one bar per policy; the groups also split by
//     the other swept axes not tied to the variant (e.g. "hy3, 8192 GPUs"),
//     at most 12 inches wide; only with at least two variants.
//   - sweep-context: tokens/day (billions) vs the context length
//     (log2 x when it spans 4× or more), one line per policy and model;
//     only with at least two distinct context lengths.
//   - sweep-memory: each policy's peak memory per GPU (GiB: model states,
//     reserve and held activations, PeakMemoryMaxBytes) vs GPUs, or vs the
//     context length when the GPUs do not vary, with the smallest HBM as a
//     dashed line; only with at least two distinct values on that axis.
func WriteSweepFigures(dir string, pts []results.SweepPoint) ([]string, error) {
	pts = slices.Clone(pts)
	slices.SortStableFunc(pts, func(a, b results.SweepPoint) int { return cmp.Compare(a.Index, b.Index) })
	colors := sweepPolicyColors(pts)
	builds := []func([]results.SweepPoint, map[string]int) (*figure, error){sweepThroughputFigure, sweepPlannerFigure, sweepVariantsFigure, sweepContextFigure, sweepMemoryFigure}
	for _, key := range optionAxes(pts) {
		builds = append(builds, func(pts []results.SweepPoint, colors map[string]int) (*figure, error) {
			return sweepOptionFigure(pts, colors, key)
		})
	}
	var figs []figure
	for _, build := range builds {
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

// optionAxes are the policy-option axes ("<policy>.<key>") of pts, in order of
// first appearance.
func optionAxes(pts []results.SweepPoint) []string {
	var out []string
	for i := range pts {
		for _, a := range pts[i].Axes {
			if strings.Contains(a.Key, ".") && !slices.Contains(out, a.Key) {
				out = append(out, a.Key)
			}
		}
	}
	return out
}

// optionAxisOf splits an option axis key into its policy and option; ok is
// false for the other axes.
func optionAxisOf(key string) (policy, option string, ok bool) {
	return strings.Cut(key, ".")
}

// sweepPolicyColors maps each policy onto the colour index of its first
// appearance over pts.
func sweepPolicyColors(pts []results.SweepPoint) map[string]int {
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
func axisValue(pt *results.SweepPoint, key string) string {
	for _, a := range pt.Axes {
		if a.Key == key {
			return a.Value
		}
	}
	return ""
}

// axisTied reports whether key's value and f are one-to-one over pts.
func axisTied(pts []results.SweepPoint, key string, f func(*results.SweepPoint) string) bool {
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
func varyingAxes(pts []results.SweepPoint) []string {
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
	gpusField  = func(p *results.SweepPoint) string { return strconv.Itoa(p.GPUs) }
	modelField = func(p *results.SweepPoint) string { return p.Model }
)

// variantKeys are the varying axes of pts not tied to one of fields.
func variantKeys(pts []results.SweepPoint, fields ...func(*results.SweepPoint) string) []string {
	var out []string
	for _, k := range varyingAxes(pts) {
		if !slices.ContainsFunc(fields, func(f func(*results.SweepPoint) string) bool { return axisTied(pts, k, f) }) {
			out = append(out, k)
		}
	}
	return out
}

// variantOf is "k=v, ..." of pt's values of keys.
func variantOf(pt *results.SweepPoint, keys []string) string {
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
func distinctGPUs(pts []results.SweepPoint) []float64 {
	var xs []float64
	for _, pt := range pts {
		xs = append(xs, float64(pt.GPUs))
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// gpuSeries is pointSeries over the points' GPU counts, at x = trX(GPUs).
func gpuSeries(ss *seriesSet, pts []results.SweepPoint, colors map[string]int, value func(*results.PolicySummary) float64, positive bool, trX func(float64) float64) *seriesSet {
	return pointSeries(ss, pts, colors, value, positive, func(pt *results.SweepPoint) float64 { return trX(float64(pt.GPUs)) }, gpusField)
}

// sweepThroughputFigure is tokens/day vs GPUs; nil with fewer than two GPU
// counts.
func sweepThroughputFigure(pts []results.SweepPoint, colors map[string]int) (*figure, error) {
	xs := distinctGPUs(pts)
	if len(xs) < 2 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "throughput vs scale"
	p.Y.Label.Text = "tokens/day (billions)"
	trX := gpuAxis(&p.X, xs)
	ss := gpuSeries(newSeriesSet(), pts, colors, func(ps *results.PolicySummary) float64 { return ps.TokensPerDay / 1e9 }, false, trX)
	return seriesLinesFigure(p, ss, "sweep-throughput")
}

// sweepMemoryFigure is the peak memory per GPU vs GPUs (or the context
// length), against the HBM; nil with fewer than two values on the axis.
func sweepMemoryFigure(pts []results.SweepPoint, colors map[string]int) (*figure, error) {
	const gib = 1 << 30
	peak := func(ps *results.PolicySummary) float64 { return ps.PeakMemoryMaxBytes / gib }
	p := plot.New()
	p.Title.Text = "peak memory per GPU"
	p.Y.Label.Text = "GiB (states + reserve + held activations)"
	var ss *seriesSet
	var lo, hi float64
	if xs := distinctGPUs(pts); len(xs) >= 2 {
		trX := gpuAxis(&p.X, xs)
		ss = gpuSeries(newSeriesSet(), pts, colors, peak, true, trX)
		lo, hi = trX(xs[0]), trX(xs[len(xs)-1])
	} else {
		var cs []float64
		for _, pt := range pts {
			cs = append(cs, float64(pt.ContextTokens))
		}
		cs = slices.Compact(slices.Sorted(slices.Values(cs)))
		if len(cs) < 2 {
			return nil, nil
		}
		tr := func(x float64) float64 { return x }
		p.X.Label.Text = "context length (tokens)"
		if cs[len(cs)-1] >= 4*cs[0] {
			tr = math.Log2
			p.X.Label.Text = "context length (tokens, log2 scale)"
			p.X.Tick.Marker = pow2Ticks
		}
		ss = pointSeries(newSeriesSet(), pts, colors, peak, true,
			func(pt *results.SweepPoint) float64 { return tr(float64(pt.ContextTokens)) }, contextField)
		lo, hi = tr(cs[0]), tr(cs[len(cs)-1])
	}
	f, err := seriesLinesFigure(p, ss, "sweep-memory")
	if f == nil || err != nil {
		return f, err
	}
	var hbm float64
	for _, pt := range pts {
		for _, ps := range pt.Summary.Policies {
			if ps.Error == "" && ps.HBMBytes > 0 && (hbm == 0 || ps.HBMBytes < hbm) {
				hbm = ps.HBMBytes
			}
		}
	}
	if hbm > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: hbm / gib}, {X: hi, Y: hbm / gib}})
		if err != nil {
			return nil, fmt.Errorf("report: sweep-memory figure: %w", err)
		}
		l.Color, l.Width = color.Gray{60}, vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		f.legend.Add(fmt.Sprintf("HBM (%.1f GiB)", hbm/gib), l)
		p.Y.Max = max(p.Y.Max, 1.05*hbm/gib)
	}
	return f, nil
}

// seriesLinesFigure draws every series of ss as a line on p (a grid, y from
// 0, a legend entry per series) as the figure name; nil when ss is empty.
func seriesLinesFigure(p *plot.Plot, ss *seriesSet, name string) (*figure, error) {
	if len(ss.order) == 0 {
		return nil, nil
	}
	p.Add(plotter.NewGrid())
	leg := newLegend()
	for _, s := range ss.order {
		th, err := addSeriesLine(p, s.points(), s, nil)
		if err != nil {
			return nil, fmt.Errorf("report: %s figure: %w", name, err)
		}
		leg.Add(ss.label(s), th...)
	}
	p.Y.Min = 0
	return &figure{name: name, p: p, legend: leg, w: figW, h: figH}, nil
}

// sweepPlannerFigure is the planner's modelled time (on the critical path)
// vs GPUs on a log y axis; nil with fewer than two GPU counts or no positive
// time.
func sweepPlannerFigure(pts []results.SweepPoint, colors map[string]int) (*figure, error) {
	return plannerTimeFigure(pts, colors, func(ps *results.PolicySummary) float64 { return ps.PlannerModeledSeconds },
		"sweep-planner", "planner time vs scale (modelled, on the critical path)")
}

// plannerTimeFigure draws seconds(ps) per iteration vs GPUs on a log y
// axis, one line per policy (and model); nil with fewer than two GPU counts
// or no positive value.
func plannerTimeFigure(pts []results.SweepPoint, colors map[string]int, seconds func(*results.PolicySummary) float64, name, title string) (*figure, error) {
	xs := distinctGPUs(pts)
	if len(xs) < 2 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "planner time per iteration (s, log scale)"
	trX := gpuAxis(&p.X, xs)
	ss := gpuSeries(newSeriesSet(), pts, colors, seconds, true, trX)
	if len(ss.order) == 0 {
		return nil, nil
	}
	p.Add(plotter.NewGrid())
	leg := newLegend()
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range ss.order {
		sp := s.points()
		for i, pt := range sp {
			lo, hi = min(lo, pt.Y), max(hi, pt.Y)
			sp[i].Y = math.Log10(pt.Y)
		}
		th, err := addSeriesLine(p, sp, s, nil)
		if err != nil {
			return nil, fmt.Errorf("report: %s figure: %w", name, err)
		}
		leg.Add(ss.label(s), th...)
	}
	setLogRange(&p.Y, lo, hi)
	return &figure{name: name, p: p, legend: leg, w: figW, h: figH}, nil
}

// WriteSweepTimingFigures draws the figure of a sweep's measured wall times
// into dir: sweep-planner-go, our Go planner's wall time per plan (s, log
// scale) vs GPUs, only with at least two distinct GPU counts. It returns the
// files' base names (none without the figure).
func WriteSweepTimingFigures(dir string, pts []results.SweepPoint, t *results.SweepTimings) ([]string, error) {
	goSeconds := map[int]*results.Timings{}
	for i := range t.Points {
		goSeconds[t.Points[i].Index] = &t.Points[i].Timings
	}
	// The same points, each policy's value the measured time: the series
	// keep their colours and labels from the modelled figure.
	pts = slices.Clone(pts)
	slices.SortStableFunc(pts, func(a, b results.SweepPoint) int { return cmp.Compare(a.Index, b.Index) })
	colors := sweepPolicyColors(pts)
	for i := range pts {
		ps := slices.Clone(pts[i].Summary.Policies)
		for j := range ps {
			ps[j].PlannerModeledSeconds = goSeconds[pts[i].Index].GoSecondsOf(ps[j].Policy)
		}
		pts[i].Summary.Policies = ps
	}
	f, err := plannerTimeFigure(pts, colors, func(ps *results.PolicySummary) float64 { return ps.PlannerModeledSeconds },
		"sweep-planner-go", "planner wall time vs scale (our Go planner on this machine, measured)")
	if err != nil || f == nil {
		return nil, err
	}
	return writeFigures(dir, []figure{*f})
}

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

// ownKeys drops from keys the option axes of policies other than policy.
func ownKeys(keys []string, policy string) []string {
	return slices.DeleteFunc(slices.Clone(keys), func(k string) bool {
		p, _, ok := optionAxisOf(k)
		return ok && p != policy
	})
}

// sweepOptionFigure is a policy's mean step time vs one of its options (axis
// key "<policy>.<option>"), with the value the policy chooses itself; nil
// with fewer than two distinct numeric values to draw.
func sweepOptionFigure(pts []results.SweepPoint, colors map[string]int, key string) (*figure, error) {
	policy, option, _ := optionAxisOf(key)
	var sel []results.SweepPoint
	var xs []float64
	var chosen []int
	for _, pt := range pts {
		x, err := strconv.ParseFloat(axisValue(&pt, key), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			continue
		}
		for _, ps := range pt.Summary.Policies {
			if ps.Policy == policy && ps.Error == "" {
				sel, xs = append(sel, pt), append(xs, x)
				if c, ok := ps.ChosenOptions[option]; ok && c == math.Trunc(c) {
					chosen = append(chosen, int(c))
				}
			}
		}
	}
	// A log2 axis when every non-zero value is a power of two; a zero (the
	// policy choosing the option itself, like HyDra's cap = 0) is then left
	// out: the dashed line shows that choice.
	log2 := true
	for _, x := range xs {
		log2 = log2 && (x == 0 || x > 0 && x == math.Trunc(x) && int64(x)&(int64(x)-1) == 0)
	}
	tr := func(x float64) float64 { return x }
	if log2 {
		tr = math.Log2
		for i := len(xs) - 1; i >= 0; i-- {
			if xs[i] == 0 {
				sel, xs = slices.Delete(sel, i, i+1), slices.Delete(xs, i, i+1)
			}
		}
	}
	if len(slices.Compact(slices.Sorted(slices.Values(xs)))) < 2 {
		return nil, nil
	}
	keys := ownKeys(variantKeys(sel, func(p *results.SweepPoint) string { return axisValue(p, key) }, modelField), policy)
	ss := newSeriesSet()
	for i := range sel {
		pt := &sel[i]
		for _, ps := range pt.Summary.Policies {
			if ps.Policy == policy && ps.Error == "" && !math.IsNaN(ps.StepSecondsMean) && !math.IsInf(ps.StepSecondsMean, 0) {
				ss.add(ps.Policy, colors[ps.Policy], pt.Model, variantOf(pt, keys), tr(xs[i]), ps.StepSecondsMean)
			}
		}
	}
	name := "sweep-" + safeio.SafeName(policy+"-"+option)
	p := plot.New()
	p.Title.Text = policy + " step time vs " + option
	p.X.Label.Text = policy + " option " + option
	if log2 {
		p.X.Label.Text += " (log2 scale)"
		p.X.Tick.Marker = pow2Ticks
	}
	p.Y.Label.Text = "mean step time (s)"
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
			return nil, fmt.Errorf("report: %s figure: %w", name, err)
		}
		leg.Add(ss.label(s), th...)
	}
	if cs := mostCommon(chosen); cs > 0 && !math.IsInf(ylo, 0) {
		x := tr(float64(cs))
		vl, err := plotter.NewLine(plotter.XYs{{X: x, Y: ylo}, {X: x, Y: yhi}})
		if err != nil {
			return nil, fmt.Errorf("report: %s figure: %w", name, err)
		}
		vl.Color, vl.Width = color.Gray{60}, vg.Points(1)
		vl.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: yhi}},
			Labels: []string{policy + "'s own " + option + " = " + strconv.Itoa(cs)}})
		if err != nil {
			return nil, fmt.Errorf("report: %s figure: %w", name, err)
		}
		lbl.TextStyle[0].YAlign = text.YTop
		lbl.TextStyle[0].Font = font.From(plot.DefaultFont, vg.Points(9))
		lbl.Offset = vg.Point{X: vg.Points(3)}
		p.Add(vl, lbl)
	}
	return &figure{name: name, p: p, legend: leg, w: figW, h: figH}, nil
}
