package bytescale

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dcpsim/dcpsim/sched"
)

// Name is the registry name of the policy.
const Name = "bytescale"

// Strategy names of the balance scheduler (§6).
const (
	// DPBalance takes units from the first bucket only (§6.3, pp = 1).
	DPBalance = "dp-balance"
	// PPBalance takes them from all buckets in turn (§6.2, pp > 1).
	PPBalance = "pp-balance"
	// Naive is Alg. 1's own assignment (Options.Balance false).
	Naive = "naive"
)

// DefaultDelta is the default balance slack δ, as a fraction of the round's
// largest estimated time (the paper gives no value).
const DefaultDelta = 0.05

// Options are the policy's scenario options ([run.options.bytescale]).
type Options struct {
	// Delta is Alg. 2's δ as a fraction of the round's largest estimated rank
	// time: a rank (lane, pipeline group) is a target while it is more than
	// Delta·max behind. In [0, 1).
	Delta float64 `toml:"delta"`
	// Offload turns on selective offloading (§5.2, Eq. 3): a sequence of
	// s >= C tokens runs on the fewest ranks D(s) that hold it when each
	// offloads, at a ratio its forward hides, part of its activations to host
	// memory. It needs the job's offload costs (sched.Env.Offload: a GPU
	// profile with host-copy rates) and a model with more than two layers per
	// chunk (sched.Inputs.OffloadShare > 0); without them it plans as
	// offload = false. Default true.
	Offload bool `toml:"offload"`
	// OffloadRatio, when > 0, makes every sequence of s >= C tokens offload
	// at this ratio on its ⌈s/C⌉ ranks, whatever its forward hides: the
	// experiment of the paper's Fig. 21 (what a ratio costs and saves at a
	// fixed layout), not ByteScale's planning, which chooses r by Eq. 3
	// (Offload). In [0, 1]; 0: Eq. 3 when Offload is on. It needs an
	// offloadable share (sched.Inputs.OffloadShare > 0), not offload costs.
	OffloadRatio float64 `toml:"offload_ratio"`
	// Balance runs the balance scheduler (§6, Alg. 2); false assigns the
	// units as Alg. 1's own line 10 does, the paper's "HDP naive" (§8.1
	// case ②; see the package doc). Default true.
	Balance bool `toml:"balance"`
	// OffloadRule is how far selective offload compresses a long
	// sequence's ranks: RuleBounded (the default, "") no further than
	// keeps its unit within the balanced per-rank load, the rule the paper's
	// own measurements imply (see the package doc); RuleEq3 to Eq. 3's
	// fewest ranks, as §5.2 writes it.
	OffloadRule string `toml:"offload_rule"`
}

// Offload rules (Options.OffloadRule).
const (
	// RuleBounded compresses D(s) only while T(s)/D(s) stays within the
	// batch's balanced per-rank load W/G.
	RuleBounded = "bounded"
	// RuleEq3 is Eq. 3 as written: the fewest ranks whose offload hides
	// under the forward.
	RuleEq3 = "eq3"
)

// Policy is ByteScale's HDP planner: data-aware sharding, selective offload
// and best-fit packing (Alg. 1) with the balance scheduler (Alg. 2).
type Policy struct {
	opts    Options
	offload *sched.OffloadCosts // nil: no offload
	// costs is the balance scheduler's time model from the job's token
	// costs; nil: the θ/c model (no cost model describes the job).
	costs *timeModel
}

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// DefaultOptions are the options of a scenario that gives none.
func DefaultOptions() Options { return Options{Delta: DefaultDelta, Offload: true, Balance: true} }

// New builds the policy from its options and the job's offload costs
// (env.Offload; nil: no offload whatever the options say).
func New(o Options, env sched.Env) (*Policy, error) {
	if !(o.Delta >= 0 && o.Delta < 1) {
		return nil, fmt.Errorf("delta = %v: must be in [0, 1) (a fraction of the round's largest estimated time)", o.Delta)
	}
	if !(o.OffloadRatio >= 0 && o.OffloadRatio <= 1) {
		return nil, fmt.Errorf("offload_ratio = %v: must be in [0, 1] (0: Eq. 3 chooses)", o.OffloadRatio)
	}
	switch o.OffloadRule {
	case "", RuleBounded, RuleEq3:
	default:
		return nil, fmt.Errorf("offload_rule = %q: must be %q or %q", o.OffloadRule, RuleBounded, RuleEq3)
	}
	p := &Policy{opts: o}
	if c := env.TokenCosts; c != nil && c.AttentionSecondsPerToken2 > 0 && c.LinearSecondsPerToken >= 0 && c.FixedSeconds >= 0 &&
		!math.IsInf(c.AttentionSecondsPerToken2+c.LinearSecondsPerToken+c.FixedSeconds, 0) {
		p.costs = &timeModel{costs: true, a1: c.AttentionSecondsPerToken2, a2: c.LinearSecondsPerToken, b1: c.FixedSeconds}
	}
	if o.Offload && o.OffloadRatio == 0 && env.Offload != nil {
		if err := env.Offload.Check(); err != nil {
			return nil, err
		}
		c := *env.Offload
		p.offload = &c
	}
	return p, nil
}

// Name returns "bytescale".
func (*Policy) Name() string { return Name }

// Promises: every rank holds at most C tokens in every microbatch. Groups are
// any integer size at any rank (not Aligned), and microbatches are partial
// (not CoversPool).
func (*Policy) Promises() sched.Promises { return sched.Promises{WithinBudget: true} }

// Plan shards and packs the batch (Alg. 1), assigns the units with the balance
// scheduler (Alg. 2), aligns the microbatch counts for VPP and emits the
// frames as partial microbatches.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	plan, _, err := p.plan(lengths, in)
	return plan, err
}

// plan is Plan, also returning the planner's state for the tests. Under
// RuleBounded a plan whose offload compressed some sequence is kept only
// when its estimated step (the slots' largest time) is below the same
// plan's without offload: offload never makes the planner's own estimate
// worse. Both plans' work is counted.
func (p *Policy) plan(lengths []int, in sched.Inputs) (*sched.Plan, *planner, error) {
	plan, pl, err := p.planOnce(lengths, in, p.offload)
	if err != nil || p.offload == nil || cmp.Or(p.opts.OffloadRule, RuleBounded) != RuleBounded || pl.offloadDiagnostics() == nil ||
		pl.offloadDiagnostics().Sequences == 0 {
		return plan, pl, err
	}
	plain, ppl, err := p.planOnce(lengths, in, nil)
	if err != nil {
		return nil, nil, err
	}
	d, dp := plan.Diagnostics.(*Diagnostics), plain.Diagnostics.(*Diagnostics)
	if dp.EstimatedMaxTime < d.EstimatedMaxTime {
		dp.Offload = &OffloadDiagnostics{Share: pl.share, HostBytesPerSecond: p.offload.HostBytesPerSecond, Declined: true}
		addWork(plain, plan)
		return plain, ppl, nil
	}
	addWork(plan, plain)
	return plan, pl, nil
}

// addWork adds the work of the plan not kept to the one kept.
func addWork(kept, other *sched.Plan) {
	kept.WorkUnits += other.WorkUnits
	kept.StallWork.HeapOps += other.StallWork.HeapOps
	kept.StallWork.SequenceVisits += other.StallWork.SequenceVisits
	kept.StallWork.PoolVisits += other.StallWork.PoolVisits
}

// planOnce plans with the offload costs off (nil: no offload).
func (p *Policy) planOnce(lengths []int, in sched.Inputs, off *sched.OffloadCosts) (*sched.Plan, *planner, error) {
	if err := in.Check(lengths); err != nil {
		return nil, nil, fmt.Errorf("bytescale: %w", err)
	}
	ep := in.EPSize()
	pl := &planner{
		in: in, lengths: lengths, delta: p.opts.Delta, ep: ep, lanes: in.PoolRanks / ep, limit: in.DegreeLimit(),
		model:    timeModel{overheadRatio: in.OverheadRatio, budgetTokens: float64(in.BudgetTokens)},
		lockstep: in.PP > 1 || in.VPP > 1, ppBalance: in.PP > 1, rule: cmp.Or(p.opts.OffloadRule, RuleBounded),
	}
	if p.costs != nil {
		m := *p.costs
		m.overheadRatio, m.budgetTokens = in.OverheadRatio, float64(in.BudgetTokens)
		pl.model = m
	}
	if pl.rule == RuleBounded {
		var w float64
		for _, s := range lengths {
			w += pl.model.sequence(s)
		}
		pl.balancedLoad = w / float64(in.PoolRanks)
	}
	switch {
	case p.opts.OffloadRatio > 0 && in.OffloadShare == 0:
		return nil, nil, fmt.Errorf("bytescale: offload_ratio = %v, but the job cannot offload (offload_share = 0: a GPU without host-copy rates, or at most two layers in some chunk): %w",
			p.opts.OffloadRatio, sched.ErrCannotPlan)
	case p.opts.OffloadRatio > 0:
		pl.forced, pl.share = p.opts.OffloadRatio, in.OffloadShare
	case off != nil && in.OffloadShare > 0:
		pl.offload, pl.share = off, in.OffloadShare
	}
	units, long, visits, setOps := buildUnits(lengths, in.BudgetTokens, pl.unitRanks)
	pl.units, pl.visits, pl.heapOps = units, visits, setOps

	// Slots: lanes (EP blocks) when pp = vpp = 1; else lock-step pipeline
	// groups of the lanes that hold the widest unit, as many as fit.
	widest := 0
	for _, u := range units {
		widest = max(widest, u.ranks)
	}
	pl.groupLanes = (widest + ep - 1) / ep
	buckets := pl.lanes / pl.groupLanes
	if pl.lockstep {
		for g := range buckets {
			lanes := pl.groupLanes
			if g == buckets-1 {
				lanes = pl.lanes - g*pl.groupLanes
			}
			pl.slotFirst = append(pl.slotFirst, g*pl.groupLanes)
			pl.slotLanes = append(pl.slotLanes, lanes)
		}
	} else {
		for l := range pl.lanes {
			pl.slotFirst = append(pl.slotFirst, l)
			pl.slotLanes = append(pl.slotLanes, 1)
		}
	}
	pl.time = make([]float64, len(pl.slotFirst))
	if p.opts.Balance {
		pl.sortUnits(buckets)
		if err := pl.balance(); err != nil {
			return nil, nil, err
		}
	} else {
		buckets = 1
		if err := pl.naive(); err != nil {
			return nil, nil, err
		}
	}
	estMin, estMax := math.Inf(1), 0.0
	for _, t := range pl.time {
		estMin, estMax = min(estMin, t), max(estMax, t)
	}
	splits, err := pl.alignVPP()
	if err != nil {
		return nil, nil, err
	}

	d := &Diagnostics{
		Strategy: DPBalance, Delta: p.opts.Delta, Lanes: pl.lanes, EPSize: ep,
		Offload:       pl.offloadDiagnostics(),
		LongSequences: long, ShortSequences: len(lengths) - long, Bins: len(units) - long,
		Buckets: buckets, Rounds: pl.rounds, Frames: len(pl.frames), WidenedRanks: pl.widened, VPPSplits: splits,
		EstimatedMaxTime: estMax, EstimatedMinTime: estMin,
		HeapOps: pl.heapOps, SequenceVisits: pl.visits, PoolVisits: pl.poolVisits,
	}
	switch {
	case !p.opts.Balance:
		d.Strategy, d.Delta = Naive, 0
	case pl.ppBalance:
		d.Strategy = PPBalance
	}
	if pl.lockstep {
		d.PipelineGroups, d.GroupLanes = len(pl.slotFirst), pl.groupLanes
	}
	frames := pl.frames
	if pl.lockstep && p.opts.Balance {
		frames = pl.orderBySimilarity()
	}
	mbs, perLane := pl.emit(frames)
	d.RankMicrobatchesMin, d.RankMicrobatchesMax = slices.Min(perLane), slices.Max(perLane)
	return &sched.Plan{
		Policy:              Name,
		PoolRanks:           in.PoolRanks,
		Microbatches:        mbs,
		PartialMicrobatches: true,
		WorkUnits:           pl.heapOps + pl.visits + pl.poolVisits,
		StallWork:           sched.StallWork{HeapOps: pl.heapOps, SequenceVisits: pl.visits, PoolVisits: pl.poolVisits},
		Diagnostics:         d,
	}, pl, nil
}

// emit turns frames (p.frames, or a group-wise reordering) into the plan's microbatches: each phase goes to the
// first microbatch index after every earlier phase of its lanes (so a rank's
// microbatches are its phases in assignment order), its groups laid out from
// the frame's first rank in order. Each microbatch's Closed says what it holds.
// It returns them with each lane's count.
func (p *planner) emit(frames []frame) ([]sched.Microbatch, []int) {
	next := make([]int, p.lanes)
	var mbs []sched.Microbatch
	type note struct {
		frames, widened, splits int
		buckets                 []int
	}
	var notes []note
	for _, f := range frames {
		for _, phase := range f.phases {
			level := slices.Max(next[f.firstLane : f.firstLane+f.lanes])
			for l := f.firstLane; l < f.firstLane+f.lanes; l++ {
				next[l] = level + 1
			}
			for len(mbs) <= level {
				mbs = append(mbs, sched.Microbatch{})
				notes = append(notes, note{})
			}
			n := &notes[level]
			n.frames++
			if len(f.phases) > 1 {
				n.splits++
			}
			if !slices.Contains(n.buckets, f.bucket) {
				n.buckets = append(n.buckets, f.bucket)
			}
			rank := f.firstLane * p.ep
			for _, g := range phase {
				mbs[level].Groups = append(mbs[level].Groups, sched.Group{FirstRank: rank, Size: g.ranks, Seqs: g.seqs,
					Offload: p.groupOffload(g.tokens, g.ranks, len(g.seqs))})
				rank += g.ranks
				n.widened += g.ranks - g.minRanks
			}
		}
	}
	for i := range mbs {
		slices.SortFunc(mbs[i].Groups, func(a, b sched.Group) int { return cmp.Compare(a.FirstRank, b.FirstRank) })
		n := notes[i]
		slices.Sort(n.buckets)
		closed := fmt.Sprintf("%d frames, first units from buckets %s", n.frames, strings.Trim(fmt.Sprint(n.buckets), "[]"))
		if n.frames == 1 {
			closed = fmt.Sprintf("1 frame, first unit from bucket %d", n.buckets[0])
		}
		if n.widened > 0 {
			closed += fmt.Sprintf("; %d ranks widened", n.widened)
		}
		if n.splits > 0 {
			closed += fmt.Sprintf("; %d phases of vpp-split frames", n.splits)
		}
		mbs[i].Closed = closed
	}
	return mbs, next
}

// Diagnostics explain a ByteScale plan.
type Diagnostics struct {
	// Strategy is DPBalance (pp = 1), PPBalance (pp > 1) or Naive (Alg. 1's
	// own assignment, balance = false); Delta is δ (balance only).
	Strategy string  `json:"strategy"`
	Delta    float64 `json:"delta"`
	// Offload says what selective offloading did (nil: it was off).
	Offload *OffloadDiagnostics `json:"offload,omitempty"`
	// Lanes is G/EP: the EP blocks every frame covers whole.
	Lanes  int `json:"lanes"`
	EPSize int `json:"ep_size"`
	// PipelineGroups and GroupLanes: PP-Balance's lock-step groups of lanes.
	PipelineGroups int `json:"pipeline_groups,omitempty"`
	GroupLanes     int `json:"group_lanes,omitempty"`
	// LongSequences have s >= C and run alone on D(s) = ⌈s/C⌉ ranks; the
	// ShortSequences are packed into Bins of C tokens.
	LongSequences  int `json:"long_sequences"`
	ShortSequences int `json:"short_sequences"`
	Bins           int `json:"bins"`
	// Buckets is the bucket count, Rounds the rounds of Alg. 2, Frames the
	// assignments made.
	Buckets int `json:"buckets"`
	Rounds  int `json:"rounds"`
	Frames  int `json:"frames"`
	// WidenedRanks counts ranks given to groups beyond their D(s) to cover a
	// frame's whole lanes (EP blocks, pipeline groups).
	WidenedRanks int `json:"widened_ranks"`
	// VPPSplits counts the microbatches added to reach counts legal for the
	// interleaved schedule.
	VPPSplits int `json:"vpp_splits,omitempty"`
	// EstimatedMaxTime and EstimatedMinTime are the largest and smallest
	// estimated finish time of a slot (lane or pipeline group), in tokens²
	// (units of c), before VPP alignment.
	EstimatedMaxTime float64 `json:"estimated_max_time"`
	EstimatedMinTime float64 `json:"estimated_min_time"`
	// RankMicrobatchesMin and RankMicrobatchesMax are the fewest and most
	// microbatches a rank runs.
	RankMicrobatchesMin int `json:"rank_microbatches_min"`
	RankMicrobatchesMax int `json:"rank_microbatches_max"`
	// HeapOps, SequenceVisits and PoolVisits are the planner's counted work
	// (the plan's StallWork).
	HeapOps        int64 `json:"heap_ops"`
	SequenceVisits int64 `json:"sequence_visits"`
	PoolVisits     int64 `json:"pool_visits"`
}

// Summary lists the diagnostics in a fixed order.
func (d *Diagnostics) Summary() []sched.KV {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	i := strconv.Itoa
	kv := []sched.KV{{Name: "strategy", Value: d.Strategy}}
	if d.Strategy != Naive {
		kv = append(kv, sched.KV{Name: "δ (of the round's max)", Value: g(d.Delta)})
	}
	kv = append(kv, sched.KV{Name: "lanes (EP blocks)", Value: fmt.Sprintf("%d × %d ranks", d.Lanes, d.EPSize)})
	if o := d.Offload; o != nil {
		kv = append(kv, sched.KV{Name: "offloaded sequences", Value: fmt.Sprintf("%d of %d long, %d ranks spared, ratio %s..%s",
			o.Sequences, d.LongSequences, o.RanksSpared, g(o.MinRatio), g(o.MaxRatio))})
	}
	if d.PipelineGroups > 0 {
		kv = append(kv, sched.KV{Name: "pipeline groups", Value: fmt.Sprintf("%d × %d lanes", d.PipelineGroups, d.GroupLanes)})
	}
	kv = append(kv,
		sched.KV{Name: "long sequences (D = ⌈s/C⌉)", Value: i(d.LongSequences)},
		sched.KV{Name: "short sequences / bins", Value: fmt.Sprintf("%d / %d", d.ShortSequences, d.Bins)},
		sched.KV{Name: "buckets", Value: i(d.Buckets)},
		sched.KV{Name: "rounds / frames", Value: fmt.Sprintf("%d / %d", d.Rounds, d.Frames)},
		sched.KV{Name: "widened ranks", Value: i(d.WidenedRanks)},
		sched.KV{Name: "MBs per rank", Value: fmt.Sprintf("%d..%d", d.RankMicrobatchesMin, d.RankMicrobatchesMax)},
		sched.KV{Name: "est. finish (tokens²)", Value: fmt.Sprintf("%s..%s", g(d.EstimatedMinTime), g(d.EstimatedMaxTime))},
	)
	if d.VPPSplits > 0 {
		kv = append(kv, sched.KV{Name: "vpp splits", Value: i(d.VPPSplits)})
	}
	return append(kv,
		sched.KV{Name: "heap ops", Value: strconv.FormatInt(d.HeapOps, 10)},
		sched.KV{Name: "sequence visits", Value: strconv.FormatInt(d.SequenceVisits, 10)},
		sched.KV{Name: "pool visits", Value: strconv.FormatInt(d.PoolVisits, 10)},
	)
}
