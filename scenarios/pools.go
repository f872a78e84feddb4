package scenarios

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dcpsim/dcpsim/calib"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/memory"
)

// pools checks [cluster] pools, the mixed-cluster form: it excludes gpu and
// gpus, names known profiles, and sets the cluster's GPU count to the pools'
// sum (the rest, node filling and budgets, is job.Validate's and kindBudgets').
func (p *parser) pools(md *toml.MetaData, c *job.Cluster) {
	for _, k := range []string{"gpu", "gpus"} {
		if md.IsDefined("cluster", k) {
			p.addf("cluster.pools", "cluster.pools: give either cluster.gpu and cluster.gpus (one kind) or cluster.pools (mixed kinds), not both (cluster.%s is set)", k)
			return
		}
	}
	if len(c.Pools) == 0 {
		p.addf("cluster.pools", "cluster.pools: must list at least one pool, e.g. [{gpu = \"H100-SXM\", gpus = 32}, {gpu = \"A100-80G\", gpus = 32}]")
		return
	}
	sum := 0
	for i, pool := range c.Pools {
		key := fmt.Sprintf("cluster.pools[%d]", i)
		if pool.GPU != "" && !slices.Contains(calib.ProfileNames(), pool.GPU) {
			p.addf(key+".gpu", "%s.gpu = %q: no calibration profile; known: %s", key, pool.GPU, strings.Join(calib.ProfileNames(), ", "))
		}
		if pool.GPUs > 0 && sum <= job.MaxGPUs {
			sum += pool.GPUs
		}
	}
	c.GPUs = sum
}

// Profiles returns the calibration profile of each GPU kind in rank order
// (job.Cluster.Kinds): Profile() alone for a one-kind cluster, else each
// pool's embedded profile.
func (s *Scenario) Profiles() ([]*calib.Profile, error) {
	if !s.Job.Cluster.Mixed() {
		p, err := s.Profile()
		if err != nil {
			return nil, err
		}
		return []*calib.Profile{p}, nil
	}
	out := make([]*calib.Profile, len(s.Job.Cluster.Pools))
	for i, pool := range s.Job.Cluster.Pools {
		p, err := calib.LookupProfile(pool.GPU)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	return out, nil
}

// KindBudgetTokens returns each kind's per-rank token budget
// (memory.Model.KindBudgetTokens with the kinds' HBM and FlashAttention, the
// kernel every scenario runs): parallel.budget_tokens for a one-kind cluster,
// or with budget_tokens = "auto" the largest whose peak fits. It fails when a
// kind cannot hold a stage's model states and the reserve.
func (s *Scenario) KindBudgetTokens() ([]int, error) {
	profs, err := s.Profiles()
	if err != nil {
		return nil, err
	}
	return s.kindBudgetTokens(profs)
}

// kindBudgetTokens is KindBudgetTokens with the kinds' profiles read.
func (s *Scenario) kindBudgetTokens(profs []*calib.Profile) ([]int, error) {
	hbm := make([]float64, len(profs))
	for i, pr := range profs {
		hbm[i] = pr.HBMBytes.Value
	}
	mem, err := memory.New(s.Job, compute.FlashAttention)
	if err != nil {
		return nil, err
	}
	return mem.KindBudgetTokens(hbm)
}

// kindBudgets checks a valid job's per-kind memory: every kind holds the
// model states and the reserve and keeps room for activations; it resolves
// budget_tokens = "auto" (the first kind's budget becomes
// parallel.budget_tokens); and the pool holds the context (Σ ranks·budget
// over the kinds).
func (p *parser) kindBudgets(sc *Scenario, where string) {
	profs, err := sc.Profiles()
	if err != nil {
		p.addf("costs.profile", "%s%v", where, err)
		return
	}
	if sc.Job.Parallel.FP8() {
		for i, pr := range profs {
			if !pr.HasFP8() {
				p.addf("parallel.precision", "%sparallel.precision = \"fp8\": %s has no FP8 tensor cores (its profile %q has no peak_fp8_flops and gemm_fp8): train it in \"bf16\"",
					where, sc.Job.Cluster.Kinds()[i].GPU, pr.Name)
				return
			}
		}
	}
	budgets, err := sc.kindBudgetTokens(profs)
	if err != nil {
		fields, others := job.FieldErrors(err)
		for _, f := range fields {
			p.addf(f.Key, "%s%s = %v: %s", where, f.Key, f.Value, f.Rule)
		}
		for _, o := range others {
			p.addf("cluster.pools", "%s%v", where, o)
		}
		return
	}
	if sc.Job.Parallel.BudgetAuto {
		sc.Job.Parallel.BudgetTokens = budgets[0]
	}
	if !sc.Job.Cluster.Mixed() {
		// job.Validate checked G·B against the context for a given budget;
		// an automatic one is known only now.
		if capacity := sc.Job.PoolCapacityTokens(); sc.Job.Parallel.BudgetAuto && int64(sc.Job.ContextTokens) > capacity {
			p.addf("workload.context_tokens", "%sworkload.context_tokens = %d: must be <= G*B = %d*%d = %d (budget_tokens = \"auto\" resolved to %d, the largest whose peak fits), else no plan can hold the longest sequence",
				where, sc.Job.ContextTokens, sc.Job.PoolRanks(), sc.Job.Parallel.BudgetTokens, capacity, sc.Job.Parallel.BudgetTokens)
		}
		return
	}
	var capacity int64
	for i, r := range sc.Job.KindRanks() {
		capacity += int64(r) * int64(budgets[i])
	}
	if int64(sc.Job.ContextTokens) > capacity {
		p.addf("workload.context_tokens", "%sworkload.context_tokens = %d: must be <= the pool's Σ ranks·budget over its kinds = %d (budgets %v)",
			where, sc.Job.ContextTokens, capacity, budgets)
	}
}
