// Package mcore is Megatron-Core's dynamic context parallelism (DCP) scheduler as
// shipped on Megatron-LM's dev branch, re-written in Go decision for decision:
// research/baselines.md §1.7 ("G2"), read at NVIDIA/Megatron-LM dev commit
// d48bd6be0a (2026-08-21), megatron/core/datasets/data_schedule_utils.py
// (next_hdp_group_packing_aware, align_sample_id_groups, dcp_gpus_needed) as
// data_schedule.py drives them (DefaultDynamicCPScheduler.get_groups_and_subsamples).
// Its plans equal Megatron's on every vector of testdata/mcore-dcp-g2*.jsonl
// and testdata/megatron-extra.jsonl (VPP alignment, min_cp_size, pools that are
// not a power of two), all produced by Megatron's own code.
//
// # Algorithm
//
// The batch is sorted by length, descending, with a stable sort (equal lengths
// keep id order), and next_hdp_group_packing_aware is called on the leftovers
// (which stay in that order) until every sequence is placed; each call builds one
// micro-batch over all R = G ranks:
//
//   - cp_min(s) = max(min_cp_size, the smallest power of two k with s/k <= C);
//   - the call's tallest item goes on ranks [0, cp_min) unconditionally, and
//     cap = tall·C·1.05 (float64, in that order);
//   - every other item, in order, tries cp = cp_min, 2·cp_min, ... <= R (CP
//     enlargement); at each cp, first every existing group of size cp, in creation
//     order, whose packed per-rank length Σ s/cp stays <= C ("add"), then the cp
//     lowest free ranks if that many are free ("new"). A candidate's score is the
//     largest per-rank load Σ s²/k over all R ranks after the move; the first
//     candidate with the least score <= cap wins (strict <: "add" before "new",
//     smaller cp before larger, earlier group before later). An item without a
//     candidate is left for the next call;
//   - while ranks are empty, widen_once doubles (at most to R) the first group of
//     the smallest size whose widened range ends inside the pool, shifting the
//     groups to its right into the empty tail (Megatron recomputes the widened
//     ranks' load over all their items, which no later decision reads); when no
//     group qualifies (only when R is not a power of two) the micro-batch is
//     discarded for one group of all R ranks holding a first-fit, over the call's
//     items in order, of those keeping Σ s/R <= C (fill_with_full_dpxcp_group).
//
// Arithmetic follows Python's: s²/k and s/k are the exact integer quotients
// rounded once, loads and packed lengths are float64 sums in Megatron's order, and
// comparisons are float64, so ties resolve as in Megatron.
//
// With VPP (Inputs.VPP > 1) and N = Inputs.GroupSizeN() > 1, align_sample_id_groups
// then splits micro-batches until their count is a multiple of N. It walks from the
// last micro-batch backwards, wrapping around to the new last one. A micro-batch
// of two or more CP groups (sizes must not grow along the ranks: Megatron asserts)
// is cut at the first group boundary at or after rank ⌊R/2⌋; the part after the
// cut, moved to rank 0, takes its place and the part before it is appended at the
// end. Each part refills its empty ranks one step at a time: scanning the groups
// from the right, the group just after the first size decrease (the leftmost of
// the trailing run of equal-size groups) doubles, or the first group when all
// sizes are equal and it fits the empty ranks; the groups to its right shift. A
// micro-batch of one group is skipped; if a whole pass over the micro-batches
// splits nothing, Megatron asserts and Plan returns ErrCannotAlign.
//
// # Plans
//
// One sched.Microbatch per Megatron micro-batch, groups by first rank, each
// group's Seqs in the order Megatron appended them, so Plan.PerRank() equals
// Megatron's per-rank sample-id lists. Closed says why the micro-batch ended: "all
// placed", "leftovers: cap" (some leftover had a candidate refused only by the
// cap), "leftovers: no room", "fallback full group", "vpp split" (both parts of a
// split), or "idle ranks: degree limit" (the deviation below).
//
// Promises: WithinBudget only. Megatron's packing check keeps every rank within C
// and widening and refilling only lower it. Megatron's micro-batches always cover
// the pool, but with a degree limit below G ranks can stay idle (a one-sequence
// batch cannot fill G ranks with groups of at most MaxDegree), so CoversPool is
// not promised. With G a power of two the groups are aligned power-of-two blocks:
// group sizes never grow along the ranks (a later, shorter item can only open a
// larger group if its load at cp_min exceeds the current maximum, which the
// earlier, longer item's choice rules out), groups are allocated from rank 0, and
// widening and refilling double the leftmost group of the smallest size; the tests
// check it on thousands of batches. With G not a power of two, widen_once and the
// fallback make groups of min(2k, G) or G ranks, so Aligned is not promised.
//
// # Elementary work
//
// WorkUnits counts the ranks and groups Megatron's Python visits (R = G):
//
//   - the driver's sort: n·⌈log2 n⌉ for n sequences;
//   - per call with n items: n (its sort of the already sorted list: one Timsort
//     run) and R (its per-rank lists);
//   - per item after the first, per cp it tries: the number of groups (the walk
//     over all groups), R (the free-rank scan), R for each group of size cp that
//     passes the packing check (its projected-max scan over all ranks) and, when
//     F >= cp ranks are free, F + R (sorting the free ranks, the projected max);
//     then cp for applying the move (also for the first item);
//   - the fill loop: the ranks each any(empty) scan visits (up to the first empty
//     rank, or R); each widen_once R + E + groups (its scans, E empty ranks), plus
//     1 per group it examines, plus R + k·m + groups when it widens a group to k
//     ranks holding m items (the rebuilt per-rank lists, the load recomputation,
//     the shift); the fallback n + R;
//   - VPP alignment: R per split attempt and R per refill step.
//
// Megatron's cost per item is O(log R · groups · R); TestCPythonTimingFit fits
// seconds per work unit to measured CPython times (calib.CPython.PoolVisitSeconds). The Go code reaches the
// same decisions without those scans: all members of a group share one load and
// free ranks hold 0, so a candidate's score is max(load + s²/cp, current maximum)
// (the maximum is kept incrementally), and per-size segment trees over the groups
// in creation order answer "least load among groups that fit", "first group that
// fits with load at most X" and "how many groups fit" with pruning.
//
// # Planning stall
//
// Plan.StallWork prices the planner's stall (sim/step puts it at the head of the
// iteration). Two implementations are on record, and Options.StallModel picks:
//
//   - "pool-scan" (default): the production scheduler the HyDra paper profiled,
//     which per its §3.4 "for each sub-sample linearly scans the entire HDP
//     pool": N·G pool visits for N sequences and G ranks. Priced at
//     calib.CPython.PoolVisitSeconds (fitted on Megatron's dev code below, not on
//     the paper), it gives 0.79 s for the paper's 2,048-GPU production batch
//     (N ≈ 22,800, G = 512; the paper measured 0.78 s, §6.3) and 50 s at 16K
//     GPUs (G = 4096, N ≈ 181,000; the paper's Fig. 19: 47.85 s). Neither number
//     was used to set anything.
//   - "megatron-dev": the code whose decisions this package reproduces, at its
//     WorkUnits (O(log R · groups · R) per item). It matches the seven CPython
//     timings of that code within 20% (R <= 128), but extrapolated to G = 512 it
//     predicts ~390 s per plan, 500× the paper's measurement: the dev code's
//     scans are not what production runs.
//
// # Deviations and errors
//
// One deviation: when Inputs.MaxDegree limits the CP degree below G, no group is
// ever made larger than Inputs.DegreeLimit(): enlargement stops at the limit, a
// widening or refill step that would pass it is not made and the full-group
// fallback (G ranks) is not taken; the ranks left empty stay idle in that
// micro-batch (Diagnostics.IdleRankSlots), and VPP splitting treats them as the
// end of the micro-batch. It never triggers in the conformance vectors.
//
// Where Megatron fails, Plan returns an error matching sched.ErrInvalidInput: an
// item needing more than R ranks or min_cp_size above R (Megatron asserts), no
// micro-batch to split for VPP (ErrCannotAlign), and, only on pools that are not
// a power of two, widen_once indexing past the pool, refilling that loops forever
// or lengthens a micro-batch past R ranks (Megatron returns rank lists for ranks
// that do not exist), or group sizes that grow along the ranks
// (ErrMegatronFails).
package mcore

import (
	"fmt"
	"math/bits"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/radix"
)

// Name is the registry name of the policy.
const Name = "mcore"

// Options are the policy's scenario options ([run.options.mcore]).
type Options struct {
	// MinCPSize is Megatron's --min-dynamic-context-parallel-size: the smallest CP
	// degree of any sequence (a power of two, default 1).
	MinCPSize int `toml:"min_cp_size"`
	// StallModel picks the implementation whose planning stall the simulator
	// models (Plan.StallWork): "pool-scan" (default, also when empty) or "megatron-dev" (see the
	// package doc, "Planning stall").
	StallModel string `toml:"stall_model"`
}

// The StallModel values.
const (
	StallPoolScan    = "pool-scan"
	StallMegatronDev = "megatron-dev"
)

// maxMinCPSize bounds min_cp_size (the largest pool sched accepts).
const maxMinCPSize = sched.MaxPoolRanks

// Policy is Megatron-Core's packing-aware dynamic-CP scheduler.
type Policy struct {
	opts Options
}

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// DefaultOptions are the options of a scenario that gives none: min_cp_size 1
// and the pool-scan stall model.
func DefaultOptions() Options { return Options{MinCPSize: 1, StallModel: StallPoolScan} }

// New builds the policy from its options.
func New(o Options) (*Policy, error) {
	if o.StallModel == "" {
		o.StallModel = StallPoolScan
	}
	if o.StallModel != StallPoolScan && o.StallModel != StallMegatronDev {
		return nil, fmt.Errorf("stall_model = %q: must be %q or %q", o.StallModel, StallPoolScan, StallMegatronDev)
	}
	if o.MinCPSize < 1 || o.MinCPSize > maxMinCPSize || !sched.IsPow2(o.MinCPSize) {
		return nil, fmt.Errorf("min_cp_size = %d: must be a power of two in [1, %d]", o.MinCPSize, maxMinCPSize)
	}
	return &Policy{opts: o}, nil
}

// CheckInputs checks the options against the job's pool (sched.InputChecker):
// min_cp_size must be at most the largest CP degree, min(G, the engine's
// limit), or no sequence could be placed. The error names the key, the pool
// and the limit.
func (p *Policy) CheckInputs(in sched.Inputs) error {
	limit := in.DegreeLimit()
	if p.opts.MinCPSize <= limit {
		return nil
	}
	why := fmt.Sprintf("the pool's G = %d ranks", in.PoolRanks)
	if limit < in.PoolRanks {
		why = fmt.Sprintf("the CP engine's largest group, below the pool's G = %d ranks", in.PoolRanks)
	}
	return fmt.Errorf("%w: min_cp_size = %d exceeds the largest CP degree %d (%s); it must be a power of two at most that",
		sched.ErrInvalidInput, p.opts.MinCPSize, limit, why)
}

// Name returns "mcore".
func (*Policy) Name() string { return Name }

// Promises: every rank within B. Coverage and alignment hold only in some
// settings (see the package doc), so they are not promised.
func (*Policy) Promises() sched.Promises {
	return sched.Promises{WithinBudget: true}
}

// ErrCannotAlign is returned (wrapped) when VPP alignment finds no micro-batch with
// two CP groups to split, where Megatron's align_sample_id_groups asserts. It
// matches sched.ErrInvalidInput under errors.Is.
var ErrCannotAlign error = inputError("micro-batch count cannot be aligned to a multiple of N")

// ErrMegatronFails is returned (wrapped) where Megatron's own code raises or
// asserts on the input (only seen with pools that are not a power of two). It
// matches sched.ErrInvalidInput under errors.Is.
var ErrMegatronFails error = inputError("Megatron's scheduler fails on this input")

// inputError is an error of a batch Megatron's rules cannot plan (errors.Is
// matches sched.ErrCannotPlan and sched.ErrInvalidInput).
type inputError string

func (e inputError) Error() string { return string(e) }

// Unwrap makes an inputError a batch the policy cannot plan (and so bad
// input).
func (e inputError) Unwrap() error { return sched.ErrCannotPlan }

// Plan runs Megatron's scheduler on the batch.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		return nil, fmt.Errorf("mcore: %w", err)
	}
	if err := p.CheckInputs(in); err != nil {
		return nil, fmt.Errorf("mcore: %w", err)
	}
	limit, minCP := in.DegreeLimit(), p.opts.MinCPSize
	if len(lengths) > 1<<31-1 {
		return nil, fmt.Errorf("mcore: %w: %d sequences", sched.ErrInvalidInput, len(lengths))
	}
	cpLog := make([]uint8, len(lengths)) // log2 of Megatron's dcp_gpus_needed
	for i, s := range lengths {
		cp := max(minCP, sched.MemoryDegree(s, in.BudgetTokens))
		cpLog[i] = uint8(bits.TrailingZeros(uint(cp)))
		if cp > limit {
			// Only when the limit is not a power of two: Check allowed s <= limit·B.
			top := 1 << (bits.Len(uint(limit)) - 1)
			return nil, fmt.Errorf("mcore: %w", &sched.ErrSequenceTooLong{Seq: i, Tokens: s, MaxTokens: top * in.BudgetTokens,
				Why: fmt.Sprintf("Megatron's largest power-of-two CP group (%d ranks · B = %d)", top, in.BudgetTokens)})
		}
	}

	diag := &Diagnostics{}
	b := newBuilder(lengths, cpLog, in, diag)

	items := radix.LongestFirst(lengths) // Python's stable sort by length, descending
	if n := len(items); n > 1 {
		b.work += int64(n) * int64(bits.Len(uint(n-1)))
	}

	var mbs []sched.Microbatch
	for len(items) > 0 {
		mb, err := b.next(items)
		if err != nil {
			return nil, err
		}
		mbs = append(mbs, mb)
		items = append(items[:0], b.leftovers...) // the next call's items, in order
	}

	work := b.work
	if n := in.GroupSizeN(); in.VPP > 1 && n > 1 {
		al := &aligner{ranks: in.PoolRanks, limit: limit, diag: diag}
		var err error
		if mbs, err = al.align(mbs, n); err != nil {
			return nil, err
		}
		work += al.work
	}

	diag.Microbatches = len(mbs)
	diag.WorkUnits = work
	diag.PoolScanVisits = int64(len(lengths)) * int64(in.PoolRanks)
	stall := sched.StallWork{PoolVisits: diag.PoolScanVisits}
	if p.opts.StallModel == StallMegatronDev {
		stall.PoolVisits = work
	}
	return &sched.Plan{Policy: Name, PoolRanks: in.PoolRanks, Microbatches: mbs, WorkUnits: work, StallWork: stall, Diagnostics: diag}, nil
}

// Diagnostics explain a plan.
type Diagnostics struct {
	// Microbatches is the number of micro-batches, after VPP alignment.
	Microbatches int `json:"microbatches"`
	// Fallbacks counts micro-batches replaced by one full-pool group.
	Fallbacks int `json:"fallbacks"`
	// Widenings counts widen_once steps (a group doubled to fill empty ranks).
	Widenings int `json:"widenings"`
	// Enlarged counts items placed at a CP degree above cp_min (their memory
	// degree, at least min_cp_size), before any widening.
	Enlarged int `json:"enlarged"`
	// VPPSplits counts micro-batches split by VPP alignment.
	VPPSplits int `json:"vpp_splits"`
	// IdleRankSlots counts (rank, micro-batch) slots left idle by the degree-limit
	// deviation (0 without Inputs.MaxDegree).
	IdleRankSlots int `json:"idle_rank_slots"`
	// WorkUnits is the plan's work count (see the package doc).
	WorkUnits int64 `json:"work_units"`
	// PoolScanVisits is N·G: one whole-pool scan per sub-sample, the cost of
	// the production scheduler the HyDra paper profiled (package doc).
	PoolScanVisits int64 `json:"pool_scan_visits"`
}

// Summary lists the diagnostics in a fixed order.
func (d *Diagnostics) Summary() []sched.KV {
	kv := func(name string, v any) sched.KV { return sched.KV{Name: name, Value: fmt.Sprint(v)} }
	return []sched.KV{
		kv("micro-batches", d.Microbatches),
		kv("fallbacks", d.Fallbacks),
		kv("widenings", d.Widenings),
		kv("enlarged items", d.Enlarged),
		kv("vpp splits", d.VPPSplits),
		kv("idle rank-slots", d.IdleRankSlots),
		kv("work units", d.WorkUnits),
		kv("pool-scan visits", d.PoolScanVisits),
	}
}
