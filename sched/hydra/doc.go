// Package hydra is HyDra's load-driven DCP scheduler (the HyDra paper, "HyDra:
// Demystifying and Taming Dynamic Context Parallelism at Production Scale", §5.1,
// "Load-Driven DCP Scheduling"). The paper names the quantities but omits the
// equations; this doc writes out the derivation implemented, in sections cited
// below as "spec §n" (the numbering of the project's derivation note). It registers two
// policies that make the same plans:
//
//   - "hydra" (New): heap-accelerated placement (paper §5.1.3, spec §6);
//   - "hydra-scan" (NewScan): the plain linear-scan reference of spec §5, kept so
//     that the tests can compare the two group for group.
//
// hydra-hetero (sched/hydrahetero) goes beyond the paper to pools that mix GPU
// kinds with these pieces: PlanBuilder, AlignVPP and the closed form.
//
// # Closed form (paper §5.1.1, spec §1-4)
//
// From the batch sums S1 = Σ s, S2 = Σ s² and s_max, the pool G, the budget B,
// b = (pp−1)/vpp and θ/c (sched.Inputs.OverheadRatio, tokens²):
//
//	C_mem = pow2ceil(s_max/B)                      the least legal cap
//	C*    = s_max²·√(b·G/(S2·θ/c))                 continuous optimum of T(C)
//	T(C)  = (M(C) + b)·(Λ(C) + θ/c)                balanced iteration time / c
//	Λ(C)  = s_max²/C,  M(C) = max(⌈S2·C/(G·s_max²)⌉, ⌈S1/(G·B)⌉)
//	cp(s) = min(C*, pow2ceil(max(1, s²/Λ*, s/B)))
//
// C* is rounded by evaluating T at the powers of two just below and above the
// continuous optimum, each clamped to [C_mem, engine limit], and keeping the one
// with the smaller T; a tie keeps the smaller cap (fewer ranks per sequence, less
// communication, for the same modelled time). The engine limit is the largest
// power of two <= min(G, sched.Inputs.MaxDegree). Solve, Degree and the exported
// helpers compute all of it; Targets reports it.
//
// Edge cases: b = 0 (pp = 1) makes the bubble term vanish: the continuous C* is 0
// and C* = C_mem (checked before θ/c, so pp = 1 with θ/c = 0 also gives C_mem).
// θ/c = 0 with b > 0 makes the overhead term vanish: the continuous C* is +Inf
// (Real encodes it in JSON as "+Inf") and C* is the engine limit. If C_mem exceeds
// the engine limit no plan exists: Plan fails with ErrEngineLimit, naming both.
// With pp = 1 the degrees equal Megatron's memory degrees pow2ceil(s/B) whenever
// s_max/B is a power of two (the paper's 256K/8K); otherwise the load term can
// still lift a sequence above its memory degree (s_max/B = 17 gives C_mem = 32,
// and s = 0.9·s_max gets 32, not 16).
//
// Exact arithmetic: lengths are at most MaxSequenceTokens = 2^31−1, so s² and every
// group's Σ s² (at most s_max², plus one more s² while testing) fit an int64. A
// group of k ranks may hold Σ s² <= floor(s_max²·k/C*) (k divides C*), which is
// exactly "per-rank load <= Λ*"; cp(s) uses the same integers, so a sequence alone
// at its degree always meets Λ*. S2 can pass 2^63 and is a big.Int (accumulated in
// 128 bits); M(C) is computed exactly from it. Only T(C), the continuous C* and
// Λ* use float64, and those only compare or report.
//
// # Piggyback packing (paper §5.1.2, Algorithm 1, spec §5)
//
// Sequences are taken longest first (ties: lower id), one MB at a time over all G
// ranks. A sequence of degree k opens a new group on the lowest free k-aligned
// block; otherwise it joins the smallest open group of size >= k that stays within
// Λ* and B per rank, ties by lower per-rank load (Σ s² at equal size), then lower
// first rank; otherwise it waits for the next MB. One pass over the unplaced
// sequences closes an MB: placements only take ranks and add load and tokens, and
// no group of size >= k can open once no free k-aligned block is left, so a
// sequence that did not fit when visited cannot fit later in the same MB.
//
// Backfill, after each MB: repeatedly double the smallest group (ties: lower Σ s²,
// then lower first rank) into its buddy block, the aligned block of equal size
// next to it, while that block is wholly free, never past C* (the cap bounds every
// degree of the plan, as in the paper's degree histogram). The doubled group's
// per-rank load and tokens halve. Backfill cannot always fill the pool (two size-1
// groups on ranks 2 and 3 leave ranks 0-1 idle: neither has a free buddy), so the
// policies promise Aligned and WithinBudget, not CoversPool. Each MB's Closed says
// why it closed (the longest waiting sequence, how many wait) and what backfill did.
//
// MB-balance test (spec §7): no placement may raise the MB's maximum per-rank
// load above Λ*. Piggybacking tests it per group; a new group meets it by the
// construction of cp(s). So every rank of every MB carries at most Λ*.
//
// # VPP alignment (not in the paper or the spec)
//
// Megatron's interleaved schedule (Inputs.VPP > 1) runs only MB counts M with
// pp <= N <= M and M mod N = 0 or >= pp, N = Inputs.GroupSizeN()
// (sched.LegalMicrobatchCount; sim/pipeline.New rejects other counts rather than
// padding). The packing realizes whatever M it realizes, so with VPP > 1 Plan
// raises an illegal M to the least legal count by splitting MBs, never merging
// (a merge could break Λ* or B), as a post-pass on the packed plan shared by
// both policies, which therefore stay identical:
//
//   - Which MB: among those that can split (two or more groups, or one group
//     with two or more sequences), the one with the most groups, then the
//     largest max per-rank load (exactly: Σ s²/k of its most loaded group), then
//     the latest in the plan. Most groups first because a multi-group MB splits
//     without running any group on fewer sequences than it packed and frees the
//     most ranks for backfill; a single-group MB splits only when no MB has two
//     groups.
//   - How: two or more groups go alternately, in FirstRank order, to two MBs
//     (even positions, odd positions), each group on its ranks: adjacent groups
//     land in different halves, so each half's groups tend to find their buddy
//     block free, and the halves share the large and the small groups alike. One
//     group becomes two groups on the same ranks running its sequences at even
//     and at odd positions (each half keeps longest-first order and gets every
//     other length, so their loads stay close).
//   - Backfill: each half is then backfilled as in spec §5 (double a group below
//     C* into its wholly free buddy block while one exists; load and tokens per
//     rank halve). Any maximal sequence of doublings reaches the same plan (two
//     possible doublings never overlap and a group that cannot double never can
//     later), so the aligner grows groups in rank order in one pass.
//   - Order: the first half (even positions) replaces the split MB and the
//     second follows it, so the MBs that were not split keep their order. Each
//     half's Closed reads "vpp split of packed MB i: even-position groups (or
//     odd-position, or sequences); backfill: ...", i indexing the packed plan.
//   - Promises hold: splitting and doubling only remove sequences from ranks or
//     halve per-rank loads and tokens, groups stay aligned power-of-two blocks
//     within C*, so every rank stays within Λ* and B.
//   - Errors: N < pp (no count is legal), or fewer sequences than the least legal
//     count (every MB needs one): Plan fails with ErrCannotAlign, which wraps
//     sched.ErrInvalidInput and names M, N, pp and why.
//
// With VPP = 1, or a legal packed M, the plan is exactly the packed plan and no
// work is counted. Diagnostics.VPPSplits counts the added MBs and
// Diagnostics.AlignSteps the alignment's work.
//
// # Heaps (paper §5.1.3, spec §6)
//
// Open groups are kept per size class. Each class has a min-heap keyed by
// (Σ s², first rank) holding the candidates, and a heap of the groups demoted for
// lack of token room, most room first. For a sequence of s tokens, ready()
// re-admits demoted groups with room >= s (sequences only shrink, so they stay
// candidates until they take one), then demotes candidates without room for s as
// they surface: the first with room is the least-loaded token-feasible group, and
// if it breaks Λ*, all of them do, which prunes the class for s. A group changes
// only when it is the top of its load heap and takes a sequence, and is then fixed
// in place, so no stale entry ever exists. The backfill takes groups by (size,
// Σ s², first rank) from one heap per size class keyed by (Σ s², first rank),
// smallest class first (a doubled group joins the next class); a group whose
// buddy is taken is dropped for good. Free aligned blocks are tracked in a
// complete binary tree of largest free sub-blocks (sched/internal/buddy: O(log G)
// to find the lowest free k-aligned block, take one, or test a buddy). The
// backfill heaps are sched/internal/keyheaps over first ranks, keyed by the
// packer's Σ s² per first rank; each class's load and capacity queues are
// winner trees (winnerTree: a tournament over the class's aligned first ranks,
// keyed by Σ s² and Σ s), which give the keyheap's choices with a fixed
// leaf-to-root path instead of a sift (see winnerTree for the figures). Either
// way the least (key, first rank) is chosen: ties go to the lower first rank.
// The heap operations counted are those of the heaps the paper describes (one
// per push, pop or fix), whatever structure performs them.
//
// Skipping (the part that makes planning O(N log G) rather than O(N·M)): the
// unplaced sequences of each degree class are a contiguous run of the sorted
// order, walked through a union-find of placed positions. When none of the
// classes >= k can take the next sequence, every one of them is ready for it and
// their heap tops bound the longest sequence any group may still take: a load-heap
// group takes at most ⌊√(capSquares − top Σ s²)⌋ tokens, a demoted group at most
// the capacity top's room. Both bounds are below the failed length, and lengths
// only decrease, so a galloping search jumps to the first sequence within the
// bound, past sequences the scan would visit and reject in the same state.
//
// WorkUnits: for "hydra", heap operations (each push, pop and fix; the backfill
// counts one push per group it queues and one operation per group it takes) plus sequence visits (each sequence
// the placement loop reads, and each probe of the skip search); for "hydra-scan",
// the sequences, groups and ranks its scans visit; for both, plus VPP alignment's
// steps when it splits (each MB its choice scans, each group and sequence it
// reads or moves, and the ranks its backfill clears and tests). Diagnostics
// reports them apart. StallWork, what the simulator prices as the planning
// stall of a Python HyDra, counts the heap operations as heapq operations, the
// sequence visits and alignment steps as Python-loop sequence visits, and
// hydra-scan's scan steps as pool visits; and, for both, the rest of the
// per-iteration pipeline around the placement loop (PlanBuildWork, exact
// functions of the batch and the realized plan): the batch-sums and cp(s)
// passes, the longest-first sort, the per-rank batches (a slot per rank and
// MB; for a sequence of a group of k ranks, each rank's pair of its 2k zigzag
// chunks) and each group's metadata (its ranks, inner Ulysses and outer ring
// sub-groups, each rank's entry). Not counted: sending the plan to the ranks
// (the paper's broadcast of the MB count), which is communication, and
// turning the pieces into tensors, which is the data loader's.
//
// # Decisions the spec leaves open
//
//   - Rounding C*: a tie in T keeps the smaller power of two.
//   - b = 0 takes precedence over θ/c = 0 (pp = 1 always gives C_mem).
//   - The engine limit and a pool that is not a power of two are rounded down to
//     a power of two (groups are aligned power-of-two blocks).
//   - Regime: "token-bound" only when the token term of M* is strictly larger.
//   - Options.Cap must be a power of two; out of [C_mem, engine limit] for a
//     batch it is an error (wrapping sched.ErrInvalidInput), not clamped.
//   - Piggyback ties: lower Σ s² (per-rank load at equal size), then lower first
//     rank, as the spec says; the "smallest" group is the smallest size.
//   - Backfill: smallest size first, ties by lower Σ s² then lower first rank
//     (the spec names only "smallest"); a group never doubles past C*.
//   - MB-balance test: the reading of spec §7 (max per-rank load <= Λ*).
//   - Close reasons: the longest waiting sequence, its degree, how many wait,
//     and the backfill's doublings and idle ranks.
//   - VPP > 1 with an MB count Megatron's interleaved schedule rejects: split
//     MBs (most groups, then largest max per-rank load, then latest; groups or
//     sequences alternating; each half backfilled; halves in place of the split
//     MB) up to the least legal count, or fail with ErrCannotAlign; see "VPP
//     alignment". The spec is silent; Megatron-Core DCP pads its groups by
//     splitting too (sched/mcore), and splitting keeps Λ* and B where merging
//     or padding with empty MBs would not (or would hide time from the engine).
package hydra
