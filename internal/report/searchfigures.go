package report

// The figures of a layout search (WriteSearchFigures): the candidates'
// throughput against scale or memory with their Pareto front, and each
// policy's best layout.

import (
	"cmp"
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// WriteSearchFigures draws the figures of a layout search into dir (which
// must exist), each as NAME.png and NAME.svg, and returns the base names of
// the files written, sorted. Only the ok candidates (Status SearchOK, with
// finite tokens/day and peak memory) are drawn, so pruned, failed or invalid
// rows never change a figure; without any, nothing is written. A policy keeps
// one colour throughout, by its first appearance over the ok candidates in ID
// order. The figures:
//
//   - search-pareto: with at least two distinct GPU counts, tokens/day
//     (billions) vs GPUs, every candidate a small translucent marker in its
//     policy's colour, a line per policy through its best candidate at each
//     GPU count, and the overall Pareto front (the best over policies at each
//     GPU count) as a black dashed line. With one GPU count, tokens/day
//     (billions) vs peak memory per GPU (GiB), a marker per candidate, the
//     Pareto front of (most tokens/day, least peak memory) as a black dashed
//     step line and the smallest HBM as a grey dashed line.
//   - search-best: each policy's best candidate by tokens/day (at the largest
//     GPU count when there are several; policies with no ok candidate there
//     are left out) as a horizontal bar of its tokens/day (billions), best on
//     top, labelled with its layout (SearchRow.Layout) and its value.
func WriteSearchFigures(dir string, rows []results.SearchRow) ([]string, error) {
	ok := okSearchRows(rows)
	if len(ok) == 0 {
		return nil, nil
	}
	colors := searchPolicyColors(ok)
	var figs []figure
	for _, build := range []func([]results.SearchRow, map[string]int) (*figure, error){searchParetoFigure, searchBestFigure} {
		f, err := build(ok, colors)
		if err != nil {
			return nil, err
		}
		figs = append(figs, *f)
	}
	return writeFigures(dir, figs)
}

// okSearchRows are the rows with status ok and finite figures, by ID (rows of
// one ID in their given order).
func okSearchRows(rows []results.SearchRow) []results.SearchRow {
	var ok []results.SearchRow
	for _, r := range rows {
		if r.Status == results.SearchOK && isFinite(r.TokensPerDay) && isFinite(r.PeakMemoryBytes) {
			ok = append(ok, r)
		}
	}
	slices.SortStableFunc(ok, func(a, b results.SearchRow) int { return cmp.Compare(a.ID, b.ID) })
	return ok
}

// isFinite reports whether v is neither NaN nor infinite.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// searchPolicyColors maps each policy of rows onto the colour index of its
// first appearance.
func searchPolicyColors(rows []results.SearchRow) map[string]int {
	idx := map[string]int{}
	for _, r := range rows {
		if _, seen := idx[r.Policy]; !seen {
			idx[r.Policy] = len(idx)
		}
	}
	return idx
}

// searchPolicies are the policies of rows in order of first appearance, with
// each policy's rows.
func searchPolicies(rows []results.SearchRow) (names []string, byPolicy map[string][]results.SearchRow) {
	byPolicy = map[string][]results.SearchRow{}
	for _, r := range rows {
		if byPolicy[r.Policy] == nil {
			names = append(names, r.Policy)
		}
		byPolicy[r.Policy] = append(byPolicy[r.Policy], r)
	}
	return names, byPolicy
}

// searchGPUs are the distinct GPU counts of rows, ascending.
func searchGPUs(rows []results.SearchRow) []float64 {
	xs := make([]float64, 0, len(rows))
	for _, r := range rows {
		xs = append(xs, float64(r.GPUs))
	}
	slices.Sort(xs)
	return slices.Compact(xs)
}

// paretoFront are the indices of the points of pts that no other point
// dominates when more X and less Y are better (of points equal in both, the
// first), by X ascending (and so Y ascending).
func paretoFront(pts plotter.XYs) []int {
	order := make([]int, len(pts))
	for i := range order {
		order[i] = i
	}
	// Most X first, then least Y, then the first index: a point is on the
	// front when its Y is below that of every point before it.
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(pts[b].X, pts[a].X), cmp.Compare(pts[a].Y, pts[b].Y))
	})
	var front []int
	minY := math.Inf(1)
	for _, i := range order {
		if pts[i].Y < minY {
			front = append(front, i)
			minY = pts[i].Y
		}
	}
	slices.Reverse(front)
	return front
}

// translucent is c with alpha a.
func translucent(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(b >> 8), a}
}

// The styles of a search figure's Pareto front and HBM lines.
var (
	frontDashes = []vg.Length{vg.Points(5), vg.Points(3)}
	hbmDashes   = []vg.Length{vg.Points(4), vg.Points(3)}
)

// candidateScatter is a marker per point in the colour of the policy at
// colour index ci, translucent so that stacked candidates show.
func candidateScatter(pts plotter.XYs, ci int, radius vg.Length, alpha uint8) (*plotter.Scatter, error) {
	sc, err := plotter.NewScatter(pts)
	if err != nil {
		return nil, err
	}
	sc.Shape = draw.CircleGlyph{}
	sc.Color, sc.Radius = translucent(policyColor(ci), alpha), radius
	return sc, nil
}

// searchParetoFigure is the candidates' tokens/day vs GPUs with the best per
// policy and GPU count, or, with one GPU count, their tokens/day vs peak
// memory; both with the Pareto front.
func searchParetoFigure(rows []results.SearchRow, colors map[string]int) (*figure, error) {
	if len(searchGPUs(rows)) >= 2 {
		return searchScaleFigure(rows, colors)
	}
	return searchMemoryFigure(rows, colors)
}

// searchScaleFigure is tokens/day vs GPUs: every candidate, a line per policy
// through its best at each GPU count, and the best over policies as the
// Pareto front.
func searchScaleFigure(rows []results.SearchRow, colors map[string]int) (*figure, error) {
	const name = "search-pareto"
	fail := func(err error) (*figure, error) { return nil, fmt.Errorf("report: %s figure: %w", name, err) }
	p := plot.New()
	p.Title.Text = "layout search: throughput vs scale"
	p.Y.Label.Text = "tokens/day (billions)"
	trX := gpuAxis(&p.X, searchGPUs(rows))
	xy := func(r *results.SearchRow) plotter.XY {
		return plotter.XY{X: trX(float64(r.GPUs)), Y: r.TokensPerDay / 1e9}
	}
	p.Add(plotter.NewGrid())
	leg := newLegend()
	names, byPolicy := searchPolicies(rows)
	for _, pol := range names {
		prs := byPolicy[pol]
		all := make(plotter.XYs, len(prs))
		for i := range prs {
			all[i] = xy(&prs[i])
		}
		sc, err := candidateScatter(all, colors[pol], vg.Points(2), 90)
		if err != nil {
			return fail(err)
		}
		var best plotter.XYs
		for _, r := range results.BestPerSize(prs) {
			best = append(best, xy(&r))
		}
		l, lp, err := plotter.NewLinePoints(best)
		if err != nil {
			return fail(err)
		}
		col := policyColor(colors[pol])
		l.Color, l.Width = col, vg.Points(1.5)
		lp.Color, lp.Radius, lp.Shape = col, vg.Points(2.5), draw.CircleGlyph{}
		p.Add(sc, l, lp)
		leg.Add(pol+" (best per GPU count)", l, lp)
	}
	var front plotter.XYs
	for _, r := range results.BestPerSize(rows) {
		front = append(front, xy(&r))
	}
	fl, err := plotter.NewLine(front)
	if err != nil {
		return fail(err)
	}
	fl.Color, fl.Width, fl.Dashes = color.Black, vg.Points(1.2), frontDashes
	p.Add(fl)
	leg.Add("Pareto front (best at each GPU count)", fl)
	cand, err := candidateScatter(plotter.XYs{{}}, 0, vg.Points(2), 90)
	if err != nil {
		return fail(err)
	}
	cand.Color = color.NRGBA{90, 90, 90, 120}
	leg.Add("one ok candidate", cand)
	p.Y.Min = 0
	return &figure{name: name, p: p, legend: leg, w: figW, h: figH}, nil
}

// searchMemoryFigure is tokens/day vs peak memory per GPU at one GPU count:
// every candidate, their Pareto front and the smallest HBM.
func searchMemoryFigure(rows []results.SearchRow, colors map[string]int) (*figure, error) {
	const (
		name = "search-pareto"
		gib  = 1 << 30
	)
	fail := func(err error) (*figure, error) { return nil, fmt.Errorf("report: %s figure: %w", name, err) }
	p := plot.New()
	p.Title.Text = "layout search at " + strconv.Itoa(rows[0].GPUs) + " GPUs: throughput vs peak memory"
	p.X.Label.Text = "tokens/day (billions)"
	p.Y.Label.Text = "peak memory per GPU (GiB)"
	xy := func(r *results.SearchRow) plotter.XY {
		return plotter.XY{X: r.TokensPerDay / 1e9, Y: r.PeakMemoryBytes / gib}
	}
	p.Add(plotter.NewGrid())
	leg := newLegend()
	names, byPolicy := searchPolicies(rows)
	for _, pol := range names {
		prs := byPolicy[pol]
		pts := make(plotter.XYs, len(prs))
		for i := range prs {
			pts[i] = xy(&prs[i])
		}
		sc, err := candidateScatter(pts, colors[pol], vg.Points(2.5), 170)
		if err != nil {
			return fail(err)
		}
		p.Add(sc)
		leg.Add(pol, sc)
	}
	all := make(plotter.XYs, len(rows))
	xlo, xhi, yhi := math.Inf(1), math.Inf(-1), 0.0
	var hbm float64
	for i := range rows {
		all[i] = xy(&rows[i])
		xlo, xhi, yhi = min(xlo, all[i].X), max(xhi, all[i].X), max(yhi, all[i].Y)
		if h := rows[i].HBMBytes; h > 0 && isFinite(h) && (hbm == 0 || h < hbm) {
			hbm = h
		}
	}
	var front plotter.XYs
	for _, i := range paretoFront(all) {
		front = append(front, all[i])
	}
	fl, err := plotter.NewLine(front)
	if err != nil {
		return fail(err)
	}
	// Vertical first: beyond a front point's tokens/day, the least memory
	// needed is the next front point's.
	fl.StepStyle = plotter.PreStep
	fl.Color, fl.Width, fl.Dashes = color.Black, vg.Points(1.2), frontDashes
	p.Add(fl)
	leg.Add("Pareto front", fl)
	pad := 0.05 * (xhi - xlo)
	if pad == 0 {
		pad = max(0.05*math.Abs(xhi), 0.5)
	}
	p.X.Min, p.X.Max = xlo-pad, xhi+pad
	if xlo >= 0 {
		p.X.Min = max(p.X.Min, 0)
	}
	p.Y.Min, p.Y.Max = 0, 1.05*yhi
	if hbm > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: hbm / gib}, {X: p.X.Max, Y: hbm / gib}})
		if err != nil {
			return fail(err)
		}
		l.Color, l.Width, l.Dashes = color.Gray{60}, vg.Points(1), hbmDashes
		p.Add(l)
		leg.Add(fmt.Sprintf("HBM (%.1f GiB)", hbm/gib), l)
		p.Y.Max = max(p.Y.Max, 1.05*hbm/gib)
	}
	if p.Y.Max == 0 {
		p.Y.Max = 1
	}
	return &figure{name: name, p: p, legend: leg, w: figW, h: figH}, nil
}

// searchBestFigure is each policy's best candidate (at the largest GPU count)
// as a horizontal bar of its tokens/day, best on top, labelled with its
// layout.
func searchBestFigure(rows []results.SearchRow, colors map[string]int) (*figure, error) {
	const name = "search-best"
	fail := func(err error) (*figure, error) { return nil, fmt.Errorf("report: %s figure: %w", name, err) }
	gpus := searchGPUs(rows)
	names, byPolicy := searchPolicies(rows)
	var best []results.SearchRow
	kinds := map[string]bool{}
	// The best of each policy at each cluster size, sizes bottom up (the
	// largest at the top), each size's policies best last (drawn on top).
	for _, g := range gpus {
		var at []results.SearchRow
		for _, pol := range names {
			var b *results.SearchRow
			for i, r := range byPolicy[pol] {
				if r.GPUs == int(g) && (b == nil || r.TokensPerDay > b.TokensPerDay) {
					b = &byPolicy[pol][i]
				}
			}
			if b != nil {
				at = append(at, *b)
				kinds[b.GPU] = true
			}
		}
		slices.SortStableFunc(at, func(a, b results.SearchRow) int {
			return cmp.Or(cmp.Compare(a.TokensPerDay, b.TokensPerDay), cmp.Compare(b.ID, a.ID))
		})
		best = append(best, at...)
	}
	n := len(best)
	h := max(figH, 1.2*vg.Inch+vg.Length(n)*0.5*vg.Inch)
	w := figW + vg.Inch
	p := plot.New()
	p.Title.Text = "best layout per policy at " + strconv.Itoa(int(gpus[0])) + " GPUs"
	if len(gpus) > 1 {
		p.Title.Text = "best layout per policy at each cluster size searched"
	}
	p.X.Label.Text = "tokens/day (billions)"
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)
	bw := barWidth(h, n, 0.4, vg.Points(20))
	var layouts, values plotter.XYLabels
	ticks := make([]string, n)
	for i, r := range best {
		v := r.TokensPerDay / 1e9
		b, err := plotter.NewBarChart(plotter.Values{v}, bw)
		if err != nil {
			return fail(err)
		}
		b.Horizontal = true
		b.XMin = float64(i)
		b.Color = policyColor(colors[r.Policy])
		b.LineStyle.Width = 0
		p.Add(b)
		ticks[i] = r.Policy
		if len(gpus) > 1 {
			ticks[i] = r.Policy + " · " + strconv.Itoa(r.GPUs)
		}
		layout := r.Layout()
		if len(kinds) > 1 {
			layout = r.GPU + " · " + layout
		}
		layouts.XYs = append(layouts.XYs, plotter.XY{X: 0, Y: float64(i)})
		layouts.Labels = append(layouts.Labels, layout)
		values.XYs = append(values.XYs, plotter.XY{X: v, Y: float64(i)})
		values.Labels = append(values.Labels, formatValue(v))
	}
	ll, err := plotter.NewLabels(layouts)
	if err != nil {
		return fail(err)
	}
	for i := range ll.TextStyle {
		ll.TextStyle[i].Font = font.From(plot.DefaultFont, vg.Points(9))
		ll.TextStyle[i].YAlign = text.YBottom
	}
	ll.Offset = vg.Point{Y: bw/2 + vg.Points(2)}
	vl, err := plotter.NewLabels(values)
	if err != nil {
		return fail(err)
	}
	for i := range vl.TextStyle {
		vl.TextStyle[i].YAlign = text.YCenter
	}
	vl.Offset = vg.Point{X: vg.Points(3)}
	p.Add(ll, vl)
	p.NominalY(ticks...)
	p.Y.Min, p.Y.Max = -0.5, float64(n)-0.5
	p.X.Min = 0
	return &figure{name: name, p: p, w: w, h: h}, nil
}
