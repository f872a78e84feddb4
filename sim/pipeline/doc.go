// Package pipeline builds Megatron-LM's pipeline schedules and times one
// iteration of them on the sim engine.
//
// # Schedule
//
// New follows Megatron-Core's megatron/core/pipeline_parallel/schedules.py
// (research/baselines.md §2): get_schedule_table builds the table of (micro-
// batch, chunk) pairs in groups of N = microbatch_group_size_per_vp_stage
// (default p) micro-batches; get_pp_rank_microbatches gives stage r's warm-up
// W_r = min((p−r−1)·2 + (v−1)·N, m·v); forward_backward_pipelining_with_interleaving
// runs F(0..W_r−1), then the steady pairs F(k+W_r), B(k), then the cool-down
// B(m·v−W_r..m·v−1), where B(k) is the backward of table entry k on the
// mirrored chunk v−1−c. With v = 1 it is forward_backward_pipelining_without_interleaving,
// classic 1F1B with W_r = min(p−r−1, m). The overlap_moe_expert_parallel_comm
// extra warm-up op and forward-only mode are not modelled.
//
// Megatron rejects interleaved runs unless p ≤ N ≤ m and m mod N is 0 or ≥ p
// (ValueError and RuntimeError in forward_backward_pipelining_with_interleaving);
// New returns an error naming the same rule. It rejects rather than pads with
// empty micro-batches because padding is a policy decision with a cost: a DCP
// policy that wants a legal count aligns m itself (Megatron-Core's dynamic CP
// pads sample groups to a multiple of N), and the simulator must time what
// the policy actually planned, not a silently different batch.
//
// # Execution
//
// The package builds schedules and answers Dep; sim/step runs them on sync
// domains (the ranks a micro-batch's CP and EP groups keep in lock-step), with
// one op stream per rank and an op occupying every rank of its domain. With
// uniform ops and free communication that reproduces the closed-form makespan
// (m·v + p − 1)·(t_f + t_b)/v of Narayanan et al. (SC'21 §2.2.2) exactly
// (sim/step's TestInterleaved1F1BBubble); with per-micro-batch costs, the DCP
// case, only the event simulation gives the answer.
package pipeline
