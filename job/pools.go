package job

import (
	"fmt"
	"strings"
)

// MaxPools bounds the GPU kinds of one mixed cluster (HexiSeq's largest
// setting mixes four).
const MaxPools = 8

// Pool is one GPU kind of a mixed cluster: Cluster.Pools lists them in the
// order written, and the ranks follow that order. Every pool fills whole nodes
// of every pipeline stage (its GPUs are a multiple of pp·gpus_per_node), so a
// node holds one kind and every stage sees the same layout: inside a stage the
// HDP ranks of pool 0 come first (GPUs/(tp·pp) of them), then pool 1's, and so
// on. A link inside a node is that kind's NVLink; a link between two nodes runs
// at the slower of their NICs.
type Pool struct {
	// GPU names the kind's calibration profile (e.g. "H100-SXM").
	GPU string `toml:"gpu"`
	// GPUs is how many GPUs of the kind the cluster has.
	GPUs int `toml:"gpus"`
	// BudgetTokens, when positive, is the per-rank token budget of this kind
	// (its memory: the most tokens one rank may hold in a microbatch); 0 scales
	// parallel.budget_tokens, which is the first pool's, by the HBM each kind
	// has left for activations (memory.KindBudgetTokens).
	BudgetTokens int `toml:"budget_tokens"`
}

// Kinds returns the cluster's GPU kinds in rank order: Pools, or for a
// one-kind cluster one pool of GPU × GPUs.
func (c Cluster) Kinds() []Pool {
	if len(c.Pools) > 0 {
		return c.Pools
	}
	return []Pool{{GPU: c.GPU, GPUs: c.GPUs}}
}

// Mixed reports whether the cluster lists pools.
func (c Cluster) Mixed() bool { return len(c.Pools) > 0 }

// Label names the hardware for people: "H20", or "32×H100-SXM + 32×A100-80G".
func (c Cluster) Label() string {
	if !c.Mixed() {
		return c.GPU
	}
	parts := make([]string, len(c.Pools))
	for i, p := range c.Pools {
		parts[i] = fmt.Sprintf("%d×%s", p.GPUs, p.GPU)
	}
	return strings.Join(parts, " + ")
}

// KindRanks returns each kind's HDP ranks per pipeline stage, GPUs/(tp·pp), in
// rank order (one entry for a one-kind cluster). They sum to Job.PoolRanks.
func (j Job) KindRanks() []int {
	d := j.Parallel.TP * j.Parallel.PP
	kinds := j.Cluster.Kinds()
	out := make([]int, len(kinds))
	if d <= 0 {
		return out
	}
	for i, p := range kinds {
		out[i] = p.GPUs / d
	}
	return out
}

// validatePools checks the pools form of the cluster: both forms are not
// given at once, at most MaxPools pools, each naming a kind, with GPUs filling
// whole nodes of every stage, budgets in range, and GPUs their sum.
func (j Job) validatePools() []error {
	c, p := j.Cluster, j.Parallel
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.GPU != "" {
		add(fieldErr("cluster.pools", len(c.Pools), "give either cluster.gpu and cluster.gpus (one kind) or cluster.pools (mixed kinds), not both"))
	}
	if len(c.Pools) > MaxPools {
		add(fieldErr("cluster.pools", len(c.Pools), "must list at most %d pools", MaxPools))
		return errs
	}
	sum := 0
	for i, pool := range c.Pools {
		key := fmt.Sprintf("cluster.pools[%d]", i)
		if pool.GPU == "" {
			add(fieldErr(key+".gpu", `""`, "must name a GPU profile (e.g. \"H100-SXM\", \"A100-80G\")"))
		}
		if pool.BudgetTokens != 0 {
			add(CheckPoolBudget(i, pool.BudgetTokens))
		}
		if err := checkRange(key+".gpus", pool.GPUs, 1, MaxGPUs); err != nil {
			add(err)
			continue
		}
		if unit := max(p.PP, 1) * c.GPUsPerNode; c.GPUsPerNode >= 1 && p.PP >= 1 && pool.GPUs%unit != 0 {
			add(fieldErr(key+".gpus", pool.GPUs, "must be a multiple of pp·gpus_per_node = %d·%d = %d: each pool fills whole nodes of every pipeline stage",
				p.PP, c.GPUsPerNode, unit))
		}
		sum += pool.GPUs
	}
	if len(errs) == 0 && sum != c.GPUs {
		add(fieldErr("cluster.gpus", c.GPUs, "must equal the pools' GPUs (%d) when cluster.pools is given", sum))
	}
	if d := p.TP * p.PP; len(errs) == 0 && p.TP >= 1 && p.PP >= 1 && sum/d >= 1 && j.ContextTokens >= 1 && j.ContextTokens <= MaxContextTokens {
		// The policies blind to the kinds plan every rank with the smallest
		// budget, so G·budget must hold the longest sequence, as G·B must.
		g := int64(sum / d)
		need := (int64(j.ContextTokens) + g - 1) / g
		for i, pool := range c.Pools {
			if pool.BudgetTokens > 0 && int64(pool.BudgetTokens) < need {
				add(fieldErr(fmt.Sprintf("cluster.pools[%d].budget_tokens", i), pool.BudgetTokens,
					"must be >= ⌈context_tokens / G⌉ = ⌈%d / %d⌉ = %d: the policies blind to the GPU kinds plan every rank with the smallest budget, and G·budget must hold the longest sequence",
					j.ContextTokens, g, need))
			}
		}
	}
	if sum > MaxGPUs {
		add(fieldErr("cluster.pools", sum, "the pools hold %d GPUs; at most %d", sum, MaxGPUs))
	}
	return errs
}

// CheckPoolBudget checks cluster.pools[i].budget_tokens = v when the key is
// given: in [1, MaxBudgetTokens]. (A pool without the key has BudgetTokens 0,
// which scales parallel.budget_tokens; Validate cannot tell an explicit 0
// from an absent key, so the scenario parser, which can, calls this for every
// pool that sets the key.)
func CheckPoolBudget(i, v int) error {
	return checkRange(fmt.Sprintf("cluster.pools[%d].budget_tokens", i), v, 1, MaxBudgetTokens)
}
