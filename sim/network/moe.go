package network

import (
	"fmt"

	"github.com/dcpsim/dcpsim/job"
)

// MoELayerCost is the expert-parallel communication of one MoE layer on the
// slowest rank of an EP group.
type MoELayerCost struct {
	// DispatchPayloadBytes and CombinePayloadBytes are the per-GPU all-to-all
	// buffers: tokens·k·h·b_d and tokens·k·h·2 (the local 1/ep share included).
	DispatchPayloadBytes, CombinePayloadBytes float64
	// SentBytes is what leaves the GPU in one pass: (ep−1)/ep of both buffers
	// (costmodel §4.4's V_disp + V_comb per token).
	SentBytes float64
	// FwdSeconds is the dispatch plus the combine all-to-all of the forward pass;
	// BwdSeconds is the backward, which repeats both (the backward of the combine
	// is a dispatch and vice versa).
	FwdSeconds, BwdSeconds float64
	// NICSeconds is one pass's all-to-all traffic on the GPU's NIC alone
	// (its flow in a Window, PatternAllToAll over the EP group), computed
	// only on a topology whose fabric can contend.
	NICSeconds float64
}

// MoELayer prices the dispatch and combine all-to-alls of one MoE layer over the
// EP group of ep contiguous HDP ranks starting at firstRank, every rank routing
// tokensPerRank tokens (pass the most any rank of the group routes: the
// all-to-all is a barrier and the fullest rank sets its time). With sequence
// parallelism each of a rank's tp GPUs dispatches tokensPerRank/tp tokens over the
// EP group of its TP index. Per GPU (costmodel §4.4, uniform routing):
//
//	dispatch buffer = tokens/tp · k·h·b_d   (b_d = 1 for FP8, 2 for BF16)
//	combine  buffer = tokens/tp · k·h·2
//	Fwd = AllToAll(dispatch) + AllToAll(combine),  Bwd = Fwd
//
// so the bytes leaving a GPU per pass are (ep−1)/ep of the buffers. MoE
// communication is returned whole: without a DualPipe-style overlap it is on the
// critical path. A dense model or ep = 1 costs nothing. It panics if the group
// leaves the pool or tokensPerRank is negative.
func MoELayer(t Topology, m job.Model, firstRank, ep, tokensPerRank int, fp8Dispatch bool) MoELayerCost {
	if tokensPerRank < 0 || ep < 1 {
		panic(fmt.Sprintf("network: MoE layer with %d tokens per rank over ep = %d", tokensPerRank, ep))
	}
	t.Spans(Contiguous(firstRank, ep)) // range check
	if ep == 1 || m.TopK == 0 || tokensPerRank == 0 {
		return MoELayerCost{}
	}
	tok := float64(tokensPerRank) / float64(t.TP)
	disp := tok * m.MoEDispatchBytesPerTokenLayer(fp8Dispatch)
	comb := tok * m.MoECombineBytesPerTokenLayer()
	fwd := AllToAllSeconds(t, firstRank, ep, disp) + AllToAllSeconds(t, firstRank, ep, comb)
	c := MoELayerCost{
		DispatchPayloadBytes: disp,
		CombinePayloadBytes:  comb,
		SentBytes:            float64(ep-1) / float64(ep) * (disp + comb),
		FwdSeconds:           fwd,
		BwdSeconds:           fwd,
	}
	if t.Contended() {
		c.NICSeconds = allToAllNICSeconds(t, firstRank, ep, disp+comb)
	}
	return c
}
