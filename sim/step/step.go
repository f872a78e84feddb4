package step

import (
	"fmt"
	"math"
	"sort"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// Domain is one sync domain: the contiguous HDP ranks [FirstRank,
// FirstRank+Size) that microbatch MB keeps in lock-step through its CP groups
// and EP blocks. It is the same on every pipeline stage.
type Domain struct {
	// MB is the microbatch's index in Plan.Microbatches.
	MB int
	// FirstRank is the domain's lowest HDP rank and Size its number of ranks.
	FirstRank, Size int
	// Groups are the MB's CP groups on the domain's ranks, ordered by
	// FirstRank (a subslice of the plan's; do not modify). Ranks of the domain
	// in no group are idle in the MB but held in step by their EP block.
	Groups []sched.Group
}

// LastRank is FirstRank+Size-1.
func (d *Domain) LastRank() int { return d.FirstRank + d.Size - 1 }

// Costs prices the work of one iteration in seconds. Simulate asks every
// method a bounded number of times (ChunkSeconds once per stage, chunk and
// domain) and rejects a negative, NaN or infinite answer.
type Costs interface {
	// ChunkSeconds returns the forward and backward time of one model chunk
	// (chunk 0..vpp-1) of domain d's microbatch on one stage: for the whole
	// domain, i.e. the slowest of its ranks including the CP and MoE
	// collectives that couple them.
	ChunkSeconds(stage, chunk int, d *Domain) (forward, backward float64)
	// P2PSeconds returns the time from the end of domain d's op (forward or
	// backward of chunk on fromStage) to the arrival of its output at the op
	// of toStage that needs it. Asked only for edges between different stages.
	P2PSeconds(fromStage, toStage, chunk int, d *Domain, backward bool) float64
	// GradSyncSeconds returns the gradient reduce-scatter time of a stage.
	GradSyncSeconds(stage int) float64
	// OptimizerSeconds returns the optimizer step time of a stage, after its
	// gradient sync.
	OptimizerSeconds(stage int) float64
}

// PlannerStaller is implemented by Costs that put the planner's stall on the
// critical path: every stage starts its first op PlannerStallSeconds after the
// iteration begins (the plan is computed on the host at the head of every
// iteration, and no GPU can start before it).
type PlannerStaller interface {
	PlannerStallSeconds() float64
}

// CommSplitter is implemented by Costs that can say how much of a chunk's time
// is exposed communication (CP and MoE collectives not hidden behind compute),
// so the result can split a rank's busy time into compute and communication.
// The answer must lie in [0, ChunkSeconds].
type CommSplitter interface {
	ChunkExposedCommSeconds(stage, chunk int, d *Domain) (forward, backward float64)
}

// LoadSecondsPerToken2 is the load mode's price of one unit of per-rank load
// (one token²) for a whole forward pass through the model: 1e-12 s.
const LoadSecondsPerToken2 = 1e-12

// LoadCosts is the transparent "load" cost mode: a rank's forward time for one
// chunk of a microbatch is its per-rank load L (Σ s²/k over the sequences its
// CP group runs, tokens²) × LoadSecondsPerToken2 / (PP·VPP), backward is twice
// that, and communication, GEMM, gradient sync and optimizer cost nothing. A
// domain's op takes its slowest rank's time, so CP groups and EP blocks still
// couple ranks. Lengths[i] is sequence i's length in tokens.
type LoadCosts struct {
	Lengths []int
	PP, VPP int
}

// Load returns a group's per-rank load Σ s²/k in tokens², or NaN if it names
// a sequence outside Lengths or has no ranks.
func (c LoadCosts) Load(g sched.Group) float64 {
	if g.Size < 1 {
		return math.NaN()
	}
	var l float64
	for _, id := range g.Seqs {
		if id < 0 || id >= len(c.Lengths) {
			return math.NaN()
		}
		s := float64(c.Lengths[id])
		l += s * s
	}
	return l / float64(g.Size)
}

// ChunkSeconds returns max over d's groups of Load × 1e-12 / (PP·VPP) and
// twice that; NaN if a group names an unknown sequence or PP·VPP < 1.
func (c LoadCosts) ChunkSeconds(_, _ int, d *Domain) (forward, backward float64) {
	if c.PP < 1 || c.VPP < 1 {
		return math.NaN(), math.NaN()
	}
	var worst float64
	for _, g := range d.Groups {
		l := c.Load(g)
		if math.IsNaN(l) {
			return l, l
		}
		worst = max(worst, l)
	}
	f := worst * LoadSecondsPerToken2 / float64(c.PP*c.VPP)
	return f, 2 * f
}

// P2PSeconds returns 0.
func (LoadCosts) P2PSeconds(_, _, _ int, _ *Domain, _ bool) float64 { return 0 }

// GradSyncSeconds returns 0.
func (LoadCosts) GradSyncSeconds(int) float64 { return 0 }

// OptimizerSeconds returns 0.
func (LoadCosts) OptimizerSeconds(int) float64 { return 0 }

// OpTime is when one domain op ran and how much of it was exposed
// communication (0 unless the Costs are a CommSplitter).
type OpTime struct {
	Start, End  sim.Nanos
	ExposedComm sim.Nanos
}

// RankResult is what one HDP rank of one stage did during the iteration.
type RankResult struct {
	// Microbatches is the number of microbatches the rank took part in.
	Microbatches int
	// Busy is the total duration of the domain ops the rank took part in. It
	// includes the time a light rank is held by its domain's slowest rank (CP
	// and EP lock-step), which is imbalance, not a pipeline or DP bubble.
	Busy sim.Nanos
	// ExposedComm is the part of Busy its domains spent in exposed
	// communication (CommSplitter; 0 otherwise).
	ExposedComm sim.Nanos
	// LastBackwardEnd is the end of the rank's last backward op (0 if it has
	// no microbatch).
	LastBackwardEnd sim.Nanos
	// DPBubble is the stage's gradient-sync start minus LastBackwardEnd.
	DPBubble sim.Nanos
	// PPBubble is the rest of the rank's idle time in the iteration: Iteration
	// − PlannerStall − Busy − DPBubble − the stage's gradient sync and
	// optimizer time.
	PPBubble sim.Nanos
}

// StageResult is the end of the iteration on one pipeline stage.
type StageResult struct {
	// GradSyncStart is when the last rank of the stage finished its last
	// backward: the stage's gradient reduce-scatter starts then.
	GradSyncStart sim.Nanos
	// GradSyncEnd and OptimizerEnd end the sync and the optimizer step.
	GradSyncEnd, OptimizerEnd sim.Nanos
	// Ranks is indexed by HDP rank.
	Ranks []RankResult
}

// Result is the timeline of one iteration, which starts at time 0.
type Result struct {
	// PP, VPP and EP are the parallel sizes simulated.
	PP, VPP, EP int
	// Iteration is the iteration time: the last stage's optimizer end.
	Iteration sim.Nanos
	// PlannerStall is the planner's stall at the head of the iteration
	// (PlannerStaller; 0 otherwise): every op starts after it.
	PlannerStall sim.Nanos
	// Domains lists every microbatch's sync domains, by MB then FirstRank.
	Domains []Domain
	// Ops holds every domain op's times, indexed by OpIndex.
	Ops []OpTime
	// Stages is indexed by pipeline stage.
	Stages []StageResult
	// MBSeconds[k] is microbatch k's forward+backward time through one stage:
	// the sum over chunks of its domain ops' durations, max over stages and
	// over its domains (so over ranks).
	MBSeconds []float64
	// PPBubble and DPBubble are the mean over all (stage, rank) of
	// RankResult.PPBubble and DPBubble, as fractions of Iteration: the share
	// of GPU-time spent in each bubble (see the package doc).
	PPBubble, DPBubble float64
	// ComputeShare, ExposedCommShare, StallShare and SyncShare complete the
	// breakdown the same way (means over (stage, rank) of Busy − ExposedComm,
	// ExposedComm, PlannerStall, and gradient sync + optimizer, over
	// Iteration): ComputeShare + ExposedCommShare + PPBubble + DPBubble +
	// StallShare + SyncShare = 1.
	ComputeShare, ExposedCommShare, StallShare, SyncShare float64
	// Events counts the events the engine delivered.
	Events uint64
}

// shift moves the whole timeline later by stall, the planner's stall.
func (r *Result) shift(stall sim.Nanos) {
	if stall <= 0 {
		return
	}
	r.PlannerStall = stall
	r.Iteration += stall
	for i := range r.Ops {
		r.Ops[i].Start += stall
		r.Ops[i].End += stall
	}
	for s := range r.Stages {
		st := &r.Stages[s]
		st.GradSyncStart += stall
		st.GradSyncEnd += stall
		st.OptimizerEnd += stall
		for k := range st.Ranks {
			if st.Ranks[k].Microbatches > 0 {
				st.Ranks[k].LastBackwardEnd += stall
			}
		}
	}
}

// IterationSeconds returns Iteration in seconds.
func (r *Result) IterationSeconds() float64 { return r.Iteration.Seconds() }

// OpIndex returns the index in Ops of the forward (backward = false) or
// backward of chunk on stage for domain d.
func (r *Result) OpIndex(stage, domain, chunk int, backward bool) int {
	return opIndex(stage, domain, chunk, backward, len(r.Domains), r.VPP)
}

func opIndex(stage, domain, chunk int, backward bool, nd, v int) int {
	b := 0
	if backward {
		b = 1
	}
	return ((stage*nd+domain)*v+chunk)*2 + b
}

// Domains returns the sync domains of every microbatch of plan, by MB then
// FirstRank, and checks the plan's groups: inside [0, PoolRanks), at least
// one rank, disjoint within an MB. A rank takes part in an MB if a group
// includes it or any rank of its EP block (the aligned block of ep
// consecutive ranks), or, unless plan.PartialMicrobatches, always (an EP
// block no group touches is then a domain without groups, which runs the MB
// empty); the domains are the connected components of the participating
// ranks under "same CP group" and "same EP block", i.e. a union-find over
// both — which, groups and blocks being intervals, are the merged overlapping
// intervals.
func Domains(plan *sched.Plan, ep int) ([]Domain, error) {
	g := plan.PoolRanks
	switch {
	case g < 1:
		return nil, fmt.Errorf("step: plan spans %d ranks: need >= 1", g)
	case ep < 1:
		return nil, fmt.Errorf("step: ep = %d: need ep >= 1", ep)
	case g%ep != 0:
		return nil, fmt.Errorf("step: ep = %d does not divide the pool's %d ranks "+
			"(EP groups are aligned blocks of ep consecutive HDP ranks)", ep, g)
	}
	var out []Domain
	for k := range plan.Microbatches {
		groups := plan.Microbatches[k].Groups
		// next is the first rank of the MB not yet in a domain. Unless the plan's
		// MBs are partial, every EP block no group touches becomes an empty
		// domain before the next real one (and up to the pool's end): its ranks
		// run the MB empty, in pipeline step with the others.
		next := 0
		emit := func(d Domain) {
			for ; !plan.PartialMicrobatches && next < d.FirstRank; next += ep {
				out = append(out, Domain{MB: k, FirstRank: next, Size: ep})
			}
			if d.Size > 0 {
				out = append(out, d)
			}
			next = d.FirstRank + d.Size
		}
		if !sort.SliceIsSorted(groups, func(i, j int) bool { return groups[i].FirstRank < groups[j].FirstRank }) {
			return nil, fmt.Errorf("step: microbatch %d: groups not ordered by first_rank", k)
		}
		lo, hi := -1, -1 // the domain being built: ranks [lo, hi)
		first := 0       // its first group
		for i, gr := range groups {
			if gr.Size < 1 || gr.FirstRank < 0 || gr.LastRank() >= g {
				return nil, fmt.Errorf("step: microbatch %d group %d: ranks [%d, %d] outside the pool [0, %d)",
					k, i, gr.FirstRank, gr.LastRank(), g)
			}
			if i > 0 && gr.FirstRank <= groups[i-1].LastRank() {
				return nil, fmt.Errorf("step: microbatch %d: groups %d and %d share a rank", k, i-1, i)
			}
			// The group widened to whole EP blocks.
			a := gr.FirstRank / ep * ep
			b := (gr.LastRank()/ep + 1) * ep
			if a < hi { // overlaps the current domain (they share an EP block)
				hi = max(hi, b)
				continue
			}
			if hi >= 0 {
				emit(Domain{MB: k, FirstRank: lo, Size: hi - lo, Groups: groups[first:i]})
			}
			lo, hi, first = a, b, i
		}
		if hi >= 0 {
			emit(Domain{MB: k, FirstRank: lo, Size: hi - lo, Groups: groups[first:]})
		}
		emit(Domain{FirstRank: g}) // idle blocks up to the pool's end
	}
	return out, nil
}

const (
	evDone   uint16 = iota // Arg: op index
	evArrive               // Arg: op index whose dependency has arrived
)

// Simulate times one training iteration of plan: every one of the pp stages
// runs the same plan on the same pool, with Megatron's schedule for vpp chunks
// per stage (sim/pipeline, micro-batch group size N = pp), and ep is the
// expert-parallel size (1: no EP coupling). See the package doc for the model.
//
// It returns an error if ep does not divide the pool, a group lies outside
// it, a rank's microbatch count is illegal for Megatron's schedule, costs
// gives a negative or non-finite time, or the ranks' schedules order the ops
// of shared microbatches inconsistently (a deadlock; only possible when ranks
// run different numbers of microbatches).
func Simulate(plan *sched.Plan, pp, vpp, ep int, costs Costs) (*Result, error) {
	if pp < 1 || vpp < 1 {
		return nil, fmt.Errorf("step: pp = %d, vpp = %d: need both >= 1", pp, vpp)
	}
	doms, err := Domains(plan, ep)
	if err != nil {
		return nil, err
	}
	g, nd, v := plan.PoolRanks, len(doms), vpp

	// Each rank's domains, in MB order, flattened: rank r's are
	// rankDom[off[r]:off[r+1]].
	off := make([]int32, g+1)
	for _, d := range doms {
		for r := d.FirstRank; r <= d.LastRank(); r++ {
			off[r+1]++
		}
	}
	for r := range g {
		off[r+1] += off[r]
	}
	rankDom := make([]int32, off[g])
	fill := append([]int32(nil), off[:g]...)
	for i, d := range doms {
		for r := d.FirstRank; r <= d.LastRank(); r++ {
			rankDom[fill[r]] = int32(i)
			fill[r]++
		}
	}

	// One schedule per distinct microbatch count.
	scheds := map[int]*pipeline.Schedule{}
	rankSched := make([]*pipeline.Schedule, g)
	var ref *pipeline.Schedule
	for r := range g {
		m := int(off[r+1] - off[r])
		if m == 0 {
			continue
		}
		s, ok := scheds[m]
		if !ok {
			s, err = pipeline.New(pp, vpp, m, 0)
			if err != nil {
				return nil, fmt.Errorf("step: rank %d runs %d microbatches: %w", r, m, err)
			}
			scheds[m] = s
		}
		rankSched[r] = s
		ref = s
	}
	if ref == nil {
		return nil, fmt.Errorf("step: the plan has no microbatch")
	}

	// succ[(stage·v+chunk)·2+b] is the (stage, chunk, b) of the op that waits
	// for it (the inverse of pipeline's Dep, which does not depend on the MB);
	// hasDep likewise says whether an op waits for one.
	type place struct{ stage, chunk, b int }
	succ := make([]place, pp*v*2)
	hasDep := make([]bool, pp*v*2)
	for i := range succ {
		succ[i] = place{-1, 0, 0}
	}
	for s := range pp {
		for c := range v {
			for b := range 2 {
				ds, dop, ok := ref.Dep(s, pipeline.Op{Backward: b == 1, Chunk: int32(c)})
				if !ok {
					continue
				}
				hasDep[(s*v+c)*2+b] = true
				db := 0
				if dop.Backward {
					db = 1
				}
				succ[(ds*v+int(dop.Chunk))*2+db] = place{s, c, b}
			}
		}
	}

	// Durations, and the arrivals each op awaits: its ranks' streams reaching
	// it and, unless it is a first forward, its dependency.
	nops := pp * nd * v * 2
	dur := make([]sim.Nanos, nops)
	split, _ := costs.(CommSplitter)
	left := make([]int32, nops)
	res := &Result{PP: pp, VPP: vpp, EP: ep, Domains: doms, Ops: make([]OpTime, nops),
		Stages: make([]StageResult, pp), MBSeconds: make([]float64, len(plan.Microbatches))}
	for s := range pp {
		for di := range doms {
			d := &doms[di]
			var mb sim.Nanos
			for c := range v {
				f, b := costs.ChunkSeconds(s, c, d)
				for k, sec := range [2]float64{f, b} {
					if !(sec >= 0) || math.IsInf(sec, 0) {
						return nil, fmt.Errorf("step: stage %d chunk %d microbatch %d ranks [%d, %d]: cost %v s: need a finite value >= 0",
							s, c, d.MB, d.FirstRank, d.LastRank(), sec)
					}
					i := opIndex(s, di, c, k == 1, nd, v)
					dur[i] = sim.FromSeconds(sec)
					if split != nil {
						cf, cb := split.ChunkExposedCommSeconds(s, c, d)
						cs := [2]float64{cf, cb}[k]
						if !(cs >= 0) || cs > sec*(1+1e-9) {
							return nil, fmt.Errorf("step: stage %d chunk %d microbatch %d ranks [%d, %d]: exposed communication %v s: need a value in [0, %v]",
								s, c, d.MB, d.FirstRank, d.LastRank(), cs, sec)
						}
						res.Ops[i].ExposedComm = min(sim.FromSeconds(cs), dur[i])
					}
					mb += dur[i]
					left[i] = int32(d.Size)
					if hasDep[(s*v+c)*2+k] {
						left[i]++
					}
				}
			}
			res.MBSeconds[d.MB] = max(res.MBSeconds[d.MB], mb.Seconds())
		}
	}

	// Per (stage, rank) stream: the index of its next op in its schedule.
	next := make([]int32, pp*g)
	for s := range pp {
		res.Stages[s].Ranks = make([]RankResult, g)
		for r := range g {
			res.Stages[s].Ranks[r].Microbatches = int(off[r+1] - off[r])
		}
	}
	var eng sim.Engine
	eng.Grow(2 * pp * max(1, min(nd, g)))
	// headOp returns the op index of rank r's i-th op on stage s.
	headOp := func(s, r, i int) int {
		op := rankSched[r].Ops(s)[i]
		d := int(rankDom[int(off[r])+int(op.MB)])
		return opIndex(s, d, int(op.Chunk), op.Backward, nd, v)
	}
	start := func(i int) {
		res.Ops[i].Start = eng.Now()
		eng.After(dur[i], evDone, 0, int64(i))
	}
	arrive := func(i int) {
		left[i]--
		if left[i] == 0 {
			start(i)
		}
	}
	for s := range pp {
		for r := range g {
			if rankSched[r] != nil {
				arrive(headOp(s, r, 0))
			}
		}
	}
	for {
		ev, ok := eng.Next()
		if !ok {
			break
		}
		i := int(ev.Arg)
		if ev.Kind == evArrive {
			arrive(i)
			continue
		}
		now := eng.Now()
		res.Ops[i].End = now
		b := i & 1
		c := (i >> 1) % v
		di := (i >> 1) / v % nd
		s := (i >> 1) / v / nd
		d := &doms[di]
		// Advance every rank of the domain on this stage.
		for r := d.FirstRank; r <= d.LastRank(); r++ {
			rr := &res.Stages[s].Ranks[r]
			rr.Busy += dur[i]
			rr.ExposedComm += res.Ops[i].ExposedComm
			if b == 1 {
				rr.LastBackwardEnd = now
			}
			next[s*g+r]++
			if n := int(next[s*g+r]); n < len(rankSched[r].Ops(s)) {
				arrive(headOp(s, r, n))
			}
		}
		// Hand the output to the dependent op.
		if to := succ[(s*v+c)*2+b]; to.stage >= 0 {
			j := opIndex(to.stage, di, to.chunk, to.b == 1, nd, v)
			if to.stage == s {
				arrive(j)
			} else {
				sec := costs.P2PSeconds(s, to.stage, c, d, b == 1)
				if !(sec >= 0) || math.IsInf(sec, 0) {
					return nil, fmt.Errorf("step: p2p %d→%d chunk %d microbatch %d ranks [%d, %d]: %v s: need a finite value >= 0",
						s, to.stage, c, d.MB, d.FirstRank, d.LastRank(), sec)
				}
				eng.After(sim.FromSeconds(sec), evArrive, 0, int64(j))
			}
		}
	}
	res.Events = eng.Delivered()

	for s := range pp {
		st := &res.Stages[s]
		for r := range g {
			if rankSched[r] == nil {
				continue
			}
			if n := int(next[s*g+r]); n < len(rankSched[r].Ops(s)) {
				return nil, fmt.Errorf("step: deadlock: stage %d rank %d stuck before op %d (%v of microbatch %d) of %d; "+
					"ranks sharing microbatches order them differently (different microbatch counts)",
					s, r, n, rankSched[r].Ops(s)[n], doms[rankDom[int(off[r])+int(rankSched[r].Ops(s)[n].MB)]].MB,
					len(rankSched[r].Ops(s)))
			}
			st.GradSyncStart = max(st.GradSyncStart, st.Ranks[r].LastBackwardEnd)
		}
		for k, sec := range [2]float64{costs.GradSyncSeconds(s), costs.OptimizerSeconds(s)} {
			if !(sec >= 0) || math.IsInf(sec, 0) {
				return nil, fmt.Errorf("step: stage %d %s: %v s: need a finite value >= 0", s, [2]string{"gradient sync", "optimizer"}[k], sec)
			}
		}
		st.GradSyncEnd = st.GradSyncStart + sim.FromSeconds(costs.GradSyncSeconds(s))
		st.OptimizerEnd = st.GradSyncEnd + sim.FromSeconds(costs.OptimizerSeconds(s))
		res.Iteration = max(res.Iteration, st.OptimizerEnd)
	}
	// The planner's stall delays every op equally, so the run above (from 0)
	// shifts by it.
	if st, ok := costs.(PlannerStaller); ok {
		sec := st.PlannerStallSeconds()
		if !(sec >= 0) || math.IsInf(sec, 0) {
			return nil, fmt.Errorf("step: planner stall %v s: need a finite value >= 0", sec)
		}
		res.shift(sim.FromSeconds(sec))
	}
	var ppSum, dpSum, commSum, busySum, syncSum float64
	for s := range pp {
		st := &res.Stages[s]
		tail := st.OptimizerEnd - st.GradSyncStart
		for r := range st.Ranks {
			rr := &st.Ranks[r]
			rr.DPBubble = st.GradSyncStart - rr.LastBackwardEnd
			if rr.Microbatches == 0 {
				rr.DPBubble = st.GradSyncStart - res.PlannerStall
			}
			rr.PPBubble = res.Iteration - res.PlannerStall - rr.Busy - rr.DPBubble - tail
			ppSum += float64(rr.PPBubble)
			dpSum += float64(rr.DPBubble)
			commSum += float64(rr.ExposedComm)
			busySum += float64(rr.Busy)
			syncSum += float64(tail)
		}
	}
	if res.Iteration > 0 {
		n := float64(pp*g) * float64(res.Iteration)
		res.PPBubble, res.DPBubble = ppSum/n, dpSum/n
		res.ExposedCommShare = commSum / n
		res.ComputeShare = (busySum - commSum) / n
		res.SyncShare = syncSum / n
		res.StallShare = float64(res.PlannerStall) / float64(res.Iteration)
	}
	return res, nil
}
