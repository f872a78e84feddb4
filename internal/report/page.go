package report

// The page of a results folder (index.html): the folder's data as sortable
// tables, its figures inline with their captions, a run's timelines and a
// search's Pareto chart drawn in the browser (package pages renders them).

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/internal/report/pages"
	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/results"
)

// WritePage writes p as dir's index.html, atomically, and returns the
// file's name.
func WritePage(dir string, p *results.Page) (string, error) {
	d, err := PageDoc(p)
	if err != nil {
		return "", err
	}
	return pages.File, safeio.WriteFileAtomic(filepath.Join(dir, pages.File), func(w io.Writer) error { return pages.Write(w, d) })
}

// PageDoc is the page of p: a run's, a sweep's, a search's, a comparison's
// or a validation's.
func PageDoc(p *results.Page) (*pages.Doc, error) {
	var d *pages.Doc
	switch {
	case p.Run != nil && p.Run.Summary != nil:
		d = runDoc(p.Run, p.Files)
	case p.Sweep != nil:
		d = sweepDoc(p.Sweep)
	case p.Search != nil:
		d = searchDoc(p.Search)
	case p.Comparison != nil:
		d = compareDoc(p.Comparison)
	case p.Validation != nil:
		d = validationDoc(p.Validation)
	default:
		return nil, errors.New("report: a page of nothing (no run, sweep, search, comparison or validation)")
	}
	if p.Title != "" {
		d.Title = p.Title
	}
	if figs := pageFigures(p.Files); len(figs) > 0 {
		d.Sections = append(d.Sections, pages.Section{ID: "figures", Title: "Figures", Figures: figs,
			Text: []string{"Every figure is also in the folder as PNG (for slides) and SVG."}})
	}
	for _, f := range p.Files {
		d.Files = append(d.Files, pages.Link{Text: f, Href: f})
	}
	return d, nil
}

// pageFigures are the SVG figures among files with their captions.
func pageFigures(files []string) []pages.Figure {
	var figs []pages.Figure
	for _, f := range files {
		name, ok := strings.CutSuffix(f, ".svg")
		if !ok {
			continue
		}
		figs = append(figs, pages.Figure{Src: f, Alt: name, Caption: figureCaption(name)})
	}
	return figs
}

// figureCaptions say what each figure of a results folder shows, by its
// base name.
var figureCaptions = map[string]string{
	"throughput":             "Tokens per day (billions) per policy.",
	"breakdown":              "Where each policy's iteration goes: compute, exposed communication, PP and DP bubbles, planner stall, gradient sync and optimizer, in % of the iteration (mean over stage and rank).",
	"step-time":              "Every iteration's step time per policy; warm-up iterations as open rings.",
	"mb-time":                "The distribution (CDF) of each policy's microbatch times: a microbatch's forward and backward through one stage.",
	"memory":                 "Each policy's peak memory per GPU by pipeline stage (model states, reserve, held activations), the HBM dashed.",
	"cp-degrees":             "The share of GPU-slots (rank × microbatch) at each CP degree.",
	"sweep-throughput":       "Tokens per day (billions) against the cluster size, a line per policy.",
	"sweep-planner":          "The planner's modelled time per iteration (on the critical path) against the cluster size.",
	"sweep-planner-go":       "Our Go planner's wall time per plan on this machine (measured, never simulated) against the cluster size.",
	"sweep-variants":         "Tokens per day (billions) per variant of the sweep, a bar per policy.",
	"sweep-context":          "Tokens per day (billions) against the context length, a line per policy.",
	"sweep-memory":           "Each policy's peak memory per GPU against the swept size, the smallest HBM dashed.",
	"search-pareto":          "Every simulated candidate's tokens per day; a line per policy through its best, the Pareto front dashed.",
	"search-best":            "Each policy's best layout by tokens per day.",
	"compare":                "The step mean's change, B over A, per policy with its 95% interval; a filled point is significant.",
	results.ValidationFigure: "Predicted against published step times (log-log), y = x and ±25% dashed.",
}

// figureCaption is the caption of the figure named name.
func figureCaption(name string) string {
	if c, ok := figureCaptions[name]; ok {
		return c
	}
	if policy, ok := strings.CutPrefix(name, "timeline-"); ok {
		return policy + "'s pipeline over one iteration: a track per (stage, rank), forward light, backward dark (the timelines above draw the same, with zoom)."
	}
	if opt, ok := strings.CutPrefix(name, "sweep-"); ok {
		return "The mean step time against the swept option " + opt + ", the value the policy chooses itself dashed."
	}
	return name
}

// runDoc is a run's page: the table with every column, the CP degrees, the
// timelines with their traces.
func runDoc(r *results.RunPage, files []string) *pages.Doc {
	s := r.Summary
	d := &pages.Doc{Title: s.Scenario, Kind: "run", Lines: RunHeader(s)}
	measured := s.Iterations - s.WarmupIterations
	cols := RunColumns(s, true)
	t := &pages.Table{ID: "run-table", Columns: []pages.Column{{Name: "policy", Meaning: "The DCP policy; the first is the reference of the step ratio.", Text: true}}}
	for _, c := range cols {
		t.Columns = append(t.Columns, pages.Column{Name: c.Name, Meaning: c.Meaning})
	}
	for i := range s.Policies {
		p := &s.Policies[i]
		row := pages.Row{Cells: []pages.Cell{pages.Text(p.Policy)}}
		if p.Error != "" {
			row.Class, row.Title = "failed", p.Error
			row.Cells = append(row.Cells, pages.Cell{Text: FailedWhat(p)})
			for range cols[1:] {
				row.Cells = append(row.Cells, pages.Cell{Text: "-"})
			}
		} else {
			for _, c := range cols {
				text, v := c.Cell(p)
				row.Cells = append(row.Cells, pages.NumText(text, v))
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Note = fmt.Sprintf("Means over %d measured iterations. The shares of the iteration (compute-busy, exposed comm, PP and DP bubble, "+
		"planner stall, and the gradient sync + optimizer rest) are means over (stage, rank) and sum to 100. "+
		"Hover a column's name for its meaning; click it to sort.", measured)
	d.Sections = append(d.Sections, pages.Section{ID: "table", Title: "Policies", Tables: []*pages.Table{t}, Notes: RunNotes(s)})
	d.Sections = append(d.Sections, pages.Section{ID: "degrees", Title: "CP degrees", Tables: []*pages.Table{degreeTable(s)}})
	if len(r.Timelines) > 0 {
		sec := pages.Section{ID: "timelines", Title: "Timelines",
			Text: []string{"One iteration per policy, a track per (stage, rank): rank 0 and stage 0's busiest and idlest ranks unless --trace-ranks chose. " +
				"The gaps are the bubbles: PP bubbles, and the DP wait before the gradient sync. Each trace file opens in the Perfetto UI " +
				"(the button sends it when the page is served, e.g. by dcpsim serve; from file:// drag the file into ui.perfetto.dev)."}}
		count := map[string]int{}
		for _, tl := range r.Timelines {
			count[tl.Policy]++
		}
		for i := range r.Timelines {
			tl := &r.Timelines[i]
			title := tl.Policy
			if count[tl.Policy] > 1 {
				title += fmt.Sprintf(", iteration %d", tl.Iteration)
			}
			trace := results.TraceFile(tl.Policy)
			if !slices.Contains(files, trace) {
				trace = ""
			}
			sec.Timelines = append(sec.Timelines, pages.NewTimeline("timeline-"+strconv.Itoa(i), title, trace, tl))
		}
		d.Sections = append(d.Sections, sec)
	}
	return d
}

// degreeTable is the share of GPU-slots at each CP degree, a column per
// degree any policy used.
func degreeTable(s *results.Summary) *pages.Table {
	var degrees []int
	for _, p := range s.Policies {
		for _, ds := range p.DegreeShares {
			degrees = append(degrees, ds.Degree)
		}
	}
	slices.Sort(degrees)
	degrees = slices.Compact(degrees)
	t := &pages.Table{ID: "degree-table", Columns: []pages.Column{colPolicy},
		Note: "Share of GPU-slots (rank × microbatch) at each CP degree, %; idle: a rank holding nothing in a microbatch."}
	for _, g := range degrees {
		name := strconv.Itoa(g)
		if g == 0 {
			name = "idle"
		}
		t.Columns = append(t.Columns, pages.Column{Name: name, Meaning: "% of GPU-slots at CP degree " + name + "."})
	}
	for _, p := range s.Policies {
		if p.Error != "" {
			continue
		}
		row := pages.Row{Cells: []pages.Cell{pages.Text(p.Policy)}}
		for _, g := range degrees {
			c := pages.Num(0, 1)
			for _, ds := range p.DegreeShares {
				if ds.Degree == g {
					c = pages.Num(100*ds.Share, 1)
				}
			}
			row.Cells = append(row.Cells, c)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// The columns that several pages' tables share.
var (
	colPolicy       = pages.Column{Name: "policy", Meaning: "The DCP policy.", Text: true}
	colGPUs         = pages.Column{Name: "GPUs", Meaning: "The cluster's GPUs."}
	colTokensPerDay = pages.Column{Name: "tokens/day (B)", Meaning: "Σ batch tokens × 86,400 / Σ step seconds, in billions."}
	colStepMean     = pages.Column{Name: "step mean (s)", Meaning: "Mean simulated iteration time over the measured iterations."}
	colPPBubble     = pages.Column{Name: "PP bubble (%)", Meaning: "Pipeline fill, drain and waits for another stage, share of the iteration."}
	colDPBubble     = pages.Column{Name: "DP bubble (%)", Meaning: "Wait before the gradient reduce-scatter, share of the iteration."}
	colPeakMemory   = pages.Column{Name: "peak memory (GiB)", Meaning: "The most any GPU held in a measured iteration, over its HBM."}
	colCost         = pages.Column{Name: "$ per 1T tokens (k$)", Meaning: "GPUs × $ per GPU-hour × hours to train 10^12 tokens, in thousands."}
)

// maxPageRows bounds a table of a page (the CSV beside it holds all).
const maxPageRows = 2000

// sweepDoc is a sweep's page: a row per point and policy.
func sweepDoc(sw *results.SweepPage) *pages.Doc {
	d := &pages.Doc{Kind: "sweep"}
	policies := map[string]bool{}
	for _, pt := range sw.Points {
		if d.Title == "" {
			d.Title = pt.Summary.Scenario
		}
		for _, p := range pt.Summary.Policies {
			policies[p.Policy] = true
		}
	}
	d.Lines = []string{fmt.Sprintf("%d points × %d policies; each point's run is in points/NAME/ (summary.json, iterations.csv).", len(sw.Points), len(policies))}
	t := &pages.Table{ID: "sweep-table", Columns: []pages.Column{
		{Name: "point", Meaning: "The point's folder (points/NAME/) and its summary.json.", Text: true},
		{Name: "axes", Meaning: "The swept keys' values at the point.", Text: true},
		colGPUs,
		{Name: "model", Meaning: "The model.", Text: true},
		{Name: "context", Meaning: "The context length (tokens)."},
		colPolicy, colTokensPerDay, colStepMean,
		{Name: "MFU (%)", Meaning: "Model FLOPs over the GPUs' BF16 peak."},
		colPPBubble, colDPBubble,
		{Name: "planner modelled (ms)", Meaning: "The planner's modelled stall on the critical path."},
		colPeakMemory, colCost,
	}}
	rows := 0
	for _, pt := range sw.Points {
		for i := range pt.Summary.Policies {
			p := &pt.Summary.Policies[i]
			if rows++; rows > maxPageRows {
				continue
			}
			row := pages.Row{Cells: []pages.Cell{
				{Text: pt.Name, Key: pt.Name, Href: "points/" + pt.Name + "/summary.json"},
				pages.Text(pt.Axes.CSVText()),
				pages.Num(float64(pt.Summary.GPUs), 0),
				pages.Text(pt.Summary.Model),
				pages.Num(float64(pt.Summary.ContextTokens), 0),
				pages.Text(p.Policy),
			}}
			if p.Error != "" {
				row.Class, row.Title = "failed", p.Error
				row.Cells = append(row.Cells, pages.Cell{Text: FailedWhat(p)})
				for range 7 {
					row.Cells = append(row.Cells, pages.Cell{Text: "-"})
				}
			} else {
				row.Cells = append(row.Cells, pages.Num(p.TokensPerDay/1e9, 2), pages.Num(p.StepSecondsMean, 3), pages.Num(100*p.MFU, 1),
					pages.Num(100*p.PPBubbleShare, 1), pages.Num(100*p.DPBubbleShare, 1), pages.Num(1e3*p.PlannerModeledSeconds, 1),
					pages.NumText(fmt.Sprintf("%.1f / %.1f", p.PeakMemoryMaxBytes/(1<<30), p.HBMBytes/(1<<30)), p.PeakMemoryMaxBytes/(1<<30)),
					pages.Num(p.DollarsPer1TTokens/1e3, 1))
			}
			t.Rows = append(t.Rows, row)
		}
	}
	if rows > maxPageRows {
		t.Note = fmt.Sprintf("The first %d of %d rows; sweep.csv holds them all.", maxPageRows, rows)
	}
	d.Sections = append(d.Sections, pages.Section{ID: "points", Title: "Points", Tables: []*pages.Table{t}})
	return d
}

// compareDoc is a comparison's page: what differs, and the change per
// policy (and point) with its interval.
func compareDoc(c *results.Comparison) *pages.Doc {
	d := &pages.Doc{Title: c.A.Path + " → " + c.B.Path, Kind: "compare"}
	for _, side := range []struct {
		name string
		f    results.ComparedFolder
	}{{"A", c.A}, {"B", c.B}} {
		l := fmt.Sprintf("%s: %s, %s, seed %d", side.name, side.f.Path, side.f.Scenario, side.f.Seed)
		if side.f.Revision != "" {
			l += ", dcpsim " + side.f.Revision
		}
		if side.f.Points > 0 {
			l += fmt.Sprintf(", %d points", side.f.Points)
		}
		d.Lines = append(d.Lines, l)
	}
	t := &pages.Table{ID: "compare-table", Columns: []pages.Column{
		{Name: "point", Meaning: "The sweep point (its swept values); empty for two runs.", Text: true},
		colPolicy,
		{Name: "status", Meaning: "Compared, or why not (only in one folder, failed on a side).", Text: true},
		{Name: "iterations A / B", Meaning: "The measured (non-warm-up) iterations of each side's iterations.csv."},
		{Name: "step mean A (s)", Meaning: "A's mean step time."},
		{Name: "step mean B (s)", Meaning: "B's mean step time."},
		{Name: "change (%)", Meaning: "(mean B − mean A) / mean A: positive is slower."},
		{Name: "95% interval (%)", Meaning: "The change's 95% confidence interval, in % of mean A (the method below)."},
		{Name: "test", Meaning: "paired: both sides simulated the same batches (batches_sha256), the paired t interval on the per-iteration differences; " +
			"welch: the batches differ, Welch's t interval on the difference of the means.", Text: true},
		{Name: "significant", Meaning: "The interval excludes 0.", Text: true},
		{Name: "tokens/day A (B)", Meaning: "A's tokens per day, in billions."},
		{Name: "tokens/day B (B)", Meaning: "B's tokens per day, in billions."},
		{Name: "note", Meaning: "Why a row was not compared, or has no interval.", Text: true},
	}, Note: c.Method}
	for i := range c.Rows {
		r := &c.Rows[i]
		row := pages.Row{Cells: []pages.Cell{pages.Text(r.PointLabel()), pages.Text(r.Policy), pages.Text(r.Status),
			pages.NumText(fmt.Sprintf("%d / %d", r.IterationsA, r.IterationsB), float64(r.IterationsA))}}
		compared := r.Status == results.CompareCompared
		if compared {
			row.Cells = append(row.Cells, pages.Num(r.StepSecondsMeanA, 3), pages.Num(r.StepSecondsMeanB, 3), pages.Num(r.ChangePct, 2))
			if r.CIDefined {
				row.Cells = append(row.Cells, pages.NumText(r.FormatCI(), r.CILowPct))
			} else {
				row.Cells = append(row.Cells, pages.Cell{Text: r.FormatCI()})
			}
			sig := "no"
			if r.Significant {
				sig = "yes"
				row.Class, row.Title = "significant", "changed significantly at 95%: the interval excludes 0"
			}
			row.Cells = append(row.Cells, pages.Text(r.Test), pages.Text(sig))
		} else {
			row.Class = "failed"
			for range 6 {
				row.Cells = append(row.Cells, pages.Cell{Text: "-"})
			}
		}
		row.Cells = append(row.Cells, pages.Num(r.TokensPerDayA/1e9, 2), pages.Num(r.TokensPerDayB/1e9, 2), pages.Text(r.Note))
		t.Rows = append(t.Rows, row)
	}
	d.Sections = append(d.Sections, pages.Section{ID: "changes", Title: "Changes, B over A", Tables: []*pages.Table{t},
		Text: []string{"A highlighted row changed significantly at 95%."}})
	if len(c.Differences) > 0 {
		dt := &pages.Table{ID: "differences", Columns: []pages.Column{{Name: "key", Meaning: "What the folders record differently.", Text: true},
			{Name: "A", Meaning: "A's value.", Text: true}, {Name: "B", Meaning: "B's value.", Text: true}}}
		for _, df := range c.Differences {
			dt.Rows = append(dt.Rows, pages.Row{Cells: []pages.Cell{pages.Text(df.Key), pages.Text(df.A), pages.Text(df.B)}})
		}
		d.Sections = append(d.Sections, pages.Section{ID: "differences", Title: "What differs", Tables: []*pages.Table{dt}})
	}
	return d
}

// validationDoc is a validation's page: every run predicted beside its
// published measurement.
func validationDoc(rs []results.ValidationResult) *pages.Doc {
	st := results.SummarizeValidation(rs)
	d := &pages.Doc{Title: "validation", Kind: "validation", Lines: []string{fmt.Sprintf(
		"%d published runs: mean |error| %.1f%%, the largest %.1f%% (%s).", st.Rows, 100*st.MeanAbsError, 100*st.MaxAbsError, st.MaxName)}}
	t := &pages.Table{ID: "validation-table", Columns: []pages.Column{
		{Name: "run", Meaning: "The published run.", Text: true},
		{Name: "source", Meaning: "Its source family.", Text: true},
		{Name: "GPU", Meaning: "Its GPU kind.", Text: true},
		{Name: "kind", Meaning: "dense or moe, +cp (context parallel or ≥ 32K), +fp8.", Text: true},
		{Name: "published", Meaning: "The measurement as the source gives it.", Text: true},
		{Name: "measured (s)", Meaning: "The published iteration time (converted from the measurement)."},
		{Name: "predicted (s)", Meaning: "The simulated iteration time."},
		{Name: "error (%)", Meaning: "predicted / measured − 1."},
		{Name: "layout", Meaning: "The run's layout.", Text: true},
	}}
	for _, r := range rs {
		t.Rows = append(t.Rows, pages.Row{Title: strings.Join(r.Assumed, "; "), Cells: []pages.Cell{
			pages.Text(r.Name), pages.Text(r.Source), pages.Text(r.GPU), pages.Text(r.Kind),
			pages.NumText(strconv.FormatFloat(r.MeasuredValue, 'g', 6, 64)+" "+r.MeasuredUnit, r.MeasuredValue),
			pages.Num(r.MeasuredSeconds, 3), pages.Num(r.PredictedSeconds, 3), pages.Num(100*r.Error, 1), pages.Text(r.Layout)}})
	}
	d.Sections = append(d.Sections, pages.Section{ID: "runs", Title: "Predicted against measured", Tables: []*pages.Table{t},
		Text: []string{"Hover a row for what its source family assumed where the run leaves it unstated."}})
	return d
}

// WriteIndex writes dir's index.html: every results folder under dir
// (pages.Scan, through an os.Root so that no link leads outside dir),
// linked to its page, and REPORT.md when dir has one. The page's title is
// dir's base name.
func WriteIndex(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	d, err := IndexDoc(root.FS(), filepath.Base(filepath.Clean(dir)))
	if err != nil {
		return err
	}
	return safeio.WriteFileAtomic(filepath.Join(dir, pages.File), func(w io.Writer) error { return pages.Write(w, d) })
}

// IndexDoc is the page listing the results folders of fsys, titled title,
// with a link to REPORT.md when fsys holds one.
func IndexDoc(fsys fs.FS, title string) (*pages.Doc, error) {
	folders, truncated, err := pages.Scan(fsys)
	if err != nil {
		return nil, err
	}
	var extra []pages.Link
	if fi, err := fs.Stat(fsys, "REPORT.md"); err == nil && fi.Mode().IsRegular() {
		extra = append(extra, pages.Link{Text: "REPORT.md", Href: "REPORT.md", Note: "our numbers beside the papers'"})
	}
	return pages.IndexDoc(title, folders, truncated, extra), nil
}
