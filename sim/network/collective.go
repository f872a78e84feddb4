package network

import "github.com/dcpsim/dcpsim/calib"

// transferSeconds is the time to push bytes through one link of peak bytes/s at
// efficiency, its curve's asymptotic Max (Links keeps only that): the β term of NCCL's α–β model
// (costmodel §5.2: time = latency + bytes / bandwidth). Every caller adds the
// latency α explicitly (base + hops·hop from the profile), so the curve's Half,
// which in a fit of measured times absorbs exactly that fixed latency, is not
// applied again: applying η(S) = Max·S/(S+Half) on top of α counted the latency
// twice and priced a 1 MB ring step across nodes at 1% of the NIC (the
// inter-node curve is fitted to a 32-rank all-reduce whose small sizes are
// latency-bound). Zero bytes take no time.
func transferSeconds(bytes, peak, efficiency float64) float64 {
	if bytes <= 0 {
		return 0
	}
	return bytes / (peak * efficiency)
}

func (l Links) nvlinkSeconds(bytes float64) float64 {
	return transferSeconds(bytes, l.NVLinkBytesPerSecond, l.CollectiveIntra)
}

// nicSeconds is bytes through the NIC at the curve of the collective kind
// (CollectiveInter, SendRecvInter or AllToAllInter).
func (l Links) nicSeconds(bytes, efficiency float64) float64 {
	return transferSeconds(bytes, l.NICBytesPerSecond, efficiency)
}

// oneHopSeconds is the latency of an all-to-all, whose messages each cross one
// hop: base + hop, inside a node or across nodes.
func (l Links) oneHopSeconds(crossesNodes bool) float64 {
	if crossesNodes {
		return l.InterBaseSeconds + l.InterHopSeconds
	}
	return l.IntraBaseSeconds + l.IntraHopSeconds
}

// p2pSeconds is the latency of one send/recv: NCCL's p2p path across nodes
// (InterP2PSeconds), base + hop inside a node.
func (l Links) p2pSeconds(crossesNodes bool) float64 {
	if crossesNodes {
		return l.InterP2PSeconds
	}
	return l.IntraBaseSeconds + l.IntraHopSeconds
}

// AllToAllSeconds is the time of one all-to-all among the contiguous HDP ranks
// [firstRank, firstRank+ranks) in which every rank holds bytesPerRank bytes and
// sends a 1/ranks share to every rank (its own share stays local). A rank with m
// group members on its node sends (m−1)/ranks of its buffer over NVLink and
// (ranks−m)/ranks over its one NIC, concurrently; the slowest rank sets the time
// (costmodel §4.1, §5.4):
//
//	T = max(intraBytes / (B_nvl·η_intra), interBytes / (B_nic·η_a2a(k))) + α
//
// with η_a2a(k) the AllToAllInter curve's Max times AllToAllScale.At(k) on
// k nodes (1 at the shipped profiles' A = 0: the published all-to-all NIC
// rates do not fall with node count, calib/testdata/collective_scale.csv), S = bytesPerRank, intraBytes taken on the node
// holding the most members, interBytes on the node holding the fewest, and
// α = base + hop (intra constants when the group sits in one node, inter
// otherwise). A group of one rank, or no bytes, costs 0. It panics if the ranks
// leave the pool.
func AllToAllSeconds(t Topology, firstRank, ranks int, bytesPerRank float64) float64 {
	if ranks <= 1 || bytesPerRank <= 0 {
		return 0
	}
	g := Contiguous(firstRank, ranks)
	s := t.Spans(g)
	k := float64(ranks)
	peer := bytesPerRank / k
	if t.Mixed() {
		// Each kind's ranks on their own links: the slowest endpoint sets the
		// time (a link between kinds runs at the slower NIC).
		var worst float64
		for _, seg := range t.kindSegments(g) {
			ss := t.Spans(seg.ranks)
			l := seg.links
			intra := l.nvlinkSeconds(float64(ss.MaxLocal-1) * peer)
			inter := l.allToAllNICSeconds(float64(ranks-ss.MinLocal)*peer, s.Nodes)
			worst = max(worst, max(intra, inter)+l.oneHopSeconds(s.Nodes > 1))
		}
		return worst
	}
	intra := t.nvlinkSeconds(float64(s.MaxLocal-1) * peer)
	inter := t.allToAllNICSeconds(float64(ranks-s.MinLocal)*peer, s.Nodes)
	return max(intra, inter) + t.oneHopSeconds(s.Nodes > 1)
}

// allToAllNICSeconds is bytes through the NIC at the all-to-all's rate over
// an all-to-all spanning nodes nodes: AllToAllInter's Max times
// AllToAllScale.At(nodes).
func (l Links) allToAllNICSeconds(bytes float64, nodes int) float64 {
	return l.nicSeconds(bytes, l.AllToAllInter) / calib.ScaleCurve{A: l.AllToAllScale}.At(nodes)
}

// SendRecvSeconds is the time of one ring step over the ring g (ranks in order,
// the last sending to the first): every rank sends bytes to its successor while
// receiving the same from its predecessor. A ring that touches more than one node
// has at least two hops across nodes, and the step waits for the slowest, so it
// runs at NIC speed (costmodel §4.2):
//
//	T = bytes / (B·η) + α,  B = B_nic, η = SendRecvInter and α = InterP2PSeconds
//	                        if the ring crosses nodes, else B_nvl, η = CollectiveIntra
//	                        and α = intra base + hop
//
// A ring of one rank, or no bytes, costs 0. It panics if the ranks leave the pool.
func SendRecvSeconds(t Topology, g Ranks, bytes float64) float64 {
	if g.Count <= 1 || bytes <= 0 {
		return 0
	}
	t.checkRank(g.First)
	t.checkRank(g.Last())
	if t.Node(g.First) != t.Node(g.Last()) {
		if t.Mixed() {
			var worst float64
			for _, seg := range t.kindSegments(g) {
				l := seg.links
				worst = max(worst, l.nicSeconds(bytes, l.SendRecvInter)+l.p2pSeconds(true))
			}
			return worst
		}
		return t.nicSeconds(bytes, t.SendRecvInter) + t.p2pSeconds(true)
	}
	l := t.LinksOf(g.First) // one node: one kind
	return l.nvlinkSeconds(bytes) + l.p2pSeconds(false)
}

// ReduceScatterSeconds is the time of a reduce-scatter over g in which every rank
// contributes bytes and keeps the reduced 1/Count of them: NCCL's ring. Inside
// one node the ring runs on NVLink (costmodel §5.3). Across k nodes it is one
// ring through all n = Count ranks, its data split over channels, each
// channel's ring leaving a node through the NIC of a different member GPU, and
// its NVLink and NIC hops pipelined, so the slower link sets the pace. Every
// rank sends (n−1)/n·S: a 1/m share of it over its NIC (m members on its node)
// and the rest over NVLink:
//
//	nvlink = (n−1)/n·S·(1−1/m) / (B_nvl·η_intra)   on the node with the most members
//	nic    = (n−1)/n·S/m       / (B_nic·η_inter)   on the node with the fewest (η_inter: CollectiveInter)
//	T      = max(nvlink, nic) + IntraBase + (m−1)·IntraHop + InterBase + (k−1)·InterHop
//
// so a ring across nodes runs at a bus bandwidth of m NICs, as nccl-tests
// measures it: 365.84 GB/s all-reduce busbw on 4 nodes of 8 H100 with 8
// 400G NICs each (github.com/NVIDIA/nccl-tests/issues/309) is 8 NICs at
// 0.953 of 48 GB/s. The latency is NCCL's ring model, base + steps·hop on
// each tier (costmodel §5.2). A set of one rank, or no bytes, costs 0. It
// panics if the ranks leave the pool.
func ReduceScatterSeconds(t Topology, g Ranks, bytes float64) float64 {
	return t.ringSeconds(g, bytes)
}

// AllGatherSeconds is the time of an all-gather over g in which every rank
// ends with bytes, gathered from the 1/Count each holds. It is the same ring
// as ReduceScatterSeconds and costs the same.
func AllGatherSeconds(t Topology, g Ranks, bytes float64) float64 {
	return t.ringSeconds(g, bytes)
}

// ringSeconds is ReduceScatterSeconds.
func (t Topology) ringSeconds(g Ranks, bytes float64) float64 {
	if g.Count <= 1 || bytes <= 0 {
		return 0
	}
	s := t.Spans(g)
	if s.Nodes == 1 {
		return t.LinksOf(g.First).intraRingSeconds(g.Count, bytes)
	}
	n, k := float64(g.Count), float64(s.Nodes)
	sent := (n - 1) / n * bytes // what each rank sends around the ring
	ring := func(l Links, most, fewest int) float64 {
		nvl := l.nvlinkSeconds(sent * (1 - 1/float64(most)))
		nic := l.nicSeconds(sent/float64(fewest), l.CollectiveInter)
		alpha := l.InterBaseSeconds + (k-1)*l.InterHopSeconds
		if most > 1 {
			alpha += l.IntraBaseSeconds + float64(most-1)*l.IntraHopSeconds
		}
		return max(nvl, nic) + alpha
	}
	if t.Mixed() {
		// Each kind's members on their own NVLink and NIC; the ring waits for
		// the slowest.
		var worst float64
		for _, seg := range t.kindSegments(g) {
			ss := t.Spans(seg.ranks)
			worst = max(worst, ring(seg.links, ss.MaxLocal, ss.MinLocal))
		}
		return worst
	}
	return ring(t.LinksOf(g.First), s.MaxLocal, s.MinLocal)
}

// intraRingSeconds is a ring reduce-scatter or all-gather of bytes per rank among
// n ranks of one node.
func (l Links) intraRingSeconds(n int, bytes float64) float64 {
	if n <= 1 || bytes <= 0 {
		return 0
	}
	fn := float64(n)
	return l.nvlinkSeconds((fn-1)/fn*bytes) + l.IntraBaseSeconds + (fn-1)*l.IntraHopSeconds
}

// P2PSeconds is the time to send bytes from HDP rank r of pipeline stage `stage`
// to the same HDP rank (and TP rank) of stage stage+1, the pipeline activation
// (or, backwards, gradient) transfer of costmodel §4.6:
//
//	T = bytes / (B·η) + α (B, η and α as for SendRecvSeconds)
//
// on NVLink when the two GPUs share a node under the Megatron mapping (they are
// G·tp GPUs apart, so only when a stage's G·tp GPUs are fewer than a node's),
// otherwise over the NIC; at production sizes stages are always on different
// nodes. It panics if stage+1 is not a stage or r is not a rank.
func P2PSeconds(t Topology, stage, r int, bytes float64) float64 {
	crosses := t.p2pCrossesNodes(stage, r)
	if bytes <= 0 {
		return 0
	}
	l := t.LinksOf(r) // both ends are rank r of their stage: the same kind
	if !crosses {
		return l.nvlinkSeconds(bytes) + l.p2pSeconds(false)
	}
	return l.nicSeconds(bytes, l.SendRecvInter) + l.p2pSeconds(true)
}

// p2pCrossesNodes reports whether rank r's GPUs of stages stage and
// stage+1 are on different nodes. It panics if stage+1 is not a stage or r
// is not a rank.
func (t Topology) p2pCrossesNodes(stage, r int) bool {
	t.ForStage(stage + 1) // range check
	t.checkRank(r)
	from := (stage*t.PoolRanks + r) * t.TP / t.GPUsPerNode
	to := ((stage+1)*t.PoolRanks + r) * t.TP / t.GPUsPerNode
	return from != to
}

// P2PNICSeconds is P2PSeconds's NIC term (bytes at rank r's send/recv
// rate when the stages' GPUs are on different nodes, else 0): the size of
// the transfer's flow in a Window (PatternPeerStage).
func P2PNICSeconds(t Topology, stage, r int, bytes float64) float64 {
	if !t.p2pCrossesNodes(stage, r) || bytes <= 0 {
		return 0
	}
	l := t.LinksOf(r)
	return l.nicSeconds(bytes, l.SendRecvInter)
}

// P2PActivationBytes is the bytes one GPU sends across a stage boundary for one
// micro-batch of tokens tokens (per HDP rank): tokens·h·2 (BF16), split over the
// tp ranks by sequence parallelism (costmodel §4.6). The backward gradient is the
// same size.
func P2PActivationBytes(t Topology, hidden, tokens int) float64 {
	return float64(tokens) * float64(hidden) * 2 / float64(t.TP)
}

// TPSPLayerSeconds is the tensor-parallel communication of one transformer layer
// with sequence parallelism for a rank holding tokens tokens: two all-gathers and
// two reduce-scatters of tokens·h·2 bytes (the gathered activation) per pass,
// forward and backward alike, on NVLink rings of tp GPUs (costmodel §4.7). It is
// returned per pass (forward = backward) and is 0 for tp = 1. Megatron overlaps
// part of it with the GEMMs; this is the un-overlapped cost. On a mixed cluster
// it is the first kind's NVLink.
func TPSPLayerSeconds(t Topology, hidden, tokens int) float64 {
	s := float64(tokens) * float64(hidden) * 2
	return 4 * t.intraRingSeconds(t.TP, s)
}
