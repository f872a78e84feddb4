package report

import (
	"fmt"
	"github.com/dcpsim/dcpsim/results"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
)

// WriteRunTable prints a run summary as a comparison table (one row per
// policy), the CP-degree shares and how to read the columns; with timings
// (nil: none), the measured Go planner times on a line of their own, after
// the table, so the table itself is the same on every run.
func WriteRunTable(w io.Writer, s *results.Summary, timings *results.Timings) error {
	measured := s.Iterations - s.WarmupIterations
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
	fmt.Fprintf(w, "%s: %s, %s, tp%d pp%d vpp%d ep%d%s, G = %d, B = %s; %d iterations (%d warm-up excluded from the means)\n",
		s.Scenario, gpus, s.Model, s.TP, s.PP, s.VPP, s.EP, recompute, s.PoolRanks, budget, s.Iterations, s.WarmupIterations)
	for _, pr := range s.Profiles {
		if pr.Name == pr.Kind && strings.HasPrefix(pr.File, "calib/profiles/") {
			continue // the kind's own embedded profile
		}
		fmt.Fprintf(w, "profile: %s prices the cluster's %s (%s, sha256 %.12s)\n", pr.Name, pr.Kind, pr.File, pr.SHA256)
		for _, u := range pr.Uncalibrated {
			fmt.Fprintf(w, "profile: %s\n", u)
		}
	}
	fmt.Fprint(w, "cost model: calib compute + sim/network communication; CP exec")
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
			fmt.Fprintf(w, "%s %s: %s (%s)", sep, p.Policy, p.CPExec, a2a)
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
	fmt.Fprintf(w, "; %s; %s\n\n", span, stall)
	ref := s.Policies[0].Policy
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tstep mean (s)\tstep p95 (s)\ttokens/day (B)\tstep / "+ref+" (×)\tMFU (%)\tPP bubble (%)\tDP bubble (%)\t"+
		"PP rank 0 (%)\tDP rank 0 (%)\tcompute-busy (%)\texposed comm (%)\tplanner stall (%)\tMB-time CV (%)\tMB max/min (×)\tMBs per rank\t"+
		"EP wait (%)\tDP straggler (×)\tplanner modelled (ms)\t$ per 1T tokens (k$)\tpeak memory (GiB)\t")
	var failed []results.PolicySummary
	for _, p := range s.Policies {
		if p.Error != "" {
			what := "error (below)"
			switch {
			case p.Skipped:
				what = "skipped (below)"
			case p.OutOfMemory != nil:
				what = "out of memory (below)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.Policy, what, strings.Repeat("-\t", 20))
			failed = append(failed, p)
			continue
		}
		speed := "-"
		if p.SpeedupOfFirst > 0 {
			speed = fmt.Sprintf("%.2f", p.SpeedupOfFirst)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.2f\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f / %.1f\t\n",
			p.Policy, p.StepSecondsMean, p.StepSecondsP95, p.TokensPerDay/1e9, speed, 100*p.MFU,
			100*p.PPBubbleShare, 100*p.DPBubbleShare, 100*p.PPBubbleRank0Share, 100*p.DPBubbleRank0Share, 100*p.ComputeShare, 100*p.ExposedCommShare, 100*p.PlannerStallShare,
			100*p.MBTimeCV, p.MBTimeMaxOverMin, p.Microbatches, 100*p.EPBarrierWaitShare, p.DPStragglerRatio, 1e3*p.PlannerModeledSeconds,
			p.DollarsPer1TTokens/1e3, p.PeakMemoryMaxBytes/(1<<30), p.HBMBytes/(1<<30))
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
	for _, p := range failed {
		what := "error"
		if p.Skipped {
			what = "skipped"
		}
		fmt.Fprintf(w, "%s: %s: %s\n", p.Policy, what, p.Error)
	}
	for _, p := range s.Policies {
		if e := p.External; e != nil {
			fmt.Fprintf(w, "%s: external policy %q, its stderr in %s", p.Policy, strings.Join(e.Command, " "), e.Log)
			if e.MeasuredStall {
				fmt.Fprint(w, "; its planning stall is its measured round trip (it reports no stall_work or planner_seconds), so its step times depend on this machine")
			}
			if e.CloseError != "" {
				fmt.Fprintf(w, "; %s", e.CloseError)
			}
			fmt.Fprintln(w)
		}
		if p.UlyssesFallbackShare > 0 {
			fmt.Fprintf(w, "%s: %.1f%% of GPU-slots are in groups wider than the query heads per TP rank, which Ulysses cannot run: "+
				"priced as Ulysses × ring (Megatron's hierarchical CP)\n", p.Policy, 100*p.UlyssesFallbackShare)
		}
	}
	fmt.Fprintln(w, "\nshare of GPU-slots (rank × microbatch) at each CP degree, % (idle = a rank holding nothing in an MB):")
	for _, p := range s.Policies {
		if p.Error != "" {
			continue
		}
		fmt.Fprintf(w, "  %-8s %s\n", p.Policy, sched.FormatDegreeShares(p.DegreeShares, "%s: %.1f", "  "))
	}
	fmt.Fprintf(w, "\nmeans over %d iterations; p95 is the nearest-rank 95th percentile of the step times. "+
		"tokens/day = batch tokens × 86400 / step time; step / %s = this policy's mean step time over %s's (%s's speedup over it). "+
		"The shares of the iteration (compute-busy, exposed comm, PP and DP bubble, planner stall, and the gradient sync + optimizer rest) "+
		"are means over (stage, rank) and sum to 100; PP and DP rank 0 are the bubbles of rank 0 alone (stage 0, HDP rank 0), as the HyDra paper measures them; "+
		"MFU = model FLOPs (6 per active weight per token, attention at 3× its forward) over the GPUs' BF16 peak; compute-busy includes time a light rank is held by a slower one of its CP/EP domain, "+
		"which EP wait is on its own (the share of GPU-time held at the EP barrier by a slower CP group, the HyDra paper's Fig. 7); "+
		"DP straggler = per stage the slowest rank's time to its last backward over the median rank's, averaged over the stages (Fig. 6). "+
		"MB-time = a microbatch's forward+backward time through one stage. planner modelled = the policy's planning work priced at the "+
		"measured CPython per-operation costs (calib.CPython), on the critical path (FlexSP: its MILPs' CBC work at calib.CBC, solved a batch ahead, so only the part beyond the previous step); "+
		"$ per 1T tokens at $%g per GPU-hour. peak memory = the most any GPU held in a measured iteration (model states + a 10 GB reserve + "+
		"the activations it kept for its pipeline's backward passes, from the simulated schedule) over that GPU's HBM; "+
		"a plan over its HBM is that policy's out-of-memory, never timed.\n", measured, ref, ref, ref, s.DollarsPerGPUHour)
	return nil
}
