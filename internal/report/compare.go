package report

// The comparison of two results folders of one scenario (dcpsim compare):
// its type (compare.json, compare.csv), its text table and its figure. The
// folders are read, paired and the statistics computed in package experiment
// (experiment.Compare); this file only lays the result out.

import (
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// shown is s for a terminal: quoted when it holds a control, tab or other
// non-graphic character (a hostile summary's policy name), else as is.
func shown(s string) string {
	if !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) || r == '\t' {
			return strconv.Quote(s)
		}
	}
	return s
}

// WriteComparisonTable prints c: the two folders, what differs, one line per
// compared policy (per point and policy for sweeps) with the iterations
// used, the step means, the change and its interval, whether it is
// significant, tokens/day, the bubbles and peak memory A → B; then the
// rows that were not compared (only in A or B, failed) and the method.
func WriteComparisonTable(w io.Writer, c *results.Comparison) error {
	forced := c.A.Scenario != c.B.Scenario
	side := func(f results.ComparedFolder) string {
		s := shown(f.Path) + " ("
		if forced {
			s += "scenario " + shown(f.Scenario) + ", "
		}
		s += fmt.Sprintf("seed %d, sha256 %.12s", f.Seed, f.Hash)
		if f.Points > 0 {
			s += fmt.Sprintf(", %d points", f.Points)
		}
		if f.Revision != "" {
			s += ", dcpsim " + shortRevision(f.Revision)
		}
		return s + ")"
	}
	kind := "runs"
	if c.Kind == "sweep" {
		kind = "sweeps"
	}
	if forced {
		fmt.Fprintf(w, "compare %s of different scenarios (--force): %s and %s\n", kind, shown(c.A.Scenario), shown(c.B.Scenario))
	} else {
		fmt.Fprintf(w, "compare %s of %s\n", kind, shown(c.A.Scenario))
	}
	fmt.Fprintf(w, "  A = %s\n  B = %s\n", side(c.A), side(c.B))
	if len(c.Differences) == 0 {
		fmt.Fprintln(w, "differs: nothing summary.json and manifest.json record (same scenario hash, seed, policies and options)")
	} else {
		parts := make([]string, len(c.Differences))
		for i, d := range c.Differences {
			a, b, key := d.A, d.B, d.Key
			switch key {
			case "scenario_sha256": // 64 hex digits; compare.json has them whole
				a, b, key = shortRevision(a), shortRevision(b), key+" (the scenario text or a policy option)"
			case "batches_sha256":
				a, b, key = shortRevision(a), shortRevision(b), key+" (other batches: Welch's test)"
			case "vcs_revision":
				a, b = shortRevision(a), shortRevision(b)
			}
			parts[i] = fmt.Sprintf("%s %s → %s", shown(key), orNone(shown(a)), orNone(shown(b)))
		}
		fmt.Fprintf(w, "differs: %s\n", strings.Join(parts, "; "))
	}
	fmt.Fprintln(w)

	sweep := c.Kind == "sweep"
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "policy\titerations A/B\tstep mean A (s)\tstep mean B (s)\tchange (%)\t95% CI (%)\ttest\tsignificant\t" +
		"tokens/day A → B (B)\tPP bubble A → B (%)\tDP bubble A → B (%)\tpeak memory A → B (GiB)\t"
	if sweep {
		head = "point\t" + head
	}
	fmt.Fprintln(tw, head)
	var other []results.ComparisonRow
	compared := 0
	tests := map[string]bool{}
	for _, r := range c.Rows {
		if r.Status != results.CompareCompared {
			other = append(other, r)
			continue
		}
		compared++
		if sweep {
			fmt.Fprintf(tw, "%s\t", shown(r.PointLabel()))
		}
		sig := "no"
		if r.Significant {
			sig = "yes"
		}
		tests[r.Test] = true
		fmt.Fprintf(tw, "%s\t%d/%d\t%.4f\t%.4f\t%+.2f\t%s\t%s\t%s\t%.2f → %.2f\t%.1f → %.1f\t%.1f → %.1f\t%.1f → %.1f\t\n",
			shown(r.Policy), r.IterationsA, r.IterationsB, r.StepSecondsMeanA, r.StepSecondsMeanB, r.ChangePct, r.FormatCI(), r.Test, sig,
			r.TokensPerDayA/1e9, r.TokensPerDayB/1e9, 100*r.PPBubbleShareA, 100*r.PPBubbleShareB,
			100*r.DPBubbleShareA, 100*r.DPBubbleShareB, r.PeakMemoryMaxBytesA/(1<<30), r.PeakMemoryMaxBytesB/(1<<30))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if compared == 0 {
		fmt.Fprintln(w, "(no policy ran on both sides)")
	}
	if len(other) > 0 {
		fmt.Fprintln(w)
	}
	for _, r := range other {
		fmt.Fprintf(w, "%s: %s", shown(r.Label()), r.Status)
		if r.Note != "" {
			fmt.Fprintf(w, ": %s", shown(r.Note))
		}
		fmt.Fprintln(w)
	}
	for _, r := range c.Rows {
		if r.Status == results.CompareCompared && r.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", shown(r.Label()), shown(r.Note))
		}
	}
	fmt.Fprintln(w)
	if tests[results.CompareTestPaired] {
		fmt.Fprintln(w, "paired: both sides simulated the same batches (batches_sha256), so the interval is the paired t interval on the per-iteration differences.")
	}
	if tests[results.CompareTestWelch] {
		fmt.Fprintln(w, "welch: the batches differ (or are not recorded), so the interval is Welch's t interval on the difference of the means.")
	}
	fmt.Fprintln(w, "change and interval in % of mean A; significant when the interval excludes 0 (dcpsim help compare). Bubbles are shares of the iteration; peak memory the most any GPU held.")
	return nil
}

// orNone is s, or "(none)" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// shortRevision is a VCS revision's first 12 characters, with "+modified"
// kept.
func shortRevision(rev string) string {
	base, mod := strings.CutSuffix(rev, "+modified")
	if len(base) > 12 {
		base = base[:12]
	}
	if mod {
		base += "+modified"
	}
	return base
}

// WriteComparison writes c into dir (which must exist), each file
// atomically (WriteFileAtomic): compare.json (c, indented), compare.csv (its
// rows), the figure compare.png and compare.svg (CompareFigure) and the
// page index.html (WritePage). It
// returns the names written, sorted (those written so far on an error).
func WriteComparison(dir string, c *results.Comparison) ([]string, error) {
	var names []string
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "compare.json"), func(w io.Writer) error { return results.WriteComparisonJSON(w, c) }); err != nil {
		return names, err
	}
	names = append(names, "compare.json")
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "compare.csv"), func(w io.Writer) error { return results.WriteCSV(w, c.Rows) }); err != nil {
		return names, err
	}
	names = append(names, "compare.csv")
	f, err := compareFigure(c)
	if err != nil {
		return names, err
	}
	figs, err := writeFigures(dir, []figure{*f})
	names = append(names, figs...)
	if err != nil {
		slices.Sort(names)
		return names, err
	}
	page, err := WritePage(dir, &results.Page{Comparison: c, Files: slices.Sorted(slices.Values(names))})
	if err == nil {
		names = append(names, page)
	}
	slices.Sort(names)
	return names, err
}

// compareMaxLabels is the most rows the figure labels one by one; beyond,
// its x axis counts rows (compare.csv names them).
const compareMaxLabels = 48

// compareFigure is the change of the step mean, B over A (%), per compared
// row with its 95% interval as error bars, a dashed line at 0, one colour
// per policy (in order of first appearance); a filled point is a
// significant change, an open ring one that is not. With no compared row
// the figure says so in its title.
func compareFigure(c *results.Comparison) (*figure, error) {
	var rows []results.ComparisonRow
	for _, r := range c.Rows {
		if r.Status == results.CompareCompared {
			rows = append(rows, r)
		}
	}
	colors := map[string]int{}
	var order []string
	for _, r := range c.Rows {
		if _, ok := colors[r.Policy]; !ok {
			colors[r.Policy] = len(colors)
			order = append(order, r.Policy)
		}
	}
	n := len(rows)
	p := plot.New()
	p.Title.Text = fmt.Sprintf("step mean, B vs A (%s; > 0: B slower)", c.A.Scenario)
	if c.B.Scenario != c.A.Scenario {
		p.Title.Text = fmt.Sprintf("step mean, B (%s) vs A (%s; > 0: B slower)", c.B.Scenario, c.A.Scenario)
	}
	if n == 0 {
		p.Title.Text += ": no policy ran on both sides"
	}
	p.Y.Label.Text = "change (%), 95% CI"
	p.X.Label.Text = "policy (filled: significant)"
	if c.Kind == "sweep" {
		p.X.Label.Text = "point, policy (filled: significant)"
	}
	// A sweep's label is its point's axes, one per line, over the policy.
	var labels []string
	per, lines := 0.7*vg.Inch, 1
	if n <= compareMaxLabels {
		labels = make([]string, n)
		for i, r := range rows {
			labels[i] = r.Policy
			if c.Kind == "sweep" {
				labels[i] = strings.ReplaceAll(r.PointLabel(), " ", "\n") + "\n" + r.Policy
			}
			per = max(per, p.X.Tick.Label.Rectangle(labels[i]).Size().X+0.15*vg.Inch)
			lines = max(lines, strings.Count(labels[i], "\n")+1)
		}
	}
	w := min(nominalWidth(n, per), 30*vg.Inch)
	p.Add(hGrid())
	leg := newLegend()
	lo, hi := 0.0, 0.0
	for _, pol := range order {
		var pts plotter.XYs
		var errs plotter.YErrors
		var sig []bool
		for i, r := range rows {
			if r.Policy != pol {
				continue
			}
			y := finite(r.ChangePct)
			pts = append(pts, plotter.XY{X: float64(i), Y: y})
			e := plotter.YErrors{{}}
			if r.CIDefined {
				e[0].Low, e[0].High = finite(y-r.CILowPct), finite(r.CIHighPct-y)
			}
			errs = append(errs, e...)
			sig = append(sig, r.Significant)
			lo, hi = min(lo, y-math.Abs(e[0].Low)), max(hi, y+math.Abs(e[0].High))
		}
		if len(pts) == 0 {
			continue
		}
		col := policyColor(colors[pol])
		bars := &plotter.YErrorBars{XYs: pts, YErrors: errs, LineStyle: plotter.DefaultLineStyle, CapWidth: vg.Points(8)}
		bars.LineStyle.Color = col
		bars.LineStyle.Width = vg.Points(1.2)
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return nil, fmt.Errorf("report: compare figure: %w", err)
		}
		sc.GlyphStyleFunc = func(i int) draw.GlyphStyle {
			g := draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
			if !sig[i] {
				g.Shape = draw.RingGlyph{}
			}
			return g
		}
		p.Add(bars, sc)
		leg.Add(pol, &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}})
	}
	zero, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 0}, {X: float64(max(n, 1)) - 0.5, Y: 0}})
	if err != nil {
		return nil, fmt.Errorf("report: compare figure: %w", err)
	}
	zero.Color = color.Gray{Y: 80}
	zero.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(zero)
	switch {
	case n == 0:
		p.X.Tick.Marker = plot.ConstantTicks{}
	case len(labels) > 0:
		p.NominalX(labels...)
	default:
		p.X.Label.Text = fmt.Sprintf("compared rows 0-%d in compare.csv's order (filled: significant)", n-1)
		p.X.Tick.Marker = integerTicks
	}
	p.X.Min, p.X.Max = -0.5, float64(max(n, 1))-0.5
	pad := 0.08 * max(hi-lo, 1)
	p.Y.Min, p.Y.Max = lo-pad, hi+pad
	h := figH + vg.Length(lines-1)*0.15*vg.Inch
	return &figure{name: "compare", p: p, legend: leg, w: w, h: h}, nil
}
