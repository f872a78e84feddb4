package step

// The per-rank engine Run replaced (each rank advanced on its own at every
// op's end, O(ranks) per op), kept as the oracle Runner's classes must match
// exactly: TestRunMatchesPerRankOracle.

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

// Run times one training iteration of a laid-out plan: every one of the pp
// stages runs the same plan on the same pool, with Megatron's schedule for vpp
// chunks per stage (sim/pipeline, micro-batch group size N = pp). See the
// package doc for the model. It runs in named phases: each rank's stream of
// domains (streams), one schedule per microbatch count (schedules), the
// dependency edges (edges), the op durations (price), the event loop (events),
// the end of each stage (finish), the planner's stall (shift) and the shares
// of the iteration (shares).
//
// It returns an error if the iteration is larger than MaxOps, MaxRankStages
// or MaxMemberships (before allocating it), a rank's microbatch count is
// illegal for Megatron's schedule, costs gives a negative or non-finite time,
// or the ranks' schedules order the ops of shared microbatches inconsistently
// (a deadlock; only possible when ranks run different numbers of
// microbatches).
func oracleRun(l *Layout, pp, vpp int, costs Costs) (*Result, error) {
	if pp < 1 || vpp < 1 {
		return nil, fmt.Errorf("step: pp = %d, vpp = %d: need both >= 1", pp, vpp)
	}
	if err := checkSize(l, pp, vpp); err != nil {
		return nil, err
	}
	r := &oracle{l: l, pp: pp, v: vpp, g: l.Plan.PoolRanks, nd: len(l.Domains), costs: costs,
		res: &Result{PP: pp, VPP: vpp, EP: l.EP, Domains: l.Domains}}
	r.streams()
	for _, phase := range []func() error{r.schedules, r.edges, r.price, r.events, r.finish, r.shift} {
		if err := phase(); err != nil {
			return nil, err
		}
	}
	r.shares()
	return r.res, nil
}

// oracle is the state of one Run.
type oracle struct {
	l         *Layout
	pp, v, g  int
	nd        int // domains
	costs     Costs
	res       *Result
	off       []int32 // rank r's domains are rankDom[off[r]:off[r+1]], in MB order
	rankDom   []int32
	rankSched []*pipeline.Schedule // per rank; nil for a rank in no microbatch
	ref       *pipeline.Schedule   // any rank's schedule (Dep does not depend on the count)
	succ      []place              // [(stage·v+chunk)·2+b]: the op that waits for this one
	hasDep    []bool               // [(stage·v+chunk)·2+b]: the op waits for a dependency
	dur       []sim.Nanos          // by op index
	left      []int32              // arrivals each op still awaits
	next      []int32              // [stage·g+rank]: index of the rank's next op in its schedule
}

// streams lists each rank's domains in MB order, flattened (CSR).
func (r *oracle) streams() {
	g := r.g
	r.off = make([]int32, g+1)
	for _, d := range r.l.Domains {
		for k := d.FirstRank; k <= d.LastRank(); k++ {
			r.off[k+1]++
		}
	}
	for k := range g {
		r.off[k+1] += r.off[k]
	}
	r.rankDom = make([]int32, r.off[g])
	fill := append([]int32(nil), r.off[:g]...)
	for i, d := range r.l.Domains {
		for k := d.FirstRank; k <= d.LastRank(); k++ {
			r.rankDom[fill[k]] = int32(i)
			fill[k]++
		}
	}
}

// schedules builds one pipeline schedule per distinct microbatch count, after
// checking that together they hold at most MaxOps ops.
func (r *oracle) schedules() error {
	var total int64
	seen := map[int]bool{}
	for k := range r.g {
		if m := int(r.off[k+1] - r.off[k]); m > 0 && !seen[m] {
			seen[m] = true
			total += mulSat(r.pp, r.v, m, 2) // m <= domains, so each term <= MaxOps (checkSize): no overflow
			if total > MaxOps {
				return fmt.Errorf("step: the pipeline schedules of the ranks' %d distinct microbatch counts (pp %d, vpp %d) hold more than %d ops (step.MaxOps)",
					len(seen), r.pp, r.v, MaxOps)
			}
		}
	}
	scheds := map[int]*pipeline.Schedule{}
	r.rankSched = make([]*pipeline.Schedule, r.g)
	for k := range r.g {
		m := int(r.off[k+1] - r.off[k])
		if m == 0 {
			continue
		}
		s, ok := scheds[m]
		if !ok {
			var err error
			if s, err = pipeline.New(r.pp, r.v, m, 0); err != nil {
				return fmt.Errorf("step: rank %d runs %d microbatches: %w", k, m, err)
			}
			scheds[m] = s
		}
		r.rankSched[k] = s
		r.ref = s
	}
	if r.ref == nil {
		return fmt.Errorf("step: the plan has no microbatch")
	}
	return nil
}

// edges inverts pipeline's Dep: for each op position, the one that waits for
// it (Dep does not depend on the microbatch).
func (r *oracle) edges() error {
	pp, v := r.pp, r.v
	r.succ = make([]place, pp*v*2)
	r.hasDep = make([]bool, pp*v*2)
	for i := range r.succ {
		r.succ[i] = place{-1, 0, 0}
	}
	for s := range pp {
		for c := range v {
			for b := range 2 {
				ds, dop, ok := r.ref.Dep(s, pipeline.Op{Backward: b == 1, Chunk: int32(c)})
				if !ok {
					continue
				}
				r.hasDep[(s*v+c)*2+b] = true
				db := 0
				if dop.Backward {
					db = 1
				}
				r.succ[(ds*v+int(dop.Chunk))*2+db] = place{s, c, b}
			}
		}
	}
	return nil
}

// price asks the costs for every op's duration (and exposed communication)
// and counts the arrivals each op awaits: its ranks' streams reaching it and,
// unless it is a first forward, its dependency.
func (r *oracle) price() error {
	pp, v, nd := r.pp, r.v, r.nd
	nops := pp * nd * v * 2
	r.dur = make([]sim.Nanos, nops)
	r.left = make([]int32, nops)
	res := r.res
	res.Ops = make([]OpTime, nops)
	res.Stages = make([]StageResult, pp)
	res.MBSeconds = make([]float64, len(r.l.Plan.Microbatches))
	split, _ := r.costs.(CommSplitter)
	for s := range pp {
		for di := range r.l.Domains {
			d := &r.l.Domains[di]
			var mb sim.Nanos
			for c := range v {
				f, b := r.costs.ChunkSeconds(s, c, d)
				for k, sec := range [2]float64{f, b} {
					if !finite(sec) {
						return fmt.Errorf("step: stage %d chunk %d microbatch %d ranks [%d, %d]: cost %v s: need a finite value >= 0",
							s, c, d.MB, d.FirstRank, d.LastRank(), sec)
					}
					i := opIndex(s, di, c, k == 1, nd, v)
					r.dur[i] = sim.FromSeconds(sec)
					if split != nil {
						cf, cb := split.ChunkExposedCommSeconds(s, c, d)
						cs := [2]float64{cf, cb}[k]
						if !(cs >= 0) || cs > sec*(1+1e-9) {
							return fmt.Errorf("step: stage %d chunk %d microbatch %d ranks [%d, %d]: exposed communication %v s: need a value in [0, %v]",
								s, c, d.MB, d.FirstRank, d.LastRank(), cs, sec)
						}
						res.Ops[i].ExposedComm = min(sim.FromSeconds(cs), r.dur[i])
					}
					mb += r.dur[i]
					r.left[i] = int32(d.Size)
					if r.hasDep[(s*v+c)*2+k] {
						r.left[i]++
					}
				}
			}
			res.MBSeconds[d.MB] = max(res.MBSeconds[d.MB], mb.Seconds())
		}
	}
	return nil
}

// headOp returns the op index of rank k's i-th op on stage s.
func (r *oracle) headOp(s, k, i int) int {
	op := r.rankSched[k].Ops(s)[i]
	d := int(r.rankDom[int(r.off[k])+int(op.MB)])
	return opIndex(s, d, int(op.Chunk), op.Backward, r.nd, r.v)
}

// events runs the event loop: a domain op starts once every rank of its
// domain reached it and its dependency arrived; when it ends, each of its
// ranks moves to its next op and its output travels to the op waiting for it.
func (r *oracle) events() error {
	pp, g, v, nd := r.pp, r.g, r.v, r.nd
	res := r.res
	r.next = make([]int32, pp*g)
	for s := range pp {
		res.Stages[s].Ranks = make([]RankResult, g)
		for k := range g {
			res.Stages[s].Ranks[k].Microbatches = int(r.off[k+1] - r.off[k])
		}
	}
	var eng sim.Engine
	eng.Grow(2 * pp * max(1, min(nd, g)))
	arrive := func(i int) {
		r.left[i]--
		if r.left[i] == 0 {
			res.Ops[i].Start = eng.Now()
			eng.After(r.dur[i], evDone, 0, int64(i))
		}
	}
	for s := range pp {
		for k := range g {
			if r.rankSched[k] != nil {
				arrive(r.headOp(s, k, 0))
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
		d := &r.l.Domains[di]
		// Advance every rank of the domain on this stage.
		ranks := res.Stages[s].Ranks
		for k := d.FirstRank; k <= d.LastRank(); k++ {
			rr := &ranks[k]
			rr.Busy += r.dur[i]
			rr.ExposedComm += res.Ops[i].ExposedComm
			if b == 1 {
				rr.LastBackwardEnd = now
			}
			r.next[s*g+k]++
			if n := int(r.next[s*g+k]); n < len(r.rankSched[k].Ops(s)) {
				arrive(r.headOp(s, k, n))
			}
		}
		// Hand the output to the dependent op.
		if to := r.succ[(s*v+c)*2+b]; to.stage >= 0 {
			j := opIndex(to.stage, di, to.chunk, to.b == 1, nd, v)
			if to.stage == s {
				arrive(j)
			} else {
				sec := r.costs.P2PSeconds(s, to.stage, c, d, b == 1)
				if !finite(sec) {
					return fmt.Errorf("step: p2p %d→%d chunk %d microbatch %d ranks [%d, %d]: %v s: need a finite value >= 0",
						s, to.stage, c, d.MB, d.FirstRank, d.LastRank(), sec)
				}
				eng.After(sim.FromSeconds(sec), evArrive, 0, int64(j))
			}
		}
	}
	res.Events = eng.Delivered()
	return nil
}

// finish checks that every rank ran its whole schedule and ends each stage:
// the gradient sync starts when its last rank finished its last backward,
// then the optimizer step; the iteration ends with the last stage's.
func (r *oracle) finish() error {
	res := r.res
	for s := range r.pp {
		st := &res.Stages[s]
		for k := range r.g {
			if r.rankSched[k] == nil {
				continue
			}
			if n := int(r.next[s*r.g+k]); n < len(r.rankSched[k].Ops(s)) {
				op := r.rankSched[k].Ops(s)[n]
				return fmt.Errorf("step: deadlock: stage %d rank %d stuck before op %d (%v of microbatch %d) of %d; "+
					"ranks sharing microbatches order them differently (different microbatch counts)",
					s, k, n, op, r.l.Domains[r.rankDom[int(r.off[k])+int(op.MB)]].MB, len(r.rankSched[k].Ops(s)))
			}
			st.GradSyncStart = max(st.GradSyncStart, st.Ranks[k].LastBackwardEnd)
		}
		sync, opt := r.costs.GradSyncSeconds(s), r.costs.OptimizerSeconds(s)
		for k, sec := range [2]float64{sync, opt} {
			if !finite(sec) {
				return fmt.Errorf("step: stage %d %s: %v s: need a finite value >= 0", s, [2]string{"gradient sync", "optimizer"}[k], sec)
			}
		}
		st.GradSyncEnd = st.GradSyncStart + sim.FromSeconds(sync)
		st.OptimizerEnd = st.GradSyncEnd + sim.FromSeconds(opt)
		res.Iteration = max(res.Iteration, st.OptimizerEnd)
	}
	return nil
}

// shift moves the iteration later by the planner's stall: it delays every
// op equally, so the run above (from 0) shifts by it.
func (r *oracle) shift() error {
	st, ok := r.costs.(PlannerStaller)
	if !ok {
		return nil
	}
	sec := st.PlannerStallSeconds()
	if !finite(sec) {
		return fmt.Errorf("step: planner stall %v s: need a finite value >= 0", sec)
	}
	r.res.shift(sim.FromSeconds(sec))
	return nil
}

// shares computes each rank's bubbles and the iteration's breakdown (see the
// package doc).
func (r *oracle) shares() {
	res := r.res
	var ppSum, dpSum, commSum, busySum, syncSum float64
	for s := range r.pp {
		st := &res.Stages[s]
		tail := st.OptimizerEnd - st.GradSyncStart
		for k := range st.Ranks {
			rr := &st.Ranks[k]
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
		n := float64(r.pp*r.g) * float64(res.Iteration)
		res.PPBubbleShare, res.DPBubbleShare = ppSum/n, dpSum/n
		res.ExposedCommShare = commSum / n
		res.ComputeShare = (busySum - commSum) / n
		res.SyncShare = syncSum / n
		res.StallShare = float64(res.PlannerStall) / float64(res.Iteration)
	}
}
