package step

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/pipeline"
)

const (
	evDone   uint16 = iota // Arg: op index
	evArrive               // Arg: op index whose dependency has arrived
)

// Limits on one iteration, checked by Run before it allocates, so a hostile
// plan or pipeline shape (a --batches line with vpp 10^9) is refused with the
// numbers named instead of exhausting memory. Run needs ~36 bytes per domain
// op (duration, arrival count, OpTime), 12 per scheduled op, at most 4 per
// rank-microbatch membership (one per class's, see Runner) and ~52 per
// (stage, rank): about 1.3 GiB with every limit reached at once (2^24 ops
// alone, pp 4, vpp 2, 1,024 ranks: 0.74 GB peak RSS, 4.8 s). The largest
// iteration benchmarked (1,048,576 GPUs, docs/performance.md, "Engine") uses a
// quarter of MaxRankStages and under a sixth of the others.
const (
	// MaxOps bounds the domain ops of an iteration, pp·domains·vpp·2, and
	// separately the ops of its pipeline schedules, Σ over the distinct
	// per-rank microbatch counts m of pp·vpp·m·2.
	MaxOps = 1 << 24
	// MaxRankStages bounds pp·G, the (stage, rank) pairs (simulated GPUs
	// without TP): 4× the scenarios' 2^20 GPUs.
	MaxRankStages = 1 << 22
	// MaxMemberships bounds Σ over domains of their ranks: each rank's
	// microbatches, summed over the ranks.
	MaxMemberships = 1 << 26
)

// mulSat returns the product of xs (each >= 0), saturated at math.MaxInt64.
func mulSat(xs ...int) int64 {
	p := int64(1)
	for _, x := range xs {
		if x == 0 {
			return 0
		}
		if p > math.MaxInt64/int64(x) {
			return math.MaxInt64
		}
		p *= int64(x)
	}
	return p
}

// count formats a mulSat product, marking a saturated one.
func count(n int64) string {
	if n == math.MaxInt64 {
		return fmt.Sprintf("more than %d", n-1)
	}
	return fmt.Sprint(n)
}

// checkSize refuses, before anything is allocated, an iteration larger than
// MaxOps, MaxRankStages or MaxMemberships, naming the numbers.
func checkSize(l *Layout, pp, vpp int) error {
	g, nd := l.Plan.PoolRanks, len(l.Domains)
	if n := mulSat(pp, g); n > MaxRankStages {
		return fmt.Errorf("step: pp·ranks = %d·%d = %s (stage, rank) pairs: more than the engine's limit of %d (step.MaxRankStages)",
			pp, g, count(n), MaxRankStages)
	}
	if n := mulSat(pp, nd, vpp, 2); n > MaxOps {
		return fmt.Errorf("step: pp·domains·vpp·2 = %d·%d·%d·2 = %s ops in the iteration: more than the engine's limit of %d (step.MaxOps)",
			pp, nd, vpp, count(n), MaxOps)
	}
	var members int64
	for i := range l.Domains {
		members += int64(max(l.Domains[i].Size, 0))
	}
	if members > MaxMemberships {
		return fmt.Errorf("step: %d domains hold %d rank-microbatch memberships: more than the engine's limit of %d (step.MaxMemberships)",
			nd, members, MaxMemberships)
	}
	return nil
}

// Simulate lays plan out for ep (NewLayout) and runs it (Run).
func Simulate(plan *sched.Plan, pp, vpp, ep int, costs Costs) (*Result, error) {
	l, err := NewLayout(plan, ep)
	if err != nil {
		return nil, err
	}
	return Run(l, pp, vpp, costs)
}

// Run times one training iteration of a laid-out plan with a fresh Runner
// (Runner.Run).
func Run(l *Layout, pp, vpp int, costs Costs) (*Result, error) {
	var r Runner
	return r.Run(l, pp, vpp, costs)
}

// Runner runs iterations and keeps its working storage from one Run to the
// next (per-op durations and arrival counts, the rank classes and their
// streams, the pipeline schedules, the event queue), so a caller that times
// many iterations with one Runner allocates little more than each Result. The
// zero Runner is ready to use. A Runner is not safe for concurrent use: give
// each goroutine its own.
//
// Ranks whose domain streams are identical (no domain of any microbatch
// starts or ends between them) move in lock-step on every stage; the Runner
// advances such a run of ranks, a class, as one, weighted by its ranks, so an
// op's end costs O(classes of its domain) rather than O(ranks). Hydra's plans
// at 131,072 GPUs have 128 classes of 64 ranks (one per EP block) instead of
// 8,192 ranks; a plan whose domains start on every rank has one class per
// rank, the per-rank work.
type Runner struct {
	// The current Run's arguments and its Result; cleared when Run returns,
	// so the Runner keeps no caller's data alive.
	l        *Layout
	pp, v, g int
	nd       int // domains
	costs    Costs
	res      *Result

	nc         int     // classes
	classFirst []int32 // class c is ranks [classFirst[c], classFirst[c+1])
	rankClass  []int32 // [rank]: its class
	domClass   []int32 // [2·domain, 2·domain+1]: its classes [lo, hi)
	off        []int32 // class c's domains are classDom[off[c]:off[c+1]], in MB order
	classDom   []int32
	classSched []*pipeline.Schedule // per class; nil for a class in no microbatch
	ref        *pipeline.Schedule   // any class's schedule (Dep does not depend on the count)
	// scheds caches the schedules built for (schedPP, schedV) by microbatch
	// count, schedOps their ops (dropped past schedCacheOps).
	scheds          map[int]*pipeline.Schedule
	schedPP, schedV int
	schedOps        int64
	seen            map[int]bool // scratch: the microbatch counts met
	succ            []place      // [(stage·v+chunk)·2+b]: the op that waits for this one
	hasDep          []bool       // [(stage·v+chunk)·2+b]: the op waits for a dependency
	dur             []sim.Nanos  // by op index
	left            []int32      // rank arrivals (and the dependency) each op still awaits
	next            []int32      // [stage·nc+class]: index of the class's next op in its schedule
	acc             []classAcc   // [stage·nc+class]
	eng             sim.Engine
	// The activations phase's: the costs' sizer (during Run), the rates by
	// (stage, chunk), and per microbatch of the class walked its group
	// cursor, the rank's group and shard, and the prefix sums of its tokens
	// and scores.
	sizer        ActivationSizer
	cursor, gidx []int32
	tok, sco     []float64
	preT, preQ   []float64
	// With a layout whose groups offload (offload): per microbatch the
	// rank's tokens and scores times its group's offload ratio, and their
	// prefix sums.
	offload      bool
	tokR, scoR   []float64
	preTR, preQR []float64
	// classPeaks': a class's tokens and their prefix sums by (microbatch,
	// rank), and its ranks' peaks on one stage.
	matT, matP, best []float64
	rate8            [][8]float64   // per block of 8 stages: kept and backward rates
	best8            [][8]uint64    // per block of 8 stages: one rank's peaks' bits
	rowSeen          map[uint64]int // a class's ranks by the hash of their tokens
	rates            []ActivationRate
}

// schedCacheOps bounds the ops of the schedules a Runner keeps for its next
// Runs (12 bytes each: 12 MiB): past it the cache starts again.
const schedCacheOps = 1 << 20

// classAcc is what each rank of a class did on one stage.
type classAcc struct {
	busy, comm, lastBackwardEnd sim.Nanos
}

// Run times one training iteration of a laid-out plan: every one of the pp
// stages runs the same plan on the same pool, with Megatron's schedule for vpp
// chunks per stage (sim/pipeline, micro-batch group size N = pp). See the
// package doc for the model. It runs in named phases: the rank classes and
// each class's stream of domains (streams), one schedule per microbatch count
// (schedules), the dependency edges (edges), the op durations (price), the
// event loop (events), the end of each stage (finish), each rank's record
// (ranks), the planner's stall (shift), the held activations (activations) and the shares of the iteration
// (shares). The Result is the caller's: it shares no storage with the Runner
// (Result.Domains is a copy of l.Domains, whose Groups are the plan's).
//
// It returns an error if the iteration is larger than MaxOps, MaxRankStages
// or MaxMemberships (before allocating it), a rank's microbatch count is
// illegal for Megatron's schedule, costs gives a negative or non-finite time,
// or the ranks' schedules order the ops of shared microbatches inconsistently
// (a deadlock; only possible when ranks run different numbers of
// microbatches).
func (r *Runner) Run(l *Layout, pp, vpp int, costs Costs) (*Result, error) {
	if pp < 1 || vpp < 1 {
		return nil, fmt.Errorf("step: pp = %d, vpp = %d: need both >= 1", pp, vpp)
	}
	if err := checkSize(l, pp, vpp); err != nil {
		return nil, err
	}
	r.l, r.pp, r.v, r.g, r.nd, r.costs = l, pp, vpp, l.Plan.PoolRanks, len(l.Domains), costs
	r.res = &Result{PP: pp, VPP: vpp, EP: l.EP, Domains: slices.Clone(l.Domains)}
	defer func() { r.l, r.costs, r.res, r.ref = nil, nil, nil, nil; clear(r.classSched) }()
	r.streams()
	for _, phase := range []func() error{r.schedules, r.edges, r.price, r.events, r.finish} {
		if err := phase(); err != nil {
			return nil, err
		}
	}
	r.ranks()
	if err := r.shift(); err != nil {
		return nil, err
	}
	if err := r.activations(); err != nil {
		return nil, err
	}
	r.shares()
	return r.res, nil
}

// place is one (stage, chunk, backward) op position of a microbatch.
type place struct{ stage, chunk, b int }

// resize returns s with length n and every element zero, reusing its storage
// when it is large enough.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// streams splits the pool into classes (a class starts at rank 0 and at
// every domain's first rank and the rank after its last) and lists each
// class's domains in MB order, flattened (CSR).
func (r *Runner) streams() {
	g := r.g
	mark := resize(r.rankClass, g+1) // 1 where a class starts; then each rank's class
	mark[0] = 1
	for i := range r.l.Domains {
		d := &r.l.Domains[i]
		mark[d.FirstRank] = 1
		mark[d.FirstRank+d.Size] = 1
	}
	r.classFirst = resize(r.classFirst, g+1)[:0]
	c := int32(-1)
	for k := range g {
		if mark[k] != 0 {
			r.classFirst = append(r.classFirst, int32(k))
			c++
		}
		mark[k] = c
	}
	r.rankClass = mark[:g]
	r.nc = len(r.classFirst)
	r.classFirst = append(r.classFirst, int32(g))
	nc := r.nc
	r.domClass = resize(r.domClass, 2*r.nd)
	r.off = resize(r.off, nc+1)
	for i := range r.l.Domains {
		d := &r.l.Domains[i]
		lo, hi := r.rankClass[d.FirstRank], r.rankClass[d.LastRank()]+1
		r.domClass[2*i], r.domClass[2*i+1] = lo, hi
		for c := lo; c < hi; c++ {
			r.off[c+1]++
		}
	}
	for c := range nc {
		r.off[c+1] += r.off[c]
	}
	r.classDom = resize(r.classDom, int(r.off[nc]))
	fill := resize(r.next, nc) // r.next is rebuilt by events
	copy(fill, r.off[:nc])
	for i := range r.l.Domains {
		for c := r.domClass[2*i]; c < r.domClass[2*i+1]; c++ {
			r.classDom[fill[c]] = int32(i)
			fill[c]++
		}
	}
	r.next = fill
}

// classRanks is the number of ranks of class c.
func (r *Runner) classRanks(c int) int32 { return r.classFirst[c+1] - r.classFirst[c] }

// schedules builds (or finds in the Runner's cache) one pipeline schedule
// per distinct microbatch count, after checking that together they hold at
// most MaxOps ops.
func (r *Runner) schedules() error {
	if r.scheds == nil || r.schedPP != r.pp || r.schedV != r.v || r.schedOps > schedCacheOps {
		if r.scheds == nil {
			r.scheds = map[int]*pipeline.Schedule{}
		}
		clear(r.scheds)
		r.schedPP, r.schedV, r.schedOps = r.pp, r.v, 0
	}
	r.classSched = resize(r.classSched, r.nc)
	if r.seen == nil {
		r.seen = map[int]bool{}
	}
	clear(r.seen)
	var total int64
	for c := range r.nc {
		if m := int(r.off[c+1] - r.off[c]); m > 0 && !r.seen[m] {
			r.seen[m] = true
			total += mulSat(r.pp, r.v, m, 2) // m <= domains, so each term <= MaxOps (checkSize): no overflow
			if total > MaxOps {
				return fmt.Errorf("step: the pipeline schedules of the ranks' %d distinct microbatch counts (pp %d, vpp %d) hold more than %d ops (step.MaxOps)",
					len(r.seen), r.pp, r.v, MaxOps)
			}
		}
	}
	for c := range r.nc {
		m := int(r.off[c+1] - r.off[c])
		if m == 0 {
			continue
		}
		s, ok := r.scheds[m]
		if !ok {
			var err error
			if s, err = pipeline.New(r.pp, r.v, m, 0); err != nil {
				return fmt.Errorf("step: rank %d runs %d microbatches: %w", r.classFirst[c], m, err)
			}
			r.scheds[m] = s
			r.schedOps += mulSat(r.pp, r.v, m, 2)
		}
		r.classSched[c] = s
		r.ref = s
	}
	if r.ref == nil {
		return fmt.Errorf("step: the plan has no microbatch")
	}
	return nil
}

// edges inverts pipeline's Dep: for each op position, the one that waits for
// it (Dep does not depend on the microbatch).
func (r *Runner) edges() error {
	pp, v := r.pp, r.v
	r.succ = resize(r.succ, pp*v*2)
	r.hasDep = resize(r.hasDep, pp*v*2)
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
func (r *Runner) price() error {
	pp, v, nd := r.pp, r.v, r.nd
	nops := pp * nd * v * 2
	r.dur = resize(r.dur, nops)
	r.left = resize(r.left, nops)
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
				var comm [2]float64
				if split != nil {
					comm[0], comm[1] = split.ChunkExposedCommSeconds(s, c, d)
				}
				for k, sec := range [2]float64{f, b} {
					if !finite(sec) {
						return fmt.Errorf("step: stage %d chunk %d microbatch %d ranks [%d, %d]: cost %v s: need a finite value >= 0",
							s, c, d.MB, d.FirstRank, d.LastRank(), sec)
					}
					i := opIndex(s, di, c, k == 1, nd, v)
					r.dur[i] = sim.FromSeconds(sec)
					if split != nil {
						if cs := comm[k]; !(cs >= 0) || cs > sec*(1+1e-9) {
							return fmt.Errorf("step: stage %d chunk %d microbatch %d ranks [%d, %d]: exposed communication %v s: need a value in [0, %v]",
								s, c, d.MB, d.FirstRank, d.LastRank(), cs, sec)
						}
						res.Ops[i].ExposedComm = min(sim.FromSeconds(comm[k]), r.dur[i])
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

// finite reports whether sec is a usable duration: finite and >= 0.
func finite(sec float64) bool { return sec >= 0 && !math.IsInf(sec, 0) }

// opOf returns the op index of class c's schedule op on stage s.
func (r *Runner) opOf(s, c int, op pipeline.Op) int {
	d := int(r.classDom[int(r.off[c])+int(op.MB)])
	return opIndex(s, d, int(op.Chunk), op.Backward, r.nd, r.v)
}

// events runs the event loop: a domain op starts once every rank of its
// domain reached it and its dependency arrived; when it ends, each of its
// classes (so each of its ranks) moves to its next op and its output travels
// to the op waiting for it.
func (r *Runner) events() error {
	pp, v, nd, nc := r.pp, r.v, r.nd, r.nc
	res := r.res
	r.next = resize(r.next, pp*nc)
	r.acc = resize(r.acc, pp*nc)
	eng := &r.eng
	eng.Reset()
	eng.Grow(2 * pp * max(1, min(nd, r.g)))
	// arrive counts w rank arrivals (a class's ranks, or 1 for the
	// dependency) at op i and starts it at the last: one class's ranks reach
	// the same op together, so ops start in the order the per-rank count
	// would start them.
	arrive := func(i int, w int32) {
		r.left[i] -= w
		if r.left[i] == 0 {
			res.Ops[i].Start = eng.Now()
			eng.After(r.dur[i], evDone, 0, int64(i))
		}
	}
	for s := range pp {
		for c := range nc {
			if sc := r.classSched[c]; sc != nil {
				arrive(r.opOf(s, c, sc.Ops(s)[0]), r.classRanks(c))
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
			arrive(i, 1)
			continue
		}
		now := eng.Now()
		res.Ops[i].End = now
		b := i & 1
		c := (i >> 1) % v
		di := (i >> 1) / v % nd
		s := (i >> 1) / v / nd
		// Advance every class of the domain on this stage.
		dur, comm := r.dur[i], res.Ops[i].ExposedComm
		for k := int(r.domClass[2*di]); k < int(r.domClass[2*di+1]); k++ {
			a := &r.acc[s*nc+k]
			a.busy += dur
			a.comm += comm
			if b == 1 {
				a.lastBackwardEnd = now
			}
			r.next[s*nc+k]++
			if ops, n := r.classSched[k].Ops(s), int(r.next[s*nc+k]); n < len(ops) {
				arrive(r.opOf(s, k, ops[n]), r.classRanks(k))
			}
		}
		// Hand the output to the dependent op.
		if to := r.succ[(s*v+c)*2+b]; to.stage >= 0 {
			j := opIndex(to.stage, di, to.chunk, to.b == 1, nd, v)
			if to.stage == s {
				arrive(j, 1)
			} else {
				d := &r.l.Domains[di]
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
func (r *Runner) finish() error {
	res, nc := r.res, r.nc
	for s := range r.pp {
		st := &res.Stages[s]
		for c := range nc {
			sc := r.classSched[c]
			if sc == nil {
				continue
			}
			if n := int(r.next[s*nc+c]); n < len(sc.Ops(s)) {
				op := sc.Ops(s)[n]
				return fmt.Errorf("step: deadlock: stage %d rank %d stuck before op %d (%v of microbatch %d) of %d; "+
					"ranks sharing microbatches order them differently (different microbatch counts)",
					s, r.classFirst[c], n, op, r.l.Domains[r.classDom[int(r.off[c])+int(op.MB)]].MB, len(sc.Ops(s)))
			}
			st.GradSyncStart = max(st.GradSyncStart, r.acc[s*nc+c].lastBackwardEnd)
		}
		sync, opt := r.costs.GradSyncSeconds(s), r.costs.OptimizerSeconds(s)
		for k, sec := range [2]float64{sync, opt} {
			if !finite(sec) {
				return fmt.Errorf("step: stage %d %s: %v s: need a finite value >= 0", s, [2]string{"gradient sync", "optimizer"}[k], sec)
			}
		}
		from, err := r.overlappedSync(s)
		if err != nil {
			return err
		}
		st.GradSyncEnd = max(st.GradSyncStart, from) + sim.FromSeconds(sync)
		st.OptimizerEnd = st.GradSyncEnd + sim.FromSeconds(opt)
		res.Iteration = max(res.Iteration, st.OptimizerEnd)
	}
	return nil
}

// overlappedSync runs stage s's overlapped reduce-scatters
// (OverlappedGradSyncer) chunk by chunk in the order their last backwards
// end, and returns when the last one ends; 0 when the costs do not overlap.
func (r *Runner) overlappedSync(s int) (sim.Nanos, error) {
	og, ok := r.costs.(OverlappedGradSyncer)
	if !ok {
		return 0, nil
	}
	type chunkSync struct {
		end, dur  sim.Nanos // the chunk's last backward: end and duration
		rs, lastB sim.Nanos
	}
	cs := make([]chunkSync, r.v)
	for c := range r.v {
		sec, last, ok := og.ChunkGradSync(s, c)
		if !ok {
			return 0, nil
		}
		if !finite(sec) || !finite(last) || last > sec {
			return 0, fmt.Errorf("step: stage %d chunk %d overlapped gradient sync %v s, last bucket %v s: need finite values >= 0, last <= all", s, c, sec, last)
		}
		cs[c].rs, cs[c].lastB = sim.FromSeconds(sec), sim.FromSeconds(last)
		for d := range r.nd {
			op := r.res.Ops[opIndex(s, d, c, true, r.nd, r.v)]
			if op.End > cs[c].end {
				cs[c].end, cs[c].dur = op.End, op.End-op.Start
			}
		}
	}
	slices.SortStableFunc(cs, func(a, b chunkSync) int { return cmp.Compare(a.end, b.end) })
	var free sim.Nanos
	for _, c := range cs {
		start := max(free, c.end-c.dur)
		free = max(start+c.rs, c.end+c.lastB)
	}
	return free, nil
}

// ranks writes each rank's record from its class's (one slice of pp·G
// records, cut by stage).
func (r *Runner) ranks() {
	g, nc := r.g, r.nc
	all := make([]RankResult, r.pp*g)
	for s := range r.pp {
		rs := all[s*g : (s+1)*g : (s+1)*g]
		r.res.Stages[s].Ranks = rs
		for c := range nc {
			a := &r.acc[s*nc+c]
			rec := RankResult{Microbatches: int(r.off[c+1] - r.off[c]), Busy: a.busy, ExposedComm: a.comm, LastBackwardEnd: a.lastBackwardEnd}
			for k := r.classFirst[c]; k < r.classFirst[c+1]; k++ {
				rs[k] = rec
			}
		}
	}
}

// shift moves the iteration later by the planner's stall: it delays every
// op equally, so the run above (from 0) shifts by it.
func (r *Runner) shift() error {
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
func (r *Runner) shares() {
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
