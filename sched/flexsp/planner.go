package flexsp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/sched"
)

// Plan runs FlexSP's Sequence Blaster and Parallelism Planner on the batch
// (see the package doc): it sorts the sequences, chunks them into M
// microbatches for each candidate M, solves each microbatch's MILP, and
// keeps the M whose microbatches' summed Cmax is least.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		return nil, fmt.Errorf("flexsp: %w", err)
	}
	solver, costs, err := p.setup(in)
	if err != nil {
		return nil, err
	}
	pl := &planner{opts: p.opts, in: in, solver: solver, timing: newTiming(costs), lengths: lengths,
		degrees: p.degrees(in, costs), diag: &Diagnostics{Costs: costs.Source}}
	pl.diag.Degrees = pl.degrees
	if len(pl.degrees) == 0 {
		return nil, cannotPlan("no candidate group size: min_group_size = %d exceeds the widest group (%d ranks: pool, engine and cost limits)",
			p.opts.MinGroupSize, min(in.DegreeLimit(), costs.MaxDegree()))
	}
	return pl.plan()
}

// planner is one Plan call's state.
type planner struct {
	opts    Options
	in      sched.Inputs
	solver  milp.Solver
	timing  timing
	degrees []int
	lengths []int
	diag    *Diagnostics
	work    int64 // WorkUnits
	mu      sync.Mutex
	stall   sched.StallWork
}

// candidate is one microbatch count tried, with its microbatches.
type candidate struct {
	m     int
	cuts  []int
	mbs   []mbSolve
	total float64 // Σ Cmax (real lengths)
}

func (pl *planner) plan() (*sched.Plan, error) {
	in := pl.in
	order := sortedOrder(pl.lengths)
	items := make([]int, len(order))
	for i, id := range order {
		items[i] = pl.lengths[id]
	}
	pl.work += int64(len(items))
	if need := minDegree(items[0], in.BudgetTokens); need > pl.degrees[len(pl.degrees)-1] {
		return nil, cannotPlan("sequence of %d tokens needs %d ranks at B = %d; the widest candidate group has %d (pool, engine and cost limits)",
			items[0], need, in.BudgetTokens, pl.degrees[len(pl.degrees)-1])
	}
	prefix := prefixSums(items)
	capacity := int64(in.PoolRanks) * int64(in.BudgetTokens)
	n := len(items)
	// M_min: ⌈tokens / (G·B)⌉, raised until no chunk exceeds the pool.
	mMin := int(max(1, (prefix[n]+capacity-1)/capacity))
	pl.diag.TokenBoundMicrobatches = mMin
	for mMin < n && minMaxChunk(prefix, n, mMin) > capacity {
		mMin++
	}
	pl.diag.MinMicrobatches = mMin
	var best *candidate
	next := mMin
	for round := 0; best == nil; round++ {
		if round > 0 && round > maxExtraRounds || next > n {
			return nil, cannotPlan("no microbatch count in [%d, %d] gives every microbatch a feasible plan (%s)", mMin, next-1, pl.diag.lastReason())
		}
		for tried := 0; tried < pl.opts.MicrobatchCounts && next <= n; next++ {
			if !pl.legal(next) {
				continue
			}
			tried++
			c, err := pl.evaluate(items, order, next, best)
			if err != nil {
				return nil, err
			}
			if c != nil && (best == nil || c.total < best.total) {
				best = c
			}
		}
	}
	return pl.build(best, order), nil
}

// maxExtraRounds bounds how many more rounds of M' counts Plan tries past
// the first when none of them is feasible (the public code keeps
// incrementing; this keeps a hopeless batch from running for ever).
const maxExtraRounds = 3

// legal reports whether Megatron's schedule runs m microbatches (always
// with vpp = 1).
func (pl *planner) legal(m int) bool {
	return pl.in.VPP <= 1 || sched.CheckMicrobatchCount(pl.in.PP, pl.in.VPP, m, pl.in.MicrobatchGroupSize) == nil
}

// evaluate chunks the sorted sequences into m microbatches and plans each;
// it returns nil when a microbatch has no plan, or when the microbatches'
// lower bounds already add up to best's total (m cannot beat it: skipped
// unsolved).
func (pl *planner) evaluate(items, order []int, m int, best *candidate) (*candidate, error) {
	cuts := chunk(items, m)
	cd := CandidateDiag{Microbatches: m}
	var lower float64
	for k := range m {
		lower += pl.problem(nil, true).lowerBoundLengths(items[cuts[k]:cuts[k+1]])
	}
	cd.LowerBoundSeconds = lower
	if best != nil && lower >= best.total {
		cd.Outcome = "skipped: its lower bound is no better than the best count's predicted time"
		pl.diag.Candidates = append(pl.diag.Candidates, cd)
		return nil, nil
	}
	c := &candidate{m: m, cuts: cuts, mbs: make([]mbSolve, m)}
	errs := make([]error, m)
	// The first microbatch holds the longest sequences: when a count has
	// no plan it is nearly always there. Solve it alone first, and the rest
	// only if it has a plan (the same solves whatever the workers).
	c.mbs[0], errs[0] = pl.solveMB(order[cuts[0]:cuts[1]])
	if errs[0] == nil && c.mbs[0].infeasible != "" {
		cd.Outcome = fmt.Sprintf("infeasible: microbatch 0 (%d sequences): %s", len(c.mbs[0].ids), c.mbs[0].infeasible)
		pl.diag.Candidates = append(pl.diag.Candidates, cd)
		return nil, nil
	}
	sem := make(chan struct{}, pl.opts.Workers)
	var wg sync.WaitGroup
	for k := 1; k < m; k++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			c.mbs[k], errs[k] = pl.solveMB(order[cuts[k]:cuts[k+1]])
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for k := range c.mbs {
		mb := &c.mbs[k]
		if mb.infeasible != "" {
			cd.Outcome = fmt.Sprintf("infeasible: microbatch %d (%d sequences): %s", k, len(mb.ids), mb.infeasible)
			pl.diag.Candidates = append(pl.diag.Candidates, cd)
			return nil, nil
		}
		c.total += mb.cmax
	}
	cd.PredictedSeconds = c.total
	cd.Outcome = "planned"
	pl.diag.Candidates = append(pl.diag.Candidates, cd)
	return c, nil
}

// problem returns the MILP problem of a microbatch over buckets.
func (pl *planner) problem(buckets []bucket, fill bool) *mbProblem {
	return &mbProblem{buckets: buckets, degrees: pl.degrees, pool: pl.in.PoolRanks, budget: pl.in.BudgetTokens,
		timing: pl.timing, explicit: pl.opts.ExplicitGroups, fillPool: fill}
}

// mbSolve is the Parallelism Planner's answer for one microbatch.
type mbSolve struct {
	ids        []int // the microbatch's sequence ids
	groups     []sched.Group
	cmax       float64 // the groups' slowest time, true lengths (the code's "Time")
	objective  float64 // the MILP's C (bucketed lengths; see the package doc)
	lower      float64 // lower bound on C (bucketed lengths)
	buckets    int
	status     string
	fill       bool   // the solution covers the pool with non-empty groups
	explicit   bool   // every group modelled one by one (the paper's formulation)
	vars       int    // the last model's variables
	infeasible string // why the microbatch has no plan ("" when it has)
}

// solveMB buckets a microbatch's sequences and solves its MILP: first as the
// public code poses it (groups covering the pool, none empty), then, if that
// has no solution, with at most the pool (the paper's Σ d·m <= N).
func (pl *planner) solveMB(ids []int) (mbSolve, error) {
	out := mbSolve{ids: ids}
	lens := make([]int, len(ids))
	for i, id := range ids {
		lens[i] = pl.lengths[id]
	}
	capacity := int64(pl.in.PoolRanks) * int64(pl.in.BudgetTokens)
	buckets, evals := bucketize(lens, pl.opts.Buckets, capacity)
	out.buckets = len(buckets)
	var work int64 = evals
	defer func() { pl.addWork(work) }()
	for _, fill := range []bool{true, false} {
		prob := pl.problem(buckets, fill)
		if exact := prob.perGroupVariables(); exact <= ExactVariables {
			prob.explicit = pl.in.PoolRanks // every group explicit: the paper's formulation
			out.explicit = true
		}
		start, ops := prob.bestStart()
		work += ops
		lower := prob.lowerBound()
		upper := prob.upperBound()
		if start != nil {
			upper = min(upper, groupsCmax(start))
		}
		fm := prob.build(lower, upper)
		if fm == nil {
			out.infeasible = "a sequence fits no candidate group size"
			return out, nil
		}
		out.vars, out.lower, out.fill = fm.model.NumVars(), lower, fill
		var values []float64
		if start != nil {
			values = fm.start(start)
		}
		status := "start within the gap (no solve)"
		if values == nil || groupsCmax(start) > lower*(1+pl.opts.Gap) { // else the start is provably within the gap
			fm.model.SetStart(values)
			sol, err := pl.solver.Solve(context.Background(), fm.model,
				milp.Limits{Nodes: pl.opts.NodeLimit, TimeSeconds: pl.opts.TimeLimitSeconds, RelativeGap: pl.opts.Gap})
			if err != nil {
				return out, fmt.Errorf("flexsp: microbatch MILP (%d buckets, %d variables): %w", len(buckets), fm.model.NumVars(), err)
			}
			pl.addSolve(sol)
			work += sol.Nodes + sol.Iterations
			status = sol.Status.String()
			switch {
			case sol.Status == milp.Unbounded:
				return out, fmt.Errorf("flexsp: microbatch MILP unbounded (a model bug)")
			case !sol.Status.HasSolution():
				out.infeasible = "the MILP has no solution (" + status + ")"
				continue // with fill: try the paper's relaxation
			}
			values = sol.Values
		} else {
			pl.addSkip()
		}
		out.status = status
		out.objective = values[fm.cmax]
		groups, why, ops, err := pl.decode(fm, prob, values, ids)
		work += ops
		if err != nil {
			return out, err
		}
		// The aggregated classes relax the paper's rows to their means, so
		// a solution may not pack within B, or pack slower than the start
		// (a real plan of the paper's rows): keep the faster real plan.
		if start != nil {
			alt, _, o, _ := pl.decodeStart(start, prob, ids)
			work += o
			if why != "" || planCmax(alt) < planCmax(groups) {
				if why != "" {
					pl.addSplitFailure()
					out.status += "; unpackable, heuristic start kept"
				} else {
					out.status += "; heuristic start faster"
				}
				groups, why = alt, ""
			}
		}
		if why != "" {
			out.infeasible = why
			pl.addSplitFailure()
			return out, nil
		}
		out.infeasible = ""
		out.groups, out.cmax = pl.place(groups)
		return out, nil
	}
	return out, nil
}

// plannedGroup is a group of a decoded solution: its size, its sequence ids
// and its time on their true lengths.
type plannedGroup struct {
	degree int
	ids    []int
	load   float64
}

// decode turns a solution into groups of real sequences: within each bucket
// the longest sequences go to the widest classes first; an explicit group
// takes its counts; an aggregated class's sequences are dealt onto its n
// groups (deal: longest first to the least loaded group with room), or, if
// that packing fails, first-fit by tokens. why is set when no packing fits
// (the microbatch then has no plan at this count); err when the solver's
// answer contradicts the model.
func (pl *planner) decode(fm *formulation, prob *mbProblem, values []float64, ids []int) (groups []plannedGroup, why string, ops int64, err error) {
	byBucket := pl.byBucket(prob, ids)
	classes := slices.Clone(fm.classes)
	slices.SortStableFunc(classes, func(a, b class) int { return cmp.Compare(b.Degree, a.Degree) })
	next := make([]int, len(prob.buckets))
	for _, c := range classes {
		var got []int
		for q, x := range c.x {
			if x < 0 {
				continue
			}
			k := int(math.Round(values[x]))
			if k < 0 || next[q]+k > len(byBucket[q]) {
				return nil, "", ops, fmt.Errorf("flexsp: solver answer places %d sequences of bucket %d, which holds %d", next[q]+k, q, len(byBucket[q]))
			}
			got = append(got, byBucket[q][next[q]:next[q]+k]...)
			next[q] += k
		}
		n := c.groups(values)
		if len(got) == 0 {
			continue
		}
		if n < 1 || n > c.Max {
			return nil, "", ops, fmt.Errorf("flexsp: solver answer gives %d sequences to %d groups of size %d (at most %d)", len(got), n, c.Degree, c.Max)
		}
		slices.SortStableFunc(got, func(a, b int) int { return cmp.Compare(pl.lengths[b], pl.lengths[a]) })
		placed, o := pl.pack(got, c.Degree, n)
		ops += o
		if placed == nil {
			return nil, fmt.Sprintf("the %d sequences of %d groups of %d ranks fit no packing within B", len(got), n, c.Degree), ops, nil
		}
		groups = append(groups, placed...)
	}
	for q := range next {
		if next[q] != len(byBucket[q]) {
			return nil, "", ops, fmt.Errorf("flexsp: solver answer places %d of bucket %d's %d sequences", next[q], q, len(byBucket[q]))
		}
	}
	return groups, "", ops, nil
}

// decodeStart turns a heuristic start's groups (bucket counts) into groups
// of real sequences: bucket by bucket, the longest sequences to the widest
// (then heaviest) groups. Real lengths are at most their bucket's boundary,
// so every group stays within B.
func (pl *planner) decodeStart(start []startGroup, prob *mbProblem, ids []int) ([]plannedGroup, string, int64, error) {
	byBucket := pl.byBucket(prob, ids)
	order := make([]int, len(start))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(start[b].Degree, start[a].Degree); c != 0 {
			return c
		}
		return cmp.Compare(start[b].load, start[a].load)
	})
	next := make([]int, len(prob.buckets))
	var out []plannedGroup
	for _, i := range order {
		g := plannedGroup{degree: start[i].Degree, load: pl.timing.b1}
		for q, k := range start[i].counts {
			for _, id := range byBucket[q][next[q] : next[q]+k] {
				g.ids = append(g.ids, id)
				g.load += pl.timing.seqSeconds(pl.lengths[id], g.degree)
			}
			next[q] += k
		}
		if len(g.ids) > 0 {
			out = append(out, g)
		}
	}
	return out, "", int64(len(ids)), nil
}

// byBucket returns a microbatch's sequence ids by bucket, each longest
// first (ties by id).
func (pl *planner) byBucket(prob *mbProblem, ids []int) [][]int {
	byBucket := make([][]int, len(prob.buckets))
	for _, id := range ids {
		s := pl.lengths[id]
		q, _ := slices.BinarySearchFunc(prob.buckets, s, func(b bucket, s int) int { return cmp.Compare(b.Boundary, s) })
		byBucket[q] = append(byBucket[q], id)
	}
	for q := range byBucket {
		slices.SortStableFunc(byBucket[q], func(a, b int) int { return cmp.Compare(pl.lengths[b], pl.lengths[a]) })
	}
	return byBucket
}

// planCmax is the slowest group's time (+Inf for no groups).
func planCmax(groups []plannedGroup) float64 {
	if len(groups) == 0 {
		return math.Inf(1)
	}
	c := 0.0
	for _, g := range groups {
		c = max(c, g.load)
	}
	return c
}

// pack places sequences (longest first) on n groups of size d within B:
// deal (time-balanced), else first-fit decreasing by tokens; nil when
// neither fits. Empty groups are dropped.
func (pl *planner) pack(ids []int, d, n int) ([]plannedGroup, int64) {
	weights := make([]float64, len(ids))
	tokens := make([]int64, len(ids))
	for i, id := range ids {
		weights[i] = pl.timing.seqSeconds(pl.lengths[id], d)
		tokens[i] = int64(pl.lengths[id])
	}
	capacity := int64(d) * int64(pl.in.BudgetTokens)
	where, ok, ops := deal(weights, tokens, n, capacity)
	if !ok {
		where, ok = firstFit(tokens, n, capacity)
		ops += int64(len(ids)) * int64(n)
	}
	if !ok {
		return nil, ops
	}
	groups := make([]plannedGroup, n)
	for g := range groups {
		groups[g] = plannedGroup{degree: d, load: pl.timing.b1}
	}
	for i, g := range where {
		groups[g].ids = append(groups[g].ids, ids[i])
		groups[g].load += weights[i]
	}
	return slices.DeleteFunc(groups, func(g plannedGroup) bool { return len(g.ids) == 0 }), ops
}

// firstFit places items (tokens, longest first) on the first of n groups
// with room.
func firstFit(tokens []int64, n int, capacity int64) ([]int, bool) {
	free := make([]int64, n)
	for g := range free {
		free[g] = capacity
	}
	where := make([]int, len(tokens))
	for i, t := range tokens {
		g := slices.IndexFunc(free, func(f int64) bool { return f >= t })
		if g < 0 {
			return nil, false
		}
		free[g] -= t
		where[i] = g
	}
	return where, true
}

// place puts groups on the pool, widest first (then slowest, then by first
// sequence id), each at the next free rank: sizes are powers of two placed
// in non-increasing order, so every group starts at a multiple of its size.
// It returns the groups ordered by first rank, and the slowest group's time.
func (pl *planner) place(groups []plannedGroup) ([]sched.Group, float64) {
	slices.SortStableFunc(groups, func(a, b plannedGroup) int {
		if c := cmp.Compare(b.degree, a.degree); c != 0 {
			return c
		}
		if c := cmp.Compare(b.load, a.load); c != 0 {
			return c
		}
		return cmp.Compare(slices.Min(a.ids), slices.Min(b.ids))
	})
	out := make([]sched.Group, len(groups))
	rank := 0
	cmax := 0.0
	for i, g := range groups {
		seqs := slices.Clone(g.ids)
		slices.SortStableFunc(seqs, func(a, b int) int {
			if c := cmp.Compare(pl.lengths[b], pl.lengths[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		out[i] = sched.Group{FirstRank: rank, Size: g.degree, Seqs: seqs}
		rank += g.degree
		cmax = max(cmax, g.load)
	}
	return out, cmax
}

func (pl *planner) addWork(w int64) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.work += w
}

func (pl *planner) addSolve(s *milp.Solution) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.stall.SolverSolves++
	pl.stall.SolverNodes += s.Nodes
	pl.stall.SolverIterations += s.Iterations
	d := pl.diag
	d.Solves++
	d.Solver = s.Solver
	switch s.Status {
	case milp.Optimal:
		d.Optimal++
	case milp.GapLimited:
		d.GapLimited++
	case milp.NodeLimited:
		d.NodeLimited++
	case milp.TimeLimited:
		d.TimeLimited++
	case milp.Infeasible:
		d.Infeasible++
	case milp.NoSolution:
		d.NoSolution++
	}
}

func (pl *planner) addSkip() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.diag.StartWithinGap++
}

func (pl *planner) addSplitFailure() {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	pl.diag.PackingFailures++
}

// build turns the chosen candidate into the plan.
func (pl *planner) build(best *candidate, order []int) *sched.Plan {
	plan := &sched.Plan{Policy: Name, PoolRanks: pl.in.PoolRanks, Microbatches: make([]sched.Microbatch, len(best.mbs))}
	d := pl.diag
	d.Microbatches = best.m
	d.PredictedSeconds = best.total
	for k, mb := range best.mbs {
		plan.Microbatches[k] = sched.Microbatch{Groups: mb.groups,
			Closed: fmt.Sprintf("Sequence Blaster chunk %d of %d (sorted positions %d-%d); Cmax %.4g s", k+1, best.m, best.cuts[k], best.cuts[k+1]-1, mb.cmax)}
		d.Chosen = append(d.Chosen, MicrobatchDiag{Sequences: len(mb.ids), Buckets: mb.buckets, Groups: groupMix(mb.groups),
			CmaxSeconds: mb.cmax, ObjectiveSeconds: mb.objective, LowerBoundSeconds: mb.lower, Status: mb.status,
			FillsPool: mb.fill, PerGroupModel: mb.explicit, Variables: mb.vars})
	}
	plan.WorkUnits = pl.work
	plan.StallWork = pl.stall
	plan.Diagnostics = d
	return plan
}

// groupMix describes a microbatch's groups as "count×size", widest first.
func groupMix(groups []sched.Group) string {
	counts := map[int]int{}
	var sizes []int
	for _, g := range groups {
		if counts[g.Size] == 0 {
			sizes = append(sizes, g.Size)
		}
		counts[g.Size]++
	}
	slices.SortFunc(sizes, func(a, b int) int { return b - a })
	s := ""
	for i, d := range sizes {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%dx%d", counts[d], d)
	}
	return s
}
