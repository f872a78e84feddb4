// Package flexsp is FlexSP's planner (Wang et al., "FlexSP: Accelerating
// Large Language Model Training via Flexible Sequence Parallelism", ASPLOS
// 2025, arXiv 2412.01523) as a dcpsim
// policy, registered as "flexsp". The code is ours, written from the paper
// and from reading its public solver (Hetu-Galvatron, branch flexsp,
// galvatron/flexsp_solver/solver.py and sequence_module_py.py, "the code"
// below); nothing is copied. FlexSP's sequence parallelism is DeepSpeed
// Ulysses: the descriptor declares sched.Ulysses with the all-to-alls
// exposed. It plans by solving MILPs: it is built with a milp.Solver
// (sched.Env.Solver; experiment/ hands it milp/cbc) and never substitutes a
// heuristic: New without one fails with ErrNoSolver.
//
// # Sequence Blaster (§4.2, App. A): blaster.go, planner.go
//
// The batch is sorted longest first (ties by id: the code's stable sort) and
// cut into M consecutive chunks, one per microbatch, minimising the largest
// chunk's tokens: App. A's DP, DP[k][i] = min_j max(DP[k−1][j], Σ s_j..i),
// computed exactly by binary search on the answer with a greedy count (the
// O(n²M) DP is out of reach at 10^5 sequences), with the cuts the code's DP
// reconstructs (TestChunkEqualsDP). M starts at ⌈tokens/(N·B)⌉ and rises
// until no chunk exceeds the pool's N·B tokens (M_min; the code rejects a
// chunk at exactly N·B, we accept it: B bounds a rank's tokens inclusively
// everywhere in dcpsim). The counts M_min ... M_min+M'−1 are tried
// (Options.MicrobatchCounts, the paper's and the code's M' = 5); a count is
// feasible when every one of its microbatches has a plan, and the feasible
// count with the least predicted time Σ Cmax is kept (ties: the smaller).
// Cmax is the slowest group's time on the true lengths of the plan made,
// as the code's show_results recomputes it. With vpp > 1 only counts
// Megatron's interleaved schedule runs are tried (sched.CheckMicrobatchCount).
// Gap: when none of the M' counts is feasible the code keeps incrementing
// M; we try up to three more rounds of M' counts, then fail with
// sched.ErrCannotPlan. A count whose microbatches' lower bounds (below)
// already add up to the best count's time is skipped unsolved: it cannot
// be chosen. A count's first microbatch (the longest sequences, where a
// count fails) is solved first, and the others only if it has a plan.
// Gap: FlexSP trains with sequence parallelism and ZeRO-3, without
// pipeline parallelism, and says nothing of microbatch order; with the
// job's pp every stage runs the same plan, microbatches in chunk order
// (longest first), as the HyDra paper's comparison runs it.
//
// # Bucketing (§4.1.3): bucket.go
//
// Per microbatch the sorted lengths are split into Q buckets minimising
// Σ (boundary − s), each bucket's boundary its longest sequence, and the MILP
// counts sequences per bucket (integer variables) at the boundary length.
// The DP runs over distinct lengths with counts (same optimum: splitting
// equal lengths never helps) and, its cost satisfying the quadrangle
// inequality, by divide and conquer (TestBucketerEqualsDP). Q starts at
// Options.Buckets (the code's 16) and grows by the code's rule until the
// rounded-up tokens are at most (true tokens + N·B)/2; with as many buckets
// as distinct lengths the rounding vanishes (the code's fallback to one
// variable per sequence).
//
// # Cost model (§4.1.2, Eq. 11-14): costs.go
//
// A group of d ranks running sequences s_i takes
// b1 + Σ (a1·s_i² + a2·s_i)/d + Σ a3·s_i/(d·v_d); memory is B tokens per rank
// (sched.Inputs.BudgetTokens, the paper's E through its token capacity). The
// coefficients must describe the cluster planned for, as FlexSP profiles
// its own: a scenario run hands the policy sched.TokenCosts from the cost
// model (costmodel.Model.TokenCosts: attention per token², the stage's
// per-token GEMM, memory-bound and MoE dispatch work, θ as b1, and the
// Ulysses all-to-all per token at each group size from sim/network). Without
// them (the --batches contracts name no model or GPU) the code's defaults
// are used (DefaultTokenCosts: GPT-7B on A100-40GB, stated there). Candidate
// group sizes are the powers of two from Options.MinGroupSize (1: the
// paper's Table 3 shows <1x64>; the code skips 1) up to the pool,
// sched.Inputs.DegreeLimit and the widest all-to-all the costs describe
// (Ulysses' query heads per TP rank).
//
// # Parallelism Planner (§4.1): model.go, split.go, planner.go
//
// The paper's MILP, per microbatch, over virtual groups p (N/d copies of
// every candidate size d) with binary m_p and integer A_qp (bucket-q
// sequences in group p): minimise C subject to
//
//	b1·m_p + Σ_q w_qd·A_qp <= C              (time; w_qd = (a1 s_q² + (a2+u_d) s_q)/d)
//	Σ_q (s_q/d)·A_qp <= B·m_p                (memory)
//	Σ_p A_qp = n_q                           (every sequence placed once)
//	A_qp = 0 when d_p < minSP(s_q)           (minimum SP degree; implied by memory)
//	Σ_p d_p·m_p <= N                         (the paper; the code: = N, every used group non-empty)
//
// At 8K-40K GPUs N is 512-5120 ranks, so the paper's model has N/1 + N/2 +
// ... groups times Q buckets, 16K-80K integer variables: the HyDra paper's
// "prohibitively expensive at large scale". Our formulation keeps the
// paper's rows for Options.ExplicitGroups groups of each size (all of them
// when the per-group model has at most ExactVariables count variables, as
// on the tests' pools) and aggregates the rest of each size into one class:
// n_d groups (an integer, in binary digits t_j) holding x_qd bucket-q
// sequences between them, with the rows on their mean:
//
//	Σ_q s_q·x_qd <= B·d·n_d                      (memory)
//	Σ_q w_qd·x_qd + b1·n_d <= C·n_d              (time; C·n_d = Σ_j 2^j·C·t_j, each
//	                                              product bounded above by McCormick's
//	                                              envelope on C in [L, U], exact at the
//	                                              optimum)
//	Σ_{q: s_q > B·d/(k+1)} x_qd <= k·n_d, k=1..8 (no group holds k+1 such sequences)
//
// and L <= C <= U, the bounds below (L is valid for the paper's model, U is
// a plan's Cmax). Every solution of the paper's model with C <= U, its
// optimum among them, gives one of ours with the same C (sum the groups of
// each class: means are at most maxima, the cardinality rows hold group by
// group), so ours is a relaxation: its optimum is at most the paper's, equal to it when every group is explicit (proved by the
// construction; TestMILPEqualsBruteForce checks it against the enumeration
// of every tiling of a small pool into power-of-two groups and every
// assignment). A class's sequences are then dealt onto its n_d groups
// longest first, each to the least loaded group with room (list scheduling:
// without the memory check every group ends within one sequence of the
// mean), else first-fit by tokens; the plan so made is a real plan of the
// paper's rows, so its Cmax is at least the paper's optimum
// (TestAggregatedSandwich: relaxation <= optimum <= plan). Where the means
// hide a packing that does not exist or is slower, the heuristic start
// (below), itself a real plan, is kept instead; Diagnostics count both.
// Gap: the paper's = N with non-empty groups (the code) is posed first, and
// the paper's <= N when that has no solution (too few sequences to fill
// the pool).
//
// Starts and bounds: the code seeds its solver with a homogeneous solution
// per size (generate_balanced_initial_solution); we give CBC the better of
// that and a proportional mixed-size solution (each bucket on the smallest
// size its sequences fit a time target on, groups sized to work, memory
// and long sequences, the least target found by bisection) as a MIP start,
// and its Cmax as U. L = b1 + max(the costliest sequence alone on its best
// size, the least rank-seconds of all of them over the pool). When the
// start is already within Options.Gap of L no solve runs (the solver's gap
// test would stop there).
//
// Mapping to ranks: groups are placed widest first (then slowest, then by
// first id) at the next free rank, so every group of size d starts at a
// multiple of d (sizes non-increasing) and the groups tile a prefix of
// [0, N); ranks past it are idle in that microbatch. Every rank runs every
// microbatch (not Plan.PartialMicrobatches), so the ranks of an EP block
// always take part in the same microbatches; FlexSP does not know EP and
// does not try to keep a group inside a block.
//
// # Solver, limits, determinism (§4.1.3 and §5)
//
// FlexSP solves with SCIP ("typically within 5-15 seconds" per MILP, 5 s
// time limit in the code); we solve with COIN-OR CBC single-threaded
// (milp/cbc, cuts off) under Options.NodeLimit (the deterministic cap),
// Options.Gap and Options.TimeLimitSeconds (a safety net). The default
// node limit is 1: on the 8 weak-scaling points, limits of 1, 5 and 20
// nodes predicted the same step times within 0.5% (the aggregated model's
// optimum is not the real plan's, so more search buys little) at 60-75% of
// the time, and the sweep's time is mostly FlexSP's ~25 ms CBC solves. Single-threaded
// CBC is deterministic, so plans are too, unless the time limit stopped a
// solve: Diagnostics.TimeLimited counts those, and only plans with a
// non-zero count can differ between runs. Options.Workers microbatch MILPs
// run at once (the code's two-level multiprocessing over counts and
// microbatches); plans do not depend on it.
//
// # Planning stall
//
// FlexSP's MILPs run as a CPU service ahead of training (§5): the plan of
// batch k+1 is solved while iteration k trains. Plan.StallWork counts the
// solver's work as it reports it (solves, branch-and-bound nodes, simplex
// iterations); costmodel.PlannerStallSeconds prices them with per-solve,
// per-node and per-iteration CBC costs measured on this machine
// (calib.CBC, with the measurement file as provenance), serially (no credit
// for the code's parallel processes). Because FlexSP plans ahead, the
// registry declares PlansAhead and a run puts on the critical path only
// what the modelled solve exceeds the previous iteration's step time by
// (experiment; the first iteration pays it all). The Go wall time of Plan,
// the CBC processes included, is measured as every policy's (timings.json),
// never simulated.
package flexsp
