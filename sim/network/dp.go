package network

import "fmt"

// GradBytesPerParam is the size of one gradient element in the DP reduce-scatter:
// gradients are reduced in BF16 (Megatron's --grad-reduce-in-bf16; FP32
// reduction would double the reduce-scatter bytes).
const GradBytesPerParam = 2

// ParamBytesPerParam is the size of one parameter element in the ZeRO-1
// all-gather that redistributes the updated BF16 parameters.
const ParamBytesPerParam = 2

// GradSyncCost is the data-parallel synchronisation of one stage at the end of an
// iteration, per GPU (distributed optimizer, ZeRO-1; costmodel §4.5).
type GradSyncCost struct {
	// DenseReduceScatterSeconds and DenseAllGatherSeconds are the non-expert
	// gradients' reduce-scatter and the parameters' all-gather over the whole
	// pool (G ranks).
	DenseReduceScatterSeconds, DenseAllGatherSeconds float64
	// ExpertReduceScatterSeconds and ExpertAllGatherSeconds are the same for the
	// routed experts over an expert-DP group: the G/ep ranks holding the same
	// expert shard (ranks e, e+ep, e+2·ep, …).
	ExpertReduceScatterSeconds, ExpertAllGatherSeconds float64
	// SentBytes is what leaves a GPU: (d−1)/d of each buffer, d the group size.
	SentBytes float64
}

// ReduceScatterSeconds is the gradient reduce-scatter part, dense then expert (one
// communication stream runs them in turn).
func (c GradSyncCost) ReduceScatterSeconds() float64 {
	return c.DenseReduceScatterSeconds + c.ExpertReduceScatterSeconds
}

// AllGatherSeconds is the parameter all-gather part, dense then expert.
func (c GradSyncCost) AllGatherSeconds() float64 {
	return c.DenseAllGatherSeconds + c.ExpertAllGatherSeconds
}

// Seconds is the whole synchronisation, ReduceScatterSeconds + AllGatherSeconds.
func (c GradSyncCost) Seconds() float64 { return c.ReduceScatterSeconds() + c.AllGatherSeconds() }

// GradSync prices the DP synchronisation of one stage (costmodel §4.5):
// denseParamsPerGPU is the non-expert parameters one GPU of the stage holds (the
// stage's share divided by tp), expertParamsPerGPU the routed-expert parameters
// it holds (divided by ep as well). Dense gradients are reduce-scattered over the
// whole HDP pool (ByteScale/HyDra run ZeRO-1 across DP×CP), expert gradients only
// over the expert-DP group of G/ep ranks; each is followed by the all-gather of
// the updated parameters:
//
//	RS = ReduceScatterSeconds(group, Ψ·GradBytesPerParam)
//	AG = AllGatherSeconds(group, Ψ·ParamBytesPerParam)
//
// The expert-DP group is priced at expert shard 0 (ranks 0, ep, 2·ep, …); all
// shards lie alike on node-aligned stages. It panics if ep does not divide G or a
// parameter count is negative.
func GradSync(t Topology, denseParamsPerGPU, expertParamsPerGPU float64, ep int) GradSyncCost {
	return GradSyncBytes(t, denseParamsPerGPU, expertParamsPerGPU, ep, GradBytesPerParam)
}

// GradSyncBytes is GradSync with gradients of gradBytes bytes an element in
// the reduce-scatter (4 for FSDP's FP32 reduction, Llama 3 §3.3.2 and
// torchtitan's FSDP2 mixed precision).
func GradSyncBytes(t Topology, denseParamsPerGPU, expertParamsPerGPU float64, ep int, gradBytes float64) GradSyncCost {
	if ep < 1 || t.PoolRanks%ep != 0 || denseParamsPerGPU < 0 || expertParamsPerGPU < 0 {
		panic(fmt.Sprintf("network: grad sync with ep = %d over G = %d, params %g dense / %g expert",
			ep, t.PoolRanks, denseParamsPerGPU, expertParamsPerGPU))
	}
	dense := Contiguous(0, t.PoolRanks)
	expert := Ranks{First: 0, Count: t.PoolRanks / ep, Stride: ep}
	sent := func(g Ranks, bytes float64) float64 {
		return float64(g.Count-1) / float64(g.Count) * bytes
	}
	dRS, dAG := denseParamsPerGPU*gradBytes, denseParamsPerGPU*ParamBytesPerParam
	eRS, eAG := expertParamsPerGPU*gradBytes, expertParamsPerGPU*ParamBytesPerParam
	// Every stage's groups of one kind (the dense rings of all TP indices,
	// or the ep expert-DP rings) run at once: on a contended fabric each is
	// priced stretched by its window (Window, PatternNCCLRing).
	dt, et := t, t
	if t.Contended() {
		var w Window
		dt = t.Slowed(gradSyncStretch(&w, t, []Ranks{dense}, dRS))
		shards := make([]Ranks, 0, ep)
		for e := range ep {
			shards = append(shards, Ranks{First: e, Count: t.PoolRanks / ep, Stride: ep})
		}
		et = t.Slowed(gradSyncStretch(&w, t, shards, eRS))
	}
	return GradSyncCost{
		DenseReduceScatterSeconds:  ReduceScatterSeconds(dt, dense, dRS),
		DenseAllGatherSeconds:      AllGatherSeconds(dt, dense, dAG),
		ExpertReduceScatterSeconds: ReduceScatterSeconds(et, expert, eRS),
		ExpertAllGatherSeconds:     AllGatherSeconds(et, expert, eAG),
		SentBytes:                  sent(dense, dRS+dAG) + sent(expert, eRS+eAG),
	}
}

// gradSyncStretch is the stretch of the rings gs run at once, each moving
// bytes per rank (window w reused).
func gradSyncStretch(w *Window, t Topology, gs []Ranks, bytes float64) float64 {
	w.Reset(t)
	for _, g := range gs {
		w.Add(Demand{Ranks: g, Pattern: PatternNCCLRing, NICSeconds: ringNICSeconds(t, g, bytes)})
	}
	w.Solve()
	sigma := 1.0
	for i := range gs {
		sigma = max(sigma, w.Stretch(i))
	}
	return sigma
}
