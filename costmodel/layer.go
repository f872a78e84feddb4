package costmodel

import (
	"github.com/dcpsim/dcpsim/job"
	"github.com/dcpsim/dcpsim/sim/network"
)

// layerExtra is what tensor parallelism and activation recomputation add to
// one layer of a group, per GPU: TP communication in each pass and the
// recomputed forward in the backward pass, its compute and communication
// apart (the engine counts communication as exposed).
type layerExtra struct {
	// tpFwd and tpBwd are the layer's TP collectives, forward and backward
	// (network.TPLayerSeconds: Megatron-LM 2022 does not overlap them).
	tpFwd, tpBwd float64
	// recomputeCompute and recomputeComm are the forward work the backward
	// pass runs again: under job.RecomputeFull the layer's whole forward (its
	// ops, core attention, exposed CP and TP communication), under
	// job.RecomputeSelective the core attention's forward alone (Korthikanti
	// et al. 2022: the scores, softmax, dropout and weighted values, no
	// communication), under job.RecomputeNone nothing.
	recomputeCompute, recomputeComm float64
}

// layerExtra prices a layer's TP communication and recomputation for a
// group whose ranks hold perRank tokens, with opsFwd the layer's ops and
// attnFwd its core attention forward (per GPU) and cpFwd its exposed CP
// communication in the forward pass. With Options.NoComm the communication
// is free; recomputation still repeats the compute.
func (m *Model) layerExtra(t network.Topology, perRank int, opsFwd, attnFwd, cpFwd float64) layerExtra {
	var x layerExtra
	par := m.job.Parallel
	if !m.opts.NoComm {
		x.tpFwd = network.TPLayerSeconds(t, m.job.Model.Hidden, perRank, par.SequenceParallel)
		x.tpBwd = x.tpFwd
	}
	switch par.RecomputeMode() {
	case job.RecomputeFull:
		x.recomputeCompute, x.recomputeComm = opsFwd+attnFwd, cpFwd+x.tpFwd
	case job.RecomputeSelective:
		x.recomputeCompute = attnFwd
	}
	return x
}

// gradSyncAndOptimizer prices a stage's end of iteration for its dense and
// routed-expert parameters per GPU: under job.GradReduceScatter (the
// distributed optimizer) network.GradSync and the optimizer step over the
// GPU's 1/G shard (dense/G + expert·ep/G); under job.GradAllReduce
// network.GradAllReduce and the step over every parameter the GPU holds;
// under FP8 training the step adds the recast of every weight the GPU holds
// (calib.Compute.FP8WeightCastSeconds).
func (m *Model) gradSyncAndOptimizer(stage int, dense, expert float64) (sync, optimizer float64) {
	t := m.topo.ForStage(stage)
	if m.job.Parallel.GradSyncMode() == job.GradAllReduce {
		if !m.opts.NoComm {
			sync = network.GradAllReduce(t, dense, expert, m.ep).Seconds()
		}
	} else if !m.opts.NoComm {
		sync = network.GradSync(t, dense, expert, m.ep).Seconds()
	}
	stepped := m.steppedParams(dense, expert)
	// Every rank steps its shard at once: the slowest kind's HBM sets the time.
	for _, d := range m.devices {
		optimizer = max(optimizer, d.Compute.OptimizerStepSeconds(stepped)+d.Compute.FP8WeightCastSeconds(dense+expert))
	}
	return sync, optimizer
}

// steppedParams is the parameters one GPU's optimizer step updates, of the
// dense and routed-expert parameters it holds: its 1/G shard under the
// distributed optimizer (dense/G + expert·ep/G), all of them under
// job.GradAllReduce.
func (m *Model) steppedParams(dense, expert float64) float64 {
	if m.job.Parallel.GradSyncMode() == job.GradAllReduce {
		return dense + expert
	}
	g := float64(m.topo.PoolRanks)
	return dense/g + expert*float64(m.ep)/g
}
