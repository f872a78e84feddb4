// Package hexiseq is HexiSeq's asymmetric CP × HP for clusters that mix GPU
// kinds (Liang et al., "HexiSeq: Accommodating Long Context Training of LLMs
// over Heterogeneous Hardware", arXiv 2605.07569; read through
// its public review on Pith, May 2026): every device gets a share of the
// sequence (context parallelism, CP) and a share of the attention heads
// (head parallelism, HP) by its compute, memory and bandwidth, found by a
// three-stage hierarchical scheduler. The review gives the design only at a
// high level (its §3 objective, variables and constraints, and §4.2's
// performance model, are not in it; the referee asked for them). What
// follows is the formulation this package implements, with each choice we
// made where the review is silent.
//
// # Variables
//
// For a group of P ranks running the packed sequences of a microbatch (S1 =
// Σ s tokens, S2 = Σ s²; every sequence split in the same proportions, so
// "the sequence" below is the group's packed tokens):
//
//   - a partition of the group's ranks into r HP (all-to-all) groups of
//     consecutive ranks (stage 1);
//   - per rank i a sequence shard of ℓ_i >= 0 tokens (what its linear
//     layers run; Σ ℓ_i = S1), and HP group h's chunk L_h = Σ_{i∈h} ℓ_i (the
//     tokens its ranks' attention covers, the CP split across HP groups);
//   - per rank i a head count n_i >= 0 of the H query heads of a TP rank,
//     Σ_{i∈h} n_i = H in every HP group.
//
// These are sched.Layout's HPGroups, ShardTokens and Heads.
//
// # Objective
//
// Minimise the modelled iteration time. A group's layer waits at every
// all-to-all for its slowest rank, so its time is the sum of maxima of
// cphp's planning model (see sched/cphp): max_i l_k·ℓ_i (linear) +
// max_i a_k·(n_i/H)·(L_h/S1)·S2 (attention) + the slowest HP group's ragged
// Q/K/V/output all-to-alls + the ring steps across HP groups that attention
// does not hide, times the stage's layers, plus θ per microbatch; a rank of
// kind k has linear time l_k per token and attention time a_k per token²
// (sched.DeviceKind). The iteration is the busiest data-parallel replica's
// sum over its microbatches, plus M·θ and the pipeline bubble b = (pp−1)/vpp
// of the slowest microbatch (cphp.Pack). Choice: the sum of maxima, not the
// maximum of per-rank sums: linear layers and attention are separated by
// all-to-alls, so a rank fast at one cannot use its slack in the other.
//
// # Constraints
//
//   - Memory: a rank's activations are bounded by its larger share, its own
//     tokens for the linear layers or its heads over its HP group's chunk for
//     attention: max(ℓ_i, n_i·L_h/H) <= B_k, its kind's budget
//     (sched.Layout.MemoryTokens; the budget is job.Job.KindBudgetTokens).
//     Choice: the bound holds for any split of a token's activations between
//     attention and the rest, which the review does not give.
//   - Integrality: ℓ_i and n_i are integers; shards sum to S1 and heads to H
//     in every HP group; HP groups are consecutive ranks.
//   - Groups are P consecutive ranks from a multiple of P; P is a power of
//     two dividing G, or G (the data-parallel replicas are G/P).
//
// # The three stages
//
//  1. Bandwidth-aware clustering into all-to-all groups: HP groups of u
//     consecutive ranks, u a power of two dividing P and H, so a u no larger
//     than a node keeps the all-to-alls on NVLink and the ring takes the
//     NICs; every (P, u) is tried, packed and timed (cphp.Search), and the
//     fastest kept. Choice: one u for every kind (nodes of every kind have
//     the same ranks), searched rather than fixed at the node, because with
//     few heads or slow NICs a smaller or larger u wins. Each (P, u) is also
//     packed at one and at twice the least microbatch count its memory
//     allows more (M0+1, 2·M0): a group that fills its ranks' memory leaves
//     no room to shift work to the fast ones, and fewer tokens per
//     microbatch give it room. Choice: the review fixes no microbatch count,
//     and the iteration time it minimises depends on it.
//  2. Split the sequence across groups by aggregate capability: inside HP
//     group h, heads by attention speed (n_i ∝ 1/a_k, largest remainders)
//     and tokens by linear speed (ℓ_i ∝ 1/l_k); across HP groups, chunks
//     L_h ∝ 1/(Ā_h + ρ·C_h), with Ā_h = 1/Σ_{i∈h} 1/l_k the HP group's
//     linear time per token at perfect balance, C_h = max_{i∈h} a_k·n_i/H
//     its attention time per token² share, and ρ = S2/S1 (the batch's, for
//     packing; the microbatch's, for its layout), water-filled under the
//     memory caps (L_h <= Σ_{i∈h} B_k and n_i·L_h/H <= B_k; ℓ_i <= B_k).
//     Across replicas the same capability decides: a replica's groups are
//     timed with this split, so sequences go to the replica that would
//     finish them earliest and each replica holds up to its own memory.
//  3. Coordinate descent on per-rank shard lengths and head counts: from
//     the better of stage 2's integer layout and the equal one (with slow
//     links a longer chunk on fast ranks can cost more ring time than it
//     saves), moves of δ tokens from a bottleneck rank (the slowest rank's
//     linear or attention term) to every rank of its HP group and to the
//     least-loaded rank of each other HP group, of one head from a
//     bottleneck to a rank of its HP group, and of δ tokens from one HP
//     group's chunk to another's (re-split by linear speed: a direction no
//     move between two ranks follows); each round applies the feasible move
//     that lowers the group's modelled time most, δ starting at S1/(4P) and
//     halving when no move helps, until δ < 1 or Options.Rounds. Choice: a
//     move must gain more than 1e-9 of the group's time (rounding noise),
//     and ties keep the first move found, so plans are deterministic.
//
// A replica whose ranks are all of one kind gets the equal layout exactly
// (cphp.EqualLayout), which stage 3 cannot improve: on a one-kind pool
// hexiseq makes usp's plans. Plans promise only WithinBudget (each rank's
// own kind's budget).
//
// WorkUnits counts the packings' visits and the descent's evaluations;
// StallWork counts the chosen packing's sequence visits and the descent's
// evaluations as Python-loop sequence visits (HexiSeq ships a Python
// scheduler; the factorization search is per job shape).
package hexiseq
