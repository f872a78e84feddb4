package report

// The figures of one scenario's run (WriteRunFigures): throughput, iteration
// breakdown, step time, microbatch times and CP degrees. Its pipeline
// timelines are drawn in timeline.go.

import (
	"cmp"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"image/color"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dcpsim/dcpsim/sched"
)

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
//   - memory: each policy's peak memory per GPU (GiB) by pipeline stage, the
//     most any GPU of the stage held in a measured iteration (model states,
//     reserve and held activations), bars grouped by stage, with the HBM as
//     a dashed line.
//   - cp-degrees: share of GPU-slots (%) at each CP degree, bars grouped by
//     degree, one bar per policy. When the degrees are not all powers of two
//     (ByteScale's) or more than 12 distinct, the groups are the ranges
//     between powers of two, labelled "1", "2", "3-4", "5-8", ...; degree 0
//     (idle slots) is a group of its own. The plot is at most 12 inches wide.
//   - timeline-POLICY for each timeline (timeline-POLICY-itN when a policy has
//     several): the pipeline of one iteration, one track per (stage,
//     representative rank), stage 0 on top; forward ops light and backward
//     ops dark in the policy's colour, planner stall, grad-sync and optimizer
//     in three greys. Every timeline of the run shares one time axis, to the
//     end of the longest (a dashed line marks the end of a shorter
//     iteration), and a track's label gives its rank's role when
//     Timeline.RankRoles knows it ("rank 120 (busiest)").
//
// A figure with nothing to draw (no rows, no microbatch times, no degree shares,
// a timeline without slices) is skipped. On an error it returns the files
// written so far and the error.
func WriteRunFigures(dir string, s *results.Summary, rows []results.IterationRow, tls []results.Timeline) ([]string, error) {
	if s == nil {
		return nil, fmt.Errorf("report: WriteRunFigures: nil summary")
	}
	var figs []figure
	for _, build := range []func(*results.Summary) (*figure, error){throughputFigure, breakdownFigure, mbTimeFigure, cpDegreesFigure, memoryFigure} {
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

// runTitle is what + the scenario's name, when it has one.
func runTitle(s *results.Summary, what string) string {
	if s.Scenario == "" {
		return what
	}
	return what + " (" + s.Scenario + ")"
}

// okPolicy is a policy of a Summary that did not fail, with its index.
type okPolicy struct {
	idx int
	ps  *results.PolicySummary
}

// okPolicies are s's policies without an Error, in order.
func okPolicies(s *results.Summary) []okPolicy {
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
func policyIndex(s *results.Summary) (idx map[string]int, failed map[string]bool) {
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

// policyBars is the frame of a bar figure with a bar per policy that ran:
// the plot titled what, its y label, the policies, the figure's width and a
// bar's. ok is empty when no policy ran.
func policyBars(s *results.Summary, what, yLabel string) (p *plot.Plot, ok []okPolicy, w, bw vg.Length) {
	ok = okPolicies(s)
	w = nominalWidth(len(ok), 0.9*vg.Inch)
	p = plot.New()
	p.Title.Text = runTitle(s, what)
	p.X.Label.Text = "policy"
	p.Y.Label.Text = yLabel
	p.Add(hGrid())
	return p, ok, w, barWidth(w, len(ok), 0.6, vg.Points(48))
}

// throughputFigure is tokens/day per policy; nil without policies.
func throughputFigure(s *results.Summary) (*figure, error) {
	p, ok, w, bw := policyBars(s, "throughput", "tokens/day (billions)")
	if len(ok) == 0 {
		return nil, nil
	}
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
	share func(*results.PolicySummary) float64
}{
	{"compute", color.RGBA{0, 114, 178, 255}, func(p *results.PolicySummary) float64 { return p.ComputeShare }},
	{"exposed comm", color.RGBA{213, 94, 0, 255}, func(p *results.PolicySummary) float64 { return p.ExposedCommShare }},
	{"PP bubble", color.RGBA{230, 159, 0, 255}, func(p *results.PolicySummary) float64 { return p.PPBubbleShare }},
	{"DP bubble", color.RGBA{240, 228, 66, 255}, func(p *results.PolicySummary) float64 { return p.DPBubbleShare }},
	{"planner stall", color.RGBA{110, 110, 110, 255}, func(p *results.PolicySummary) float64 { return p.PlannerStallShare }},
	{"grad sync + optimizer", color.RGBA{204, 121, 167, 255}, func(p *results.PolicySummary) float64 { return p.SyncShare }},
}

// breakdownFigure is the iteration's shares per policy, stacked; nil without
// policies.
func breakdownFigure(s *results.Summary) (*figure, error) {
	p, ok, w, bw := policyBars(s, "iteration breakdown", "share of iteration (%)")
	if len(ok) == 0 {
		return nil, nil
	}
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

// stepTimeFigure is the step time per iteration and policy; nil without rows of
// policies that did not fail.
func stepTimeFigure(s *results.Summary, rows []results.IterationRow) (*figure, error) {
	idx, failed := policyIndex(s)
	var order []string
	byPolicy := map[string][]results.IterationRow{}
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
		slices.SortStableFunc(rs, func(a, b results.IterationRow) int { return cmp.Compare(a.Iteration, b.Iteration) })
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

// mbTimeFigure is the empirical CDF of each policy's microbatch times; nil
// when no policy has any.
func mbTimeFigure(s *results.Summary) (*figure, error) {
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
// degree (or by range of degrees, cpDegreeBins); nil when no policy has degree
// shares.
func cpDegreesFigure(s *results.Summary) (*figure, error) {
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
	bins := cpDegreeBins(degrees)
	w := min(nominalWidth(len(bins.labels)*len(with), 0.3*vg.Inch), cpDegreesMaxW)
	group := barWidth(w, len(bins.labels), 0.8, vg.Length(len(with))*vg.Points(28))
	bw := group / vg.Length(len(with))
	p := plot.New()
	p.Title.Text = runTitle(s, "CP degrees")
	p.X.Label.Text = "CP degree"
	if bins.binned {
		p.X.Label.Text = "CP degree (binned between powers of two)"
	}
	if bins.idle {
		p.X.Label.Text += "; 0: idle slots"
	}
	p.Y.Label.Text = "share of GPU-slots (%)"
	p.Add(hGrid())
	leg := newLegend()
	for j, op := range with {
		if err := addGroupedBar(p, leg, bins.values(op.ps.DegreeShares), op, j, len(with), bw); err != nil {
			return nil, fmt.Errorf("report: cp-degrees figure: %w", err)
		}
	}
	p.NominalX(bins.labels...)
	p.X.Min, p.X.Max = -0.5, float64(len(bins.labels))-0.5
	p.Y.Min = 0
	return &figure{name: "cp-degrees", p: p, legend: leg, w: w, h: figH}, nil
}

// addGroupedBar adds policy op's bars to p and leg, the j-th of n in each
// group, bw wide, in the policy's colour.
func addGroupedBar(p *plot.Plot, leg *plot.Legend, vals plotter.Values, op okPolicy, j, n int, bw vg.Length) error {
	b, err := plotter.NewBarChart(vals, bw)
	if err != nil {
		return err
	}
	b.Color = policyColor(op.idx)
	b.LineStyle.Width = 0
	b.Offset = (vg.Length(j) - vg.Length(n-1)/2) * bw
	p.Add(b)
	leg.Add(op.ps.Policy, b)
	return nil
}

// cpDegreesMaxW bounds the width of the cp-degrees plot (without its legend):
// its bars get narrower rather than the figure wider.
const cpDegreesMaxW = 12 * vg.Inch

// cpDegreesMaxDistinct is the most distinct degrees drawn one per group; more
// are binned.
const cpDegreesMaxDistinct = 12

// degreeBins are the groups of the cp-degrees figure: one per degree, or,
// when binned, one per range (2^(k-1), 2^k] of degrees: [1], [2], [3-4],
// [5-8], ..., every range from the lowest to the highest present. Degree 0
// (idle slots) is a group of its own, first.
type degreeBins struct {
	labels []string
	binned bool
	idle   bool
	of     func(degree int) int // the group of a degree
}

// cpDegreeBins groups degrees: one group per distinct degree when they are
// all powers of two (0, idle, aside) and at most cpDegreesMaxDistinct, else
// power-of-two ranges (ByteScale's any-integer degrees would otherwise give
// one group per integer).
func cpDegreeBins(degrees []int) degreeBins {
	ds := slices.Compact(slices.Sorted(slices.Values(degrees)))
	var b degreeBins
	b.idle = len(ds) > 0 && ds[0] <= 0
	pow2 := true
	for _, d := range ds {
		pow2 = pow2 && (d <= 0 || d&(d-1) == 0)
	}
	if pow2 && len(ds) <= cpDegreesMaxDistinct {
		pos := map[int]int{}
		for i, d := range ds {
			pos[d] = i
			b.labels = append(b.labels, strconv.Itoa(d))
		}
		b.of = func(d int) int { return pos[d] }
		return b
	}
	b.binned = true
	// rangeOf is k for the range (2^(k-1), 2^k] holding d >= 1.
	rangeOf := func(d int) int { return bits.Len(uint(d - 1)) }
	lo, hi := math.MaxInt, -1
	for _, d := range ds {
		if d >= 1 {
			lo, hi = min(lo, rangeOf(d)), max(hi, rangeOf(d))
		}
	}
	first := 0
	if b.idle {
		b.labels = append(b.labels, "0")
		first = 1
	}
	for k := lo; k <= hi; k++ {
		top := 1 << k
		switch bottom := top/2 + 1; {
		case k == 0:
			b.labels = append(b.labels, "1")
		case bottom == top:
			b.labels = append(b.labels, strconv.Itoa(top))
		default:
			b.labels = append(b.labels, strconv.Itoa(bottom)+"-"+strconv.Itoa(top))
		}
	}
	b.of = func(d int) int {
		if d <= 0 {
			return 0
		}
		return first + rangeOf(d) - lo
	}
	return b
}

// values are a policy's shares (%) summed per group.
func (b degreeBins) values(shares []sched.DegreeShare) plotter.Values {
	vals := make(plotter.Values, len(b.labels))
	for _, d := range shares {
		vals[b.of(d.Degree)] += finite(100 * d.Share)
	}
	return vals
}

// memoryFigure is each policy's peak memory per GPU by stage, against the
// HBM; nil without a policy that has per-stage peaks.
func memoryFigure(s *results.Summary) (*figure, error) {
	var with []okPolicy
	stages := 0
	var hbm float64
	for _, op := range okPolicies(s) {
		if len(op.ps.PeakMemoryByStageBytes) == 0 {
			continue
		}
		with = append(with, op)
		stages = max(stages, len(op.ps.PeakMemoryByStageBytes))
		if hbm == 0 || op.ps.HBMBytes < hbm {
			hbm = op.ps.HBMBytes
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	const gib = 1 << 30
	w := min(nominalWidth(stages*len(with), 0.3*vg.Inch), cpDegreesMaxW)
	group := barWidth(w, stages, 0.8, vg.Length(len(with))*vg.Points(28))
	bw := group / vg.Length(len(with))
	p := plot.New()
	p.Title.Text = runTitle(s, "peak memory per GPU")
	p.X.Label.Text = "pipeline stage"
	p.Y.Label.Text = "GiB (states + reserve + held activations)"
	p.Add(hGrid())
	leg := newLegend()
	top := hbm / gib
	for j, op := range with {
		vals := make(plotter.Values, stages)
		for st, b := range op.ps.PeakMemoryByStageBytes {
			vals[st] = finite(b / gib)
			top = max(top, vals[st])
		}
		if err := addGroupedBar(p, leg, vals, op, j, len(with), bw); err != nil {
			return nil, fmt.Errorf("report: memory figure: %w", err)
		}
	}
	if hbm > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: hbm / gib}, {X: float64(stages) - 0.5, Y: hbm / gib}})
		if err != nil {
			return nil, fmt.Errorf("report: memory figure: %w", err)
		}
		l.Color, l.Width = color.Gray{60}, vg.Points(1)
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		leg.Add(fmt.Sprintf("HBM (%.1f GiB)", hbm/gib), l)
	}
	names := make([]string, stages)
	for i := range names {
		names[i] = strconv.Itoa(i)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(stages)-0.5
	p.Y.Min, p.Y.Max = 0, 1.05*top
	return &figure{name: "memory", p: p, legend: leg, w: w, h: figH}, nil
}
