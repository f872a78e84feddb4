package sched

import (
	"fmt"
	"math"
)

// Cluster describes the GPU kinds of the pool to the policies that plan for
// them (hexiseq, hydra-hetero, usp): which ranks run on which kind, each
// kind's memory, and a planning model of its speed and links. The cost model
// derives it from the calibration profiles (costmodel.Model.PlanningCluster);
// a policy's own model of the cluster is deliberately simpler than the
// simulator's, as a real planner's is. Policies that treat every device alike
// ignore it and use Inputs.BudgetTokens, the smallest kind's budget.
//
// Ranks are numbered kind by kind: Kinds[0]'s Ranks ranks come first.
type Cluster struct {
	// Kinds are the GPU kinds in rank order.
	Kinds []DeviceKind `json:"kinds"`
	// Layers is the number of layers of the stage the per-layer terms are
	// multiplied by (the stage with the most layers).
	Layers int `json:"layers"`
	// OverheadSeconds is θ, the fixed cost of one more microbatch on the
	// stage (kernel launches, collective latencies, pipeline p2p), on the
	// first kind.
	OverheadSeconds float64 `json:"overhead_seconds"`
	// QBytesPerToken, KVBytesPerToken and OBytesPerToken are what one token
	// contributes per layer and GPU to a CP × HP layout's collectives: its
	// queries and attention output over all of a TP rank's query heads, and
	// its keys plus values over all of its K/V heads.
	QBytesPerToken, KVBytesPerToken, OBytesPerToken float64
	// KVHeads is the K/V heads of one TP rank (at least 1): a rank with n of
	// the H query heads needs ⌈n·KVHeads/H⌉ of them.
	KVHeads int `json:"kv_heads"`
	// RanksPerNode is how many consecutive HDP ranks share an NVLink node.
	RanksPerNode int `json:"ranks_per_node"`
}

// DeviceKind is one GPU kind of a Cluster: its ranks, memory and planning
// model. Times are per layer, forward plus backward.
type DeviceKind struct {
	// Name is the kind's profile name, e.g. "A100-80G".
	Name string `json:"name"`
	// Ranks is how many consecutive HDP ranks of a stage run on this kind.
	Ranks int `json:"ranks"`
	// BudgetTokens is the most tokens a rank of this kind may hold in one
	// microbatch (its memory).
	BudgetTokens int `json:"budget_tokens"`
	// AttentionSecondsPerToken2 is core attention's time per token² of causal
	// work Σ s² when one rank holds whole sequences (all query heads of its TP
	// rank), taken at the kind's efficiency at the budget's block length.
	AttentionSecondsPerToken2 float64 `json:"attention_seconds_per_token2"`
	// LinearSecondsPerToken is every other op of a layer (GEMMs, memory-bound
	// ops) per token the rank holds, at the budget's tokens.
	LinearSecondsPerToken float64 `json:"linear_seconds_per_token"`
	// NVLinkBytesPerSecond and NICBytesPerSecond are the achieved rates of a
	// GPU's NVLink and NIC for all-to-alls; RingNICBytesPerSecond is the NIC's
	// rate for ring send/recv.
	NVLinkBytesPerSecond, NICBytesPerSecond, RingNICBytesPerSecond float64
	// IntraLatencySeconds and InterLatencySeconds are one collective's fixed
	// latency inside a node and across nodes.
	IntraLatencySeconds, InterLatencySeconds float64
}

// MaxKinds bounds the kinds of a Cluster.
const MaxKinds = 8

// DefaultQueryHeads is the query heads per TP rank a CP × HP layout splits
// when Inputs.QueryHeads is 0 (a --batches line names no model): 64, the
// HyDra paper's model's.
const DefaultQueryHeads = 64

// HeadsPerRank returns the query heads per TP rank a layout splits:
// QueryHeads, or DefaultQueryHeads when unset.
func (in Inputs) HeadsPerRank() int {
	if in.QueryHeads > 0 {
		return in.QueryHeads
	}
	return DefaultQueryHeads
}

// RankBudget returns rank r's token budget: its kind's when the Cluster is
// set, else BudgetTokens.
func (in Inputs) RankBudget(r int) int {
	if in.Cluster == nil {
		return in.BudgetTokens
	}
	return in.Cluster.Kinds[in.Cluster.KindOf(r)].BudgetTokens
}

// KindOf returns the index of rank r's kind (the last kind for r past the
// pool).
func (c *Cluster) KindOf(r int) int {
	for i, k := range c.Kinds {
		if r < k.Ranks {
			return i
		}
		r -= k.Ranks
	}
	return len(c.Kinds) - 1
}

// KindFirstRank returns the first rank of kind i.
func (c *Cluster) KindFirstRank(i int) int {
	first := 0
	for _, k := range c.Kinds[:i] {
		first += k.Ranks
	}
	return first
}

// finitePositive reports whether x is a finite number > 0.
func finitePositive(x float64) bool { return x > 0 && !math.IsInf(x, 0) }

// check validates the cluster against the pool: 1 to MaxKinds kinds whose
// ranks sum to the pool, budgets in range, every rate and coefficient finite
// and positive (latencies and θ finite and >= 0).
func (c *Cluster) check(poolRanks int) error {
	switch {
	case len(c.Kinds) < 1 || len(c.Kinds) > MaxKinds:
		return fmt.Errorf("sched: cluster.kinds: %d kinds: must be in [1, %d]", len(c.Kinds), MaxKinds)
	case c.Layers < 1 || c.Layers > 1<<16:
		return fmt.Errorf("sched: cluster.layers = %d: must be in [1, 65536]", c.Layers)
	case c.KVHeads < 1 || c.KVHeads > 1<<16:
		return fmt.Errorf("sched: cluster.kv_heads = %d: must be in [1, 65536]", c.KVHeads)
	case c.RanksPerNode < 1 || c.RanksPerNode > MaxPoolRanks:
		return fmt.Errorf("sched: cluster.ranks_per_node = %d: must be in [1, %d]", c.RanksPerNode, MaxPoolRanks)
	case !(c.OverheadSeconds >= 0) || math.IsInf(c.OverheadSeconds, 0):
		return fmt.Errorf("sched: cluster.overhead_seconds = %v: must be a finite number >= 0", c.OverheadSeconds)
	}
	for _, b := range []struct {
		key string
		v   float64
	}{{"q_bytes_per_token", c.QBytesPerToken}, {"kv_bytes_per_token", c.KVBytesPerToken}, {"o_bytes_per_token", c.OBytesPerToken}} {
		if !finitePositive(b.v) {
			return fmt.Errorf("sched: cluster.%s = %v: must be a finite number > 0", b.key, b.v)
		}
	}
	total := 0
	for i, k := range c.Kinds {
		at := fmt.Sprintf("sched: cluster.kinds[%d] (%s)", i, k.Name)
		switch {
		case k.Ranks < 1 || k.Ranks > MaxPoolRanks:
			return fmt.Errorf("%s: ranks = %d: must be in [1, %d]", at, k.Ranks, MaxPoolRanks)
		case k.BudgetTokens < 1 || k.BudgetTokens > MaxBudgetTokens:
			return fmt.Errorf("%s: budget_tokens = %d: must be in [1, %d]", at, k.BudgetTokens, MaxBudgetTokens)
		}
		for _, v := range []struct {
			key string
			x   float64
		}{{"attention_seconds_per_token2", k.AttentionSecondsPerToken2}, {"linear_seconds_per_token", k.LinearSecondsPerToken},
			{"nvlink_bytes_per_second", k.NVLinkBytesPerSecond}, {"nic_bytes_per_second", k.NICBytesPerSecond},
			{"ring_nic_bytes_per_second", k.RingNICBytesPerSecond}} {
			if !finitePositive(v.x) {
				return fmt.Errorf("%s: %s = %v: must be a finite number > 0", at, v.key, v.x)
			}
		}
		for _, v := range []float64{k.IntraLatencySeconds, k.InterLatencySeconds} {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("%s: latency %v: must be a finite number >= 0", at, v)
			}
		}
		total += k.Ranks
	}
	if total != poolRanks {
		return fmt.Errorf("sched: cluster.kinds hold %d ranks: must equal ranks = %d", total, poolRanks)
	}
	return nil
}
