// Package network is dcpsim's cost model for communication: where the HDP ranks
// of a pipeline stage sit on NVLink nodes, what each collective costs on that
// layout, and what context parallelism (CP), expert parallelism (EP), data
// parallelism (DP) and the pipeline send per layer, micro-batch or iteration. It
// is pure and deterministic: plain functions of a Topology (built from a
// calib.Profile and a job.Cluster), byte counts from job.Model, and the compute
// time the caller offers for overlap. It is the network model of the design's
// layout: costmodel is its user, pricing a plan's communication with it beside
// costmodel/compute for computation (the CLI's costs collective and calibrate
// only print its prices). Section numbers (§) refer to the cost-model research
// dossier (costmodel.md).
//
// # Topology and rank mapping
//
// Megatron's order: tp fastest, then the G = gpus/(tp·pp) HDP (DP×CP) ranks, pp
// outermost. HDP rank r of stage s is GPUs (s·G + r)·tp … (s·G + r)·tp + tp−1, so
// with g = gpus_per_node/tp HDP ranks per node, ranks r and r' of a node-aligned
// stage share a node iff r/g == r'/g (Topology.Node, SameNode). A contiguous group
// of k ranks starting at f spans one node iff it does not cross a multiple of g,
// and ⌈(f mod g + k)/g⌉ nodes in general (Topology.Spans; stages that start part
// way through a node shift f by their offset, see ForStage). CP, EP and DP
// collectives run among the GPUs of one TP index, each GPU on its own NVLink
// port and, on the default fabric, its own NIC. NVSwitch is non-blocking; the
// scale-out fabric (Topology.Fabric: NICs per node, rail leaf groups, spine
// oversubscription) is shared by the collectives that run at once, priced
// ahead of the run per micro-batch (Window, fabric.go).
//
// # Links
//
// A transfer of b bytes over NVLink takes b/(B_nvl·η_intra), over the NIC
// b/(B_nic·η), with B the profile's achieved per-GPU bandwidths and η the
// asymptotic efficiency Max of the profile's curve for the collective:
// CollectiveIntra for everything inside a node; across nodes SendRecvInter for
// send/recv and pipeline transfers, AllToAllInter for all-to-alls and
// CollectiveInter for reduce-scatter and all-gather, each sourced on its own (a
// 400G NIC carries 46-48 GB/s of point-to-point traffic, and a ring all-reduce
// across nodes about 95% of it per NIC): NCCL's
// α–β model (§5.2), latency plus bytes over a constant bandwidth. The curves'
// Half is not applied, because in a fit of measured times it absorbs the same
// fixed latency that α prices explicitly (applying both counted latency twice and
// made a 1 MB ring step across nodes run at 1% of the NIC). Latencies are
// NCCL-style α = base + hops·hop (§5.2) with the profile's intra or inter
// constants: one hop for an all-to-all, a send/recv and a pipeline p2p (their
// messages travel concurrently), n−1 hops for an n-rank ring reduce-scatter or
// all-gather. KernelLaunchSeconds is not added: NCCL's base
// latency already contains the launch.
//
// # Collectives
//
//	AllToAllSeconds       max((m_max−1)/n·S / (B_nvl·η), (n−m_min)/n·S / (B_nic·η)) + α    §4.1, §5.4
//	SendRecvSeconds       S / (B·η) + α, B = B_nic if the ring touches two nodes else B_nvl  §4.2
//	Reduce-scatter, all-gather (n ranks, m per node, k nodes; NCCL's ring)                    §5.3
//	  inside one node     (n−1)/n·S / (B_nvl·η) + IntraBase + (n−1)·IntraHop
//	  across nodes        max((n−1)/n·S·(1−1/m) / (B_nvl·η), (n−1)/n·S/m / (B_nic·η))
//	                      + IntraBase + (m−1)·IntraHop + InterBase + (k−1)·InterHop
//	                      (one ring over all n, its channels leaving each node through
//	                      m NICs, NVLink and NIC hops pipelined)
//	P2PSeconds            S / (B·η) + α between stage s and s+1 of one HDP rank             §4.6
//	TPSPLayerSeconds      2 all-gathers + 2 reduce-scatters of tokens·h·2 on NVLink, per pass §4.7
//	TPAllReduceLayerSeconds  2 all-reduces of tokens·h·2 on NVLink, per pass (TP without SP)
//
// In an all-to-all among n ranks every rank holds S bytes and sends S/n to each
// rank (its own share stays home); a rank with m group members on its node sends
// (m−1)/n·S over NVLink and (n−m)/n·S over its one NIC (NCCL does not spread an
// all-to-all over the node's NICs, §0, §5.4), concurrently, and the slowest rank
// sets the time: for an aligned group spanning whole nodes the off-node fraction
// is (n−g)/n. A ring that crosses a node boundary has at least two NIC hops and
// runs at NIC speed. Stages of one HDP rank are G·tp GPUs apart, so pipeline
// neighbours share a node only when a stage has fewer GPUs than a node (the
// whole job in one node, or tiny test jobs); at production sizes every stage
// boundary crosses the NIC.
//
// # Context parallelism per layer (CPLayer)
//
// Per GPU and token, with TP splitting heads: Q = 2·n_h·d_qk/tp, O = 2·n_h·d_v/tp,
// K = 2·n_kv·d_qk/tp, V = 2·n_kv·d_v/tp (K/V replicated per TP rank when
// n_kv < tp), so Q+K+V+O = U (job.Model.UlyssesBytesPerTokenLayer) and K+V =
// K_ring (RingKVBytesPerTokenLayer) at tp = 1. A piece of S tokens on P ranks
// gives x = S/P tokens per rank. When the Ulysses degree u exceeds the K/V heads
// per TP rank, K/V heads are replicated so every rank owns one, and K/V bytes
// grow by ρ = u/(n_kv/tp) (§4.1).
//
//   - Ulysses (u = P ≤ n_h/tp, §4.1): per pass four all-to-alls over the group, of
//     x·Q, x·ρK, x·ρV and x·O bytes (backward: dO, dQ, dK, dV). Bytes leaving a
//     rank: (P−1)/P·x·U per pass. Exposed: all of it (Megatron-Core DCP, HyDra
//     §3.1 Fig. 9), or with OverlapAllToAll the O (dO) all-to-all plus
//     max(0, t_Q + t_K + t_V − independent compute) (HyDra §5.2.2: Q, K, V issued
//     as soon as each is final and hidden behind the projections; the adjoints
//     hide dQ, dK, dV).
//
//   - Ring (§4.2, zigzag): P−1 forward steps of SendRecvSeconds(x·K_ring) and P−1
//     backward steps of SendRecvSeconds(2·x·K_ring) (K/V and dK/dV travel
//     together), so 3·(P−1)·x·K_ring bytes per layer. Each step overlaps one of the
//     P equal zigzag attention blocks: exposed = (P−1)·max(0, step − attention/P)
//     per pass, i.e. hidden when c·x ≥ K_ring·FLOP/s/B (§4.2: x ≥ 3.3K tokens for
//     an inter-node hop at c = 16384, K = 4096 B, 600 TFLOPS, 45 GB/s).
//
//   - UlyssesRing (P = u·r, §4.3, HyDra §5.2.1): Ulysses over blocks of u
//     contiguous ranks (inside NVLink when u ≤ g and aligned), then a ring of r
//     ranks strided by u moving ρ·x·K_ring per step; the two costs add, each with
//     its own exposure rule. Sent per rank and pass: (u−1)/u·x·U + (r−1)·x·K_ring
//     forward (ρ = 1), the ring part doubled backward. u = P gives Ulysses and
//     u = 1 the ring, exactly. UlyssesDegreeFor picks u as the largest power of
//     two dividing P and at most min(P, g, n_h/tp).
//
//   - AllGatherKV (Llama 3's CP, WLB-LLM §5): forward AllGatherSeconds of the
//     group's K and V (P·x·K_ring bytes, every rank ends with all of them),
//     backward ReduceScatterSeconds of dK and dV of the same size; the gathered
//     K/V are kept for the backward (no second gather). Sent per rank and pass:
//     (P−1)·x·K_ring. Exposed: all of it (Llama 3 §3.3.2: "the latency is
//     exposed", small under GQA; MLA's per-head K/V make it large). Each rank
//     computes its two zigzag query chunks against the gathered K/V, so the
//     attention kernels see the ring's block shapes.
//
// MaxCPDegree is the engine limit: Ulysses at most n_h/tp ranks, Ring,
// UlyssesRing and AllGatherKV up to the pool. The slowest of a group's inner blocks and rings
// sets the group's cost.
//
// # MoE dispatch and combine (MoELayer, §4.4)
//
// Each of the EP group's ranks routes its tokens to k experts: per GPU (tokens
// split over tp by sequence parallelism) a dispatch all-to-all of tokens·k·h·b_d
// bytes (b_d = 1 for FP8, 2 for BF16) and a combine all-to-all of tokens·k·h·2,
// priced with AllToAllSeconds over the EP group's contiguous ranks (uniform
// routing, so (E−1)/E of each buffer leaves the GPU); the backward repeats both.
// The caller passes the most tokens any rank of the group routes: the
// all-to-all is a barrier. No DualPipe-style overlap: the cost is exposed.
//
// # DP gradient synchronisation (GradSync, §4.5)
//
// ZeRO-1 with the distributed optimizer, once per iteration per stage: the
// non-expert gradients are reduce-scattered in BF16 (GradBytesPerParam = 2, i.e.
// Megatron's --grad-reduce-in-bf16) over all G HDP ranks and the updated BF16
// parameters all-gathered back; routed-expert gradients and parameters go the same
// way over the expert-DP group, the G/ep ranks e, e+ep, … holding the same
// expert shard. Dense, then expert, on one stream. Overlap with the last backward
// is the engine's business. Without a distributed optimizer (GradAllReduce,
// Megatron-LM's DistributedDataParallel of SC'21) the same groups all-reduce the
// BF16 gradients instead and no parameter is gathered.
//
// # Mixed GPU kinds (NewMixedTopology)
//
// A mixed cluster's kinds each hold a run of consecutive HDP ranks filling
// whole nodes of every stage, with their own Links. A transfer inside a node
// runs on that kind's NVLink; across nodes every endpoint's NIC carries what
// it sends and receives, so the busiest endpoint sets a collective's time
// and a link between kinds runs at the slower NIC: an all-to-all is priced
// per kind on its members' links and the slowest kind sets it, a ring step
// crossing nodes at the slowest kind's send/recv rate, a ring reduce-scatter
// or all-gather at the slowest kind's links, a pipeline transfer on its
// rank's kind. On one kind every formula
// above is unchanged.
//
// # CP × HP layouts (LayoutCPLayer)
//
// A group with a sched.Layout runs HP groups of consecutive ranks, each with
// its own token shards ℓ_i and head counts n_i: the Q/K/V all-to-alls are
// ragged (RaggedAllToAllSeconds: rank i sends rank j ℓ_i·η_j of a token's
// bytes, η_j = n_j/H; K and V at each rank's K/V-head share; the output
// back), the slowest HP group setting the pass, and the chunks meet by ring
// steps across the HP groups moving the longest chunk's K/V for each rank's
// heads. The even layout prices what UlyssesRing prices.
//
// # Assumptions, named
//
//   - Megatron rank order (tp, then HDP, then pp); tp divides gpus_per_node.
//   - All-to-all never aggregates a node's NICs. Concurrent collectives share
//     NICs, leaf uplinks and the spine by Window's rule (one pool per node and
//     per leaf group, processor sharing, the busiest link setting a
//     collective's stretch); on the default fabric (one NIC per GPU,
//     non-blocking spine) no link can be oversubscribed and nothing is
//     stretched. CP × HP layouts (LayoutCPLayer) are priced alone.
//   - All-to-all efficiency on k nodes is AllToAllInter's Max times
//     AllToAllScale.At(k), 1 in the shipped profiles: the published NIC-side
//     rates do not fall with node count (calib/testdata/collective_scale.csv).
//   - Efficiency curves are evaluated at the collective's bytes per rank. A curve
//     fitted from measured times (calib.Fit) already contains the fixed latency
//     as its Half term, so a fitted profile and non-zero α count latency twice;
//     the profile decides.
//   - Ulysses moves Q, K, V and O in four all-to-alls per pass, each paying α.
//     Uneven head splits are priced as even.
//   - Ring attention is zigzag-balanced: P equal attention blocks per pass; the
//     backward ring carries K/V and dK/dV, 2× the forward bytes, one α per step.
//   - MoE routing is uniform over the EP group; the backward repeats the forward
//     all-to-alls.
//   - Gradients reduce in BF16; expert-DP groups priced at shard 0.
package network
