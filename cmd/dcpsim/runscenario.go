package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/step"
	"github.com/dcpsim/dcpsim/workload"
)

// policyRun is one policy's means over the measured iterations of a scenario.
type policyRun struct {
	name string
	err  error
	// Sums over the measured iterations.
	n                          int
	seconds, tokens            float64
	ppBubble, dpBubble, busy   float64
	mbCV, microbatches, events float64
	// planWork and planWall sum the policy's elementary work units and the
	// measured Go wall time of planning.
	planWork, planWall float64
	// exec and overlap are the CP execution the plans were priced with.
	exec    network.CPExec
	overlap bool
}

// runScenario simulates every policy of the scenario (or only policy) on the
// same batches with the cost model and prints the comparison table. It fails
// (exit 1) when no policy ran.
func runScenario(arg, policy string, stdout, stderr io.Writer) error {
	sc, err := resolveScenario(arg)
	if err != nil {
		return err
	}
	if sc.Sweep != nil {
		return badInput("scenario %s has a [sweep]: dcpsim run simulates the base scenario only; not implemented for sweeps yet", sc.Name)
	}
	names := sc.Run.Policies
	if policy != "" {
		names = []string{policy}
	}
	known := policies.Registry().Names()
	var todo, missing []string
	for _, n := range names {
		if slices.Contains(known, n) {
			todo = append(todo, n)
		} else {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "dcpsim run: skipping %s: not implemented yet (implemented: %s)\n",
			strings.Join(missing, ", "), strings.Join(known, ", "))
	}
	if len(todo) == 0 {
		return fmt.Errorf("no implemented policy to run in scenario %s", sc.Name)
	}
	comp, err := scenarioCompute(sc)
	if err != nil {
		return err
	}
	par := sc.Job.Parallel
	topo, err := network.NewTopology(*comp.Profile, sc.Job.Cluster, par.TP, par.PP)
	if err != nil {
		return err
	}
	o := overheadFor(sc, comp)
	sampler, err := sc.NewSampler()
	if err != nil {
		return err
	}
	in := scenarioInputs(sc, o.RatioSquareTokens)
	runs := make([]policyRun, len(todo))
	for i, name := range todo {
		runs[i] = runPolicy(sc, name, sampler.Batch, comp, topo, in)
	}
	return printRuns(stdout, sc, in, runs)
}

// runPolicy plans and simulates every iteration of sc with one policy; the
// first error stops it.
func runPolicy(sc *scenarios.Scenario, name string, batch func(int) workload.Batch, comp *calib.Compute,
	topo network.Topology, in sched.Inputs) policyRun {
	pr := policyRun{name: name}
	p, err := policies.Registry().New(name, func(v any) error { return sc.DecodeOptions(name, v) })
	if err != nil {
		pr.err = err
		return pr
	}
	exec, overlap := step.ExecFor(name)
	if exec == 0 {
		exec = network.Ulysses
	}
	exec, overlap = sc.CPExecFor(name, exec, overlap)
	pr.exec, pr.overlap = exec, overlap
	for k := range sc.Run.Iterations {
		lengths := batch(k).Lengths
		start := time.Now()
		plan, err := p.Plan(lengths, in)
		wall := time.Since(start)
		if err != nil {
			pr.err = fmt.Errorf("iteration %d: plan: %w", k, err)
			return pr
		}
		mc, err := step.NewModelCosts(comp, topo, lengths, exec, overlap)
		if err != nil {
			pr.err = err
			return pr
		}
		res, err := step.Simulate(plan, in.PP, in.VPP, max(sc.Job.Parallel.EP, 1), mc)
		if err != nil {
			if mc.Err() != nil {
				err = mc.Err()
			}
			pr.err = fmt.Errorf("iteration %d: %w", k, err)
			return pr
		}
		if k < sc.Run.WarmupIterations {
			continue
		}
		t := res.IterationSeconds()
		var tokens, busy float64
		for _, s := range lengths {
			tokens += float64(s)
		}
		for _, st := range res.Stages {
			for _, r := range st.Ranks {
				busy += float64(r.Busy)
			}
		}
		pr.n++
		pr.planWork += float64(plan.WorkUnits)
		pr.planWall += wall.Seconds()
		pr.seconds += t
		pr.tokens += tokens
		pr.ppBubble += res.PPBubble
		pr.dpBubble += res.DPBubble
		pr.busy += busy / (float64(len(res.Stages)*in.PoolRanks) * float64(res.Iteration))
		pr.mbCV += cv(res.MBSeconds)
		pr.microbatches += float64(len(plan.Microbatches))
		pr.events += float64(res.Events)
	}
	if pr.n == 0 {
		pr.err = errors.New("no iteration after the warm-up")
	}
	return pr
}

// cv is the coefficient of variation (population standard deviation / mean)
// of xs, 0 for fewer than two values or a zero mean.
func cv(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	if mean == 0 {
		return 0
	}
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	return math.Sqrt(v/float64(len(xs))) / mean
}

func printRuns(w io.Writer, sc *scenarios.Scenario, in sched.Inputs, runs []policyRun) error {
	j := sc.Job
	measured := sc.Run.Iterations - sc.Run.WarmupIterations
	fmt.Fprintf(w, "%s: %d×%s, %s, tp%d pp%d vpp%d ep%d, G = %d, B = %d; %d iterations (%d warm-up excluded from the means)\n",
		sc.Name, j.Cluster.GPUs, j.Cluster.GPU, j.Model.Name, j.Parallel.TP, in.PP, in.VPP, max(j.Parallel.EP, 1),
		in.PoolRanks, in.BudgetTokens, sc.Run.Iterations, sc.Run.WarmupIterations)
	fmt.Fprint(w, "cost model: calib compute + sim/network communication; CP exec")
	for i, r := range runs {
		sep := ","
		if i == 0 {
			sep = ""
		}
		a2a := "a2a exposed"
		if r.overlap {
			a2a = "a2a overlapped"
		}
		fmt.Fprintf(w, "%s %s: %s (%s)", sep, r.name, r.exec, a2a)
	}
	fmt.Fprint(w, "\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "policy\tstep time (s)\ttokens/day (B)\tspeedup of "+runs[0].name+" (×)\tPP bubble (%)\tDP bubble (%)\tcompute-busy (%)\tMB-time CV (%)\tMBs (count)\tplanner work (units)\tplanner Go (ms)\t")
	ok := 0
	var failed []policyRun
	for _, r := range runs {
		if r.err != nil {
			fmt.Fprintf(tw, "%s\terror (below)\t-\t-\t-\t-\t-\t-\t-\t-\t-\t\n", r.name)
			failed = append(failed, r)
			continue
		}
		ok++
		n := float64(r.n)
		step := r.seconds / n
		speed := "-"
		if ref := runs[0]; ref.err == nil {
			speed = fmt.Sprintf("%.2f", step/(ref.seconds/float64(ref.n)))
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%.2f\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.3g\t%.2f\t\n", r.name, step, r.tokens*86400/r.seconds/1e9, speed,
			100*r.ppBubble/n, 100*r.dpBubble/n, 100*r.busy/n, 100*r.mbCV/n, r.microbatches/n, r.planWork/n, 1e3*r.planWall/n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range failed {
		fmt.Fprintf(w, "%s: error: %v\n", r.name, r.err)
	}
	fmt.Fprintf(w, "\nmeans over %d iterations. tokens/day = batch tokens × 86400 / step time; speedup = this policy's step time / %s's; "+
		"compute-busy = time in domain ops (compute and exposed CP/MoE communication, including time held by a slower rank of the domain) / "+
		"iteration, mean over (stage, rank): 100 − PP − DP − gradient sync and optimizer share; MB-time CV = std/mean of the microbatches' "+
		"per-stage times; planner work = the policy's elementary operations per plan and planner Go = this machine's wall time "+
		"for them: neither is on the simulated critical path yet (how to price a Python planner's stall is open, see README)\n", measured, runs[0].name)
	if ok == 0 {
		return errors.New("no policy ran")
	}
	return nil
}
