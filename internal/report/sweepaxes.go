package report

// The sweep figures over the axes that are not numbers of GPUs or policy
// options: grouped bars per variant (sweep-variants) and lines over the
// context length (sweep-context).

import (
	"cmp"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// The fields of a sweep point that the figures of this file put on an axis.
var (
	variantField = func(p *results.SweepPoint) string { return axisValue(p, "variant") }
	contextField = func(p *results.SweepPoint) string { return strconv.Itoa(p.ContextTokens) }
)

// pointSeries adds to ss, for each policy that did not fail, value(policy) (>
// 0 when positive is set) against x(point) into series by policy, model and
// variant, and returns ss. The variant leaves out the axes tied to one of
// tied or the model, and the option axes of other policies (another policy's
// option does not change a policy's run).
func pointSeries(ss *seriesSet, pts []results.SweepPoint, colors map[string]int, value func(*results.PolicySummary) float64, positive bool,
	x func(*results.SweepPoint) float64, tied ...func(*results.SweepPoint) string) *seriesSet {
	keys := variantKeys(pts, append(slices.Clone(tied), modelField)...)
	for i := range pts {
		pt := &pts[i]
		for j := range pt.Summary.Policies {
			ps := &pt.Summary.Policies[j]
			y := value(ps)
			if ps.Error != "" || math.IsNaN(y) || math.IsInf(y, 0) || (positive && y <= 0) {
				continue
			}
			ss.add(ps.Policy, colors[ps.Policy], pt.Model, variantOf(pt, ownKeys(keys, ps.Policy)), x(pt), y)
		}
	}
	return ss
}

// formatTokens prints a token count as "768K" or "1M" when it is a whole
// number of 2^10 or 2^20 tokens, else in full.
func formatTokens(n int) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "M"
	case n > 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "K"
	}
	return strconv.Itoa(n)
}

// sweepContextFigure is tokens/day vs the context length, one line per policy
// (split by the other swept axes, e.g. "policy (model)"); nil with fewer than
// two distinct context lengths.
func sweepContextFigure(pts []results.SweepPoint, colors map[string]int) (*figure, error) {
	var xs []int
	for _, pt := range pts {
		xs = append(xs, pt.ContextTokens)
	}
	xs = slices.Compact(slices.Sorted(slices.Values(xs)))
	if len(xs) < 2 {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = "throughput vs context length"
	p.Y.Label.Text = "tokens/day (billions)"
	p.X.Label.Text = "context length (tokens)"
	tr := func(x float64) float64 { return x }
	if xs[0] > 0 && xs[len(xs)-1] >= 4*xs[0] {
		tr = math.Log2
		p.X.Label.Text = "context length (tokens, log2 scale)"
		p.X.Tick.Marker = pow2Ticks
	}
	if len(xs) <= 12 {
		ticks := make([]plot.Tick, len(xs))
		for i, x := range xs {
			ticks[i] = plot.Tick{Value: tr(float64(x)), Label: formatTokens(x)}
		}
		p.X.Tick.Marker = plot.ConstantTicks(ticks)
	}
	ss := pointSeries(newSeriesSet(), pts, colors, func(ps *results.PolicySummary) float64 { return ps.TokensPerDay / 1e9 }, false,
		func(pt *results.SweepPoint) float64 { return tr(float64(pt.ContextTokens)) }, contextField)
	return seriesLinesFigure(p, ss, "sweep-context")
}

// sweepVariantsMaxW bounds the width of the sweep-variants plot (without its
// legend): its bars get narrower rather than the figure wider.
const sweepVariantsMaxW = 12 * vg.Inch

// variantGroupLabel is how a group of the sweep-variants figure names the
// value of a swept axis other than the variant.
func variantGroupLabel(key, value string) string {
	n, err := strconv.Atoi(value)
	switch {
	case key == "gpus" && err == nil:
		return value + " GPUs"
	case key == "context_tokens" && err == nil:
		return formatTokens(n) + " context"
	case key == "budget_tokens" && err == nil:
		return "B = " + formatTokens(n)
	}
	return key + "=" + value
}

// variantBars are the bars of the sweep-variants figure: groups (labelled)
// along x, and each policy's mean tokens/day (billions) in each group, 0
// where it has no value; policies in colour order.
type variantBars struct {
	labels   []string
	policies []string
	values   map[string]plotter.Values
	// splits is the number of swept axes besides the variant that split the
	// groups (lines of a group's label after the first).
	splits int
}

// sweepVariantBars groups pts by variant and by the other swept axes not tied
// to it, in order of first appearance; the option axes are averaged and the
// policy axis gives bars of its own. nil with fewer than two variants or no
// policy that did not fail.
func sweepVariantBars(pts []results.SweepPoint, colors map[string]int) *variantBars {
	var variants []string
	for i := range pts {
		if v := variantField(&pts[i]); v != "" && !slices.Contains(variants, v) {
			variants = append(variants, v)
		}
	}
	if len(variants) < 2 {
		return nil
	}
	others := slices.DeleteFunc(variantKeys(pts, variantField), func(k string) bool {
		_, _, option := optionAxisOf(k)
		return option || k == "policy"
	})
	bars := &variantBars{values: map[string]plotter.Values{}, splits: len(others)}
	gpos := map[string]int{}
	groupOf := make([]int, len(pts))
	for i := range pts {
		pt := &pts[i]
		groupOf[i] = -1
		v := variantField(pt)
		if v == "" {
			continue
		}
		key, label := v, v
		for _, k := range others {
			key += "\x00" + axisValue(pt, k)
			label += "\n" + variantGroupLabel(k, axisValue(pt, k))
		}
		g, seen := gpos[key]
		if !seen {
			g = len(bars.labels)
			gpos[key] = g
			bars.labels = append(bars.labels, label)
		}
		groupOf[i] = g
	}
	counts := map[string][]float64{}
	for i := range pts {
		g := groupOf[i]
		if g < 0 {
			continue
		}
		for _, ps := range pts[i].Summary.Policies {
			y := ps.TokensPerDay / 1e9
			if ps.Error != "" || math.IsNaN(y) || math.IsInf(y, 0) {
				continue
			}
			if bars.values[ps.Policy] == nil {
				bars.values[ps.Policy] = make(plotter.Values, len(bars.labels))
				counts[ps.Policy] = make([]float64, len(bars.labels))
				bars.policies = append(bars.policies, ps.Policy)
			}
			bars.values[ps.Policy][g] += y
			counts[ps.Policy][g]++
		}
	}
	if len(bars.policies) == 0 {
		return nil
	}
	for pol, vals := range bars.values {
		for g, n := range counts[pol] {
			if n > 0 {
				vals[g] /= n
			}
		}
	}
	slices.SortStableFunc(bars.policies, func(a, b string) int { return cmp.Compare(colors[a], colors[b]) })
	return bars
}

// sweepVariantsFigure is tokens/day per variant, bars grouped by variant (and
// by the other swept axes, sweepVariantBars), one bar per policy; nil with
// fewer than two variants.
func sweepVariantsFigure(pts []results.SweepPoint, colors map[string]int) (*figure, error) {
	bars := sweepVariantBars(pts, colors)
	if bars == nil {
		return nil, nil
	}
	ng, np := len(bars.labels), len(bars.policies)
	w := min(nominalWidth(ng*np, 0.3*vg.Inch), sweepVariantsMaxW)
	group := barWidth(w, ng, 0.8, vg.Length(np)*vg.Points(28))
	bw := group / vg.Length(np)
	p := plot.New()
	p.Title.Text = "throughput per variant"
	p.X.Label.Text = "variant"
	p.Y.Label.Text = "tokens/day (billions)"
	p.Add(hGrid())
	leg := newLegend()
	top := 0.0
	for j, pol := range bars.policies {
		top = max(top, slices.Max(bars.values[pol]))
		b, err := plotter.NewBarChart(bars.values[pol], bw)
		if err != nil {
			return nil, fmt.Errorf("report: sweep-variants figure: %w", err)
		}
		b.Color = policyColor(colors[pol])
		b.LineStyle.Width = 0
		b.Offset = (vg.Length(j) - vg.Length(np-1)/2) * bw
		p.Add(b)
		leg.Add(pol, b)
	}
	p.NominalX(bars.labels...)
	p.X.Min, p.X.Max = -0.5, float64(ng)-0.5
	p.Y.Min = 0
	if top > 0 {
		p.Y.Max = 1.05 * top // room between the tallest bar and the title
	}
	h := figH + vg.Length(bars.splits)*0.15*vg.Inch
	return &figure{name: "sweep-variants", p: p, legend: leg, w: w, h: h}, nil
}
