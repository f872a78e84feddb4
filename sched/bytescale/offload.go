package bytescale

import (
	"cmp"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
)

// unitRanks is the offload ratio and the ranks D(s) of a sequence of s >= C
// tokens: 0 and ⌈s/C⌉ without offload; with it Eq. 3's fewest ranks
// (sched.OffloadCosts.OffloadRanks) under RuleEq3, and under RuleBounded no
// fewer than the sequence needs to stay within the balanced per-rank load,
// ⌈T(s)/(W/G)⌉ (W the batch's T summed, G the pool), at the least ratio
// that fits it in C tokens' worth per rank.
func (p *planner) unitRanks(s int) (float64, int) {
	plain := minRanks(int64(s), p.in.BudgetTokens)
	if p.offload == nil {
		return 0, plain
	}
	r, d := p.offload.OffloadRanks(s, p.in.BudgetTokens, p.share)
	if p.rule == RuleEq3 || r == 0 || p.balancedLoad <= 0 {
		return r, d
	}
	need := int(math.Ceil(p.model.sequence(s)/p.balancedLoad - 1e-9))
	if need <= d {
		return r, d
	}
	if need >= plain {
		return 0, plain
	}
	return min(sched.FittingRatio(float64(s)/float64(need), float64(p.in.BudgetTokens), p.share), r), need
}

// groupOffload is the offload ratio of a group holding tokens over ranks
// ranks: Options.OffloadRatio for a long sequence's group when it is set,
// else the least ratio that keeps each rank within C tokens' worth on the
// GPU (sched.FittingRatio; 0 when it holds at most C per rank). A group keeps
// its unit's D(s) or is wider, so the ratio is at most the unit's Eq. 3
// ratio, which its forward hides.
func (p *planner) groupOffload(tokens int64, ranks, seqs int) float64 {
	if p.forced > 0 && seqs == 1 && tokens >= int64(p.in.BudgetTokens) {
		return p.forced // Options.OffloadRatio: a long unit on its ⌈s/C⌉ ranks or more
	}
	if p.offload == nil {
		return 0
	}
	r := sched.FittingRatio(float64(tokens)/float64(ranks), float64(p.in.BudgetTokens), p.share)
	return min(r, 1)
}

// OffloadDiagnostics say what selective offloading did to a plan.
type OffloadDiagnostics struct {
	// Share is sched.Inputs.OffloadShare; HostBytesPerSecond the copy rate.
	Share              float64 `json:"share"`
	HostBytesPerSecond float64 `json:"host_bytes_per_second"`
	// Sequences counts the long sequences Eq. 3 put on fewer ranks than
	// ⌈s/C⌉, RanksSpared the ranks they spared (Σ ⌈s/C⌉ − D(s)), and
	// MinRatio and MaxRatio the range of their ratios.
	Sequences   int     `json:"sequences"`
	RanksSpared int     `json:"ranks_spared"`
	MinRatio    float64 `json:"min_ratio"`
	MaxRatio    float64 `json:"max_ratio"`
	// Declined says the plan with offload was estimated slower than the
	// same plan without, which was kept (RuleBounded).
	Declined bool `json:"declined,omitempty"`
}

// offloadDiagnostics sums offload's effect over the long units (nil when
// offload is off).
func (p *planner) offloadDiagnostics() *OffloadDiagnostics {
	if p.offload == nil {
		return nil
	}
	d := &OffloadDiagnostics{Share: p.share, HostBytesPerSecond: p.offload.HostBytesPerSecond}
	for _, u := range p.units {
		if u.ratio == 0 {
			continue
		}
		plain, r := minRanks(u.tokens, p.in.BudgetTokens), u.ratio
		if d.Sequences == 0 {
			d.MinRatio, d.MaxRatio = r, r
		}
		d.Sequences++
		d.RanksSpared += plain - u.ranks
		d.MinRatio, d.MaxRatio = min(d.MinRatio, r), max(d.MaxRatio, r)
	}
	return d
}

// naive is Alg. 1's own assignment (line 10, "assign sequences to d_hdp HDP
// ranks based on map^d"), the paper's HDP naive (§8.1 ②): the units in the
// batch's order (by their first sequence's id), each a frame on the slot
// (a lane window of ⌈D/E⌉ lanes, or a lock-step pipeline group) that holds
// the fewest frames so far (ties: the least idle count, then the lowest
// lane), its free ranks filled with the next units that fit (fill) and then
// widened. Every slot thus runs about the same number of microbatches of
// about C tokens, as data parallelism with gradient accumulation does, with
// nothing to even their times: the imbalance the balance scheduler removes
// (§8.3: naive ranks 60-279 s). The slots' estimated times are set at the
// end (EstimatedMaxTime, EstimatedMinTime).
func (p *planner) naive() error {
	slices.SortStableFunc(p.units, func(a, b unit) int { return cmp.Compare(a.key, b.key) })
	p.bucketOf = make([]int32, len(p.units))
	p.bucketLo = []int{0, len(p.units)}
	ranks := make([]int, len(p.units))
	for j, u := range p.units {
		ranks[j] = u.ranks
		p.visits++
	}
	p.tree = newUnitTree(ranks)
	p.unplaced = len(p.units)
	est := make([]float64, len(p.time))
	h := keyheap.Full(p.time) // slots by frames held (ties: the lower slot)
	defer func() { p.heapOps += h.Ops }()
	for p.unplaced > 0 {
		first := p.next(0, math.MaxInt32)
		n := (p.units[first].ranks + p.ep - 1) / p.ep
		a := h.Top()
		if !p.lockstep && n > 1 {
			a, _ = p.window(0, n)
		}
		lanes, frameLanes := 1, n
		if p.lockstep {
			lanes, frameLanes = 1, p.slotLanes[a]
		} else {
			lanes = n
		}
		phase, err := p.fill(first, frameLanes*p.ep, 0)
		if err != nil {
			return err
		}
		t := p.phaseTime(phase)
		level := 0.0
		for s := a; s < a+lanes; s++ {
			level = max(level, p.time[s])
		}
		for s := a; s < a+lanes; s++ {
			p.time[s] = level + 1
			est[s] += t
			h.Fix(s)
		}
		if p.lockstep {
			p.frames = append(p.frames, frame{firstLane: p.slotFirst[a], lanes: p.slotLanes[a], slot: a, phases: [][]fgroup{phase}})
		} else {
			p.frames = append(p.frames, frame{firstLane: a, lanes: n, slot: a, phases: [][]fgroup{phase}})
		}
	}
	p.time = est
	return nil
}
