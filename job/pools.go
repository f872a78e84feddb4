package job

import (
	"errors"
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
	// has left for activations (see KindBudgetTokens).
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
			add(checkRange(key+".budget_tokens", pool.BudgetTokens, 1, MaxBudgetTokens))
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
	if sum > MaxGPUs {
		add(fieldErr("cluster.pools", sum, "the pools hold %d GPUs; at most %d", sum, MaxGPUs))
	}
	return errs
}

// Memory per kind (costmodel.md §7.3): a rank's HBM holds the model states of
// its stage (BF16 parameters and gradients, 2 + 2 bytes per parameter, and the
// distributed optimizer's FP32 master weights and two moments, 12 bytes per
// parameter sharded over the data-parallel group), a reserve for NCCL buffers,
// workspace and fragmentation, and the activations of the tokens it holds.

// StateBytesPerParam is the unsharded model-state bytes per parameter (BF16
// parameter and gradient); OptimizerStateBytesPerParam is the FP32 master
// weight and Adam moments, sharded over the DP group (costmodel §7.1: 6 + 12/DP
// with an FP32 gradient; Megatron's --grad-reduce-in-bf16 keeps it at 2).
const (
	StateBytesPerParam          = 4
	OptimizerStateBytesPerParam = 12
	// ReserveBytes is HBM kept for NCCL buffers, workspace and fragmentation
	// (costmodel §7.3, an assumption; ByteScale reports 5-10 GB for dynamic
	// NCCL groups).
	ReserveBytes = 10e9
)

// StateBytesPerGPU is the largest stage's model-state bytes per GPU: its dense
// parameters (embedding on the first stage, output layer on the last) over tp,
// 4 bytes each plus 12/G for the optimizer shard over the pool's G ranks, and
// its routed-expert parameters over tp·ep, 4 bytes each plus 12·ep/G.
func (j Job) StateBytesPerGPU() float64 {
	stages, err := j.StageLayers()
	g := float64(j.PoolRanks())
	if err != nil || g <= 0 {
		return 0
	}
	tp, ep := float64(max(j.Parallel.TP, 1)), float64(max(j.Parallel.EP, 1))
	m := j.Model
	var worst float64
	first := 0
	for s, n := range stages {
		var dense, expert float64
		for l := first; l < first+n; l++ {
			e := m.LayerExpertParams(l)
			dense += m.LayerParams(l) - e
			expert += e
		}
		first += n
		if s == 0 {
			dense += m.EmbeddingParams()
		}
		if s == len(stages)-1 {
			dense += m.OutputParams()
		}
		b := dense/tp*(StateBytesPerParam+OptimizerStateBytesPerParam/g) +
			expert/(tp*ep)*(StateBytesPerParam+OptimizerStateBytesPerParam*ep/g)
		worst = max(worst, b)
	}
	return worst
}

// KindBudgetTokens returns the token budget of each kind in rank order, given
// each kind's HBM bytes (hbm[i] for Kinds()[i]): a pool's own budget_tokens
// when set, else parallel.budget_tokens scaled by the HBM the kind has left
// for activations after the model states and the reserve, over the first
// kind's: B_i = ⌊B·(HBM_i − states − reserve)/(HBM_0 − states − reserve)⌋. A
// one-kind cluster gets parallel.budget_tokens. It fails, naming the pool,
// when a kind has no HBM left for activations.
func (j Job) KindBudgetTokens(hbm []float64) ([]int, error) {
	kinds := j.Cluster.Kinds()
	b := j.Parallel.BudgetTokens
	out := make([]int, len(kinds))
	if !j.Cluster.Mixed() {
		out[0] = b
		return out, nil
	}
	if len(hbm) != len(kinds) {
		return nil, fmt.Errorf("job: %d HBM sizes for %d pools", len(hbm), len(kinds))
	}
	states := j.StateBytesPerGPU()
	room := func(i int) float64 { return hbm[i] - states - ReserveBytes }
	var errs []error
	for i, p := range kinds {
		switch {
		case p.BudgetTokens > 0:
			out[i] = p.BudgetTokens
		case i == 0:
			out[i] = b
		case room(0) <= 0 || room(i) <= 0:
			errs = append(errs, fieldErr(fmt.Sprintf("cluster.pools[%d].gpu", i), p.GPU,
				"its %.1f GB and the first pool's %.1f GB leave no room for activations after %.1f GB of model states and a %.0f GB reserve; set budget_tokens in every pool",
				hbm[i]/1e9, hbm[0]/1e9, states/1e9, ReserveBytes/1e9))
		default:
			out[i] = int(max(1, min(MaxBudgetTokens, float64(b)*room(i)/room(0)))) // clamped as a float: no overflow
		}
	}
	return out, errors.Join(errs...)
}
