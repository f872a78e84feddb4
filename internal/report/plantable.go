package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
)

// WritePlanTable prints one plan for people: the policy's diagnostics, a
// per-microbatch table of groups by degree with per-rank load and tokens, why
// each microbatch closed, and the longest sequences' degrees beside their
// memory minimum. The tables describe what the plan trains (plan.Trained: a
// policy with state between iterations trains its own set). ratioNote says
// where θ/c came from; wall is the planner's measured Go time.
func WritePlanTable(w io.Writer, sc *scenarios.Scenario, iteration int, lengths []int, in sched.Inputs, ratioNote string,
	plan *sched.Plan, wall time.Duration) error {
	var tokens int64
	for _, s := range lengths {
		tokens += int64(s)
	}
	budget := fmt.Sprint(in.BudgetTokens)
	if sc.Job.Parallel.BudgetAuto {
		budget += " (auto: the largest whose peak memory fits)"
	}
	fmt.Fprintf(w, "policy %s on %s, iteration %d: %s sequences, %s tokens; G = %d, B = %s, pp %d, vpp %d\n",
		plan.Policy, sc.Name, iteration, thousands(int64(len(lengths))), thousands(tokens), in.PoolRanks, budget, in.PP, in.VPP)
	if plan.Lengths != nil { // a policy with state between iterations trains its own set; the ids index it
		lengths = plan.Trained(lengths)
		tokens = 0
		for _, s := range lengths {
			tokens += int64(s)
		}
		fmt.Fprintf(w, "trained: %s sequences, %s tokens (the policy's own set: some carried in from earlier iterations, some delayed)\n",
			thousands(int64(len(lengths))), thousands(tokens))
	}
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
	if shares := layoutShares(plan, in); shares != "" {
		fmt.Fprintf(hw, "CP × HP shares\t%s\n", shares)
	}
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

// layoutShares summarises the plan's CP × HP layouts (sched.Layout) by GPU
// kind: the mean tokens and heads a rank of each kind holds in a group with a
// layout, e.g. "H100-SXM: 9,830 tokens, 2.0 heads; A100-80G: 3,277 tokens,
// 2.0 heads (of 8)"; "" when no group has a layout.
func layoutShares(plan *sched.Plan, in sched.Inputs) string {
	type acc struct{ tokens, heads, n float64 }
	kinds := []string{"all"}
	kindOf := func(int) int { return 0 }
	if c := in.Cluster; c != nil {
		kinds = kinds[:0]
		for _, k := range c.Kinds {
			kinds = append(kinds, k.Name)
		}
		kindOf = c.KindOf
	}
	sums := make([]acc, len(kinds))
	found := false
	for _, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			if g.Layout == nil || len(g.Layout.ShardTokens) != g.Size || len(g.Layout.Heads) != g.Size {
				continue
			}
			found = true
			for i := range g.Size {
				a := &sums[kindOf(g.FirstRank+i)]
				a.tokens += float64(g.Layout.ShardTokens[i])
				a.heads += float64(g.Layout.Heads[i])
				a.n++
			}
		}
	}
	if !found {
		return ""
	}
	var parts []string
	for k, a := range sums {
		if a.n > 0 {
			parts = append(parts, fmt.Sprintf("%s: %s tokens, %.1f heads", kinds[k], thousands(int64(a.tokens/a.n+0.5)), a.heads/a.n))
		}
	}
	return strings.Join(parts, "; ") + fmt.Sprintf(" (of %d per TP rank), mean per rank in a group", in.HeadsPerRank())
}
