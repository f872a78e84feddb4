// Package heterodp is hetero-dp, the baseline a practitioner runs on a
// cluster that mixes GPU kinds without HexiSeq: plain data parallelism
// across the kinds, each kind's replicas getting sequences in proportion to
// their speed, and static CP (sched/static: the smallest degree whose cp·B
// holds the context, Megatron's dp_balanced packing) inside each kind. It is
// the fair reference for HexiSeq's gain (HexiSeq, arXiv 2605.07569,
// compares against "state-of-the-art CP and HP baselines"; sched/usp, the
// equal-share baseline, plans every rank as the slowest kind, which no one
// would deploy). It goes beyond both papers.
//
// # Replicas per kind
//
// Ranks are numbered kind by kind (sched.Cluster). Kind k, of R_k ranks from
// rank f_k with budget B_k, runs static CP at degree d_k = the smallest
// power of two with d_k·B_k >= the context (Inputs.ContextTokens, else the
// batch's longest sequence), capped at the largest power of two <= min(R_k,
// the engine's degree limit). A capped kind holds only sequences of at most
// d_k·B_k tokens; the others go to the kinds that hold them. Its replicas
// are the ⌊R_k/d_k⌋ blocks of d_k ranks from f_k: f_k + j·d_k. The blocks
// are aligned relative to the kind's first rank, not to rank 0 (a kind's
// nodes form their own replicas, as they would in practice), and ranks past
// the last whole block stay idle. sched.Validate's Aligned promise asks for
// FirstRank a multiple of Size over the whole pool, which a kind starting
// at rank 24 with d_k = 16 breaks, so hetero-dp promises only WithinBudget
// (every rank within its own kind's budget, in both plans below).
// (On the presets every kind starts at a multiple of its degree, and the
// blocks are aligned to rank 0 too.)
//
// # The split across kinds
//
// A replica of kind k runs a sequence of s tokens on d_k ranks in
// t_k(s) = L·(a_k·s² + l_k·s)/d_k seconds: a_k and l_k the kind's attention
// seconds per token² and linear seconds per token (sched.DeviceKind's
// planning model), L the stage's layers. This is hydra-hetero's load of a
// rank of kind k, (a_k·s² + l_k·s)/k, at k = d_k. Kind k's projected finish
// time is F_k = Σ t_k(s)/n_k over its sequences, n_k its replicas: its
// assigned work over its speed, speed_k = n_k per replica-second. Sequences
// are taken longest first (ties: the lower id) and each goes to the kind,
// among those that hold it, whose projected finish F_k + t_k(s)/n_k is
// least (ties: the earlier kind): LPT on uniform machines (Gonzalez,
// Ibarra and Sahni), so the kinds' finish times end within one sequence's
// time of each other and each kind's tokens follow its speed. Choice: the
// finish after adding s, not the least F_k, since the kinds' times for s
// differ; with at most sched.MaxKinds kinds a Python planner scans them
// rather than keeping a heap. Options.Proportional = false weights every
// kind as the first (a_0, l_0): an equal split per rank, the ablation of
// the speed weighting.
//
// # Packing inside a kind
//
// Each kind packs its sequences exactly as sched/static does, with its own
// degree and budget: next-fit in the batch's order into bins of d_k·B_k
// tokens (so every rank holds Σ s/d_k <= B_k), the bin count padded to a
// multiple of n_k·N (N the microbatch group size when vpp > 1, else 1) by
// moving the last sequence of the last multi-sequence bins into bins of
// their own, walking backwards; the kind's microbatch i gives its replica j
// bin i·n_k + j.
//
// # Microbatches
//
// The plan runs M = max_k M_k microbatches, M_k the kinds' counts. Every
// microbatch holds the groups of every kind that still has one; a rank with
// nothing in it (an idle rank, a kind that has run out) runs it empty in
// pipeline step with the others (PartialMicrobatches false), as hexiseq and
// usp run the empty bins of their common microbatch count. So every rank
// runs M microbatches and the ranks of an EP block run the same number.
// With several kinds, a kind whose sequences are too few to pad to its
// multiple pads as far as they go (every bin one sequence) and its last
// microbatch leaves the replicas without a bin idle; with vpp > 1, M must
// then still be a count the interleaved schedule runs, else the batch
// cannot be planned (sched.ErrCannotPlan).
//
// # When the context outgrows a kind: static CP over the pool
//
// Replicas inside a kind hold at most d_k·B_k tokens, d_k <= its ranks: a
// context longer than every kind holds (the four-kind preset at 1M tokens:
// 32 ranks of each kind at B = 12,288 hold 393,216) cannot run inside any
// kind, and a context that only one kind holds would leave the others
// idle. What one runs then without HexiSeq is static CP over the whole
// pool, blind to the kinds, as sched/static plans it (every rank at the
// smallest budget, Inputs.BudgetTokens; groups aligned to rank 0). So on
// several kinds hetero-dp makes both plans and keeps the one the planning
// model times faster, the per-kind plan on a tie or when the pool plan is
// refused, the pool plan when the per-kind one is (a sequence that fits no
// kind's group, or a count the schedule cannot run). The time of a plan is
// cphp.Pack's: its busiest replica's sum over its bins of L·(a·Σs² +
// l·Σs)/d, plus M·θ (Cluster.OverheadSeconds) and the pipeline bubble
// (pp−1)/vpp of its slowest bin, a group over the pool timed at the
// slowest kind's a and l (its even split waits for the slowest rank).
// Choice: compute only; both plans run Ulysses at their degrees and the
// choice leaves the all-to-alls out. As usp's factorization, the choice is
// per batch but would be made once for a job's shape. Options.Layout
// forces either plan ("per-kind", "pool").
//
// # One kind
//
// Without Inputs.Cluster, or with a cluster of one kind, there is no split
// and no choice: hetero-dp is static CP, its plans, work counts and
// refusals included (static's ErrNotEnoughToPad when the batch cannot pad;
// ErrInvalidInput when the degree exceeds the engine's limit or does not
// divide the pool).
//
// # Work
//
// StallWork counts what a Python implementation of the chosen plan's loop
// does, as sched/static counts its own: for the per-kind plan, the
// longest-first sort (SortSteps n·⌈log₂ n⌉), one sequence visit per
// sequence for the split and a pool visit per kind it scans; then, as
// static, one sequence visit per sequence packed and per step of the
// padding walk. WorkUnits counts both plans' work and the bins their timing
// visits (the choice, like usp's factorization search, is made once per
// job shape, so only the chosen loop stalls an iteration). With one kind
// only static's counts remain, in both.
package heterodp
