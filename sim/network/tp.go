package network

import "fmt"

// intraAllReduceSeconds is NCCL's ring all-reduce of bytes per rank among n
// GPUs of one node: a reduce-scatter and an all-gather on one ring,
// 2·(n−1)/n·S over NVLink, with one base latency and 2·(n−1) hops (NCCL's
// ring model, costmodel §5.2: nsteps = 2(n−1) for an all-reduce).
func (t Topology) intraAllReduceSeconds(n int, bytes float64) float64 {
	if n <= 1 || bytes <= 0 {
		return 0
	}
	fn := float64(n)
	return t.nvlinkSeconds(2*(fn-1)/fn*bytes) + t.IntraBaseSeconds + 2*(fn-1)*t.IntraHopSeconds
}

// TPAllReduceLayerSeconds is the tensor-parallel communication of one
// transformer layer without sequence parallelism for a rank holding tokens
// tokens, per pass: two all-reduces of tokens·h·2 bytes among the rank's tp
// GPUs on NVLink (Megatron-LM's g after the attention output projection and
// the FFN down projection in the forward pass, its f before the QKV and up
// projections in the backward pass; Shoeybi et al. 2019 §3). An all-reduce
// moves what a reduce-scatter and an all-gather move, so it costs
// TPSPLayerSeconds' bytes with two base latencies instead of four. It is 0
// for tp = 1.
func TPAllReduceLayerSeconds(t Topology, hidden, tokens int) float64 {
	return 2 * t.intraAllReduceSeconds(t.TP, float64(tokens)*float64(hidden)*2)
}

// TPLayerSeconds is one layer's tensor-parallel communication per pass
// (forward = backward): TPSPLayerSeconds with sequence parallelism,
// TPAllReduceLayerSeconds without. Megatron-LM 2022 runs these collectives
// between the layer's kernels, not overlapped with them, and so does the
// cost model.
func TPLayerSeconds(t Topology, hidden, tokens int, sequenceParallel bool) float64 {
	if sequenceParallel {
		return TPSPLayerSeconds(t, hidden, tokens)
	}
	return TPAllReduceLayerSeconds(t, hidden, tokens)
}

// GradAllReduce prices the DP synchronisation of one stage without a
// distributed optimizer (Megatron-LM's DistributedDataParallel before it,
// e.g. Narayanan et al. SC'21): the dense gradients are all-reduced over the
// whole pool and the expert gradients over their expert-DP group, each as a
// reduce-scatter then an all-gather of the gradients (NCCL's ring
// all-reduce moves the same bytes):
//
//	RS = ReduceScatterSeconds(group, Ψ·GradBytesPerParam)
//	AG = AllGatherSeconds(group, Ψ·GradBytesPerParam)
//
// The cost's all-gather fields hold the gradients' all-gather (no parameter
// is gathered: every replica updates all its parameters). It panics as
// GradSync does.
func GradAllReduce(t Topology, denseParamsPerGPU, expertParamsPerGPU float64, ep int) GradSyncCost {
	if ep < 1 || t.PoolRanks%ep != 0 || denseParamsPerGPU < 0 || expertParamsPerGPU < 0 {
		panic(fmt.Sprintf("network: grad all-reduce with ep = %d over G = %d, params %g dense / %g expert",
			ep, t.PoolRanks, denseParamsPerGPU, expertParamsPerGPU))
	}
	dense := Contiguous(0, t.PoolRanks)
	expert := Ranks{First: 0, Count: t.PoolRanks / ep, Stride: ep}
	d, e := denseParamsPerGPU*GradBytesPerParam, expertParamsPerGPU*GradBytesPerParam
	sent := func(g Ranks, bytes float64) float64 { return 2 * float64(g.Count-1) / float64(g.Count) * bytes }
	return GradSyncCost{
		DenseReduceScatterSeconds:  ReduceScatterSeconds(t, dense, d),
		DenseAllGatherSeconds:      AllGatherSeconds(t, dense, d),
		ExpertReduceScatterSeconds: ReduceScatterSeconds(t, expert, e),
		ExpertAllGatherSeconds:     AllGatherSeconds(t, expert, e),
		SentBytes:                  sent(dense, d) + sent(expert, e),
	}
}
