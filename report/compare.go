package report

// The comparison of two results folders of one scenario (dcpsim compare):
// its type (compare.json, compare.csv), its text table and its figure. The
// folders are read, paired and the statistics computed in package experiment
// (experiment.Compare); this file only lays the result out.

import (
	"encoding/json"
	"fmt"
	"github.com/dcpsim/dcpsim/internal/safeio"
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

// CompareMethod states how a Comparison's change and interval are computed,
// for the help of dcpsim compare and the table's footer.
const CompareMethod = "change = (mean B - mean A) / mean A of the per-iteration step times of the measured " +
	"(non-warm-up) iterations of iterations.csv; its 95% confidence interval is Welch's t interval on " +
	"mean B - mean A (the two samples' variances not assumed equal; the t quantile from gonum's distuv.StudentsT " +
	"at the Welch-Satterthwaite degrees of freedom), divided by mean A; significant when the interval excludes 0. " +
	"When both samples have zero variance and equal means the change is exactly 0 with interval [0, 0]; with fewer " +
	"than 2 iterations on a side there is no interval (n/a, never significant). Iterations are treated as " +
	"independent samples: with one seed on both sides A and B ran the same batches, so the interval is wider " +
	"(more conservative) than a paired one."

// CompareConfidence is the confidence level of a Comparison's intervals.
const CompareConfidence = 0.95

// The statuses of a ComparisonRow.
const (
	// CompareCompared: the policy ran on both sides and was compared.
	CompareCompared = "compared"
	// CompareOnlyInA and CompareOnlyInB: the policy (or the sweep point) is
	// in one folder only.
	CompareOnlyInA = "only in A"
	CompareOnlyInB = "only in B"
	// CompareFailedInA, CompareFailedInB and CompareFailedInBoth: the policy
	// failed (or was skipped) on that side; its error is in Note.
	CompareFailedInA    = "failed in A"
	CompareFailedInB    = "failed in B"
	CompareFailedInBoth = "failed in both"
)

// Comparison is compare.json: two results folders of one scenario (two runs,
// or two sweeps point by point), one row per policy (per point and policy
// for sweeps), and what differs between the two as their summaries record it.
type Comparison struct {
	// Kind is "run" (two dcpsim run folders) or "sweep" (two sweep folders).
	Kind string `json:"kind"`
	// A and B are the two folders, as given.
	A ComparedFolder `json:"a"`
	B ComparedFolder `json:"b"`
	// Method is CompareMethod; ConfidenceLevel CompareConfidence.
	Method          string  `json:"method"`
	ConfidenceLevel float64 `json:"confidence_level"`
	// Differences are what the folders' summaries and manifests record
	// differently (seed, policies, options, scenario hash, ...), in a fixed
	// order; empty when they record the same.
	Differences []Difference `json:"differences"`
	// Rows are A's points and policies in A's order, then those only in B
	// in B's order.
	Rows []ComparisonRow `json:"rows"`
}

// ComparedFolder is one side of a Comparison.
type ComparedFolder struct {
	// Path is the folder as given.
	Path string `json:"path"`
	// Scenario is the scenario's (for a sweep, the sweep's) name; Hash its
	// SHA-256 as summary.json (a sweep's point.json) records it.
	Scenario string `json:"scenario"`
	Hash     string `json:"scenario_sha256"`
	// Seed is the run's seed (a sweep's first point's).
	Seed uint64 `json:"seed"`
	// Revision is the VCS revision of the dcpsim that wrote it ("" when
	// unknown), with "+modified" for a modified tree.
	Revision string `json:"vcs_revision"`
	// Points is a sweep folder's number of point folders (0 for a run).
	Points int `json:"points"`
}

// Difference is one thing the two folders record differently: the key (a
// summary.json or manifest.json name, "<policy>.<key>" for a policy's) and
// its value on each side.
type Difference struct {
	Key string `json:"key"`
	A   string `json:"a"`
	B   string `json:"b"`
}

// ComparisonRow is one policy (of one sweep point) on both sides: a line of
// the table and of compare.csv. The A and B figures are summary.json's
// (step times from iterations.csv); they are zero on a side where the policy
// is missing or failed.
type ComparisonRow struct {
	// Point is the sweep point's name and Axes its swept values ("" for
	// runs); points are paired by their axes.
	Point string `json:"point"`
	Axes  string `json:"axes"`
	// Policy is the policy's name; Status one of the Compare* statuses;
	// Note why a row was not compared (a policy's error), or why it has no
	// interval.
	Policy string `json:"policy"`
	Status string `json:"status"`
	Note   string `json:"note"`
	// IterationsA and IterationsB are the measured (non-warm-up)
	// iterations of iterations.csv used.
	IterationsA int `json:"iterations_a"`
	IterationsB int `json:"iterations_b"`
	// StepSecondsMeanA/B and StepSecondsSDA/B are the step times' means and
	// sample standard deviations.
	StepSecondsMeanA float64 `json:"step_seconds_mean_a"`
	StepSecondsMeanB float64 `json:"step_seconds_mean_b"`
	StepSecondsSDA   float64 `json:"step_seconds_sd_a"`
	StepSecondsSDB   float64 `json:"step_seconds_sd_b"`
	// DiffSeconds is mean B - mean A; ChangePct the same in % of mean A
	// (positive: B is slower).
	DiffSeconds float64 `json:"diff_seconds"`
	ChangePct   float64 `json:"change_pct"`
	// CIDefined says whether the interval exists (at least 2 iterations
	// on each side); CILowPct and CIHighPct bound it, in % of mean A (0
	// when undefined); WelchDF are its degrees of freedom (0 when the
	// variances are both zero).
	CIDefined bool    `json:"ci_defined"`
	CILowPct  float64 `json:"ci_low_pct"`
	CIHighPct float64 `json:"ci_high_pct"`
	WelchDF   float64 `json:"welch_df"`
	// Significant says the interval excludes 0.
	Significant bool `json:"significant"`
	// TokensPerDayA/B, the PP and DP bubble shares and the peak memory per
	// GPU (PolicySummary.PeakMemoryMaxBytes) on each side.
	TokensPerDayA       float64 `json:"tokens_per_day_a"`
	TokensPerDayB       float64 `json:"tokens_per_day_b"`
	PPBubbleShareA      float64 `json:"pp_bubble_share_a"`
	PPBubbleShareB      float64 `json:"pp_bubble_share_b"`
	DPBubbleShareA      float64 `json:"dp_bubble_share_a"`
	DPBubbleShareB      float64 `json:"dp_bubble_share_b"`
	PeakMemoryMaxBytesA float64 `json:"peak_memory_max_bytes_a"`
	PeakMemoryMaxBytesB float64 `json:"peak_memory_max_bytes_b"`
}

// Regressions are the compared rows whose step mean got slower by more than
// pct percent with a significant change, in row order.
func (c *Comparison) Regressions(pct float64) []ComparisonRow {
	var out []ComparisonRow
	for _, r := range c.Rows {
		if r.Status == CompareCompared && r.Significant && r.ChangePct > pct {
			out = append(out, r)
		}
	}
	return out
}

// Label names the row: its policy, after its point's axes for a sweep.
func (r *ComparisonRow) Label() string {
	if r.Axes == "" && r.Point == "" {
		return r.Policy
	}
	return r.pointLabel() + " " + r.Policy
}

// pointLabel is the row's point: its axes, or its name when it has none.
func (r *ComparisonRow) pointLabel() string {
	if r.Axes != "" {
		return r.Axes
	}
	return r.Point
}

// FormatChange is the row's change and interval as the table prints them:
// "+51.34% [+27.29, +75.40]", "n/a" without a compared change.
func (r *ComparisonRow) FormatChange() string {
	if r.Status != CompareCompared {
		return "n/a"
	}
	return fmt.Sprintf("%+.2f%% %s", r.ChangePct, r.formatCI())
}

func (r *ComparisonRow) formatCI() string {
	if !r.CIDefined {
		return "[n/a]"
	}
	return fmt.Sprintf("[%+.2f, %+.2f]", r.CILowPct, r.CIHighPct)
}

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
func WriteComparisonTable(w io.Writer, c *Comparison) error {
	forced := c.A.Scenario != c.B.Scenario
	side := func(f ComparedFolder) string {
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
	head := "policy\titerations A/B\tstep mean A (s)\tstep mean B (s)\tchange (%)\t95% CI (%)\tsignificant\t" +
		"tokens/day A → B (B)\tPP bubble A → B (%)\tDP bubble A → B (%)\tpeak memory A → B (GiB)\t"
	if sweep {
		head = "point\t" + head
	}
	fmt.Fprintln(tw, head)
	var other []ComparisonRow
	compared := 0
	for _, r := range c.Rows {
		if r.Status != CompareCompared {
			other = append(other, r)
			continue
		}
		compared++
		if sweep {
			fmt.Fprintf(tw, "%s\t", shown(r.pointLabel()))
		}
		sig := "no"
		if r.Significant {
			sig = "yes"
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.4f\t%.4f\t%+.2f\t%s\t%s\t%.2f → %.2f\t%.1f → %.1f\t%.1f → %.1f\t%.1f → %.1f\t\n",
			shown(r.Policy), r.IterationsA, r.IterationsB, r.StepSecondsMeanA, r.StepSecondsMeanB, r.ChangePct, r.formatCI(), sig,
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
		if r.Status == CompareCompared && r.Note != "" {
			fmt.Fprintf(w, "%s: %s\n", shown(r.Label()), shown(r.Note))
		}
	}
	fmt.Fprintf(w, "\n%s Bubbles are shares of the iteration (means over stage and rank); peak memory is the most any GPU held in a measured iteration.\n", CompareMethod)
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

// WriteComparisonJSON writes c as one indented JSON object and a newline
// (compare.json, and dcpsim compare --json).
func WriteComparisonJSON(w io.Writer, c *Comparison) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(c)
}

// CompareFiles are the files WriteComparison writes, sorted.
var CompareFiles = []string{"compare.csv", "compare.json", "compare.png", "compare.svg"}

// WriteComparison writes c into dir (which must exist), each file
// atomically (WriteFileAtomic): compare.json (c, indented), compare.csv (its
// rows) and the figure compare.png and compare.svg (CompareFigure). It
// returns the names written, sorted (those written so far on an error).
func WriteComparison(dir string, c *Comparison) ([]string, error) {
	var names []string
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "compare.json"), func(w io.Writer) error { return WriteComparisonJSON(w, c) }); err != nil {
		return names, err
	}
	names = append(names, "compare.json")
	if err := safeio.WriteFileAtomic(filepath.Join(dir, "compare.csv"), func(w io.Writer) error { return WriteCSV(w, c.Rows) }); err != nil {
		return names, err
	}
	names = append(names, "compare.csv")
	f, err := compareFigure(c)
	if err != nil {
		return names, err
	}
	figs, err := writeFigures(dir, []figure{*f})
	names = append(names, figs...)
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
func compareFigure(c *Comparison) (*figure, error) {
	var rows []ComparisonRow
	for _, r := range c.Rows {
		if r.Status == CompareCompared {
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
	p.Y.Label.Text = "change (%), 95% CI (Welch)"
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
				labels[i] = strings.ReplaceAll(r.pointLabel(), " ", "\n") + "\n" + r.Policy
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
