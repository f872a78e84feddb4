package main

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dcpsim/dcpsim/experiment"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

const planUsage = `  dcpsim plan --policy P [--scenario S] [--iteration K] [--overhead-ratio R]
  dcpsim plan --policy P --batches FILE.jsonl [--out FILE]

  With --scenario (default ` + scenarios.DefaultPreset + `): plan batch K of the scenario and print a
  readable summary: the policy's diagnostics (HyDra: C*, Λ*, M*), a per-microbatch
  table of groups by degree with max/min per-rank load and tokens, the CP-degree
  share of GPU-slots, and the longest sequences' degrees beside their memory minimum.

  With --batches: read one batch per line, {"ranks": G, "budget_tokens": B,
  "lengths": [...]} plus optional "overhead_ratio" (θ/c, tokens²), "pp", "vpp",
  "context_tokens" (fields of the conformance vectors, such as "microbatches", are
  accepted and ignored), and write one JSON line per input line:
  {"microbatches": [[[ids] per rank] per MB], "groups": [[{"first_rank","size","seqs"}]
  per MB], "diagnostics": {...}}. Deterministic; used by external conformance checks.`

func planCommand() command {
	return command{
		name:    "plan",
		summary: "plan one batch with a DCP policy (summary, or JSON lines for --batches)",
		usage:   planUsage,
		run:     runPlan,
	}
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("plan", planUsage, stderr)
	policy := fs.String("policy", "", "policy name (required): "+strings.Join(policies.Names(), ", "))
	scenario := fs.String("scenario", "", "embedded scenario name or .toml file (default "+scenarios.DefaultPreset+")")
	iteration := fs.Int("iteration", 0, "which batch of the scenario to plan (>= 0)")
	ratio := fs.Float64("overhead-ratio", -1, "HyDra's θ/c in tokens² (default: from the scenario's GPU profile; 2^24 for --batches lines without one)")
	batches := fs.String("batches", "", "JSONL file of batches (conformance format); '-' for stdin")
	out := fs.String("out", "", "with --batches: write the JSON lines to this file instead of stdout")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput("unexpected arguments %q", fs.Args())
	}
	if *policy == "" {
		return badInput("--policy is required (one of %s)", strings.Join(policies.Names(), ", "))
	}
	if *ratio != -1 && *ratio < 0 {
		return badInput("--overhead-ratio = %v: must be >= 0", *ratio)
	}
	if *batches != "" {
		if *scenario != "" {
			return badInput("--batches and --scenario are exclusive")
		}
		p, err := policies.New(*policy)
		if err != nil {
			return badInput("%v", err)
		}
		return withBatches(*batches, *out, stdout, func(r io.Reader, w io.Writer) error {
			return experiment.PlanBatches(r, *batches, w, p, *ratio)
		})
	}
	if *out != "" {
		return badInput("--out goes with --batches")
	}
	if *iteration < 0 {
		return badInput("--iteration = %d: must be >= 0", *iteration)
	}
	sc, err := resolveScenario(*scenario)
	if err != nil {
		return err
	}
	p, err := sc.PolicyFor(*policy)
	if err != nil {
		return badInput("%v", err)
	}
	sampler, err := sc.NewSampler()
	if err != nil {
		return err
	}
	lengths := sampler.Batch(*iteration).Lengths
	setup, err := experiment.NewSetup(sc)
	if err != nil {
		return err
	}
	in := setup.Inputs
	ratioNote := "given with --overhead-ratio"
	if *ratio >= 0 {
		in.OverheadRatio = *ratio
	} else {
		o := setup.Overhead
		ratioNote = fmt.Sprintf("from the %s profile: θ = %.2f ms per MB (launches %.2f, p2p %.2f, MoE %.2f, CP %.2f), c = %.3g s/token² at block %d, CP %d",
			profileLabel(sc), o.ThetaSeconds*1e3, o.LaunchSeconds*1e3, o.PipelineP2PSeconds*1e3, o.MoECollectiveSeconds*1e3,
			o.CPCollectiveSeconds*1e3, o.CSecondsPerSquareToken, o.BlockTokens, o.CPDegree)
	}
	start := time.Now()
	plan, err := p.Plan(lengths, in)
	wall := time.Since(start)
	if err != nil {
		return fmt.Errorf("%s iteration %d: %w", sc.Name, *iteration, err)
	}
	if err := experiment.Check(p, plan, lengths, in); err != nil {
		return fmt.Errorf("%s iteration %d: %w", sc.Name, *iteration, err)
	}
	return printPlan(stdout, sc, *iteration, lengths, in, ratioNote, plan, wall)
}

// profileLabel names the scenario's profile: the GPU kind, or the file.
func profileLabel(sc *scenarios.Scenario) string {
	if sc.ProfileFile != "" {
		return sc.ProfilePath()
	}
	return sc.Job.Cluster.GPU
}

func printPlan(w io.Writer, sc *scenarios.Scenario, iteration int, lengths []int, in sched.Inputs, ratioNote string,
	plan *sched.Plan, wall time.Duration) error {
	var tokens int64
	for _, s := range lengths {
		tokens += int64(s)
	}
	fmt.Fprintf(w, "policy %s on %s, iteration %d: %s sequences, %s tokens; G = %d, B = %d, pp %d, vpp %d\n",
		plan.Policy, sc.Name, iteration, thousands(int64(len(lengths))), thousands(tokens), in.PoolRanks, in.BudgetTokens, in.PP, in.VPP)
	st := sched.ComputeStats(plan, lengths, in.EPSize())
	hw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if plan.Diagnostics != nil {
		for _, kv := range plan.Diagnostics.Summary() {
			fmt.Fprintf(hw, "%s\t%s\n", kv.Name, kv.Value)
		}
	}
	target, hasTarget := plan.Diagnostics.(sched.LoadTargeter)
	if hasTarget {
		fmt.Fprintf(hw, "θ/c source\t%s\n", ratioNote)
	}
	fmt.Fprintf(hw, "planner\t%s microbatches, %s work units, %.2f ms Go wall time (this machine)\n",
		thousands(int64(len(plan.Microbatches))), thousands(plan.WorkUnits), wall.Seconds()*1e3)
	fmt.Fprintf(hw, "CP degrees\tshare of GPU-slots: %s\n", sched.FormatDegrees(st.Degrees))
	fmt.Fprintf(hw, "MB max load\tlargest/smallest over MBs %.2f×\n", st.MaxMinMBLoad)
	if err := hw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "MB\tgroups (count×degree)\tmax load (M tok²)\tmin load\tmax tokens\tmin tokens\tI = Σs²/R (M)\t"
	if hasTarget {
		header += "max/Λ*\t"
	}
	fmt.Fprintln(tw, header)
	for m, ms := range st.Microbatches {
		fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.1f\t%.0f\t%.0f\t%.1f\t", m, groupsByDegree(plan.Microbatches[m]),
			ms.MaxLoad/1e6, ms.MinLoad/1e6, ms.MaxTokens, ms.MinTokens, ms.Intensity/1e6)
		if hasTarget {
			fmt.Fprintf(tw, "%.3f\t", ms.MaxLoad/target.LoadTargetTokens2())
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nwhy each microbatch closed:")
	for m, mb := range plan.Microbatches {
		if mb.Closed != "" {
			fmt.Fprintf(w, "  %d: %s\n", m, mb.Closed)
		}
	}

	// The longest sequences: the degree they got beside Megatron's memory minimum.
	degree := make([]int, len(lengths))
	for _, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			for _, id := range g.Seqs {
				degree[id] = g.Size
			}
		}
	}
	ids := make([]int, len(lengths))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return lengths[ids[a]] > lengths[ids[b]] })
	fmt.Fprintln(w, "\nlongest sequences: CP degree given vs memory minimum pow2ceil(s/B)")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "seq\ttokens\tmemory degree\tdegree\tper-rank load (M tok²)\t")
	for _, id := range ids[:min(10, len(ids))] {
		s := lengths[id]
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%.1f\t\n", id, thousands(int64(s)), sched.MemoryDegree(s, in.BudgetTokens), degree[id],
			float64(s)*float64(s)/float64(degree[id])/1e6)
	}
	return tw.Flush()
}

// groupsByDegree formats a microbatch's groups as "1×32 4×8 ..." (count×degree,
// largest degree first).
func groupsByDegree(mb sched.Microbatch) string {
	count := map[int]int{}
	for _, g := range mb.Groups {
		count[g.Size]++
	}
	sizes := make([]int, 0, len(count))
	for s := range count {
		sizes = append(sizes, s)
	}
	slices.Sort(sizes)
	slices.Reverse(sizes)
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = strconv.Itoa(count[s]) + "×" + strconv.Itoa(s)
	}
	return strings.Join(parts, " ")
}
