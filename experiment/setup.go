package experiment

import (
	"runtime"

	"github.com/dcpsim/dcpsim/costmodel"
	"github.com/dcpsim/dcpsim/costmodel/compute"
	"github.com/dcpsim/dcpsim/scenarios"
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/workload"
	"golang.org/x/sync/errgroup"
)

// Setup is what every run of a scenario shares: its cost model, HyDra's θ/c
// from it, and the scheduling inputs.
type Setup struct {
	// Model prices the scenario's job on its profile.
	Model *costmodel.Model
	// Overhead is θ/c and its parts (compute.Overhead), from Model.
	Overhead compute.Overhead
	// Inputs are the scheduling inputs of every batch, θ/c included.
	Inputs sched.Inputs
	// TokenCosts are the job's costs in the linear form profiling planners
	// fit (Model.TokenCosts), handed to policies in sched.Env.TokenCosts
	// (FlexSP).
	TokenCosts sched.TokenCosts
	// Offload are the job's selective-offload costs (Model.OffloadCosts),
	// handed to policies in sched.Env.Offload (ByteScale); nil when the job
	// cannot offload.
	Offload *sched.OffloadCosts
}

// NewSetup builds a scenario's cost model (its [costs] profile, or the
// embedded profile of cluster.gpu, or each pool's of a mixed cluster) and
// scheduling inputs.
func NewSetup(sc *scenarios.Scenario) (*Setup, error) {
	profs, err := sc.Profiles()
	if err != nil {
		return nil, err
	}
	m, err := costmodel.NewMixed(sc.Job, profs, costmodel.Options{UlyssesAcrossNodes: sc.UlyssesAcrossNodes})
	if err != nil {
		return nil, err
	}
	o := m.Overhead()
	in := Inputs(sc, o.RatioSquareTokens)
	in.BudgetTokens = m.MinBudgetTokens()
	in.Cluster = m.PlanningCluster()
	in.OffloadShare = m.OffloadShare()
	return &Setup{Model: m, Overhead: o, Inputs: in, TokenCosts: m.TokenCosts(), Offload: m.OffloadCosts()}, nil
}

// Inputs are the scheduling inputs of a scenario's job with θ/c = ratio,
// without the planning description of its GPU kinds (NewSetup adds it and
// the smallest kind's budget).
func Inputs(sc *scenarios.Scenario, ratio float64) sched.Inputs {
	par := sc.Job.Parallel
	m := sc.Job.Model
	return sched.Inputs{
		PoolRanks:     sc.Job.PoolRanks(),
		BudgetTokens:  par.BudgetTokens,
		PP:            max(par.PP, 1),
		VPP:           max(par.VPP, 1),
		EP:            max(par.EPRanks(), 1),
		ContextTokens: sc.Job.ContextTokens,
		OverheadRatio: ratio,
		QueryHeads:    m.QueryHeads / max(par.TP, 1),
	}
}

// SampleBatches draws batches 0..n-1 of s in parallel; each depends only on
// (seed, k), so the result is the same whatever the parallelism.
func SampleBatches(s *workload.Sampler, n int) []workload.Batch {
	batches := make([]workload.Batch, n)
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for k := range n {
		g.Go(func() error { batches[k] = s.Batch(k); return nil })
	}
	_ = g.Wait() // Batch cannot fail
	return batches
}
