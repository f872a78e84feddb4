// Package hydrahetero is hydra-hetero, HyDra's load-driven DCP planner
// (sched/hydra) on pools that mix GPU kinds; it goes beyond the paper.
//
// HyDra measures a rank's load in s² and holds every rank of every MB to one
// target Λ*, which on a mixed pool gives an A100 rank the same attention
// work as an H100 rank: the A100 takes about three times as long, and the
// H100s wait. hydra-hetero measures load in seconds on each rank's own GPU
// (sched.Cluster's planning model): a sequence of s tokens on a group of k
// ranks of kind j loads each with (a_j·s² + l_j·s)/k, attention and linear
// work (Options Linear = false drops l_j). A group spanning kinds runs
// at its slowest kind's load. Then, HyDra's rules with loads in seconds:
//
//   - Closed form: for every power of two C up to the engine limit, Λ(C) is
//     the longest sequence's per-rank load on the aligned block of C ranks
//     where it runs quickest (the block's slowest kind's L(s_max)/C, among
//     blocks whose every kind's budget holds s_max/C): the longest sequences
//     run on the kinds quickest at them, and a slower kind takes them only in
//     wider groups, or the shorter ones instead. C_mem is the least C with a
//     block. M(C) = max(⌈1/Σ_j n_j·Λ(C)/W_j⌉, ⌈S1/Σ_j n_j·B̃_j⌉), W_j =
//     a_j·S2 + l_j·S1 the batch's load on kind j alone (the kinds' rates
//     add); T(C) = (M(C) + b)(Λ(C) + θ), θ the first kind's θ/c in seconds;
//     C* is the C of least T (ties: the smaller), every C evaluated (Λ(C) is
//     not smooth in C once the best block changes kind). Loads are then
//     expressed in units of the reference kind's attention seconds per
//     token² (the best block's slowest kind at C*, whose weight becomes
//     exactly 1). With one kind and no linear term every quantity is
//     HyDra's and hydra.Solve computes it.
//   - Degrees per kind: cp_j(s), the least power of two at or above the
//     memory degree on kind j that keeps L_j(s)/k within Λ*, capped at C*.
//   - Placement, longest first: open a group on the lowest free block at the
//     smallest of the kinds' degrees whose ranks can all take s (a block
//     overlapping a kind that cannot is skipped with the rest of that kind);
//     else join the smallest open group that stays within Λ* on each of its
//     kinds and within B (ties: lower per-rank load, then lower first rank);
//     else wait for the next MB. Backfill doubles the smallest group (ties as
//     HyDra's) into a free buddy while that keeps its kinds' budgets and
//     does not raise its per-rank load (a buddy on a much slower kind would).
//   - Token parity (our rule): in a group of several sequences a rank of
//     kind j holds at most B̃_j = min(B_j, min_i(l_i·B_i)/l_j) tokens, so a
//     memory-bound MB does not leave a slow kind full of short sequences the
//     fast kinds wait for: Λ* is set by the longest sequences' attention and
//     does not bind on ranks of short ones, whose time is linear. A group of
//     one sequence is held only to B (so every sequence can be placed).
//
// With one kind and Linear off, every load is s² exactly in float64 (s ≤
// 2^25, so s², their group sums and Λ*·k = s_max²·k/C* are integers below
// 2^53) and every rule is HyDra's: hydra-hetero makes HyDra's plans
// (TestHeteroOneKindIsHydra). VPP alignment (hydra.AlignVPP) is HyDra's, by s²
// loads, blind to kinds. WorkUnits: the placement loop's sequence visits, the
// open groups its piggyback scans read (skipped when a bound on the groups'
// room rules s out) and the heaps' operations.
package hydrahetero
