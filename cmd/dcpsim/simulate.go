package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/report"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sim/network"
	"github.com/dcpsim/dcpsim/sim/pipeline"
	"github.com/dcpsim/dcpsim/sim/step"
	"github.com/dcpsim/dcpsim/workload"
)

// runOptions choose what simulateScenario does beyond the scenario itself.
type runOptions struct {
	// policy, when set, runs only that policy.
	policy string
	// traceRanks are the HDP ranks drawn in timelines (nil: representative
	// ranks, see timelineRanks).
	traceRanks []int
	// dollarsPerGPUHour overrides the scenario's when > 0.
	dollarsPerGPUHour float64
	// parallel runs the policies concurrently (results do not depend on it,
	// except the measured Go planner times).
	parallel bool
	// timelines builds one Timeline per policy (of the first measured
	// iteration).
	timelines bool
}

// scenarioRun is everything a run of one scenario produced.
type scenarioRun struct {
	summary   report.Summary
	rows      []report.IterationRow
	timelines []report.Timeline
	// closedFormCap is HyDra's closed-form C* on the first measured batch (0
	// without hydra).
	closedFormCap int
	// skipped are policies of the scenario that are not implemented.
	skipped []string
}

// scenarioHash is the SHA-256 of the scenario's TOML source, with the sweep
// point's name appended for a point (so every point of a sweep differs).
func scenarioHash(sc *scenarios.Scenario) string {
	h := sha256.New()
	h.Write(sc.Source)
	h.Write([]byte{0})
	h.Write([]byte(sc.Name))
	fmt.Fprintf(h, "\x00cap=%d", sc.HydraCap)
	for _, p := range sc.Run.Policies {
		h.Write([]byte("\x00" + p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// simulateScenario plans and simulates every policy of sc (or opts.policy) on
// the same batches and summarises them. A policy that fails is reported in its
// PolicySummary.Error; an error is returned only when the scenario itself
// cannot run (no implemented policy, a broken cost model).
func simulateScenario(sc *scenarios.Scenario, opts runOptions) (*scenarioRun, error) {
	names := sc.Run.Policies
	if opts.policy != "" {
		names = []string{opts.policy}
	}
	known := policies.Registry().Names()
	out := &scenarioRun{}
	var todo []string
	for _, n := range names {
		if slices.Contains(known, n) {
			todo = append(todo, n)
		} else {
			out.skipped = append(out.skipped, n)
		}
	}
	if len(todo) == 0 {
		return out, fmt.Errorf("no implemented policy to run in scenario %s (implemented: %v)", sc.Name, known)
	}
	comp, err := scenarioCompute(sc)
	if err != nil {
		return nil, err
	}
	par := sc.Job.Parallel
	topo, err := network.NewTopology(*comp.Profile, sc.Job.Cluster, par.TP, par.PP)
	if err != nil {
		return nil, err
	}
	o := overheadFor(sc, comp)
	sampler, err := sc.NewSampler()
	if err != nil {
		return nil, err
	}
	batches := make([]workload.Batch, sc.Run.Iterations)
	for k := range batches {
		batches[k] = sampler.Batch(k)
	}
	in := scenarioInputs(sc, o.RatioSquareTokens)
	dollars := sc.Run.DollarsPerGPUHour
	if opts.dollarsPerGPUHour > 0 {
		dollars = opts.dollarsPerGPUHour
	}
	j := sc.Job
	out.summary = report.Summary{
		Scenario: sc.Name, Hash: scenarioHash(sc), Seed: sc.Run.Seed,
		Iterations: sc.Run.Iterations, WarmupIterations: sc.Run.WarmupIterations,
		GPUs: j.Cluster.GPUs, GPU: j.Cluster.GPU, Model: j.Model.Name,
		TP: par.TP, PP: in.PP, VPP: in.VPP, EP: max(par.EP, 1), PoolRanks: in.PoolRanks,
		BudgetTokens: in.BudgetTokens, ContextTokens: j.ContextTokens,
		DollarsPerGPUHour: dollars, PlannerStall: sc.PlannerStall, UlyssesAcrossNodes: sc.UlyssesAcrossNodes,
	}
	results := make([]policyOutcome, len(todo))
	var g errgroup.Group
	if !opts.parallel {
		g.SetLimit(1)
	}
	for i, name := range todo {
		g.Go(func() error {
			results[i] = runPolicyIterations(sc, name, batches, comp, topo, in, opts)
			return nil
		})
	}
	_ = g.Wait() // runPolicyIterations reports errors in its outcome
	for _, r := range results {
		out.summary.Policies = append(out.summary.Policies, r.summary)
		out.rows = append(out.rows, r.rows...)
		if r.timeline != nil {
			out.timelines = append(out.timelines, *r.timeline)
		}
	}
	finishSummary(&out.summary)
	if slices.Contains(todo, hydra.Name) && sc.Run.WarmupIterations < len(batches) {
		t, err := hydra.Solve(hydra.BatchSums(batches[sc.Run.WarmupIterations].Lengths), in, 0)
		if err == nil {
			out.closedFormCap = t.Cap
		}
	}
	return out, nil
}

// policyOutcome is one policy's share of a scenarioRun.
type policyOutcome struct {
	summary  report.PolicySummary
	rows     []report.IterationRow
	timeline *report.Timeline
}

// newPolicy builds a registered policy with the scenario's options, and the
// sweep's forced HyDra cap.
func newPolicy(sc *scenarios.Scenario, name string) (sched.Policy, error) {
	return policies.Registry().New(name, func(v any) error {
		if err := sc.DecodeOptions(name, v); err != nil {
			return err
		}
		if o, ok := v.(*hydra.Options); ok && sc.HydraCap > 0 {
			o.Cap = sc.HydraCap
		}
		return nil
	})
}

// runPolicyIterations plans and simulates every iteration with one policy;
// the first error ends it (reported in the summary's Error).
func runPolicyIterations(sc *scenarios.Scenario, name string, batches []workload.Batch, comp *calib.Compute,
	topo network.Topology, in sched.Inputs, opts runOptions) policyOutcome {
	ps := report.PolicySummary{Policy: name}
	out := policyOutcome{}
	fail := func(err error) policyOutcome {
		ps.Error = err.Error()
		out.summary = ps
		out.rows = nil
		out.timeline = nil
		return out
	}
	p, err := newPolicy(sc, name)
	if err != nil {
		return fail(err)
	}
	exec, overlap := step.ExecFor(name)
	if exec == 0 {
		exec = sched.Ulysses
	}
	exec, overlap = sc.CPExecFor(name, exec, overlap)
	ps.CPExec, ps.OverlapAllToAll = exec.String(), overlap
	ep := max(sc.Job.Parallel.EP, 1)
	slots := map[int]float64{}
	var steps []float64
	var tokens, seconds float64
	for k, b := range batches {
		lengths := b.Lengths
		start := time.Now()
		plan, err := p.Plan(lengths, in)
		wall := time.Since(start).Seconds()
		if err != nil {
			return fail(fmt.Errorf("iteration %d: plan: %w", k, err))
		}
		mc, err := step.NewModelCosts(comp, topo, lengths, exec, overlap)
		if err != nil {
			return fail(err)
		}
		mc.UlyssesAcrossNodes = sc.UlyssesAcrossNodes
		stall := step.PlannerStall(plan.StallWork)
		if sc.PlannerStall == scenarios.PlannerStallModeled {
			mc.PlannerSeconds = stall
		}
		res, err := step.Simulate(plan, in.PP, in.VPP, ep, mc)
		if err != nil {
			if mc.Err() != nil {
				err = mc.Err()
			}
			return fail(fmt.Errorf("iteration %d: %w", k, err))
		}
		warm := k < sc.Run.WarmupIterations
		t := res.IterationSeconds()
		tok := b.Tokens()
		cvv, maxMin := spread(res.MBSeconds)
		out.rows = append(out.rows, report.IterationRow{
			Policy: name, Iteration: k, Warmup: warm, StepSeconds: t, Tokens: tok, Sequences: len(lengths),
			Microbatches: len(plan.Microbatches), ComputeShare: res.ComputeShare, ExposedCommShare: res.ExposedCommShare,
			PPBubbleShare: res.PPBubble, DPBubbleShare: res.DPBubble, PlannerStallShare: res.StallShare,
			MBTimeCV: cvv, MBTimeMaxOverMin: maxMin, PlannerModeledSeconds: stall, PlannerGoSeconds: wall,
			PlannerWorkUnits: plan.WorkUnits,
		})
		if warm {
			continue
		}
		if opts.timelines && out.timeline == nil {
			tl, err := buildTimeline(name, k, plan, res, opts.traceRanks)
			if err != nil {
				return fail(fmt.Errorf("iteration %d: timeline: %w", k, err))
			}
			out.timeline = tl
		}
		ps.Iterations++
		steps = append(steps, t)
		seconds += t
		tokens += float64(tok)
		ps.ComputeShare += res.ComputeShare
		ps.ExposedCommShare += res.ExposedCommShare
		ps.PPBubbleShare += res.PPBubble
		ps.DPBubbleShare += res.DPBubble
		ps.PlannerStallShare += res.StallShare
		ps.SyncShare += res.SyncShare
		ps.MBTimeCV += cvv
		ps.MBTimeMaxOverMin += maxMin
		ps.Microbatches += float64(len(plan.Microbatches))
		ps.PlannerModeledSeconds += stall
		ps.PlannerGoSeconds += wall
		ps.PlannerWorkUnits += float64(plan.WorkUnits)
		ps.MBSeconds = append(ps.MBSeconds, res.MBSeconds...)
		total := float64(in.PoolRanks * len(plan.Microbatches))
		for _, d := range sched.ComputeStats(plan, lengths).Degrees {
			slots[d.Degree] += d.Share * total
		}
	}
	if ps.Iterations == 0 {
		return fail(errors.New("no iteration after the warm-up"))
	}
	n := float64(ps.Iterations)
	for _, f := range []*float64{&ps.ComputeShare, &ps.ExposedCommShare, &ps.PPBubbleShare, &ps.DPBubbleShare,
		&ps.PlannerStallShare, &ps.SyncShare, &ps.MBTimeCV, &ps.MBTimeMaxOverMin, &ps.Microbatches,
		&ps.PlannerModeledSeconds, &ps.PlannerGoSeconds, &ps.PlannerWorkUnits} {
		*f /= n
	}
	ps.StepSecondsMean = seconds / n
	ps.StepSecondsP95 = percentile(steps, 0.95)
	ps.TokensPerDay = tokens * 86400 / seconds
	var all float64
	for _, v := range slots {
		all += v
	}
	for _, d := range slices.Sorted(maps.Keys(slots)) {
		ps.DegreeShares = append(ps.DegreeShares, report.DegreeShare{Degree: d, Share: slots[d] / all})
	}
	out.summary = ps
	return out
}

// finishSummary fills the columns that compare policies or need the layout:
// the first policy's speedup and the cost per 10^12 tokens.
func finishSummary(s *report.Summary) {
	var ref float64
	if len(s.Policies) > 0 && s.Policies[0].Error == "" {
		ref = s.Policies[0].StepSecondsMean
	}
	for i := range s.Policies {
		p := &s.Policies[i]
		if p.Error != "" {
			continue
		}
		if ref > 0 {
			p.SpeedupOfFirst = p.StepSecondsMean / ref
		}
		if p.TokensPerDay > 0 {
			hours := 1e12 / p.TokensPerDay * 24
			p.DollarsPer1TTokens = float64(s.GPUs) * s.DollarsPerGPUHour * hours
		}
	}
}

// spread returns the coefficient of variation (population std / mean) and the
// max/min ratio of xs (0 and 1 for fewer than two values; max/min is +Inf-safe:
// 0 when the minimum is 0).
func spread(xs []float64) (cv, maxOverMin float64) {
	if len(xs) < 2 {
		return 0, 1
	}
	var sum float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range xs {
		sum += x
		lo, hi = min(lo, x), max(hi, x)
	}
	mean := sum / float64(len(xs))
	if mean == 0 {
		return 0, 1
	}
	var v float64
	for _, x := range xs {
		v += (x - mean) * (x - mean)
	}
	if lo > 0 {
		maxOverMin = hi / lo
	}
	return math.Sqrt(v/float64(len(xs))) / mean, maxOverMin
}

// percentile returns the nearest-rank q-quantile of xs (0 for none).
func percentile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// timelineRanks picks the ranks a timeline draws: the requested ones inside
// the pool, or by default rank 0 plus the busiest and the idlest rank of stage
// 0 (the slowest and fastest ranks show the bubbles best).
func timelineRanks(res *step.Result, want []int) []int {
	g := len(res.Stages[0].Ranks)
	var ranks []int
	if len(want) > 0 {
		for _, r := range want {
			if r >= 0 && r < g {
				ranks = append(ranks, r)
			}
		}
	} else {
		busiest, idlest := 0, 0
		for r, rr := range res.Stages[0].Ranks {
			if rr.Busy > res.Stages[0].Ranks[busiest].Busy {
				busiest = r
			}
			if rr.Busy < res.Stages[0].Ranks[idlest].Busy {
				idlest = r
			}
		}
		ranks = []int{0, busiest, idlest}
	}
	slices.Sort(ranks)
	return slices.Compact(ranks)
}

// buildTimeline draws one iteration of a plan for the chosen ranks: every op
// of every stage on those ranks, the planner stall, gradient sync and
// optimizer, and the p2p flows between stages (from the producing op's end to
// the consuming op's start, following Megatron's dependencies).
func buildTimeline(policy string, iteration int, plan *sched.Plan, res *step.Result, want []int) (*report.Timeline, error) {
	ranks := timelineRanks(res, want)
	if len(ranks) == 0 {
		return nil, fmt.Errorf("no trace rank inside the pool [0, %d)", plan.PoolRanks)
	}
	pp, v := res.PP, res.VPP
	tl := &report.Timeline{Policy: policy, Iteration: iteration, IterationNanos: int64(res.Iteration),
		PlannerStallNanos: int64(res.PlannerStall), Stages: pp, Ranks: ranks}
	var sch *pipeline.Schedule
	for _, r := range ranks {
		// The rank's domains in MB order.
		var doms []int
		for i := range res.Domains {
			if d := &res.Domains[i]; d.FirstRank <= r && r <= d.LastRank() {
				doms = append(doms, i)
			}
		}
		for s := range pp {
			if res.PlannerStall > 0 {
				tl.Slices = append(tl.Slices, report.Slice{Stage: s, Rank: r, Kind: report.PlannerStall, MB: -1, Chunk: -1,
					EndNanos: int64(res.PlannerStall)})
			}
			st := &res.Stages[s]
			tl.Slices = append(tl.Slices,
				report.Slice{Stage: s, Rank: r, Kind: report.GradSync, MB: -1, Chunk: -1,
					StartNanos: int64(st.GradSyncStart), EndNanos: int64(st.GradSyncEnd)},
				report.Slice{Stage: s, Rank: r, Kind: report.Optimizer, MB: -1, Chunk: -1,
					StartNanos: int64(st.GradSyncEnd), EndNanos: int64(st.OptimizerEnd)})
		}
		if len(doms) == 0 {
			continue
		}
		if sch == nil || sch.Microbatches() != len(doms) {
			var err error
			if sch, err = pipeline.New(pp, v, len(doms), 0); err != nil {
				return nil, err
			}
		}
		for s := range pp {
			for _, di := range doms {
				mb := res.Domains[di].MB
				for c := range v {
					for _, b := range []bool{false, true} {
						op := res.Ops[res.OpIndex(s, di, c, b)]
						kind := report.Forward
						if b {
							kind = report.Backward
						}
						tl.Slices = append(tl.Slices, report.Slice{Stage: s, Rank: r, Kind: kind, MB: mb, Chunk: c,
							StartNanos: int64(op.Start), EndNanos: int64(op.End), ExposedCommNanos: int64(op.ExposedComm)})
						ds, dop, ok := sch.Dep(s, pipeline.Op{Backward: b, Chunk: int32(c)})
						if !ok || ds == s {
							continue
						}
						from := res.Ops[res.OpIndex(ds, di, int(dop.Chunk), dop.Backward)]
						tl.Flows = append(tl.Flows, report.Flow{Rank: r, FromStage: ds, ToStage: s, MB: mb, Chunk: c, Backward: b,
							FromNanos: int64(from.End), ToNanos: int64(op.Start)})
					}
				}
			}
		}
	}
	slices.SortFunc(tl.Slices, func(a, b report.Slice) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.StartNanos, b.StartNanos),
			cmp.Compare(b.EndNanos, a.EndNanos))
	})
	return tl, nil
}
