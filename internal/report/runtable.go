package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
)

// WriteRunTable prints a run summary as a comparison table (one row per
// policy: the narrow set of RunColumns, every column with wide), the
// CP-degree shares and how to read the columns; with timings (nil: none),
// the measured Go planner times on a line of their own, after the table, so
// the table itself is the same on every run.
func WriteRunTable(w io.Writer, s *results.Summary, timings *results.Timings, wide bool) error {
	measured := s.Iterations - s.WarmupIterations
	head := RunHeader(s)
	for _, l := range head[:len(head)-1] {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "%s\n\n", head[len(head)-1])
	cols := RunColumns(s, wide)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "policy\t")
	for _, c := range cols {
		fmt.Fprint(tw, c.Name+"\t")
	}
	fmt.Fprintln(tw)
	for i := range s.Policies {
		p := &s.Policies[i]
		if p.Error != "" {
			fmt.Fprintf(tw, "%s\t%s (below)\t%s\n", p.Policy, FailedWhat(p), strings.Repeat("-\t", len(cols)-1))
			continue
		}
		fmt.Fprint(tw, p.Policy+"\t")
		for _, c := range cols {
			text, _ := c.Cell(p)
			fmt.Fprint(tw, text+"\t")
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if timings != nil && len(timings.Policies) > 0 {
		fmt.Fprint(w, "\nplanner wall time of our Go implementation on this machine (timings.json; never simulated):")
		sep := ""
		for _, t := range timings.Policies {
			if t.PlannerGoSeconds == nil {
				continue // a policy that failed or was skipped
			}
			fmt.Fprintf(w, "%s %s %.2f ms", sep, t.Policy, 1e3*t.PlannerGoSecondsMean)
			if slices.ContainsFunc(s.Policies, func(p results.PolicySummary) bool { return p.Policy == t.Policy && p.External != nil }) {
				fmt.Fprint(w, " (its process's round trip)")
			}
			sep = ","
		}
		fmt.Fprintln(w)
	}
	for _, l := range RunNotes(s) {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "\nshare of GPU-slots (rank × microbatch) at each CP degree, % (idle = a rank holding nothing in an MB):")
	for _, p := range s.Policies {
		if p.Error != "" {
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n", p.Policy, sched.FormatDegreeShares(p.DegreeShares, "%s: %.1f", "  "))
	}
	fmt.Fprintln(w)
	if !wide {
		fmt.Fprintln(w, WrapText(fmt.Sprintf("means over %d measured iterations; --wide adds %d columns and says what every column means, "+
			"as the results folder's index.html does (hover a column's name).", measured, len(RunColumns(s, true))-len(cols)), 0, 100, ""))
		return nil
	}
	fmt.Fprintln(w, WrapText(fmt.Sprintf("means over %d measured iterations. The shares of the iteration (compute-busy, exposed comm, "+
		"PP and DP bubble, planner stall, and the gradient sync + optimizer rest) are means over (stage, rank) and sum to 100. The columns:",
		measured), 0, 100, ""))
	for _, c := range cols {
		fmt.Fprintln(w, "  "+WrapText(c.Name+": "+c.Meaning, 2, 100, "      "))
	}
	return nil
}

// RunHeader are the lines above a run's table: the scenario and its layout,
// the calibration profiles that are not a GPU kind's own, and the cost
// model (each policy's CP execution, the planner stall).
func RunHeader(s *results.Summary) []string {
	gpus := fmt.Sprintf("%d×%s", s.GPUs, s.GPU)
	if strings.Contains(s.GPU, "×") { // a mixed cluster's label: "32×H100-SXM + 32×A100-80G"
		gpus = fmt.Sprintf("%d GPUs (%s)", s.GPUs, s.GPU)
	}
	budget := fmt.Sprint(s.BudgetTokens)
	if s.BudgetAuto {
		budget += " (auto: the largest whose peak memory fits)"
	}
	recompute := ""
	if s.Recompute != "" && s.Recompute != "none" {
		recompute = ", " + s.Recompute + " recompute"
		if s.RecomputeLayers > 0 {
			recompute += fmt.Sprintf(" of %d layers per chunk", s.RecomputeLayers)
		}
	}
	if s.Precision == "fp8" {
		recompute += ", FP8 GEMMs"
	}
	lines := []string{fmt.Sprintf("%s: %s, %s, tp%d pp%d vpp%d ep%d%s, G = %d, B = %s; %d iterations (%d warm-up excluded from the means)",
		s.Scenario, gpus, s.Model, s.TP, s.PP, s.VPP, s.EP, recompute, s.PoolRanks, budget, s.Iterations, s.WarmupIterations)}
	for _, pr := range s.Profiles {
		if pr.Name == pr.Kind && strings.HasPrefix(pr.File, "calib/profiles/") {
			continue // the kind's own embedded profile
		}
		lines = append(lines, fmt.Sprintf("profile: %s prices the cluster's %s (%s, sha256 %.12s)", pr.Name, pr.Kind, pr.File, pr.SHA256))
		for _, u := range pr.Uncalibrated {
			lines = append(lines, "profile: "+u)
		}
	}
	var b strings.Builder
	b.WriteString("cost model: calib compute + sim/network communication; CP exec")
	for i, p := range s.Policies {
		sep := ","
		if i == 0 {
			sep = ""
		}
		a2a := "a2a exposed"
		if p.OverlapAllToAll {
			a2a = "a2a overlapped"
		}
		if p.CPExec != "" {
			fmt.Fprintf(&b, "%s %s: %s (%s)", sep, p.Policy, p.CPExec, a2a)
		}
	}
	stall := "modelled planner stall on the critical path"
	if s.PlannerStall == scenarios.PlannerStallNone {
		stall = "planner stall off the critical path ([costs] planner_stall = \"none\")"
	}
	span := "inner Ulysses inside a node"
	if s.UlyssesAcrossNodes {
		span = "inner Ulysses up to the heads, across nodes"
	}
	fmt.Fprintf(&b, "; %s; %s", span, stall)
	return append(lines, b.String())
}

// RunNotes are what a run's table cannot say: why a policy failed or was
// skipped, what an external policy ran, how much of a Ulysses execution
// ran as Ulysses × ring.
func RunNotes(s *results.Summary) []string {
	var notes []string
	for _, p := range s.Policies {
		if p.Error == "" {
			continue
		}
		what := "error"
		if p.Skipped {
			what = "skipped"
		}
		notes = append(notes, fmt.Sprintf("%s: %s: %s", p.Policy, what, p.Error))
	}
	for _, p := range s.Policies {
		if e := p.External; e != nil {
			n := fmt.Sprintf("%s: external policy %q, its stderr in %s", p.Policy, strings.Join(e.Command, " "), e.Log)
			if e.MeasuredStall {
				n += "; its planning stall is its measured round trip (it reports no stall_work or planner_seconds), so its step times depend on this machine"
			}
			if e.CloseError != "" {
				n += "; " + e.CloseError
			}
			notes = append(notes, n)
		}
		if p.UlyssesFallbackShare > 0 {
			notes = append(notes, fmt.Sprintf("%s: %.1f%% of GPU-slots are in groups wider than the query heads per TP rank, which Ulysses cannot run: "+
				"priced as Ulysses × ring (Megatron's hierarchical CP)", p.Policy, 100*p.UlyssesFallbackShare))
		}
	}
	return notes
}

// RunColumn is a column of a run's table (besides the policy): its
// header, what it means, and a policy's cell.
type RunColumn struct {
	// Name is the header, e.g. "tokens/day (B)"; Meaning says what the
	// column is (the terminal's --wide legend, the page's hover).
	Name, Meaning string
	// Wide marks a column the terminal prints only with --wide.
	Wide bool
	// Cell is a policy's cell: its text and the value it sorts by.
	Cell func(p *results.PolicySummary) (string, float64)
}

// RunColumns are the columns of s's run table in order: every one when
// wide, else the narrow set the terminal prints by default. The step
// ratio's header and meaning name s's first policy, the cost's its price
// of a GPU-hour.
func RunColumns(s *results.Summary, wide bool) []RunColumn {
	ref := ""
	if len(s.Policies) > 0 {
		ref = s.Policies[0].Policy
	}
	num := func(prec int, scale float64, v func(p *results.PolicySummary) float64) func(p *results.PolicySummary) (string, float64) {
		return func(p *results.PolicySummary) (string, float64) {
			x := scale * v(p)
			return strconv.FormatFloat(x, 'f', prec, 64), x
		}
	}
	share := func(v func(p *results.PolicySummary) float64) func(p *results.PolicySummary) (string, float64) {
		return num(1, 100, v)
	}
	of := " Share of the iteration, mean over (stage, rank)."
	all := []RunColumn{
		{Name: "step mean (s)", Meaning: "Mean simulated iteration time over the measured (non-warm-up) iterations.",
			Cell: num(3, 1, func(p *results.PolicySummary) float64 { return p.StepSecondsMean })},
		{Name: "step p95 (s)", Wide: true, Meaning: "Nearest-rank 95th percentile of the measured iterations' step times.",
			Cell: num(3, 1, func(p *results.PolicySummary) float64 { return p.StepSecondsP95 })},
		{Name: "tokens/day (B)", Meaning: "Σ batch tokens × 86,400 / Σ step seconds, in billions.",
			Cell: num(2, 1e-9, func(p *results.PolicySummary) float64 { return p.TokensPerDay })},
		{Name: "step / " + ref + " (×)", Meaning: "This policy's mean step time over " + ref + "'s: " + ref + "'s speedup over it.",
			Cell: func(p *results.PolicySummary) (string, float64) {
				if !(p.SpeedupOfFirst > 0) {
					return "-", math.NaN()
				}
				return strconv.FormatFloat(p.SpeedupOfFirst, 'f', 2, 64), p.SpeedupOfFirst
			}},
		{Name: "MFU (%)", Meaning: "Model FLOPs (6 per active weight per token, attention at 3× its forward) over the GPUs' BF16 peak.",
			Cell: share(func(p *results.PolicySummary) float64 { return p.MFU })},
		{Name: "PP bubble (%)", Meaning: "Idle time that is not the DP wait: pipeline fill and drain, waiting for another stage." + of,
			Cell: share(func(p *results.PolicySummary) float64 { return p.PPBubbleShare })},
		{Name: "DP bubble (%)", Meaning: "Time between a rank's last backward and its stage's gradient reduce-scatter (waiting for the slowest rank)." + of,
			Cell: share(func(p *results.PolicySummary) float64 { return p.DPBubbleShare })},
		{Name: "PP rank 0 (%)", Wide: true, Meaning: "The PP bubble of rank 0 alone (stage 0, HDP rank 0), as the HyDra paper measures it.",
			Cell: share(func(p *results.PolicySummary) float64 { return p.PPBubbleRank0Share })},
		{Name: "DP rank 0 (%)", Wide: true, Meaning: "The DP bubble of rank 0 alone (stage 0, HDP rank 0), as the HyDra paper measures it.",
			Cell: share(func(p *results.PolicySummary) float64 { return p.DPBubbleRank0Share })},
		{Name: "compute-busy (%)", Wide: true, Meaning: "Time in forward and backward ops less their exposed communication; " +
			"includes a light rank held by a slower one of its CP/EP domain." + of,
			Cell: share(func(p *results.PolicySummary) float64 { return p.ComputeShare })},
		{Name: "exposed comm (%)", Wide: true, Meaning: "CP and MoE collectives not hidden behind compute." + of,
			Cell: share(func(p *results.PolicySummary) float64 { return p.ExposedCommShare })},
		{Name: "planner stall (%)", Wide: true, Meaning: "The modelled planning time at the head of the iteration." + of,
			Cell: share(func(p *results.PolicySummary) float64 { return p.PlannerStallShare })},
		{Name: "MB-time CV (%)", Wide: true, Meaning: "Coefficient of variation of the microbatch times (a microbatch's forward + backward through one stage).",
			Cell: share(func(p *results.PolicySummary) float64 { return p.MBTimeCV })},
		{Name: "MB max/min (×)", Wide: true, Meaning: "The slowest microbatch's time over the fastest's.",
			Cell: num(2, 1, func(p *results.PolicySummary) float64 { return p.MBTimeMaxOverMin })},
		{Name: "MBs per rank", Wide: true, Meaning: "Microbatches a rank runs per iteration (the plan's count for policies whose microbatches span the pool).",
			Cell: num(1, 1, func(p *results.PolicySummary) float64 { return p.Microbatches })},
		{Name: "EP wait (%)", Wide: true, Meaning: "Share of GPU-time a rank is held at the MoE all-to-all barrier by a slower CP group of its EP block " +
			"(part of compute-busy; the HyDra paper's Fig. 7).",
			Cell: share(func(p *results.PolicySummary) float64 { return p.EPBarrierWaitShare })},
		{Name: "DP straggler (×)", Wide: true, Meaning: "Per stage, the slowest rank's time to its last backward over the median rank's, " +
			"averaged over the stages: how late the gradient reduce-scatter starts (the HyDra paper's Fig. 6).",
			Cell: num(2, 1, func(p *results.PolicySummary) float64 { return p.DPStragglerRatio })},
		{Name: "planner modelled (ms)", Wide: true, Meaning: "The policy's planning work priced at measured CPython per-operation costs " +
			"(calib.CPython), on the critical path (FlexSP: its MILPs' CBC work at calib.CBC, solved a batch ahead, so only the part " +
			"beyond the previous step). Our Go planner's wall time is in timings.json, never simulated.",
			Cell: num(1, 1e3, func(p *results.PolicySummary) float64 { return p.PlannerModeledSeconds })},
		{Name: "$ per 1T tokens (k$)", Wide: true, Meaning: fmt.Sprintf("GPUs × $%g per GPU-hour × the hours to train 10^12 tokens at this throughput, in thousands.",
			s.DollarsPerGPUHour),
			Cell: num(1, 1e-3, func(p *results.PolicySummary) float64 { return p.DollarsPer1TTokens })},
		{Name: "peak memory (GiB)", Meaning: "The most any GPU held in a measured iteration (model states + a 10 GB reserve + the activations it " +
			"kept for its pipeline's backward passes, from the simulated schedule) over that GPU's HBM; a plan over its HBM is that " +
			"policy's out-of-memory, never timed.",
			Cell: func(p *results.PolicySummary) (string, float64) {
				v := p.PeakMemoryMaxBytes / (1 << 30)
				return fmt.Sprintf("%.1f / %.1f", v, p.HBMBytes/(1<<30)), v
			}},
	}
	if wide {
		return all
	}
	var narrow []RunColumn
	for _, c := range all {
		if !c.Wide {
			narrow = append(narrow, c)
		}
	}
	return narrow
}

// FailedWhat says how a policy of a run did not run: "error", "skipped" or
// "out of memory".
func FailedWhat(p *results.PolicySummary) string {
	switch {
	case p.Skipped:
		return "skipped"
	case p.OutOfMemory != nil:
		return "out of memory"
	}
	return "error"
}

// WrapText wraps text into lines of at most width characters (a longer
// word stands alone): the first continues a line already start characters
// long, every other starts with indent.
func WrapText(text string, start, width int, indent string) string {
	var b strings.Builder
	n := start
	for i, w := range strings.Fields(text) {
		switch {
		case i == 0:
		case n+1+utf8.RuneCountInString(w) > width:
			b.WriteString("\n" + indent)
			n = utf8.RuneCountInString(indent)
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += utf8.RuneCountInString(w)
	}
	return b.String()
}
