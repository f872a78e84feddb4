// Package wlbllm is WLB-LLM's planner (Wang et al., "WLB-LLM: Workload-Balanced
// 4D Parallelism for Large Language Model Training", OSDI 2025, arXiv
// 2503.17924) as a dcpsim policy,
// registered as "wlb-llm". The code is ours, from the paper's text: Meta's
// implementation is not public.
//
// # Microbatch structure (§2.1, §7.1)
//
// WLB-LLM keeps 4D parallelism with a fixed CP size per job and runs the
// global batch as variable-length microbatches spread over the DP replicas.
// Here the CP degree cp is fixed as static CP fixes it (the smallest power of
// two whose cp·B holds the context; Options.CPDegree forces it), the pool of G
// ranks splits into dp = G/cp replicas, replica r on the aligned ranks
// [r·cp, (r+1)·cp), and every microbatch of a replica is one group of cp ranks.
// Round k of the plan (Plan.Microbatches[k]) holds the k-th microbatch of every
// replica that runs more than k. Replicas may run different counts (when fewer
// documents wait than microbatches are wanted), and the plan then sets
// PartialMicrobatches. The ranks of one EP group must run the same count:
// replicas are counted out in units of u = lcm(cp, ep)/cp consecutive replicas
// (whole EP groups, whole replicas), every replica of a unit gets the same
// count, and a unit's replicas sit in the same rounds, so sched.Validate's EP
// check holds by construction. With vpp > 1 every replica's count is one
// Megatron's interleaved schedule runs (sched.CheckMicrobatchCount): the even
// share lowered to the largest legal count, or N = the microbatch group size
// on as many units as there are documents for (layout.go); when not even one
// unit can run N, Plan fails with an error wrapping sched.ErrCannotPlan.
//
// # Variable-length packing with outlier delay (§4.1-4.3, Algorithm 1)
//
// Per batch: a document of d >= L_1 tokens joins FIFO queue i, L_i <= d <
// L_{i+1} (L_{n+1} = ∞); every queue holding at least N_mb documents releases
// its N_mb oldest into this iteration (one outlier per microbatch, as each
// opens an empty microbatch); the new documents and the released ones are
// sorted longest first and follow the documents carried from the last
// iteration; each in turn goes to the microbatch of least predicted workload
// W = Σ W_a(d) + W_l(d) if its token count stays within Smax, else to the
// microbatch of fewest tokens if it fits there, else it is carried to the next
// iteration. Two heaps keyed by (workload, index) and (tokens, index) give
// both minima in O(log N_mb) (pack.go).
//
// # State between iterations
//
// The queues and the carried documents live in the Policy value (see
// sched.Policy): the same sequence of batches and Inputs gives the same
// sequence of plans, with no goroutine, map order or clock involved. Plan.Lengths
// lists what a plan trains, carried, released and new documents in plan
// order, and Diagnostics.Origins says which batch each came from; Pending
// lists what still waits. A failed Plan leaves the state as it was. Inputs
// other than the last plan's (θ/c aside, which the policy does not use) start
// a new state, as a new job would: the documents the old one held are dropped
// and counted in Diagnostics.DiscardedPending. Documents still waiting when a
// run ends are never trained, and a run's tokens count only what was trained.
// Plan is safe for concurrent use; the plans then depend on the calls' order.
//
// # Per-document CP sharding, chosen per microbatch (§5)
//
// WLB-LLM's CP is all-gather KV (Llama 3's), not ring; each microbatch is
// sharded either per sequence (the packed sequence in 2·cp chunks, rank i
// taking chunks i and 2·cp−1−i) or per document (each document so, with the
// remainder tokens dealt round-robin: the padding-free variant), whichever has
// the smaller predicted attention kernel time on its slowest rank: FLOPs with
// query segments padded to the 128-token tile, at a lower throughput below 256
// query tokens (TMA multicast). Diagnostics.Sharding records every
// microbatch's choice and both predictions (shard.go). The descriptor declares
// sched.AllGatherKV, which the cost model prices as the paper describes it:
// forward an all-gather of the group's K and V, backward a reduce-scatter of
// dK and dV, both exposed (sim/network's CPLayer); every rank then attends its
// own query chunks over the gathered sequence, and cp is not capped at the
// head count as Ulysses is. The sharding choice moves no bytes (every rank
// holds x = S/cp tokens either way); it changes the attention kernel shapes,
// which the cost model does not distinguish: it prices both layouts as the
// zigzag blocks of per-sequence sharding (REPORT.md's wlbllm-paper table says so).
//
// # Decisions the paper leaves open
//
//   - N_mb: the paper runs PP_size × DP_size microbatches per iteration and
//     its Smax exceeds the context window, so the microbatches can hold more
//     than a batch. Here Smax is the memory bound cp·B (B bounds every rank's
//     tokens in dcpsim, for every policy), which the context fills, and a
//     batch of T = pp·G·B tokens would fill PP × DP microbatches exactly,
//     leaving variable-length packing no room. The default N_mb therefore
//     gives each replica m = max(pp, ⌈(1+h)·T/(dp·Smax)⌉) microbatches with
//     headroom h = 0.25 (Options.Headroom; raised to a legal count with
//     vpp > 1): the iteration holds 1.25 batches, the room the paper's
//     Smax > context gives. Options.Microbatches forces N_mb.
//   - Smax: cp·B by default (Options.SmaxTokens may lower it).
//   - "< Smax" in Alg. 1 lines 23 and 26 is read as "<= Smax": with the strict
//     test a document of exactly Smax tokens (a full-context document when
//     Smax = cp·B = context) would never fit an empty microbatch and would be
//     carried for ever.
//   - Thresholds: tuned offline in the paper, values not given. Defaults L_1 =
//     context/4, L_2 = context/2 (two queues, Table 2's best trade-off);
//     Options.Thresholds takes any increasing fractions of the context, or
//     none (no delay).
//   - W_a and W_l: profiled in the paper (Fig. 7). Here W(d) = d² + α·d in
//     tokens², α = Options.LinearTokens, the length at which a document's
//     attention costs as much as its linear work. Default 32768: causal
//     attention does ≈ 2·d²·h FLOPs per layer forward and a dense layer
//     ≈ 24·h²·d, equal at d = 12·h (49K for Llama-2-7B, h = 4096); by active
//     parameters ≈ 35K for DeepSeek-V2-Lite and ≈ 30K for DeepSeek-V3; the
//     attention kernel's lower efficiency pulls the crossing lower. One
//     constant for every model, stated, rather than HyDra's θ/c: that is a
//     per-microbatch overhead in tokens², not a per-token cost.
//   - Ties: equal workloads or token counts go to the lower microbatch index;
//     equal lengths sort older first (then by batch index).
//   - Starvation: if the carried and new documents are fewer than one EP
//     unit's replicas need (u, or u·N with vpp > 1), the queues release
//     documents early, lowest queue and oldest first, until there are enough
//     (Diagnostics.EarlyPopped): the paper's loop would run an iteration with
//     empty microbatches, which no engine runs.
//   - Fewer documents than N_mb: the layout shrinks to at most one microbatch
//     per document (every microbatch must hold one), so no microbatch is
//     empty.
//   - Assignment of packed microbatches to replicas: packed microbatch j to
//     the j-th slot in round order (round-robin over the replicas, as
//     Megatron's dp_balanced deals bins); the packing balances each
//     microbatch, so the replicas' sums follow.
//   - Pending tokens are bounded: a plan that would leave more than 10^10
//     tokens waiting (a forced N_mb or Smax far too small) fails with
//     sched.ErrCannotPlan.
//
// # Work and planning stall
//
// WLB-LLM's packer is Python (Table 2: 8-23 ms per batch). StallWork counts
// its sequence visits (each batch document classified, each queue release,
// each document sorted, packed and emitted) and heapq operations (a heapify
// of both heaps, one push per microbatch each, and two updates per placed
// document). The sharding choice runs on the CP ranks per microbatch, not in
// the packer: its steps count in WorkUnits only.
package wlbllm
