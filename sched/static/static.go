// Package static is static context parallelism with Megatron-LM's shipped
// packing, the baseline of hydra-paper.txt §6.1 ("static CP at the smallest degree
// that fits the longest sequence, cp=8 at 32K and cp=32 at 256K").
//
// Every sequence runs at one CP degree cp, the smallest power of two with
// cp·B >= the context; the pool splits into dp = G/cp aligned CP groups (DP
// replicas). Sequences are packed by Megatron's DpBalancedScheduler
// ("dp_balanced", megatron/core/datasets/data_schedule.py; research/baselines.md
// §1.8): next-fit in the batch's original order into bins of cp·B tokens (and at
// most max_seqs sequences, Megatron's thd_max_packed_sequences, when set); the
// bin count is padded to a multiple of dp·N (N = the microbatch group size when
// vpp > 1, else 1) by moving the last sequence of the last multi-sequence bins
// into new single-sequence bins, walking backwards; microbatch i gives DP replica
// j bin i·dp + j. It balances tokens, not the quadratic attention work.
//
// WorkUnits counts the sequences visited while packing plus the moves made while
// padding; StallWork prices them all as sequence visits of a Python loop.
package static

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
)

// Name is the registry name of the policy.
const Name = "static"

// Options are the policy's scenario options ([run.options.static]).
type Options struct {
	// Degree forces the CP degree (a power of two dividing G); 0 derives it from
	// the context.
	Degree int `toml:"degree"`
	// MaxSeqs caps the sequences per bin (Megatron's thd_max_packed_sequences); 0
	// means no cap.
	MaxSeqs int `toml:"max_seqs"`
	// Ring runs the CP groups as ring attention (Megatron's p2p CP) instead of
	// Ulysses: the HyDra paper's "ring static CP" baseline on DeepSeek-V3
	// (§6.4). The plans are the same; only their execution differs.
	Ring bool `toml:"ring"`
}

// Policy is static CP with dp_balanced packing.
type Policy struct {
	opts Options
}

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
	_ sched.Executor = (*Policy)(nil)
)

// DefaultOptions are the options of a scenario that gives none: the degree
// derived from the context, no cap on sequences per bin.
func DefaultOptions() Options { return Options{} }

// New builds the policy from its options.
func New(o Options) (*Policy, error) {
	if o.Degree != 0 && (!sched.IsPow2(o.Degree) || o.Degree > sched.MaxPoolRanks) {
		return nil, fmt.Errorf("degree = %d: must be 0 (derived) or a power of two in [1, %d]", o.Degree, sched.MaxPoolRanks)
	}
	if o.MaxSeqs < 0 {
		return nil, fmt.Errorf("max_seqs = %d: must be >= 0 (0 = no cap)", o.MaxSeqs)
	}
	return &Policy{opts: o}, nil
}

// Name returns "static".
func (*Policy) Name() string { return Name }

// CPExec is Ulysses with every all-to-all exposed (Megatron's), or a ring with
// Options.Ring (sched.Executor).
func (p *Policy) CPExec() (sched.CPExec, bool) {
	if p.opts.Ring {
		return sched.Ring, false
	}
	return sched.Ulysses, false
}

// Promises: aligned groups of one size covering the pool, each rank within B.
func (*Policy) Promises() sched.Promises {
	return sched.Promises{Aligned: true, WithinBudget: true, CoversPool: true}
}

// Degree returns the static CP degree for the inputs: the forced one, or the
// smallest power of two whose cp·B holds the context (the batch's longest
// sequence when the context is unset).
func Degree(lengths []int, in sched.Inputs, forced int) int {
	if forced > 0 {
		return forced
	}
	context := in.ContextTokens
	if context == 0 {
		for _, s := range lengths {
			context = max(context, s)
		}
	}
	return sched.MemoryDegree(context, in.BudgetTokens)
}

// Diagnostics explain a static plan.
type Diagnostics struct {
	// Degree is the CP degree and DP the number of replicas G/Degree.
	Degree int `json:"degree"`
	DP     int `json:"dp"`
	// Bins is the number of packed bins before padding, Padded after.
	Bins   int `json:"bins"`
	Padded int `json:"padded_bins"`
	// Multiple is dp·N, the multiple the bin count is padded to.
	Multiple int `json:"multiple"`
}

// Summary lists the diagnostics.
func (d Diagnostics) Summary() []sched.KV {
	return []sched.KV{
		{Name: "CP degree", Value: fmt.Sprint(d.Degree)},
		{Name: "DP replicas", Value: fmt.Sprint(d.DP)},
		{Name: "bins (packed / padded)", Value: fmt.Sprintf("%d / %d", d.Bins, d.Padded)},
		{Name: "padded to a multiple of", Value: fmt.Sprint(d.Multiple)},
	}
}

// ErrNotEnoughToPad is returned when the batch has too few sequences to pad the
// bin count to a multiple of dp·N (Megatron asserts here).
// It wraps sched.ErrCannotPlan.
var ErrNotEnoughToPad = fmt.Errorf("not enough sequences to pad the microbatch count to a multiple of dp·N (%w)", sched.ErrCannotPlan)

// Plan packs the batch.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		return nil, err
	}
	g := in.PoolRanks
	cp := Degree(lengths, in, p.opts.Degree)
	if cp > in.DegreeLimit() || g%cp != 0 {
		return nil, fmt.Errorf("%w: static CP degree %d (cp·B >= context %d at B = %d) must divide the pool G = %d and be <= the engine limit %d", sched.ErrInvalidInput,
			cp, in.ContextTokens, in.BudgetTokens, g, in.DegreeLimit())
	}
	dp := g / cp
	capacity := int64(cp) * int64(in.BudgetTokens)
	var work int64

	// Next-fit in the original order.
	var bins [][]int
	var cur []int
	var sum int64
	for id, s := range lengths {
		work++
		if int64(s) > capacity {
			why := fmt.Sprintf("a static CP group (cp·B = %d·%d)", cp, in.BudgetTokens)
			if p.opts.Degree == 0 && in.ContextTokens > 0 && s > in.ContextTokens {
				// The degree came from a context shorter than the sequence: blame it.
				why = sched.ContextTooShortWhy(in.ContextTokens, "a static CP group", cp, in.BudgetTokens)
			}
			return nil, &sched.ErrSequenceTooLong{Seq: id, Tokens: s, MaxTokens: int(capacity), Why: why}
		}
		if sum+int64(s) <= capacity && (p.opts.MaxSeqs == 0 || len(cur) < p.opts.MaxSeqs) {
			cur = append(cur, id)
			sum += int64(s)
			continue
		}
		bins = append(bins, cur)
		cur, sum = []int{id}, int64(s)
	}
	bins = append(bins, cur)
	packed := len(bins)

	// Pad the bin count to a multiple of dp·N by splitting off last sequences.
	n := 1
	if in.VPP > 1 {
		n = in.GroupSizeN()
	}
	multiple := dp * n
	if rem := len(bins) % multiple; rem != 0 {
		toMove := multiple - rem
		for i := len(bins) - 1; toMove > 0; {
			if i < 0 {
				return nil, fmt.Errorf("static: %w (%d bins, multiple %d = dp %d × N %d, %d sequences)",
					ErrNotEnoughToPad, packed, multiple, dp, n, len(lengths))
			}
			work++
			if len(bins[i]) > 1 {
				last := bins[i][len(bins[i])-1]
				bins[i] = bins[i][:len(bins[i])-1]
				bins = append(bins, []int{last})
				toMove--
			} else {
				i--
			}
		}
	}

	plan := &sched.Plan{Policy: Name, PoolRanks: g, WorkUnits: work,
		StallWork:   sched.StallWork{SequenceVisits: work},
		Diagnostics: Diagnostics{Degree: cp, DP: dp, Bins: packed, Padded: len(bins), Multiple: multiple}}
	for i := 0; i < len(bins)/dp; i++ {
		mb := sched.Microbatch{Groups: make([]sched.Group, dp)}
		for j := range dp {
			mb.Groups[j] = sched.Group{FirstRank: j * cp, Size: cp, Seqs: bins[i*dp+j]}
		}
		plan.Microbatches = append(plan.Microbatches, mb)
	}
	return plan, nil
}
