// Package bytescale is ByteScale's hybrid-data-parallel (HDP) planner: Ge et
// al., "ByteScale: Efficient Scaling of LLM Training with a 2048K Context
// Length on More Than 12,000 GPUs", SIGCOMM 2025, arXiv 2502.21231 (cited by
// section; research/baselines.md §3 summarises it). ByteScale has no public
// code: every rule below is read from the paper, and every gap the paper
// leaves gets a stated choice (listed again at the end).
//
// # What is planned, what is left out
//
// The planner is Alg. 1 (§5.3, "Naive HDP Solution") with selective
// offloading, whose assignment step (line 10) is replaced by the balance
// scheduler of §6 (Alg. 2), as the paper does; Options.Balance = false keeps
// Alg. 1's own assignment (the paper's "HDP naive"), Options.Offload = false
// leaves offload out (its ablation, §8.4 and Fig. 20).
//
//   - Selective offloading (§5.2, Eq. 3): a sequence of s >= C tokens runs
//     on D(s) = ⌈s·(1 − r·share)/C⌉ ranks, r the largest ratio whose copies
//     its forward hides, T(s) >= Act(s)·r/min(B_d2h, B_h2d), when r reaches
//     the paper's lower bound min(1, C/(share·s)) (else r = 0 and ⌈s/C⌉).
//     share is the part of a rank's keep offload may move
//     (sched.Inputs.OffloadShare: every layer but each chunk's last two, the
//     paper's (l−2)/l with l layers per rank), and T and Act are the cost
//     model's forward and offloadable bytes of those layers
//     (sched.Env.Offload: sched.OffloadCosts, the paper's profiled
//     α1·s² + β1·s + γ and α2·s + β2 with β2 = 0; see
//     sched.OffloadCosts.OffloadRanks). A group's Offload is the least ratio
//     that keeps each of its ranks within C tokens' worth on the GPU
//     (sched.FittingRatio): Eq. 3's argmin over r is not unique, and the
//     least ratio reaching D(s) moves the fewest bytes; a group widened past
//     D(s) needs less, and one of a bin none. The cost model prices what the
//     copies do not hide and the memory model keeps Kept − r·Offload on the
//     GPU. Without offload costs (a --batches line, a GPU profile without
//     host-copy rates) or without an offloadable share, D(s) = ⌈s/C⌉.
//   - The CP execution the plans assume (§5.1 "NCCL Buffer Optimization", §7
//     "Dist-attn with Packing") is ring (P2P) attention with per-document
//     zig-zag sharding (each sub-sequence cut into 2N parts, symmetric pairs
//     per rank) over one global HDP communicator, so a group of any size on any
//     ranks needs no communicator of its own. The descriptor registers
//     sched.Ring without all-to-all overlap, and the cost model prices it as
//     such: each group's P−1 forward and P−1 backward P2P steps between its
//     own ranks (any count, any first rank; a step crossing a node boundary
//     runs at the NIC's send/recv rate), each overlapped with one zig-zag
//     attention block (sim/network CPLayer). The global communicator changes
//     who may talk to whom, not the bytes: no policy pays communicator
//     set-up in dcpsim, so ByteScale's saving there (§5.1's NCCL buffers) is
//     not credited either way.
//   - The remote dataloader (§7, Fig. 15) is how the plan reaches the ranks: one
//     scheduler actor computes it from the global metadata. Its stall is
//     modelled as that one Python planner's work (see "Elementary work").
//
// Notation: G = Inputs.PoolRanks HDP ranks of one stage, C =
// Inputs.BudgetTokens (the paper's rank capacity), E = Inputs.EPSize(), and
// L = G/E lanes: the aligned blocks of E ranks that an MoE layer's all-to-alls
// couple (E = 1: a lane is a rank).
//
// # Data-aware sharding (§5.1, Alg. 1 lines 1-9)
//
// A sequence of s >= C tokens is a unit of its own on D(s) ranks (⌈s/C⌉
// without offload, Eq. 3's with it): any
// integer in [1, G], no power of two, no alignment (the paper's 312K sequence
// on 39 ranks at 8K per rank, §8.3; a 768K sequence on 96 of 128 ranks, §5.1).
// Sequences of s < C are packed best-fit into bins of C tokens, each bin a
// unit on one rank: longest first (ties: lower id), each into the open bin
// with the least room that still holds it (ties: the earliest opened), else
// into a new bin. The paper says "best-fit" without an order; decreasing
// order is the usual choice and lets Alg. 2 see bins of similar lengths. Every
// rank therefore holds at most C tokens in every microbatch (Promises:
// WithinBudget), the token-level budget of §5.1 ("each rank handles the same
// number of tokens"); groups are not aligned and microbatches do not cover the
// pool, so neither Aligned nor CoversPool is promised.
//
// # Time model (the paper's profiled T(s), §5.2 and §6.1)
//
// The balance scheduler compares ranks by estimated time. The paper profiles
// T(s) = α1·s² + β1·s + γ; the cost model supplies the same form
// (sched.Env.TokenCosts: a1 the attention per token² of per-rank load, a2
// the per-token work, b1 a microbatch's fixed cost), so a group of
// sequences on k ranks costs each of its ranks, in seconds,
//
//	t_k = a1·Σ s²/k + a2·Σ s/k + b1
//
// and a unit's work k·t_k, less k·b1, is the same at any k: the "FLOPs" of
// Alg. 2. Without token costs (a --batches line naming no model) the model
// is in tokens², t_k = Σ s²/k + (θ/c)·(Σ s/k)/C with HyDra's θ/c
// (Inputs.OverheadRatio); an earlier dcpsim always used that reading, which
// put the linear term at about a sixth of the cost model's GEMM time for a
// full 8K bin. Communication is not estimated: ring P2P overlaps attention
// (§7) and the cost model prices what is exposed.
//
// # How far offload compresses (Options.OffloadRule)
//
// Eq. 3 as §5.2 writes it minimises D(s) with no compute term, and taken
// literally (RuleEq3) it puts a 2M sequence on 16 ranks. The paper's own
// measurements rule that out as what ran: Fig. 18(a) gives 110 ms of
// attention per layer for a 312K sequence on 39 ranks, which puts one pass
// of a 2M sequence on 16 ranks at about 370 s, longer than ByteScale's whole
// reported step (2m37s, Fig. 18b); and §8.4 sets the ratio to 1.0 for 256K
// "without decreasing throughput". The default, RuleBounded, keeps Eq. 3's
// ratio bound and compresses D(s) no further than keeps the unit within the
// batch's balanced per-rank load, D(s) >= ⌈T(s)/(W/G)⌉ (W the batch's Σ
// T(s)), and the planner keeps a plan whose offload it estimates slower than
// the same plan without offload only when it is not (Diagnostics.Offload.
// Declined): offload never lengthens the planner's own estimate.
//
// # Balance scheduler (§6, Alg. 2)
//
// Sort and bucketize (lines 3-5). Alg. 2 replaces Alg. 1's assignment, so it
// orders the units of Alg. 1, not single sequences: by per-rank time at D
// ranks, descending (ties: the unit's longest sequence's id), which orders
// long sequences by length as the paper does. The sorted units are cut into K
// contiguous buckets of about equal work: unit j goes to bucket
// ⌊K·(work before j)/W⌋, so the buckets of long units hold few units, and a
// unit heavier than W/K leaves the next buckets empty. The paper gives neither
// K nor the FLOPs formula; we take the work above and K = ⌊L/w⌋, the number of
// pipeline groups below (w = ⌈D_max/E⌉ lanes), so PP-Balance has a length
// level per pipeline group. DP-Balance drains the buckets in order, so for it K
// only shows in the diagnostics.
//
// Slots. The ranks Alg. 2 balances are slots: with pp = vpp = 1 each lane is a
// slot; otherwise a slot is a lock-step pipeline group of w lanes (see
// "Microbatch counts and the pipeline"). A slot's estimated time is the sum of
// its frames' times, the paper's exec_times (no pipeline fill or drain).
//
// Rounds (lines 6-9). Each round computes max_t, the largest slot time, and
// the targets: the slots more than δ·max_t behind it. δ is Options.Delta, a
// fraction of max_t (default 0.05, Megatron's balance slack; the paper gives no
// value; δ between 0 and 0.2 changed load-mode iteration times by under 1% in
// our tests). When no slot is behind, the paper's strict test selects nobody
// (at the start every time is 0); such a round is a fresh round: every slot is
// a target and receives exactly one frame, which puts the longest units side by
// side at the same time step (Insight 2).
//
// Assignment (lines 10-20). Until no target is left, the least-loaded target
// (ties: the lowest slot) is served one frame ("ranks with shorter execution
// times are assigned more sequences", §6) and stays a target while it is still
// more than δ·max_t behind. The frame's first unit is, with DP-Balance
// (pp = 1), the first unplaced unit: the first bucket only, so every slot runs
// the same length level at the same time (§6.3). With PP-Balance (pp > 1) it
// is the first unplaced unit of the cursor's bucket, and the cursor moves to
// the next bucket holding a unit after every selection ("select seqs
// sequentially from all buckets"): consecutive frames go to different
// pipelines with different length levels (§6.2 Insight 1), and the pipelines
// that drew short units, being behind, draw more of them (Fig. 12: 8 vs 18
// microbatches). We do not keep a pipeline on one level across rounds: Alg. 2
// states no such rule.
//
// Frames (how a unit of D > 1 ranks maps onto target ranks: not in the paper).
// A frame is a contiguous range of whole lanes that runs one microbatch, every
// rank of it in a group, so every rank of an EP block runs the same
// microbatches (sched.Validate's rule for partial plans). On lanes, a unit of
// d ranks takes n = ⌈d/E⌉ contiguous lanes: the window, anywhere in the pool,
// that can start earliest (the latest of its lanes' times; ties: the least
// idle time, then the lowest lane), so a long sequence's ranks start together,
// and its lanes end at start + the frame's time. A pipeline group's frame is
// the whole group. The unit goes at the frame's first rank; the frame's
// remaining ranks take the next unplaced units that fit them (from the first
// unit's bucket on, round robin), laid out in order. Ranks still free when no
// unit fits (the last frames, or a lane a long unit only partly covers) widen
// the frame's groups, one rank at a time to the group with the largest
// per-rank time below Inputs.DegreeLimit() (which minimises the frame's time);
// a group at the limit with two or more sequences splits in two first. A frame
// whose groups can neither widen nor split fails with an error wrapping
// sched.ErrCannotPlan. Widening only lowers per-rank tokens; Diagnostics
// counts the ranks it adds. A frame's time is its largest per-rank time: its
// CP groups and EP blocks move together.
//
// # Microbatch counts and the pipeline (§6.1, PartialMicrobatches)
//
// Ranks run different numbers of microbatches ("redefined micro-batch",
// §6.1; legal because of the token-level loss, Eqs. 1-2): a plan's
// microbatches are partial, and a rank's list is the phases of its frames in
// the order they were assigned (sched.Plan.RankMicrobatches). Microbatch index
// k of the plan holds each frame at the first index after every earlier frame
// of its lanes; its Closed says how many frames it holds, the buckets of their
// first units, and the ranks widened and VPP-split phases among them.
//
// With pp > 1 or vpp > 1, Megatron's (interleaved) 1F1B orders a rank's
// forwards and backwards by their positions in its own list (warm-up depth,
// schedule table), so two ranks that share microbatches must hold them at the
// same positions, or the engine deadlocks. (With pp = vpp = 1 every
// microbatch's forward and backward run back to back and plan order is a
// global order.) So with pp > 1 or vpp > 1 the slots are lock-step pipeline
// groups: ⌊L/w⌋ groups of w = ⌈D_max/E⌉ contiguous lanes (the last takes the
// remainder), D_max the batch's widest unit, each frame covering its whole
// group. A group's ranks run identical lists, groups share nothing, and
// different groups run different counts (§6.2's pipelines). A batch whose
// widest unit needs the whole pool has one group, and every rank runs the same
// count.
//
// VPP (not in the paper). With vpp > 1, each group's count m > 0 must be one
// Megatron's interleaved schedule runs: it is raised to
// sched.LegalMicrobatchCount(m, pp, N), N = Inputs.GroupSizeN(), by splitting
// phases, never merging (merging would break the budget): the group's phase
// with the most sequences (ties: the longer time, then the later) splits into
// two consecutive phases on the same ranks, its groups alternating between
// them (one group: its sequences alternate), each half widened to cover the
// frame. N < pp, or a group with no phase of two sequences left, fails with an
// error wrapping sched.ErrCannotPlan. Diagnostics.VPPSplits counts the splits.
//
// # Elementary work
//
// ByteScale's planner is Python on the single scheduler actor, so its stall is
// modelled like the other planners'. StallWork counts: sequence visits (each
// sequence read by Alg. 1, each unit read by bucketing and by placement, each
// phase and sequence read by VPP splits), heap operations (each search, insert
// and removal in the best-fit ordered set, each query and removal in the
// sorted-unit index, each push, pop, fix and removal in the heap of targets,
// each rank widening gives: all O(log n) operations a Python version would do
// with heapq or bisect), and pool visits (the slots each round's max_t and
// target scan reads, and the lanes each window search reads). The sorts are
// not counted (CPython sorts in C). WorkUnits is their sum; Diagnostics
// reports them apart.
//
// # Decisions the paper leaves open
//
//   - Offload: Eq. 3 with Act(s) ∝ s (β2 = 0), T(s) the forward of the
//     offloadable layers (the D2H copies run during it; the H2D copies
//     during the longer backward), the least ratio reaching the least D(s);
//     a chunk's last two layers stay on the GPU (Fig. 10), for every chunk
//     under VPP (the paper is silent on VPP).
//   - HDP naive (Options.Balance = false; Alg. 1 line 10 gives no rule): the
//     units in the batch's order, each on the slot (lane window or pipeline
//     group) that holds the fewest frames so far, its free ranks filled and
//     widened as in Alg. 2's frames: every rank runs about the same number of
//     microbatches of about C tokens, as gradient accumulation does, and
//     nothing evens their times (§8.3: "the third rank completes its 8
//     micro-batches in 1m41s, it has to wait for the first rank to finish at
//     4m32s").
//   - Best-fit order: decreasing length, ties by id; ties between bins: the
//     earliest opened.
//   - What Alg. 2 sorts and assigns: the units of Alg. 1 (long sequences and
//     bins), by per-rank time.
//   - FLOPs and buckets: work Σ s² + (θ/c)·Σ s/C; K = ⌊L/w⌋ equal-work buckets.
//   - Time model: t_k = Σ s²/k + (θ/c)·(Σ s/k)/C, no pipeline term.
//   - δ: a fraction of the round's max_t, default 0.05; all slots are targets,
//     one frame each, when none is behind.
//   - PP-Balance's "sequentially from all buckets": a cursor over the non-empty
//     buckets, advanced after every selection.
//   - A unit of D > 1 ranks: the earliest-starting window of ⌈D/E⌉ whole lanes,
//     or the whole pipeline group; free ranks take further units, then widen.
//   - Pipelines: lock-step groups of lanes when pp > 1 or vpp > 1, so that
//     ranks sharing a microbatch hold it at the same position; each group
//     runs its frames in increasing order of estimated time (§6.2 Insight 1:
//     similar lengths back to back; Alg. 2 gives no order).
//   - VPP: legal counts by splitting phases.
package bytescale
