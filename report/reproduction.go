package report

// The reproduction report (results/REPORT.md): our numbers, read from the
// results folders that make figures writes, beside the HyDra paper's published
// ones (paper.go).

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/dcpsim/dcpsim/internal/safeio"
	"github.com/dcpsim/dcpsim/sched"
)

// reproductionScenarios are the run folders the report reads, in order, and
// the paper setting each is compared with.
var reproductionScenarios = [][2]string{
	{"testbed-32k", "testbed-32k"},
	{"testbed-256k", "testbed-256k"},
	{"production-256k", "production-256k"},
	{"production-256k-node-ulysses", "production-256k"},
	{"hy3-8k", "hy3-8k"},
}

// sweepJSON is the part of a sweep's sweep.json the report reads.
type sweepJSON struct {
	Points []SweepPoint `json:"points"`
}

// WriteReproduction writes the reproduction report (REPORT.md text) for the
// results folder resultsDir: every run scenario the HyDra paper has numbers
// for (resultsDir/NAME/summary.json), the weak-scaling sweep and the
// production-256k cap sweep (resultsDir/NAME/sweep.json), our numbers beside
// the paper's, each labelled with its section. A results folder that is
// missing or unreadable is named in the text, not returned as an error; the
// error is w's. The report is composed in memory and written to w at once.
func WriteReproduction(w io.Writer, resultsDir string) error {
	var b strings.Builder
	writeReproduction(&b, resultsDir)
	_, err := io.WriteString(w, b.String())
	return err
}

// readJSON decodes the JSON file at path (at most safeio.MaxResultBytes)
// into v.
func readJSON(path string, v any) error {
	b, err := safeio.ReadFile(path, safeio.MaxResultBytes)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// policyOf returns the named policy's summary, or nil.
func policyOf(s *Summary, name string) *PolicySummary {
	for i := range s.Policies {
		if s.Policies[i].Policy == name && s.Policies[i].Error == "" {
			return &s.Policies[i]
		}
	}
	return nil
}

// ours returns our value of a paper quantity for one policy of a summary.
func ours(s *Summary, policy, key string) (float64, bool) {
	p := policyOf(s, policy)
	if p == nil {
		return 0, false
	}
	if rest, ok := strings.CutPrefix(key, "over_"); ok {
		other, nostall := strings.CutSuffix(rest, "_nostall")
		o := policyOf(s, other)
		if o == nil {
			return 0, false
		}
		a, b := throughput(p, nostall), throughput(o, nostall)
		if a == 0 || b == 0 {
			return 0, false
		}
		return a / b, true
	}
	switch key {
	case "mfu":
		return 100 * p.MFU, true
	case "step":
		return p.StepSecondsMean, true
	case "tokens_day":
		return p.TokensPerDay / 1e9, true
	case "pp":
		return 100 * p.PPBubbleRank0Share, true
	case "dp":
		return 100 * p.DPBubbleRank0Share, true
	case "pp_mean":
		return 100 * p.PPBubbleShare, true
	case "dp_mean":
		return 100 * p.DPBubbleShare, true
	case "busy":
		return 100 * p.ComputeShare, true
	case "cv":
		return 100 * p.MBTimeCV, true
	case "planner":
		return p.PlannerModeledSeconds, true
	case "dollars":
		return p.DollarsPer1TTokens / 1e3, true
	}
	return 0, false
}

// policyNames returns the summary's policies that ran, HyDra first, the
// others in the summary's order.
func policyNames(s *Summary) []string {
	names := []string{"hydra"}
	for _, p := range s.Policies {
		if p.Policy != "hydra" && p.Error == "" {
			names = append(names, p.Policy)
		}
	}
	return names
}

// writeHeader writes a table's header: the lead columns, then one column
// per policy, by its label.
func writeHeader(w *strings.Builder, lead, pols []string) {
	fmt.Fprint(w, "| ", strings.Join(lead, " | "), " |")
	for _, p := range pols {
		fmt.Fprintf(w, " %s |", label(p))
	}
	fmt.Fprint(w, "\n|", strings.Repeat("---|", len(lead)+len(pols)), "\n")
}

// overQuantities are the rows of HyDra's throughput over every other policy
// of pols (pols[0] is HyDra), with the planner stall on the critical path,
// then off it.
func overQuantities(pols []string) [][3]string {
	var qs [][3]string
	for _, nostall := range []string{"", "_nostall"} {
		for _, p := range pols[1:] {
			how := "HyDra's throughput over " + label(p)
			if nostall != "" {
				how += ", planner stall off the critical path"
			}
			qs = append(qs, [3]string{"over_" + p + nostall, how, "×"})
		}
	}
	return qs
}

// orderings returns a line comparing the policies' order by throughput
// (stall off the critical path, as the paper's simulator runs) with the
// order the paper's ratios give (paper: HyDra's over_<policy> values), or ""
// when the paper orders none of them.
func orderings(s *Summary, paper map[string]paperValue) string {
	o, ok := scenarioOrder(s, paper)
	if !ok || len(o.policies) < 2 {
		return ""
	}
	return fmt.Sprintf("Throughput order, planner stall off the critical path: here %s; paper %s (%d of the pairs the paper orders reversed here).",
		o.text(o.here), o.text(o.paper), o.reversed())
}

// order is a set of policies rated twice, each rating HyDra's lead over the
// policy (1 for HyDra): here (ours) and by the paper.
type order struct {
	policies    []string
	here, paper func(p string) float64
}

// scenarioOrder is the order of HyDra and the policies of s the paper rates
// (paper: HyDra's over_<policy> values), ours by throughput with the stall
// off; ok is false without HyDra.
func scenarioOrder(s *Summary, paper map[string]paperValue) (order, bool) {
	h := policyOf(s, "hydra")
	if h == nil {
		return order{}, false
	}
	var ps []string
	for _, p := range policyNames(s) {
		if _, ok := paper["over_"+p]; ok || p == "hydra" {
			ps = append(ps, p)
		}
	}
	return order{policies: ps,
		here: func(p string) float64 { return throughput(h, true) / throughput(policyOf(s, p), true) },
		paper: func(p string) float64 {
			if p == "hydra" {
				return 1
			}
			return paper["over_"+p].mid()
		}}, true
}

// text lists the policies best first by rating (HyDra's lead over each,
// increasing), equal ratings joined by " ≈ ".
func (o order) text(rating func(string) float64) string {
	ps := slices.Clone(o.policies)
	slices.SortStableFunc(ps, func(a, b string) int { return cmp.Compare(rating(a), rating(b)) })
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			if rating(p) == rating(ps[i-1]) {
				b.WriteString(" ≈ ")
			} else {
				b.WriteString(" > ")
			}
		}
		b.WriteString(label(p))
	}
	return b.String()
}

// reversed counts the pairs whose order the paper fixes (different ratings)
// and ours reverses.
func (o order) reversed() int {
	n := 0
	for i, a := range o.policies {
		for _, b := range o.policies[i+1:] {
			pa, pb := o.paper(a), o.paper(b)
			if pa != pb && (pa < pb) != (o.here(a) < o.here(b)) {
				n++
			}
		}
	}
	return n
}

// throughput is a policy's trained tokens per day, with the planner's
// modelled stall on the critical path or (nostall) off it; 0 when unknown.
// HyDra's lead over a policy is the ratio of their throughputs, the paper's
// measure: a policy that trains fewer tokens per iteration (WLB-LLM delays
// outliers) is not credited for its shorter steps.
func throughput(p *PolicySummary, nostall bool) float64 {
	if !nostall {
		return p.TokensPerDay
	}
	if p.StepSecondsNoStall <= 0 {
		return 0
	}
	return p.TokensPerDay * p.StepSecondsMean / p.StepSecondsNoStall
}

// vsPaper formats "ours / paper (ours÷paper)" for one cell.
func vsPaper(our float64, ok bool, p paperValue, has bool) string {
	o := "-"
	if ok {
		o = fmt.Sprintf("%.3g", our)
	}
	if !has {
		return o + " / -"
	}
	cell := o + " / " + p.String()
	switch {
	case ok && p.V != 0:
		cell += fmt.Sprintf(" (×%.2f)", our/p.V)
	case ok && p.Hi != 0 && p.gap(our) == 0:
		cell += " (in range)"
	case ok && p.Hi != 0:
		cell += fmt.Sprintf(" (%+.0f%% outside)", 100*p.gap(our))
	}
	return cell
}

// writeReproduction writes the report for the results folder dir into w.
func writeReproduction(w *strings.Builder, dir string) {
	fmt.Fprintln(w, "# dcpsim beside the HyDra paper")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Generated by `make figures` (`dcpsim run` on each scenario, `dcpsim sweep` on the sweeps, then `dcpsim report`);")
	fmt.Fprintln(w, "do not edit by hand. \"Here\" is dcpsim; \"paper\" is a number the HyDra paper (shared/papers/hydra-paper.txt)")
	fmt.Fprintln(w, "published, measured on hardware (§6.2-6.3) or with the authors' own simulator (§6.4), labelled with its section.")
	fmt.Fprintln(w, "Cells read `here / paper (×here÷paper)`. Nothing in dcpsim is fitted to these numbers: the costs come from")
	fmt.Fprintln(w, "datasheets, published kernel tables (calib/profiles) and measured CPython costs (calib/planner.go), the model is a public stand-in for")
	fmt.Fprintln(w, "the paper's unnamed one, and the lengths are synthetic with the paper's stated shape.")
	fmt.Fprintln(w)

	// Headline ratios.
	fmt.Fprintln(w, "## Headline ratios")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| scenario | HyDra over Mcore DCP, here / paper | HyDra over static CP, here / paper | over Mcore, stall off the path | over static, stall off the path | paper section |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	sums := map[string]*Summary{}
	var missing []string
	for _, rs := range reproductionScenarios {
		var s Summary
		if err := readJSON(filepath.Join(dir, rs[0], "summary.json"), &s); err != nil {
			missing = append(missing, rs[0])
			continue
		}
		sums[rs[0]] = &s
		pr := paperRuns[rs[1]]
		hv := pr.Values["hydra"]
		m, okm := ours(&s, "hydra", "over_mcore")
		st, oks := ours(&s, "hydra", "over_static")
		mn, okmn := ours(&s, "hydra", "over_mcore_nostall")
		sn, oksn := ours(&s, "hydra", "over_static_nostall")
		pm, hasm := hv["over_mcore"]
		ps, hass := hv["over_static"]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", rs[0], vsPaper(m, okm, pm, hasm), vsPaper(st, oks, ps, hass),
			vsPaper(mn, okmn, pm, hasm), vsPaper(sn, oksn, ps, hass), pr.Section)
	}
	fmt.Fprintln(w)
	if len(missing) > 0 {
		fmt.Fprintf(w, "Missing results in %s (run `make figures`): %s.\n\n", dir, strings.Join(missing, ", "))
	}

	for _, rs := range reproductionScenarios {
		s := sums[rs[0]]
		if s == nil {
			continue
		}
		pr := paperRuns[rs[1]]
		fmt.Fprintf(w, "## %s\n\n", rs[0])
		fmt.Fprintf(w, "Here: %d×%s, %s, tp%d pp%d vpp%d ep%d, B = %d, %d measured iterations; planner stall %s; inner Ulysses across nodes: %v. ",
			s.GPUs, s.GPU, s.Model, s.TP, s.PP, s.VPP, s.EP, s.BudgetTokens, s.Iterations-s.WarmupIterations, s.PlannerStall, s.UlyssesAcrossNodes)
		fmt.Fprintf(w, "Paper (%s): %s.\n\n", pr.Section, pr.Setting)
		pols := policyNames(s)
		writeHeader(w, []string{"quantity"}, pols)
		for _, q := range append(overQuantities(pols), paperQuantities...) {
			row := fmt.Sprintf("| %s (%s) |", q[1], q[2])
			any := false
			for _, p := range pols {
				if strings.HasPrefix(q[0], "over_") && p != "hydra" {
					row += " |"
					continue
				}
				v, ok := ours(s, p, q[0])
				pv, has := pr.Values[p][strings.TrimSuffix(q[0], "_nostall")]
				any = any || ok || has
				row += " " + vsPaper(v, ok, pv, has) + " |"
			}
			if any {
				fmt.Fprintln(w, row)
			}
		}
		fmt.Fprintln(w)
		if order := orderings(s, pr.Values["hydra"]); order != "" {
			fmt.Fprintln(w, order)
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "Share of GPU-slots by CP degree (%%), here:")
		for _, p := range pols {
			if ps := policyOf(s, p); ps != nil {
				fmt.Fprintf(w, " %s: %s;", p, sched.FormatDegreeShares(ps.DegreeShares, "%s %.0f", ", "))
			}
		}
		fmt.Fprintf(w, "\n\n![throughput](%s/throughput.png) ![breakdown](%s/breakdown.png)\n\n", rs[0], rs[0])
		fmt.Fprintf(w, "![HyDra timeline](%s/timeline-hydra.png)\n![Mcore timeline](%s/timeline-mcore.png)\n\n", rs[0], rs[0])
	}

	// Weak scaling.
	fmt.Fprintf(w, "## weak-scaling (%s)\n", paperScalingSection)
	fmt.Fprintln(w)
	var sw sweepJSON
	if err := readJSON(filepath.Join(dir, "weak-scaling", "sweep.json"), &sw); err != nil {
		fmt.Fprintf(w, "Missing: %s (run `make figures`).\n", filepath.Join(dir, "weak-scaling", "sweep.json"))
		fmt.Fprintln(w)
	} else {
		writeScaling(w, sw.Points)
		fmt.Fprintf(w, "\nPaper, %s: planner time at 16K GPUs, Mcore DCP %.2f s, HyDra %.2f s.\n\n", paperPlannerSection, paperPlanner["mcore"], paperPlanner["hydra"])
		fmt.Fprintln(w, "![weak scaling](weak-scaling/sweep-throughput.png) ![planner](weak-scaling/sweep-planner.png)")
		fmt.Fprintln(w)
	}

	// Cap sweep.
	fmt.Fprintln(w, "## HyDra's cap C on production-256k")
	fmt.Fprintln(w)
	var cs sweepJSON
	if err := readJSON(filepath.Join(dir, "production-256k-cap", "sweep.json"), &cs); err != nil {
		fmt.Fprintf(w, "Missing: %s (run `make figures`).\n", filepath.Join(dir, "production-256k-cap", "sweep.json"))
		fmt.Fprintln(w)
	} else {
		fmt.Fprintln(w, "| cap C | HyDra step (s) | exposed comm (%) | PP bubble (%) | MBs |")
		fmt.Fprintln(w, "|---|---|---|---|---|")
		best, bestC, cstar := math.Inf(1), "", 0.0
		for _, p := range cs.Points {
			if ps := policyOf(&p.Summary, "hydra"); ps != nil {
				c := axisValue(&p, "hydra.cap")
				fmt.Fprintf(w, "| %s | %.2f | %.1f | %.1f | %.1f |\n", c, ps.StepSecondsMean, 100*ps.ExposedCommShare, 100*ps.PPBubbleShare, ps.Microbatches)
				if ps.StepSecondsMean < best {
					best, bestC = ps.StepSecondsMean, c
				}
				cstar = ps.ChosenOptions["cap"]
			}
		}
		fmt.Fprintf(w, "\nThe closed form picks C* = %.0f on the first measured batch; the cost model's best cap is %s (%.2f s).\n\n", cstar, bestC, best)
		fmt.Fprintln(w, "![cap sweep](production-256k-cap/sweep-hydra-cap.png)")
		fmt.Fprintln(w)
	}
	writeTargets(w, sums, dir)
	writeHetero(w, dir) // hetero.go
	w.WriteString(fidelityProse)
	w.WriteString(reproductionProse)
	fmt.Fprintln(w)
	writeValidation(w, dir) // validationreport.go
}

// writeScaling writes the weak-scaling tables: every point's steps and
// HyDra's throughput over each policy, the modelled planner stalls, and per
// model HyDra's throughput over each policy averaged over the points beside
// the paper's.
func writeScaling(w *strings.Builder, points []SweepPoint) {
	if len(points) == 0 {
		fmt.Fprintln(w, "No points.")
		return
	}
	var pols []string
	for _, p := range points {
		for _, q := range policyNames(&p.Summary) {
			if !slices.Contains(pols, q) {
				pols = append(pols, q)
			}
		}
	}
	fmt.Fprintln(w, "Step time (s), then HyDra's throughput over the policy (×) with the planner stall on the critical path / off it:")
	fmt.Fprintln(w)
	writeHeader(w, []string{"model", "GPUs"}, pols)
	for _, pt := range points {
		s := &pt.Summary
		fmt.Fprintf(w, "| %s | %d |", pt.Model, pt.GPUs)
		for _, p := range pols {
			ps := policyOf(s, p)
			if ps == nil {
				fmt.Fprint(w, " - |")
				continue
			}
			fmt.Fprintf(w, " %.1f", ps.StepSecondsMean)
			if p != "hydra" {
				on, okOn := ours(s, "hydra", "over_"+p)
				off, okOff := ours(s, "hydra", "over_"+p+"_nostall")
				fmt.Fprintf(w, " (%s / %s)", fmtOK(on, okOn), fmtOK(off, okOff))
			}
			fmt.Fprint(w, " |")
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Modelled planner stall per iteration (s):")
	fmt.Fprintln(w)
	writeHeader(w, []string{"model", "GPUs"}, pols)
	for _, pt := range points {
		fmt.Fprintf(w, "| %s | %d |", pt.Model, pt.GPUs)
		for _, p := range pols {
			if ps := policyOf(&pt.Summary, p); ps != nil {
				fmt.Fprintf(w, " %.2f |", ps.PlannerModeledSeconds)
			} else {
				fmt.Fprint(w, " - |")
			}
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "HyDra's throughput over each policy, mean over the GPU counts (for ring static CP on DeepSeek-V3, the largest, as the paper states it):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| model | over | stall on: here / paper | stall off: here / paper |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, m := range scalingModels(points) {
		for _, p := range pols[1:] {
			pv, has := paperScaling[m][p]
			on, okOn := scalingRatio(points, m, p, false)
			off, okOff := scalingRatio(points, m, p, true)
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", m, label(p), vsPaper(on, okOn, pv, has), vsPaper(off, okOff, pv, has))
		}
	}
	fmt.Fprintln(w)
	for _, m := range scalingModels(points) {
		if o := scalingOrder(points, m); len(o.policies) > 1 {
			fmt.Fprintf(w, "%s, throughput order over the sweep, stall off: here %s; paper %s (%d of the pairs the paper orders reversed here).\n\n",
				m, o.text(o.here), o.text(o.paper), o.reversed())
		}
	}
}

// scalingModels returns the sweep's models in point order.
func scalingModels(points []SweepPoint) []string {
	var models []string
	for _, p := range points {
		if !slices.Contains(models, p.Model) {
			models = append(models, p.Model)
		}
	}
	return models
}

// scalingRatio is HyDra's throughput over policy on model's points: the mean
// over the points, or the largest where the paper states a maximum.
func scalingRatio(points []SweepPoint, model, policy string, nostall bool) (float64, bool) {
	var xs []float64
	for _, pt := range points {
		if pt.Model != model {
			continue
		}
		key := "over_" + policy
		if nostall {
			key += "_nostall"
		}
		if v, ok := ours(&pt.Summary, "hydra", key); ok {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	if paperScaling[model][policy].Note == scalingMax {
		return slices.Max(xs), true
	}
	return mean(xs), true
}

// scalingOrder is the order of HyDra and the policies the paper rates on
// model: ours by the mean ratio over the sweep, stall off.
func scalingOrder(points []SweepPoint, model string) order {
	paper := paperScaling[model]
	ratioHere := map[string]float64{"hydra": 1}
	for p := range paper {
		if v, ok := scalingRatio(points, model, p, true); ok {
			ratioHere[p] = v
		}
	}
	return order{policies: slices.Sorted(maps.Keys(ratioHere)),
		here: func(p string) float64 { return ratioHere[p] },
		paper: func(p string) float64 {
			if p == "hydra" {
				return 1
			}
			return paper[p].mid()
		}}
}

// fmtOK is v with two decimals, or "-" when ok is false.
func fmtOK(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

// mean is the mean of xs, 0 for none.
func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	if len(xs) == 0 {
		return 0
	}
	return s / float64(len(xs))
}

// writeTargets checks the fidelity issue's targets against the results:
// every headline ratio within 15% of the paper's (with the planner stall on the
// critical path and off it), PP bubbles on rank 0 within 5 points, testbed
// step times within 25% beyond the one fitted point.
func writeTargets(w *strings.Builder, sums map[string]*Summary, dir string) {
	fmt.Fprintln(w, "## Targets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Each row is one target of the fidelity work, checked against the tables above: \"met\" or the miss, by how much.")
	fmt.Fprintln(w, "Why each miss happens, with the measurement that shows it, follows in *Where and why we differ*.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| target | here | paper | gap | within |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	row := func(what string, ours float64, ok bool, paper paperValue, tol float64, points bool) {
		if !ok {
			fmt.Fprintf(w, "| %s | - | %s | - | missing |\n", what, paper)
			return
		}
		gap := paper.gap(ours)
		gapText, met := fmt.Sprintf("%+.0f%%", 100*gap), math.Abs(gap) <= tol+1e-12
		if points {
			gap = ours - paper.V
			gapText, met = fmt.Sprintf("%+.1f points", gap), math.Abs(gap) <= tol
		}
		verdict := "met"
		if !met {
			verdict = "**missed**"
		}
		fmt.Fprintf(w, "| %s | %.3g | %s | %s | %s |\n", what, ours, paper, gapText, verdict)
	}
	for _, sc := range []string{"testbed-32k", "testbed-256k", "production-256k"} {
		s := sums[sc]
		for _, q := range [][2]string{{"over_mcore", "Mcore DCP"}, {"over_static", "static CP"}} {
			pv, has := paperRuns[sc].Values["hydra"][q[0]]
			if !has || pv.V == 0 {
				continue
			}
			for _, stall := range []string{"", "_nostall"} {
				v, ok := 0.0, false
				if s != nil {
					v, ok = ours(s, "hydra", q[0]+stall)
				}
				how := "planner stall on the critical path"
				if stall != "" {
					how = "planner stall off the critical path"
				}
				row(fmt.Sprintf("%s: HyDra over %s, %s (±15%%)", sc, q[1], how), v, ok, pv, 0.15, false)
			}
		}
	}
	// §6.4: the paper's own simulator, which leaves planning off the
	// critical path (see "Where and why we differ"), so the like-for-like
	// ratio is ours with the stall off.
	hy := paperRuns["hy3-8k"].Values["hydra"]
	for _, p := range slices.Sorted(maps.Keys(hy)) {
		other, ok := strings.CutPrefix(p, "over_")
		if !ok {
			continue
		}
		v, okv := 0.0, false
		if s := sums["hy3-8k"]; s != nil {
			v, okv = ours(s, "hydra", p+"_nostall")
		}
		row(fmt.Sprintf("hy3-8k: HyDra's throughput over %s, stall off the path (±15%%)", label(other)), v, okv, hy[p], 0.15, false)
	}
	if s := sums["hy3-8k"]; s != nil {
		if o, ok := scenarioOrder(s, hy); ok {
			n := o.reversed()
			fmt.Fprintf(w, "| hy3-8k: the paper's order of the six systems | %s | %s | %d pairs reversed | %s |\n", o.text(o.here), o.text(o.paper), n, verdict(n == 0))
		}
	}
	var sw sweepJSON
	if err := readJSON(filepath.Join(dir, "weak-scaling", "sweep.json"), &sw); err == nil {
		for _, m := range scalingModels(sw.Points) {
			for _, p := range slices.Sorted(maps.Keys(paperScaling[m])) {
				v, ok := scalingRatio(sw.Points, m, p, true)
				how := "mean"
				if paperScaling[m][p].Note == scalingMax {
					how = "largest"
				}
				row(fmt.Sprintf("weak scaling, %s: HyDra's throughput over %s, %s over 8K-40K GPUs, stall off the path (±15%%)", m, label(p), how),
					v, ok, paperScaling[m][p], 0.15, false)
			}
			o := scalingOrder(sw.Points, m)
			n := o.reversed()
			fmt.Fprintf(w, "| weak scaling, %s: the paper's order | %s | %s | %d pairs reversed | %s |\n", m, o.text(o.here), o.text(o.paper), n, verdict(n == 0))
		}
	}
	for _, sc := range []string{"testbed-32k", "testbed-256k", "production-256k"} {
		for _, p := range []string{"hydra", "mcore"} {
			pv := paperRuns[sc].Values[p]["pp"]
			v, ok := 0.0, false
			if s := sums[sc]; s != nil {
				v, ok = ours(s, p, "pp")
			}
			row(fmt.Sprintf("%s: %s PP bubble on rank 0, %% (±5 points)", sc, p), v, ok, pv, 5, true)
		}
	}
	for _, sc := range []string{"testbed-32k", "testbed-256k"} {
		for _, p := range []string{"hydra", "mcore", "static"} {
			pv := paperRuns[sc].Values[p]["step"]
			what := fmt.Sprintf("%s: %s mean step, s (±25%%)", sc, p)
			if sc == "testbed-32k" && p == "static" {
				what = fmt.Sprintf("%s: %s mean step, s (**fitted**: job.PaperMLALayers)", sc, p)
			}
			v, ok := 0.0, false
			if s := sums[sc]; s != nil {
				v, ok = ours(s, p, "step")
			}
			row(what, v, ok, pv, 0.25, false)
		}
	}
	fmt.Fprintln(w)
}

// verdict is "met" or "**missed**".
func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// fidelityProse records what each change of the fidelity work moved, measured
// when it was made (each row: the change alone, the scenarios' mean steps and
// ratios before → after, on the model of the time). It is history, so it is
// prose, not regenerated.
const fidelityProse = `## What each fidelity change moved

Measured with ` + "`dcpsim run <scenario> --no-files`" + ` before and after each change alone, in the order
they were made; "×M" and "×S" are HyDra's speedups over Mcore DCP and static CP.

| change | what it moved |
|---|---|
| Inner Ulysses up to the query heads, across nodes, the ring only beyond (the paper's layout; our earlier note "u inside NVLink" was wrong) | production-256k: HyDra 5.37 → 3.16 s, ×M 0.64 → 1.11, ×S 0.69 → 1.10; DeepSeek-V3 weak scaling ×M 0.67 → 2.78 (on DeepSeek-V2-Lite, before the changes below) |
| Ring static CP for DeepSeek-V3 (the paper's §6.4 baseline) | DeepSeek-V3 weak scaling ×S 0.76 (Ulysses static) → 10.2 (ring static; paper: up to 13.8) |
| Compute model: efficiencies ≤ 1, GEMMs priced by (m, n, k) shape, memory-bound ops (RMSNorm, RoPE, SwiGLU, MoE permute, router, gate, cross-entropy), attention by head dim, kernel launch gaps | testbed-32k HyDra −7.6% from GEMMs by shape, +2-5% everywhere from memory-bound ops and launches, −1-2% from MLA's head dim; MoE layer of DeepSeek-V2-Lite at 8K tokens on H800: 1.91/3.82 ms GEMMs + 0.59/0.81 ms memory-bound + 0.12/0.17 ms launches (forward/backward) |
| Network constants: send/recv at 46 of 48 GB/s, all-to-all at 43, reduce-scatter/all-gather at 35 (each sourced) | production-256k HyDra −17%, static −5% (ring steps at 0.958 of the NIC instead of 0.738) |
| Overlap window of the Q/K/V all-to-alls: the KV projections, RoPE, concatenation and gate only, not the layer's GEMMs | HyDra +1.7% (testbed-32k), +1.3% (testbed-256k), +3.1% (production-256k), +5.6% (hy3-8k); others unchanged |
| paper-mla stand-in: gated MLA with 64 query heads, 32 layers fitted on static CP at testbed-32k | testbed-32k: static 2.34 → 10.26 s (fitted), HyDra 1.80 → 7.86 s (paper 7.7), Mcore 2.09 → 8.94 s (paper 9.1); ×M/×S testbed-32k 1.16/1.30 → 1.14/1.30, testbed-256k 1.94/2.03 → 2.02/2.14, production-256k 1.23/1.19 → 1.94/2.30 |
| Bubbles on rank 0, the paper's measure, beside the mean over ranks | Mcore testbed-256k PP bubble 46.5% (mean) vs 60.8% (rank 0: it holds the tallest item); static DP bubble 26.6% mean vs 23.2% rank 0 |
| Every ratio also with the planner stall off the critical path | hy3-8k ×M 1.98 → 1.62; DeepSeek-V3 weak scaling ×M 2.81 → 1.78 (mean); production-256k ×M 1.94 → 1.83 |

`

// reproductionProse closes the report: why the numbers differ and what the model
// leaves out. It names mechanisms and the measurements behind them.
const reproductionProse = `## Where and why we differ

- **Testbed (H20)**: after the one fit (static CP on testbed-32k), HyDra's and
  Mcore DCP's testbed steps land within the paper's by a few per cent at 32K and
  within 15% at 256K, out of sample, and both testbed-32k ratios are met. At
  256K HyDra's lead over Mcore DCP is 19% short of the paper's 2.48×: our Mcore
  DCP is 13% faster than the paper measured while HyDra is 6% slower. HyDra's PP
  bubble on rank 0 is 11 points above the paper's at 256K: it packs about 7
  microbatches per iteration, and 1F1B on 4 stages idles at least 3/(7+3) = 30%
  of it; the paper's 23.3% needs about 10. Its closed form caps C* at the pool
  (128 ranks), so the MB count is Σs²/s_max² of the batch, about 7 for our
  synthetic long-256k batches: the paper's dataset, whose long tail we do not
  have, holds fewer near-256K sequences per batch.
- **Production (H800, 2,048 GPUs)**: our steps are 40-57% shorter than the
  paper's for every policy, and HyDra's leads are 55% (Mcore) and 45% (static)
  above the paper's. Per GPU the paper's production job trains only 1.8× the
  tokens per second of its H20 testbed under HyDra (3.5× under Mcore DCP, 2.5×
  under static CP) on a GPU with 6.7× the BF16 peak; ours does 4.4×. The cost
  model prices every collective alone on a non-blocking fabric; the paper's
  2,048-GPU RoCE job evidently does not get that. A what-if measures it: with the
  H800 NIC at a quarter of its nccl-tests rate (12 GB/s per GPU, as many
  concurrent CP, MoE and gradient flows sharing it would give) the steps are
  HyDra 14.2 s, Mcore 16.9 s, static 23.1 s (paper 15.9, 19.9, 25.2): ×M 1.19,
  ×S 1.62 against the paper's 1.25 and 1.59. We do not set that as the default:
  it is a fit to the paper, and contention needs a model of its own (concurrent
  flows per NIC and the fabric's oversubscription), which dcpsim does not have yet.
- **Planner stall**: Mcore DCP's stall is modelled as the paper describes the
  production scheduler (§3.4: one whole-pool scan per sub-sample, N·G rank
  visits) at the CPython cost per visit fitted on Megatron's own code
  (conformance timings, not the paper). It lands at the paper's 0.78 s at 2K GPUs
  without being fitted to it, and grows as N·G, i.e. with the square of the
  cluster at a fixed batch per GPU (the paper's Fig. 19: 47.85 s at 16K). HyDra's
  stall is priced as heapq operations and sequence visits and comes out about an
  order of magnitude below the paper's 0.34 s: the paper's 3K-line Python does
  work our count leaves out (building Megatron's per-rank batches and metadata).
- **§6.4 (the paper's own simulator)**: its Hy3 and DeepSeek-V3 ratios stay flat
  from 8K to 40K GPUs (1.53-1.56×, 1.61×) although its Fig. 19 measures Mcore's
  planner at 47.85 s at 16K GPUs, which would dominate those iterations: its
  simulator evidently leaves planning off the critical path, so the §6.4 targets
  compare our ratios with the stall off (both are in the tables). HyDra's lead is
  compared as throughput (tokens per day): WLB-LLM trains fewer tokens in its
  short iterations and more when a queue pops (on hy3-8k a pop brings 640
  outliers into one 54 s iteration; the presets measure whole cycles). Met on Hy3:
  Mcore DCP (1.61× vs 1.53×), static CP (2.36× vs 1.7-2.2×), WLB-LLM (1.33× vs
  1.56×, at the edge); on DeepSeek-V3 Mcore DCP (1.78× vs 1.61×) and FlexSP (1.67×
  vs 1.7-2.5×). Missed:
  - **ByteScale** (Hy3 1.66-1.7× vs 1.28×; DeepSeek-V3 3.4× vs 1.53×). Its
    D(s) = ⌈s/C⌉ puts each long sequence on the fewest ranks, so the pipeline
    groups that draw the long units run few, heavy microbatches and pay 1F1B's
    fill and drain on them: PP bubble on rank 0 58% on hy3-8k (the paper: 37.3%,
    also the largest of the six), 59% mean on DeepSeek-V3 with 16 stages, whose
    ring exchange of MLA's per-head K/V is also exposed for 20% of the iteration.
    The paper's ByteScale offloads activations to use fewer ranks still and
    schedules as a production system whose details it does not give; ours is
    Alg. 1-2 without offload (see the sched/bytescale package doc), with its
    frames run shortest first (§6.2: similar lengths back to back), which took
    6.6% off its hy3-8k step.
  - **FlexSP** on Hy3 (1.41× vs 1.7-2.2×): ours is better than the paper's. Its
    MILP balances each microbatch over the whole pool, so its DP bubble is 6% where
    the paper reports 49.6%; its PP bubble is the large one (48%), because the
    Sequence Blaster sorts the batch and puts every long sequence in the first
    microbatches. FlexSP itself trains without pipeline parallelism (ZeRO-3), and
    the paper does not say how it ran it on a pipeline.
  - **WLB-LLM on DeepSeek-V3** (3.08× vs 1.7-2.5×): its all-gather CP moves MLA's
    K and V expanded per head (82 KB per token per layer, 21 GB for a 256K
    sequence), exposed, as Llama 3's all-gather runs: 51% of its iteration.
    Gathering MLA's compressed latent instead would shrink it ~70×; WLB-LLM was
    built for GQA and the paper does not say which it simulated.
  - **Ring static CP on DeepSeek-V3**: 8.5× slower than HyDra (paper: up to 13.8×).
  - **The order of the six**: ours puts WLB-LLM and FlexSP ahead of Mcore DCP, and
    ByteScale behind it; the paper has ByteScale second. With our modelled stall on
    the path Mcore's N·G stall grows with the square of the cluster and its ratios
    with it (5.8× on Hy3 averaged over the sweep).
- **PP bubbles on rank 0**: we keep the paper's definition (rank 0) so the
  comparison is like with like, and print the mean over ranks beside it. HyDra's
  misses at 256K follow from its microbatch count (above). Mcore DCP's rank-0
  bubbles are 5-12 points above the paper's: its rank 0 holds every
  microbatch's tallest item and waits only for the other stages, so its bubble is
  the pipeline's fill, drain and stage-to-stage waits; we have no measurement
  that splits the paper's number into those parts, so this miss stays
  unexplained.

## What the model leaves out

- ByteScale's selective offloading and the NCCL-buffer savings of its global
  communicator (no policy pays communicator set-up here); FlexSP's ZeRO-3 (its
  plans run on the same pipeline and DP model as the others) and the parallel
  solver processes that would shorten its modelled solve; WLB-LLM's
  per-document sharding changes attention kernel shapes the cost model does not
  distinguish.
- Contention: each collective is priced alone with NCCL's α–β model; concurrent CP,
  MoE and gradient traffic on the same NICs and fabric do not slow each other
  down (the production what-if above shows how much that matters).
- Memory: no activation-memory check beyond each policy's token budget, no
  offload choices, no out-of-memory failures (recomputation is priced, and
  checked against published runs below, but every scenario here runs without it).
- Stragglers; tensor parallelism inside a layer is priced (checked below) but
  every scenario here runs tp = 1.
- Overlap of the planner with the previous iteration (the stall is on the critical
  path, as the paper measures for both systems), and data loading.
- Operator costs come from datasheets and published kernel tables, not from
  measurements on the paper's machines: no GPU calibration has been run in this
  repository yet (see README, "Calibrating on your GPUs").
`
