// Package step times one training iteration of a DCP plan across the
// pipeline: every pipeline stage runs the same plan on the same HDP pool,
// Megatron's (interleaved) 1F1B schedule orders each rank's ops, and sync
// domains, not GPUs or layers, are the unit of simulation.
//
// # Sync domains
//
// Within a stage, a microbatch's work on a rank is coupled to other ranks by
// its CP group (the CP collectives) and by its EP group (MoE dispatch and
// combine at every layer: the slowest CP group sets the pace of its whole EP
// group). EP groups are the aligned blocks of ep consecutive HDP ranks. A
// rank takes part in a microbatch if a CP group of it includes the rank or
// any rank of the rank's EP block (an idle rank still joins its block's MoE
// collectives). Per microbatch, the union of CP groups and EP blocks
// partitions the participating ranks into domains that move in lock-step
// (Domains; groups and blocks are intervals, so the union-find reduces to
// merging overlapping intervals and a domain is a contiguous rank range). The
// domains are the same on every stage.
//
// # Execution
//
// Rank r's microbatches are those it takes part in, in plan order; with m_r
// of them, its stream on each stage runs pipeline.New(pp, vpp, m_r, 0)'s ops
// for that stage (N = pp), which must be legal for Megatron (Simulate returns
// pipeline's error naming the rule otherwise). Global-MB policies give every
// rank the same count; plans whose MBs cover only part of the pool give ranks
// different counts, and domains couple only the ranks that share an MB (if
// the ranks' schedules then order two shared ops differently, Simulate
// reports the deadlock).
//
// One event per (stage, domain, chunk, forward/backward): a domain op starts
// when every rank of the domain has finished its previous op on that stage
// and its dependency (pipeline's Schedule.Dep: the same microbatch on the
// upstream stage or chunk, the loss between forward and backward) has
// arrived, Costs.P2PSeconds after that op ended if it ran on another stage.
// It lasts Costs.ChunkSeconds for the whole domain and ends on all its ranks
// together; domains on disjoint ranks run concurrently. Ranks whose streams
// of domains are the same (no domain starts or ends between them) form a
// class that moves as one (Runner), so the work per event is proportional to
// the classes of the domain, and an iteration costs O(pp · Σ_c 2·vpp·m_c)
// over the classes c plus a heap operation per domain op and transfer
// (HyDra's plans: a class per EP block; at worst a class per rank).
//
// End of iteration: a stage's gradient reduce-scatter starts when every rank
// of the stage has finished its last backward (GradSyncStart), lasts
// Costs.GradSyncSeconds, then the optimizer step Costs.OptimizerSeconds. The
// iteration ends with the last stage's optimizer step. Costs that overlap
// the reduce-scatter with the backward (OverlappedGradSyncer) reduce each
// model chunk on one stream from when its last backward starts, ending no
// earlier than its last bucket after that backward; GradSyncSeconds then
// follows the later of the stream's end and GradSyncStart. The planner's stall at
// the head of the iteration is not modelled yet.
//
// # Bubbles
//
// For stage s and rank r, with E its last backward's end, Busy the total
// duration of the domain ops it took part in, S the stage's GradSyncStart, Y
// the stage's sync + optimizer time and T the iteration:
//
//	DP bubble(s, r) = S − E                 (waiting for the stage's slowest rank)
//	PP bubble(s, r) = T − Busy − DP − Y     (every other idle time: pipeline
//	                                         fill/drain, dependency stalls, and
//	                                         waiting for the slowest stage)
//
// Result.PPBubbleShare and Result.DPBubbleShare are their means over all pp·G (stage,
// rank) pairs divided by T: the share of the iteration's GPU-time spent in
// each bubble, the reading of the paper's PP/DP bubble percentages (Figs.
// 15/16) as a fraction of the iteration. Busy + PP + DP + Y = T for every
// rank, so in load mode (Y = 0) busy share + PPBubbleShare + DPBubbleShare = 1. With
// equal microbatches and free communication the PP bubble is the classic
// (p−1)/(m·v+p−1) of interleaved 1F1B. Busy includes a light rank's time
// held by its domain's slowest rank (CP or EP imbalance), which is neither
// bubble.
//
// Result.MBSeconds[k] is microbatch k's forward+backward time through one
// stage: the sum over chunks of its domain ops' durations, max over stages
// and domains (so over ranks); the spread (CV, max/min) of MB times comes
// from it.
//
// # Held activations
//
// When the Costs are an ActivationSizer, Run follows each (stage, rank)'s
// held activations through its schedule: a chunk's activations are kept from
// the end of its forward to the end of its backward, and a backward adds its
// transient (recomputed activations) while it runs. What a rank keeps of a
// microbatch is linear in its shard (its tokens and attention scores) at the
// chunk's rates. RankResult.PeakActivationBytes is each rank's peak and
// StageResult.Peak the stage's largest, with the op and the time it was
// reached. With variable-length microbatches the peak is no closed form; the
// test oracle reads it off the simulated timeline, and equal microbatches give
// p − s held on stage s of plain 1F1B and the warm-up's forwards plus one
// under interleaving.
//
// # Load mode
//
// LoadCosts is the transparent cost mode for checking by hand: a rank's
// forward time for one chunk of a microbatch is its per-rank load (Σ s²/k over
// its sequences, tokens²) × 1e-12 s / (pp·vpp), backward is twice that, and
// communication, GEMM, gradient sync and optimizer are free. CP groups and
// EP blocks still couple ranks through the domains. A microbatch's
// MBSeconds is then 3·L·1e-12/pp with L its largest per-rank load in a
// domain.
//
// # Cost-model mode
//
// The engine imports no cost model: package costmodel prices a Layout's
// domains with calib (compute) and sim/network (communication) under the CP
// execution a policy assumes, ahead of the run, and hands Run a Costs.
package step
