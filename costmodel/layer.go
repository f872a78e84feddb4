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
	// tpFwd and tpBwd are the layer's exposed TP collectives, forward and
	// backward (network.TPLayerSeconds: Megatron-LM 2022 does not overlap
	// them; with job.Parallel.TPCommOverlap what outlasts the layer's GEMMs).
	tpFwd, tpBwd float64
	// fsdpFwd and fsdpBwd are, under job.GradFSDPReshard, the layer's
	// parameter gathers (and gradient reduce-scatter) that outlast its
	// compute in each pass.
	fsdpFwd, fsdpBwd float64
	// recomputeCompute and recomputeComm are the forward work the backward
	// pass runs again: under job.RecomputeFull the layer's whole forward (its
	// ops, core attention, exposed CP and TP communication), under
	// job.RecomputeSelective the core attention's forward alone (Korthikanti
	// et al. 2022: the scores, softmax, dropout and weighted values, no
	// communication), under job.RecomputeNone nothing.
	recomputeCompute, recomputeComm float64
}

// layerIn is what layerExtra needs of one layer of one group, per GPU: the
// layer kind (0 dense, 1 MoE), the fullest rank's tokens, its ops, core
// attention and GEMMs ([forward, backward]) and its exposed CP
// communication in the forward pass.
type layerIn struct {
	kind, perRank   int
	ops, attn, gemm [2]float64
	cpFwd           float64
}

// layerExtra prices a layer's TP and FSDP communication and recomputation
// (see layerIn). With job.Parallel.TPCommOverlap the TP collectives run
// pipelined with the GEMMs that produce or consume them (Transformer
// Engine's userbuffers overlap: the all-gathers before the QKV and FC1
// GEMMs, the reduce-scatters after the output projection and FC2, and their
// adjoints in the backward), so a pass exposes only what outlasts the
// layer's GEMMs of that pass. Under job.GradFSDPReshard each pass gathers
// the layer's parameters (and the backward reduce-scatters its gradients)
// while the neighbouring layer computes (FSDP's prefetch): a pass exposes
// what outlasts the layer's compute. With Options.NoComm the communication
// is free; recomputation still repeats the compute.
func (m *Model) layerExtra(t network.Topology, in layerIn) layerExtra {
	var x layerExtra
	par := m.job.Parallel
	if !m.opts.NoComm {
		tp := network.TPLayerSeconds(t, m.job.Model.Hidden, in.perRank, par.SequenceParallel)
		x.tpFwd, x.tpBwd = tp, tp
		if par.TPCommOverlap {
			x.tpFwd, x.tpBwd = max(0, tp-in.gemm[0]), max(0, tp-in.gemm[1])
		}
		if f := m.fsdpLayer[in.kind]; f != ([2]float64{}) {
			x.fsdpFwd = max(0, f[0]-in.ops[0]-in.attn[0])
			x.fsdpBwd = max(0, f[0]+f[1]-in.ops[1]-in.attn[1])
		}
	}
	switch par.RecomputeMode() {
	case job.RecomputeFull:
		x.recomputeCompute, x.recomputeComm = in.ops[0]+in.attn[0], in.cpFwd+x.tpFwd
	case job.RecomputeSelective:
		x.recomputeCompute = in.attn[0]
	}
	return x
}

// fsdpLayers prices, under job.GradFSDPReshard, one dense and one MoE
// layer's parameter all-gather and FP32 gradient reduce-scatter per GPU
// ([kind][all-gather, reduce-scatter], network.GradSyncBytes of the layer's
// parameters on stage 0); zero otherwise.
func (m *Model) fsdpLayers() [2][2]float64 {
	var out [2][2]float64
	if m.job.Parallel.GradSyncMode() != job.GradFSDPReshard || m.opts.NoComm {
		return out
	}
	mod, par := m.job.Model, m.job.Parallel
	tp := float64(max(par.TP, 1))
	eShard := float64(max(par.ExpertTP(), 1)) * float64(max(par.EP, 1))
	for kind, l := range [2]int{m.denseLayer, m.moeLayer} {
		if l < 0 {
			continue
		}
		e := mod.LayerExpertParams(l)
		c := network.GradSyncBytes(m.topo, (mod.LayerParams(l)-e)/tp, e/eShard, m.ep, FSDPGradBytesPerParam)
		out[kind] = [2]float64{c.DenseAllGatherSeconds + c.ExpertAllGatherSeconds, c.DenseReduceScatterSeconds + c.ExpertReduceScatterSeconds}
	}
	return out
}

// stageSync is a stage's end of iteration per GPU: the gradient
// reduce-scatter (or all-reduce) and the parameter all-gather, each split
// into the dense and routed-expert parts, and the optimizer step.
type stageSync struct {
	denseRS, expertRS, denseAG, expertAG float64
	optimizer                            float64
}

// rs and ag are the whole reduce-scatter (all-reduce) and all-gather.
func (s stageSync) rs() float64 { return s.denseRS + s.expertRS }
func (s stageSync) ag() float64 { return s.denseAG + s.expertAG }

// gradSyncAndOptimizer prices a stage's end of iteration for its dense and
// routed-expert parameters per GPU: under job.GradReduceScatter (the
// distributed optimizer) network.GradSync and the optimizer step over the
// GPU's 1/G shard (dense/G + expert·ep/G); under job.GradAllReduce
// network.GradAllReduce and the step over every parameter the GPU holds;
// under FP8 training the step adds the recast of every weight the GPU holds
// (compute.Compute.FP8WeightCastSeconds).
func (m *Model) gradSyncAndOptimizer(stage int, dense, expert float64) stageSync {
	var st stageSync
	t := m.topo.ForStage(stage)
	if m.job.Parallel.GradSyncMode() == job.GradAllReduce {
		if !m.opts.NoComm {
			c := network.GradAllReduce(t, dense, expert, m.ep)
			st.denseRS, st.denseAG, st.expertRS, st.expertAG = c.DenseReduceScatterSeconds, c.DenseAllGatherSeconds, c.ExpertReduceScatterSeconds, c.ExpertAllGatherSeconds
		}
		for _, d := range m.devices {
			st.optimizer = max(st.optimizer, d.Compute.OptimizerStepSeconds(m.steppedParams(dense, expert))+d.Compute.FP8WeightCastSeconds(dense+expert))
		}
		return st
	}
	mode := m.job.Parallel.GradSyncMode()
	if !m.opts.NoComm && mode != job.GradFSDPReshard {
		c := network.GradSyncBytes(t, dense, expert, m.ep, m.gradBytesPerParam())
		st.denseRS, st.denseAG, st.expertRS, st.expertAG = c.DenseReduceScatterSeconds, c.DenseAllGatherSeconds, c.ExpertReduceScatterSeconds, c.ExpertAllGatherSeconds
	}
	stepped := m.steppedParams(dense, expert)
	// Every rank steps its shard at once: the slowest kind's HBM sets the time.
	for _, d := range m.devices {
		st.optimizer = max(st.optimizer, d.Compute.OptimizerStepSeconds(stepped)+d.Compute.FP8WeightCastSeconds(dense+expert))
	}
	return st
}

// gradBytesPerParam is the bytes of a gradient element in the job's
// reduce-scatter: FSDPGradBytesPerParam under FSDP or with
// job.Parallel.GradReduceFP32, else network.GradBytesPerParam (BF16).
func (m *Model) gradBytesPerParam() float64 {
	if m.job.Parallel.GradSyncMode() == job.GradFSDP || m.job.Parallel.GradReduceFP32 {
		return FSDPGradBytesPerParam
	}
	return network.GradBytesPerParam
}

// FSDPGradBytesPerParam is the bytes of a gradient element in FSDP's
// reduce-scatter, and in any with job.Parallel.GradReduceFP32: FP32 (Llama 3
// §3.3.2: gradients accumulated and reduce-scattered in FP32; torchtitan's
// FSDP2 MixedPrecisionPolicy with reduce_dtype float32).
const FSDPGradBytesPerParam = 4

// DDPBucketParams is the parameters per gradient bucket of Megatron-Core's
// DistributedDataParallel when none is configured, max(40M, 1M·dp)
// (megatron/core/distributed/distributed_data_parallel.py: "use sane
// default based on dp_group size"). Megatron buckets only the first model
// chunk of the first pipeline stage; every other chunk is one bucket
// ("data-parallel communication on these stages is not on the critical
// path").
func DDPBucketParams(dp int) float64 { return max(40e6, 1e6*float64(dp)) }

// chunkSync is one model chunk's share of its stage's overlapped
// reduce-scatter: its seconds and its last bucket's.
type chunkSync struct{ seconds, last float64 }

// overlappedSync splits stage s's reduce-scatter st over its chunks in
// proportion to their dense and expert parameters per GPU, with the last
// bucket's seconds (DDPBucketParams on stage 0's first chunk, the whole
// chunk elsewhere), and returns the sync left exposed after them: the
// parameter all-gather, all of it, or with job.Parallel.OverlapParamGather
// the first bucket's on stage 0 alone (the other stages and buckets gather
// during the next iteration's forward, behind the pipeline's fill).
func (m *Model) overlappedSync(s int, st stageSync) ([]chunkSync, float64) {
	mod, par := m.job.Model, m.job.Parallel
	comp := m.devices[0].Compute
	first, n := comp.StageLayers(s)
	tp := float64(max(par.TP, 1))
	eShard := float64(max(par.ExpertTP(), 1)) * float64(max(par.EP, 1))
	dense, expert := make([]float64, m.vpp), make([]float64, m.vpp)
	var dSum, eSum float64
	for c := range m.vpp {
		lo, hi := par.ChunkRange(s, first, n, c)
		for l := lo; l < hi; l++ {
			e := mod.LayerExpertParams(l)
			dense[c] += (mod.LayerParams(l) - e) / tp
			expert[c] += e / eShard
		}
	}
	if s == 0 {
		dense[0] += mod.EmbeddingParams() / tp
	}
	if s == m.topo.PP-1 {
		dense[m.vpp-1] += mod.OutputParams() / tp
	}
	for c := range m.vpp {
		dSum += dense[c]
		eSum += expert[c]
	}
	bucket := DDPBucketParams(m.topo.PoolRanks)
	fsdp := par.GradSyncMode() == job.GradFSDP
	if fsdp {
		// FSDP's unit is one transformer layer, on every stage and chunk.
		bucket = 0
		for l := first; l < first+n; l++ {
			e := mod.LayerExpertParams(l)
			bucket = max(bucket, (mod.LayerParams(l)-e)/tp+e/eShard)
		}
	}
	out := make([]chunkSync, m.vpp)
	for c := range m.vpp {
		var sec float64
		if dSum > 0 {
			sec += st.denseRS * dense[c] / dSum
		}
		if eSum > 0 {
			sec += st.expertRS * expert[c] / eSum
		}
		out[c] = chunkSync{seconds: sec, last: sec}
		if p := dense[c] + expert[c]; (fsdp || s == 0 && c == 0) && p > bucket {
			out[c].last = sec * bucket / p
		}
	}
	ag := st.ag()
	if par.OverlapParamGather || fsdp {
		ag = 0
		if p := dSum + eSum; s == 0 && p > 0 {
			ag = st.ag() * min(1, bucket/p)
		}
	}
	return out, ag
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
