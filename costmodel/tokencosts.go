package costmodel

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/network"
)

// TokenCosts is the job's microbatch time in the linear form a profiling
// planner fits (sched.TokenCosts; FlexSP §4.1.2), taken from this cost model
// on the stage that sets the pipeline's pace (Overhead's: the most layers)
// at its operating point, a rank holding B tokens:
//
//   - a1 = Overhead's c: that stage's causal attention, forward and backward,
//     per token² of per-rank load, at block B;
//   - a2 = the stage's GEMM and memory-bound ops (compute.Compute.RankStageSeconds
//     without attention and launches) plus its MoE dispatch and combine
//     (network.MoELayer over EP block 0), at B tokens per rank, over B;
//   - b1 = Overhead's θ: kernel launches, pipeline p2p and the MoE and CP
//     collectives' latencies of one microbatch;
//   - u_k = the stage's Ulysses all-to-alls (network.CPLayer, nothing
//     overlapped, group at rank 0) at B tokens per rank, over B, for k = 2, 4,
//     ... up to the query heads per TP rank and the pool (MaxCPDegree), the
//     widest group Ulysses runs.
//
// It prices one device kind (the first): the model of one GPU the profiling
// planners assume.
func (m *Model) TokenCosts() sched.TokenCosts {
	o := m.Overhead()
	b := m.job.Parallel.BudgetTokens
	comp := m.devices[0].Compute
	t := m.topo.ForStage(o.Stage)
	s := comp.RankStageSeconds(o.Stage, b, nil)
	linear := s.GEMMFwd + s.GEMMBwd + s.MemoryFwd + s.MemoryBwd
	if o.MoELayers > 0 && !m.opts.NoComm {
		c := m.moeComm(t, 0, b)
		linear += float64(o.MoELayers) * (c.FwdSeconds + c.BwdSeconds)
	}
	tc := sched.TokenCosts{
		Source: fmt.Sprintf("cost model of %s on %s, stage %d (%d layers) at B = %d tokens per rank",
			m.job.Model.Name, m.devices[0].Name, o.Stage, o.Layers, b),
		AttentionSecondsPerToken2: o.CSecondsPerSquareToken,
		LinearSecondsPerToken:     linear / float64(b),
		FixedSeconds:              o.ThetaSeconds,
	}
	for k := 2; k <= m.MaxCPDegree(sched.Ulysses); k *= 2 {
		var u float64
		if !m.opts.NoComm {
			c, err := network.CPLayer(t, m.job.Model, network.CPGroup{Exec: sched.Ulysses, FirstRank: 0, Degree: k}, k*b, network.CPOverlap{})
			if err != nil {
				break // cannot happen below MaxCPDegree; stop the table rather than lie
			}
			u = float64(o.Layers) * (c.Fwd.CommSeconds + c.Bwd.CommSeconds) / float64(b)
		}
		tc.AllToAll = append(tc.AllToAll, sched.DegreeSeconds{Degree: k, SecondsPerToken: u})
	}
	return tc
}
