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

// MoELayerDedup is MoELayer for a dispatcher that sends each token across
// the fabric once per destination node and forwards it over NVLink to the
// node's experts it routes to (DeepEP's internode kernels, Megatron-Core's
// flex dispatcher; DeepSeek-V3 §3.2.2): a GPU's NIC carries tokens·h·b per
// remote node its token reaches instead of per routed copy. Under uniform
// routing over the E experts, of which node j of the group holds e_j, a
// token reaches
//
//	D = Σ_remote j (1 − C(E − e_j, k) / C(E, k))
//
// remote nodes on average (RemoteNodesReached), so the NIC bytes of
// MoELayer's all-to-alls are scaled by D / (k · off-node share). NVLink
// carries every copy once (the local node's and the forwarded ones), as in
// MoELayer. Inside one node it is MoELayer.
func MoELayerDedup(t Topology, m job.Model, firstRank, ep, tokensPerRank int, fp8Dispatch bool) MoELayerCost {
	c := MoELayer(t, m, firstRank, ep, tokensPerRank, fp8Dispatch)
	s := t.Spans(Contiguous(firstRank, ep))
	if c.FwdSeconds == 0 || s.Nodes <= 1 || t.Mixed() {
		return c
	}
	off := float64(ep-s.MinLocal) / float64(ep) // the copies MoELayer sends off the node
	scale := RemoteNodesReached(m.RoutedExperts, m.TopK, ep, s.MinLocal, t.RanksPerNode) / (float64(m.TopK) * off)
	if scale >= 1 {
		return c
	}
	pass := func(bytes float64) float64 {
		peer := bytes / float64(ep)
		intra := t.nvlinkSeconds(float64(s.MaxLocal-1) * peer)
		inter := t.allToAllNICSeconds(float64(ep-s.MinLocal)*peer*scale, s.Nodes)
		return max(intra, inter) + t.oneHopSeconds(true)
	}
	fwd := pass(c.DispatchPayloadBytes) + pass(c.CombinePayloadBytes)
	c.FwdSeconds, c.BwdSeconds = fwd, fwd
	c.SentBytes *= (1 - off) + off*scale
	if c.NICSeconds > 0 {
		c.NICSeconds *= scale
	}
	return c
}

// RemoteNodesReached is the expected number of nodes other than its own
// that a token routed to k of E experts reaches, the experts spread evenly
// over an EP group of ep GPUs whose own node holds local of them and every
// other node perNode (the last node the rest): Σ over remote nodes of
// 1 − C(E − e_j, k)/C(E, k), e_j = E·(GPUs of node j)/ep.
func RemoteNodesReached(experts, k, ep, local, perNode int) float64 {
	if experts < 1 || k < 1 || ep < 1 {
		return 0
	}
	// missed(e) = C(E − e, k)/C(E, k) = Π_{i<k} (E − e − i)/(E − i).
	missed := func(e float64) float64 {
		p, E := 1.0, float64(experts)
		for i := range k {
			num := E - e - float64(i)
			if num <= 0 {
				return 0
			}
			p *= num / (E - float64(i))
		}
		return p
	}
	var d float64
	for rest := ep - local; rest > 0; rest -= perNode {
		g := min(perNode, rest)
		d += 1 - missed(float64(experts)*float64(g)/float64(ep))
	}
	return d
}
