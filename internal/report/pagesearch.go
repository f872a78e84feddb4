package report

// A search's page: the ranking with its intervals and ties, the Pareto
// chart with the token target's line, the best layout per policy at every
// cluster size searched, and the answer to the target.

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/internal/report/pages"
	"github.com/dcpsim/dcpsim/results"
)

// Bounds on what a search's page holds (search.csv holds every candidate).
const (
	maxSearchRanked = 100
	maxSearchPoints = 3000
)

// searchDoc is a search's page.
func searchDoc(s *results.SearchPage) *pages.Doc {
	d := &pages.Doc{Kind: "search"}
	rungs := make([]string, len(s.Rungs))
	for i, n := range s.Rungs {
		rungs[i] = fmt.Sprint(n)
	}
	d.Lines = append(d.Lines, fmt.Sprintf("%s; %d candidates; halving rungs of %s iterations (%d warm-up), seed %d; $%g per GPU-hour.",
		s.Model, len(s.Candidates), strings.Join(rungs, ", "), s.WarmupIterations, s.Seed, s.DollarsPerGPUHour))
	var counts []string
	for _, st := range results.SearchStatuses {
		if c := s.Counts[st]; c > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", st, c))
		}
	}
	if len(counts) > 0 {
		d.Lines = append(d.Lines, "Candidates by status: "+strings.Join(counts, ", ")+" (search.csv says why for each).")
	}
	ranked := results.RankedSearchRows(s.Candidates)
	if len(ranked) == 0 {
		d.Sections = append(d.Sections, pages.Section{ID: "ranked", Title: "Ranking",
			Text: []string{"No candidate ran on every iteration: search.csv says why for each."}})
		return d
	}
	if s.Target != nil && s.Target.Days > 0 {
		d.Sections = append(d.Sections, targetSection(ranked, s.Target, s.DollarsPerGPUHour))
	}
	d.Sections = append(d.Sections,
		pages.Section{ID: "ranked", Title: "Ranking", Tables: []*pages.Table{rankedTable(ranked, s.Iterations-s.WarmupIterations)}},
		pages.Section{ID: "pareto", Title: "Pareto front", Charts: []*pages.Chart{searchChart(s.Candidates, s.Target)}},
		pages.Section{ID: "best", Title: "Best layout per policy", Tables: []*pages.Table{bestTable(ranked)}})
	return d
}

// searchColumns are the columns a candidate's row shows after its rank.
var searchColumns = []pages.Column{
	colTokensPerDay,
	{Name: "95% interval (B)", Meaning: "Tokens per day at the ends of the mean step's 95% Student-t interval over the measured iterations."},
	colStepMean,
	{Name: "± 95% (s)", Meaning: "Half-width of the mean step's 95% Student-t interval."},
	colCost, colPeakMemory,
	{Name: "HBM free (%)", Meaning: "The share of the GPU's HBM its peak leaves free (dcpsim search --memory-headroom leaves out those below a share)."},
	colPPBubble, colDPBubble, colPolicy, colGPUs,
	{Name: "layout", Meaning: "tp, pp (uneven stages' layers), vpp, ep, the budget B, recompute, FP8.", Text: true},
}

// searchCells are a candidate's cells under searchColumns.
func searchCells(r *results.SearchRow) []pages.Cell {
	lo, hi := r.TokensPerDayInterval()
	interval := fmt.Sprintf("%.2f – %.2f", lo/1e9, hi/1e9)
	if math.IsInf(hi, 1) {
		interval = fmt.Sprintf("%.2f – ∞", lo/1e9)
	}
	return []pages.Cell{
		pages.Num(r.TokensPerDay/1e9, 2), pages.NumText(interval, lo/1e9),
		pages.Num(r.StepSecondsMean, 3), pages.Num(r.StepSecondsCI95, 3), pages.Num(r.DollarsPer1TTokens/1e3, 1),
		pages.NumText(fmt.Sprintf("%.1f / %.1f", r.PeakMemoryBytes/(1<<30), r.HBMBytes/(1<<30)), r.PeakMemoryBytes/(1<<30)),
		pages.Num(100*r.MemoryHeadroom(), 1), pages.Num(100*r.PPBubbleShare, 1), pages.Num(100*r.DPBubbleShare, 1),
		pages.Text(r.Policy), pages.NumText(fmt.Sprintf("%d×%s", r.GPUs, r.GPU), float64(r.GPUs)), pages.Text(r.Layout()),
	}
}

// rankedTable is the best maxSearchRanked candidates, the leader and the
// candidates that tie it at 95% marked.
func rankedTable(ranked []results.SearchRow, measured int) *pages.Table {
	t := &pages.Table{ID: "ranked-table", Columns: append([]pages.Column{{Name: "rank", Meaning: "By tokens per day; 1 is the best."},
		{Name: "vs #1", Meaning: "leader: rank 1; tie: its 95% interval of tokens per day overlaps the leader's, so the simulated iterations cannot tell them apart.", Text: true}},
		searchColumns...)}
	leader := ranked[0]
	ties := 0
	for i := range ranked {
		r := &ranked[i]
		vs := ""
		var class, title string
		switch {
		case i == 0:
			vs, class, title = "leader", "leader", "the leader"
		case r.TiesWith(leader):
			vs, class, title = "tie", "tie", "ties with the leader at 95%: their tokens-per-day intervals overlap"
			ties++
		}
		row := pages.Row{Class: class, Title: title, Cells: append([]pages.Cell{pages.Num(float64(r.Rank), 0), pages.Text(vs)}, searchCells(r)...)}
		if i < maxSearchRanked {
			t.Rows = append(t.Rows, row)
		}
	}
	t.Note = fmt.Sprintf("The %d best of %d ranked candidates (search.csv holds all); %d tie the leader at 95%% (highlighted: their tokens-per-day "+
		"intervals overlap the leader's, over %d measured iterations), so the simulated iterations cannot tell them from it.",
		min(len(ranked), maxSearchRanked), len(ranked), ties, measured)
	return t
}

// bestTable is each policy's best candidate at every cluster size.
func bestTable(ranked []results.SearchRow) *pages.Table {
	t := &pages.Table{ID: "best-table", Columns: searchColumns}
	for _, g := range searchSizes(ranked) {
		for _, r := range results.BestSearchRows(ranked, g) {
			t.Rows = append(t.Rows, pages.Row{Cells: searchCells(&r)})
		}
	}
	t.Note = "Each policy's best candidate by tokens per day at each cluster size searched."
	return t
}

// searchSizes are the cluster sizes of rows, ascending.
func searchSizes(rows []results.SearchRow) []int {
	var sizes []int
	for _, r := range rows {
		sizes = append(sizes, r.GPUs)
	}
	slices.Sort(sizes)
	return slices.Compact(sizes)
}

// targetSection answers a token target: at each cluster size its best
// candidate's days and cost, the fewest GPUs that make it marked.
func targetSection(ranked []results.SearchRow, t *results.SearchTarget, dollars float64) pages.Section {
	need := t.TokensPerDay()
	sec := pages.Section{ID: "answer", Title: "The answer",
		Text: []string{fmt.Sprintf("%.3g tokens in %.1f days needs %.2f B tokens per day (--tokens, --days); the Pareto chart draws it as a line.",
			t.Tokens, t.Days, need/1e9)}}
	tab := &pages.Table{ID: "answer-table", Columns: []pages.Column{
		{Name: "GPUs", Meaning: "The cluster size searched."},
		{Name: "makes it", Meaning: "Its best candidate reaches the tokens per day the target needs.", Text: true},
		{Name: "tokens/day (B)", Meaning: "Its best candidate's tokens per day, in billions."},
		{Name: "days", Meaning: "The days its best candidate takes to train the target's tokens."},
		{Name: "cost (k$)", Meaning: "days × 24 × GPUs × $ per GPU-hour, in thousands."},
		{Name: "policy", Meaning: "The best candidate's policy.", Text: true},
		{Name: "layout", Meaning: "The best candidate's layout.", Text: true},
	}}
	sizes, answer := t.Answer(ranked, dollars)
	for i, a := range sizes {
		r := &a.Best
		makes := "no"
		if a.MakesIt {
			makes = "yes"
		}
		row := pages.Row{Cells: []pages.Cell{pages.Num(float64(r.GPUs), 0), pages.Text(makes),
			pages.Num(r.TokensPerDay/1e9, 2), pages.Num(a.Days, 1), pages.Num(a.Dollars/1e3, 1),
			pages.Text(r.Policy), pages.Text(r.Layout())}}
		if i == answer {
			row.Class, row.Title = "answer", "the fewest GPUs searched that make it"
			sec.Text = append(sec.Text, fmt.Sprintf("The fewest GPUs searched that make it: %d (%s, %s).", r.GPUs, r.Policy, r.Layout()))
		}
		tab.Rows = append(tab.Rows, row)
	}
	if answer < 0 {
		sec.Text = append(sec.Text, "No cluster size searched makes it: search larger clusters.")
	}
	sec.Tables = []*pages.Table{tab}
	return sec
}

// searchChart is the Pareto chart: with two cluster sizes or more,
// tokens per day against GPUs (log2), the front the best at each size;
// with one, against peak memory, the front of most tokens per day for the
// least memory. The target's tokens per day is a rule across.
func searchChart(rows []results.SearchRow, target *results.SearchTarget) *pages.Chart {
	ok := okSearchRows(rows)
	colors := searchPolicyColors(ok)
	slices.SortStableFunc(ok, func(a, b results.SearchRow) int { return cmp.Compare(a.Rank, b.Rank) })
	shown := ok
	if len(shown) > maxSearchPoints {
		shown = shown[:maxSearchPoints]
	}
	bySize := len(searchSizes(ok)) > 1
	c := &pages.Chart{ID: "pareto-chart", Title: "Tokens per day of every ranked candidate", Data: pages.ChartData{YLabel: "tokens/day (B)"}}
	x := func(r *results.SearchRow) float64 { return r.PeakMemoryBytes / (1 << 30) }
	if bySize {
		c.Data.XLabel, c.Data.XLog = "GPUs", true
		x = func(r *results.SearchRow) float64 { return float64(r.GPUs) }
		c.Caption = "A point per candidate (hover for its layout), a colour per policy; the dashed line is the Pareto front, the best at each cluster size."
	} else {
		c.Data.XLabel = "peak memory per GPU (GiB)"
		c.Caption = "A point per candidate (hover for its layout), a colour per policy; the dashed line is the Pareto front: the most tokens per day for the least memory."
	}
	if len(shown) < len(ok) {
		c.Caption += fmt.Sprintf(" The %d best of %d candidates.", len(shown), len(ok))
	}
	series := map[string]int{}
	for i := range shown {
		r := &shown[i]
		si, seen := series[r.Policy]
		if !seen {
			si = len(c.Data.Series)
			series[r.Policy] = si
			c.Data.Series = append(c.Data.Series, pages.Series{Name: r.Policy, Color: cssColor(policyColor(colors[r.Policy]))})
		}
		c.Data.Series[si].Points = append(c.Data.Series[si].Points, pages.Point{X: x(r), Y: r.TokensPerDay / 1e9,
			Label: fmt.Sprintf("rank %d: %s on %d×%s\n%s\n%.2f B tokens/day, %.3f s/step, peak %.1f GiB", r.Rank, r.Policy, r.GPUs, r.GPU,
				r.Layout(), r.TokensPerDay/1e9, r.StepSecondsMean, r.PeakMemoryBytes/(1<<30))})
	}
	slices.SortFunc(c.Data.Series, func(a, b pages.Series) int { return cmp.Compare(colors[a.Name], colors[b.Name]) })
	front := pages.Line{Name: "Pareto front", Color: "#000000", Dashed: true}
	if bySize {
		for _, r := range results.BestPerSize(ok) {
			front.Points = append(front.Points, pages.Point{X: x(&r), Y: r.TokensPerDay / 1e9})
		}
	} else {
		byMem := slices.Clone(ok)
		slices.SortStableFunc(byMem, func(a, b results.SearchRow) int {
			return cmp.Or(cmp.Compare(a.PeakMemoryBytes, b.PeakMemoryBytes), cmp.Compare(b.TokensPerDay, a.TokensPerDay))
		})
		best := 0.0
		for i := range byMem {
			if r := &byMem[i]; r.TokensPerDay > best {
				best = r.TokensPerDay
				front.Points = append(front.Points, pages.Point{X: x(r), Y: r.TokensPerDay / 1e9})
			}
		}
	}
	c.Data.Lines = append(c.Data.Lines, front)
	if target != nil && target.Days > 0 {
		c.Data.Rules = append(c.Data.Rules, pages.Rule{Y: target.TokensPerDay() / 1e9, Color: "#d55e00",
			Label: fmt.Sprintf("%.3g tokens in %.1f days", target.Tokens, target.Days)})
	}
	return c
}

// cssColor is c as a CSS colour, #rrggbb.
func cssColor(c color.Color) string {
	r, g, b, _ := c.RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
