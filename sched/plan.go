// Package sched is the plan model shared by every dynamic-context-parallel (DCP)
// policy, the small Policy interface they implement, a registry by name, and the
// checks and statistics every plan must pass.
//
// # The plan model
//
// A policy receives the global batch (sequence id i has lengths[i] tokens) and the
// hybrid data-parallel (HDP) pool of G ranks of one pipeline stage, and returns a
// Plan: an ordered list of microbatches (MBs). Each MB is a set of CP groups; a
// group is a contiguous rank range [FirstRank, FirstRank+Size) that runs its
// sequences, in order, with context parallelism of degree Size. Within one MB no
// rank is in two groups. Every pipeline stage runs the same plan (the pool is the
// same on every stage; tp, pp and ep are fixed), so a plan is per stage-rank, not
// per GPU.
//
// # CP × HP layouts and mixed GPU kinds
//
// A group may carry a Layout: its ranks cut into head-parallel groups, each
// rank with its own sequence-shard length and head count (HexiSeq's
// asymmetric CP × HP; USP's equal shares are its symmetric case). Inputs may
// carry a Cluster describing the pool's GPU kinds (ranks kind by kind, each
// kind's memory budget and a planning model of its speed and links); every
// rank is then validated against its own kind's budget, and policies that
// treat every device alike plan with BudgetTokens, the smallest.
//
// # Ranks with different numbers of microbatches
//
// A microbatch need not cover the whole pool. Rank r's own sequence of
// microbatches is the subsequence of Plan.Microbatches whose groups include r, in
// order (Plan.RankMicrobatches). Global-MB policies (HyDra, Megatron-Core DCP,
// static CP) cover all G ranks in every MB (ranks left idle in an MB are still
// in it, holding nothing, so they stay in pipeline step). A policy that gives DP
// replicas different MB counts (ByteScale, WLB-LLM) instead emits MBs that cover
// only the ranks of one replica or block: replica A's third MB and replica B's
// fifth are simply different entries. The engine walks each rank's own list; the
// ranks of one EP group must see the same count, which Validate checks when the
// policy declares the EP size it respects.
//
// # Elementary work
//
// Every plan reports WorkUnits, a count of the elementary operations its policy
// performed (HyDra: heap operations; Megatron-Core DCP: ranks visited by its
// whole-pool scans; static CP: items visited), and StallWork, the same kind of
// count sorted by operation for the implementation whose planning stall the
// simulator models (the Python planners the systems ship, and FlexSP's MILP
// solves). The engine prices StallWork with per-operation costs
// (calib.CPython, calib.CBC) into a deterministic stall at the head of the
// iteration; the measured Go wall time is reported beside it, never mixed in.
//
// sched imports no engine, cost model or I/O: policies are pure functions of the
// batch and the Inputs.
package sched

import (
	"errors"
	"fmt"
	"math/bits"
)

// Group is one CP group of a microbatch: ranks [FirstRank, FirstRank+Size) run
// Seqs (sequence ids, in order) with CP degree Size.
type Group struct {
	// FirstRank is the lowest HDP rank of the group.
	FirstRank int `json:"first_rank"`
	// Size is the number of ranks, i.e. the CP degree of every sequence in it.
	Size int `json:"size"`
	// Seqs are the ids of the sequences the group runs, in order.
	Seqs []int `json:"seqs"`
	// Layout, when set, is the group's CP × HP execution with per-rank
	// shard lengths and head counts (HexiSeq, USP); nil is the even split of
	// the policy's CP execution.
	Layout *Layout `json:"layout,omitempty"`
	// Offload is the group's selective-offload ratio r in [0, 1] (ByteScale
	// §5.2): its ranks move the fraction r of the activations of every layer
	// but each chunk's last two to host memory during the forward and load
	// them back for the backward, so a rank keeps per-rank tokens ×
	// (1 − r·Inputs.OffloadShare) tokens' worth of activations on the GPU.
	// 0: nothing leaves the GPU.
	Offload float64 `json:"offload,omitempty"`
}

// ResidentTokens is what a rank of a group holding tokens tokens keeps on
// the GPU in tokens' worth of activations at offload ratio r, when offload
// moves the part share of them at r = 1: tokens·(1 − r·share).
func ResidentTokens(tokens, r, share float64) float64 { return tokens * (1 - r*share) }

// LastRank is FirstRank+Size-1.
func (g Group) LastRank() int { return g.FirstRank + g.Size - 1 }

// Microbatch is one microbatch: disjoint CP groups over the pool.
type Microbatch struct {
	// Groups are ordered by FirstRank.
	Groups []Group `json:"groups"`
	// Closed says why the policy closed this microbatch (diagnostic, may be empty).
	Closed string `json:"closed,omitempty"`
}

// Plan is a policy's answer for one global batch.
type Plan struct {
	// Policy names the policy that made the plan.
	Policy string `json:"policy"`
	// PoolRanks is G, the number of ranks the plan spans.
	PoolRanks int `json:"pool_ranks"`
	// Microbatches in execution order.
	Microbatches []Microbatch `json:"microbatches"`
	// PartialMicrobatches is set by policies whose MBs cover only part of the
	// pool, so ranks run different MB counts (see the package doc). When false,
	// every rank takes part in every MB: a rank in no group runs it empty, in
	// pipeline step with the others.
	PartialMicrobatches bool `json:"partial_microbatches,omitempty"`
	// Lengths, when set, are the sequences the plan trains, which its groups'
	// ids index: a policy that keeps state between iterations (WLB-LLM's
	// outlier delay queues) trains some sequences of earlier batches and delays
	// some of this one. nil means the batch given to Plan. See Trained.
	Lengths []int `json:"lengths,omitempty"`
	// WorkUnits counts the policy's elementary operations (see the package doc).
	WorkUnits int64 `json:"work_units"`
	// StallWork is the work the modelled planning stall prices (see the
	// package doc and each policy's doc).
	StallWork StallWork `json:"stall_work"`
	// Diagnostics explain the plan; the concrete type is the policy's own.
	Diagnostics Diagnostics `json:"diagnostics,omitempty"`
}

// StallWork counts the elementary operations of a planner implementation by
// kind, each priced by its own per-operation cost (calib.CPython): a plan's
// modelled stall is Σ count × cost.
type StallWork struct {
	// PoolVisits are ranks or groups visited by Python-level scans over the
	// pool (Megatron-Core DCP's list scans).
	PoolVisits int64 `json:"pool_visits"`
	// HeapOps are heapq pushes, pops and fixes on heaps of (load, rank) keys.
	HeapOps int64 `json:"heap_ops"`
	// SequenceVisits are reads of one sequence in a Python loop over the batch.
	SequenceVisits int64 `json:"sequence_visits"`
	// SolverSolves, SolverNodes and SolverIterations are a MILP planner's
	// solver calls, branch-and-bound nodes and simplex iterations (FlexSP),
	// as the solver reports them: deterministic counts of its work, priced
	// with measured per-solve, per-node and per-iteration costs.
	SolverSolves     int64 `json:"solver_solves,omitempty"`
	SolverNodes      int64 `json:"solver_nodes,omitempty"`
	SolverIterations int64 `json:"solver_iterations,omitempty"`
	// ReportedSeconds is a stall in seconds as a planner outside dcpsim
	// reports it, or as its round trip was measured when it reports no work
	// (an external policy, extpolicy): priced as it is.
	ReportedSeconds float64 `json:"reported_seconds,omitempty"`

	// The fields below are the rest of a Python planner's per-iteration
	// pipeline around its placement loop: preparing the batch and handing
	// every rank its plan (HyDra and hydra-hetero fill them; sched/hydra
	// PlanBuildWork). Each is an exact function of the batch and the plan.

	// PreparedSequences are sequences read by the batch's preparation
	// passes: the batch sums (S1, S2, s_max) and each sequence's CP degree
	// cp(s), one visit of each pass per sequence.
	PreparedSequences int64 `json:"prepared_sequences,omitempty"`
	// SortSteps are N·⌈log₂ N⌉ for the longest-first sort of the batch's N
	// sequences (a comparison sort with a C-level key; priced per N log N).
	SortSteps int64 `json:"sort_steps,omitempty"`
	// BatchSlots are the (rank, microbatch) slots of the per-rank batches:
	// the list of sequence pieces every rank of the pool gets in every
	// microbatch, empty for a rank idle in it.
	BatchSlots int64 `json:"batch_slots,omitempty"`
	// SequencePieces are (sequence, rank) pieces: a sequence run by a group
	// of k ranks is cut into 2k zigzag chunks, and each of its k ranks
	// appends its pair (chunks i and 2k−1−i, each as seq id, start, end) to
	// its slot: Σ over groups of |Seqs|·Size.
	SequencePieces int64 `json:"sequence_pieces,omitempty"`
	// GroupSequences are the (sequence, group) entries of the plan, Σ over
	// groups of |Seqs|: the batch-building loop's per-sequence step (read the
	// length, compute the chunk length) outside its loop over the ranks.
	GroupSequences int64 `json:"group_sequences,omitempty"`
	// Groups are the plan's CP groups, Σ over microbatches of |Groups|: each
	// is one step of the batch-building loop and one metadata record (its
	// rank list, inner Ulysses and outer ring sub-groups, the prebuilt
	// process group of its aligned block).
	Groups int64 `json:"groups,omitempty"`
	// GroupRanks are the ranks of the plan's groups, Σ over groups of Size:
	// each rank's entry (its group, Ulysses rank and ring rank) in its
	// microbatch's metadata.
	GroupRanks int64 `json:"group_ranks,omitempty"`
}

// Bounds of a StallWork (Check).
const (
	// MaxStallCount bounds each count of a StallWork: 10^10 operations, which
	// at the dearest per-operation cost priced (a CBC solve, 0.027 s) is
	// about 3·10^8 s, so the priced stall stays far inside the engine's
	// int64 nanoseconds (9.2·10^9 s).
	MaxStallCount = 10_000_000_000
	// MaxReportedStallSeconds bounds ReportedSeconds: a day, longer than
	// any batch's timeout (an hour).
	MaxReportedStallSeconds = 86400
)

// Check reports the first field outside its range, named as in JSON: every
// count in [0, MaxStallCount], ReportedSeconds in [0,
// MaxReportedStallSeconds]. A plan from outside dcpsim (an external policy)
// may carry any numbers; sched.Validate checks them with this.
func (w StallWork) Check() error {
	for _, f := range []struct {
		name  string
		count int64
	}{
		{"pool_visits", w.PoolVisits}, {"heap_ops", w.HeapOps}, {"sequence_visits", w.SequenceVisits},
		{"solver_solves", w.SolverSolves}, {"solver_nodes", w.SolverNodes}, {"solver_iterations", w.SolverIterations},
		{"prepared_sequences", w.PreparedSequences}, {"sort_steps", w.SortSteps}, {"batch_slots", w.BatchSlots},
		{"sequence_pieces", w.SequencePieces}, {"group_sequences", w.GroupSequences}, {"groups", w.Groups},
		{"group_ranks", w.GroupRanks},
	} {
		if f.count < 0 || f.count > MaxStallCount {
			return fmt.Errorf("stall_work.%s = %d: must be in [0, %d]", f.name, f.count, int64(MaxStallCount))
		}
	}
	if !(w.ReportedSeconds >= 0 && w.ReportedSeconds <= MaxReportedStallSeconds) {
		return fmt.Errorf("stall_work.reported_seconds = %v: must be in [0, %d]", w.ReportedSeconds, MaxReportedStallSeconds)
	}
	return nil
}

// Diagnostics explain a plan for people (Summary) and, through encoding/json of
// the concrete value, for scripts.
type Diagnostics interface {
	// Summary lists (name, value) pairs in a fixed order, e.g. ("C*", "256").
	Summary() []KV
}

// LoadTargeter is implemented by diagnostics of policies that pack against one
// per-rank load target (HyDra's Λ*), so reports can show each MB's max load
// relative to it.
type LoadTargeter interface {
	// LoadTargetTokens2 returns the per-rank load target in tokens².
	LoadTargetTokens2() float64
}

// OptionChooser is implemented by diagnostics of policies that choose an
// option's value themselves when the scenario leaves it at its default
// (HyDra's cap: C* from the closed form), so a sweep that forces the option can
// mark the policy's own choice.
type OptionChooser interface {
	// ChosenOption returns the value the policy chooses for the option key,
	// and false for a key it does not choose.
	ChosenOption(key string) (value float64, ok bool)
}

// KV is one named diagnostic value, already formatted.
type KV struct {
	// Name of the quantity, e.g. "Λ*".
	Name string
	// Value formatted for display.
	Value string
}

// Trained returns the sequence lengths the plan trains: Lengths when the
// policy set it, else the batch it was given.
func (p *Plan) Trained(batch []int) []int {
	if p.Lengths != nil {
		return p.Lengths
	}
	return batch
}

// PerRank returns the plan in the conformance vectors' layout: out[m][r] lists the
// sequence ids rank r holds in microbatch m, in the order its group runs them
// (empty for a rank that is idle in, or not part of, that microbatch).
func (p *Plan) PerRank() [][][]int {
	out := make([][][]int, len(p.Microbatches))
	for m, mb := range p.Microbatches {
		ranks := make([][]int, p.PoolRanks)
		for r := range ranks {
			ranks[r] = []int{}
		}
		for _, g := range mb.Groups {
			for r := g.FirstRank; r <= g.LastRank() && r < p.PoolRanks; r++ {
				ranks[r] = append(ranks[r], g.Seqs...)
			}
		}
		out[m] = ranks
	}
	return out
}

// RankMicrobatches returns, for rank r, the indices of the microbatches whose
// groups include r, in order.
func (p *Plan) RankMicrobatches(r int) []int {
	var idx []int
	for m, mb := range p.Microbatches {
		for _, g := range mb.Groups {
			if r >= g.FirstRank && r <= g.LastRank() {
				idx = append(idx, m)
				break
			}
		}
	}
	return idx
}

// Pow2Ceil returns the smallest power of two >= n (1 for n <= 1).
func Pow2Ceil(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << bits.Len(uint(n-1))
}

// IsPow2 reports whether n is a positive power of two.
func IsPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

// CeilDiv returns ⌈a/b⌉ for a >= 0, b > 0.
func CeilDiv(a, b int) int { return (a + b - 1) / b }

// MemoryDegree is Megatron's memory-driven CP degree of a sequence:
// the smallest power of two k with s/k <= budget, i.e. pow2ceil(⌈s/B⌉).
func MemoryDegree(seqTokens, budgetTokens int) int {
	return Pow2Ceil(CeilDiv(seqTokens, budgetTokens))
}

// ErrSequenceTooLong reports a sequence that no CP group of the pool can hold.
type ErrSequenceTooLong struct {
	// Seq is the sequence id and Tokens its length.
	Seq, Tokens int
	// MaxTokens is the longest sequence the pool can hold (G·B, or the engine's
	// degree limit times B).
	MaxTokens int
	// Why names the limit.
	Why string
}

// ContextTooShortWhy is ErrSequenceTooLong's Why for a policy that sizes its
// CP degree from the context (static CP, WLB-LLM) when the sequence is longer
// than the context it was given: the context is to blame, not cp·B.
func ContextTooShortWhy(context int, what string, cp, budget int) string {
	return fmt.Sprintf("it is longer than context_tokens = %d, which sizes %s (cp = %d at B = %d; raise context_tokens to the longest sequence, or give 0 for the batch's longest), and such a group", context, what, cp, budget)
}

// Is makes errors.Is(err, ErrInvalidInput) true: a too-long sequence is bad input.
func (e *ErrSequenceTooLong) Is(target error) bool { return errors.Is(ErrInvalidInput, target) }

// Error names the sequence, its length and the limit.
func (e *ErrSequenceTooLong) Error() string {
	return fmt.Sprintf("sequence %d has %d tokens; %s holds at most %d (allowed: lengths <= %d)", e.Seq, e.Tokens, e.Why, e.MaxTokens, e.MaxTokens)
}
