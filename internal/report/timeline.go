package report

// The pipeline timeline figure of one iteration: a gantt chart with one track
// per (stage, representative rank).

import (
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

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
func timelineGantt(tl results.Timeline, base color.Color) (g *gantt, tracks []timelineTrack, kinds []results.SliceKind) {
	stages := max(tl.Stages, 0)
	ranks := slices.Clone(tl.Ranks)
	hasPlanner := false
	for _, sl := range tl.Slices {
		stages = max(stages, sl.Stage+1)
		ranks = append(ranks, sl.Rank)
		hasPlanner = hasPlanner || sl.Kind == results.PlannerStall
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
			results.Forward:      mix(base, color.White, 0.55),
			results.Backward:     mix(base, color.Black, 0.15),
			results.GradSync:     gradSyncGrey,
			results.Optimizer:    optimizerGrey,
			results.PlannerStall: plannerGrey,
		},
		Gap:      vg.Points(0.2),
		MinWidth: vg.Points(0.3),
		XMin:     0,
		XMax:     float64(max(tl.IterationNanos, 0)) / 1e9,
		YMin:     -0.5,
		YMax:     tracks[0].Y + 0.5,
	}
	present := make([]bool, len(g.Colors))
	add := func(stage, rank int, kind results.SliceKind, start, end int64) {
		if stage < 0 || int(kind) < 0 || int(kind) >= len(g.Colors) {
			return
		}
		y := trackY(stage, rank)
		g.Bars = append(g.Bars, ganttBar{X0: float64(start) / 1e9, X1: float64(end) / 1e9, Y0: y - half, Y1: y + half, Fill: int(kind)})
		present[kind] = true
	}
	if tl.PlannerStallNanos > 0 && !hasPlanner {
		for _, t := range tracks {
			add(t.Stage, t.Rank, results.PlannerStall, 0, tl.PlannerStallNanos)
		}
	}
	for _, sl := range tl.Slices {
		add(sl.Stage, sl.Rank, sl.Kind, sl.StartNanos, sl.EndNanos)
	}
	for k, ok := range present {
		if ok {
			kinds = append(kinds, results.SliceKind(k))
		}
	}
	return g, tracks, kinds
}

// timelineDrawn is a timeline the figures draw, laid out.
type timelineDrawn struct {
	tl     results.Timeline
	g      *gantt
	tracks []timelineTrack
	kinds  []results.SliceKind
}

// timelineFigures are the pipeline timelines of the policies that did not
// fail, one per timeline with slices, all on one time axis: from 0 to the end
// of the longest of them, so that the policies' iterations compare by eye.
func timelineFigures(s *results.Summary, tls []results.Timeline) ([]figure, error) {
	drawn := layOutTimelines(s, tls)
	var axis [2]float64 // seconds: 0 (or less, for slices before 0) to the longest end
	for _, d := range drawn {
		xmin, xmax, _, _ := d.g.DataRange()
		axis = [2]float64{min(axis[0], xmin), max(axis[1], xmax)}
	}
	names := timelineNames(drawn)
	figs := make([]figure, len(drawn))
	for i, d := range drawn {
		p, leg, err := timelinePlot(d, axis)
		if err != nil {
			return nil, err
		}
		h := min(max(figH-vg.Inch, 1.2*vg.Inch+vg.Length(len(d.tracks))*0.28*vg.Inch), 30*vg.Inch)
		figs[i] = figure{name: names[i], p: p, legend: leg, w: 10 * vg.Inch, h: h}
	}
	return figs, nil
}

// layOutTimelines lays out the timelines to draw: those of policies that did
// not fail with something to draw, each in its policy's colour.
func layOutTimelines(s *results.Summary, tls []results.Timeline) []timelineDrawn {
	idx, failed := policyIndex(s)
	var drawn []timelineDrawn
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
		drawn = append(drawn, timelineDrawn{tl, g, tracks, kinds})
	}
	return drawn
}

// timelineNames are the figures' names: timeline-POLICY, with -itN when a
// policy has several timelines, and -2, -3, ... for names still taken.
func timelineNames(drawn []timelineDrawn) []string {
	count := map[string]int{}
	for _, d := range drawn {
		count[safeio.SafeName(d.tl.Policy)]++
	}
	used := map[string]bool{}
	names := make([]string, len(drawn))
	for i, d := range drawn {
		name := "timeline-" + safeio.SafeName(d.tl.Policy)
		if count[safeio.SafeName(d.tl.Policy)] > 1 {
			name += fmt.Sprintf("-it%d", d.tl.Iteration)
		}
		for base, k := name, 2; used[name]; k++ {
			name = fmt.Sprintf("%s-%d", base, k)
		}
		used[name] = true
		names[i] = name
	}
	return names
}

// timelinePlot draws one timeline on the time axis [axis[0], axis[1]] s, its
// tracks labelled by stage and rank (with the rank's role when known), and a
// dashed line at the end of its iteration when that is visibly earlier than
// the axis's end; the legend names the kinds of slices drawn (and the line).
func timelinePlot(d timelineDrawn, axis [2]float64) (*plot.Plot, *plot.Legend, error) {
	tl := d.tl
	iterSeconds := float64(max(tl.IterationNanos, 0)) / 1e9
	p := plot.New()
	p.Title.Text = fmt.Sprintf("pipeline timeline: %s, iteration %d (%s s)", tl.Policy, tl.Iteration, formatValue(iterSeconds))
	p.X.Label.Text = "time in iteration (s; one axis for every policy of the run)"
	p.Y.Label.Text = "pipeline stage, rank"
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid, d.g)
	leg := newLegend()
	kindName := map[results.SliceKind]string{results.Forward: "forward", results.Backward: "backward", results.GradSync: "grad sync", results.Optimizer: "optimizer", results.PlannerStall: "planner stall"}
	for _, k := range d.kinds {
		leg.Add(kindName[k], swatch{d.g.Colors[k]})
	}
	// The line only where it can be told from the axis's end.
	if iterSeconds > 0 && iterSeconds < axis[1]-0.005*(axis[1]-axis[0]) {
		_, _, ymin, ymax := d.g.DataRange()
		end, err := plotter.NewLine(plotter.XYs{{X: iterSeconds, Y: ymin}, {X: iterSeconds, Y: ymax}})
		if err != nil {
			return nil, nil, fmt.Errorf("report: timeline figure: %w", err)
		}
		end.Color, end.Width = color.Gray{60}, vg.Points(1)
		end.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(end)
		leg.Add("end of iteration", end)
	}
	ticks := make([]plot.Tick, len(d.tracks))
	for i, t := range d.tracks {
		label := fmt.Sprintf("stage %d, rank %d", t.Stage, t.Rank)
		if role := tl.RankRoles[t.Rank]; role != "" {
			label += " (" + role + ")"
		}
		ticks[i] = plot.Tick{Value: t.Y, Label: label}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Length = 0
	p.X.Min, p.X.Max = axis[0], axis[1]
	return p, leg, nil
}
