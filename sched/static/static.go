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
// With the microbatches option it packs first-fit decreasing into that many
// microbatches per replica instead (ByteScale §8.3's MegaScale baseline:
// "the number of micro-batches is set as 8").
//
// WorkUnits counts the sequences visited while packing plus the moves made while
// padding; StallWork prices them all as sequence visits of a Python loop.
package static

import (
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/radix"
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
	// Microbatches, when positive, packs every DP replica's share into this
	// many microbatches ("the number of micro-batches is set as 8",
	// ByteScale §8.3, of MegaScale's static baseline): first-fit decreasing
	// into Microbatches·dp bins of cp·B tokens, a bin more for each sequence
	// that fits none, the count padded as dp_balanced pads it. 0 keeps
	// Megatron's dp_balanced next-fit in the batch's order.
	Microbatches int `toml:"microbatches"`
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
	if o.Microbatches < 0 || o.Microbatches > MaxMicrobatches {
		return nil, fmt.Errorf("microbatches = %d: must be in [0, %d] (0 = dp_balanced's count)", o.Microbatches, MaxMicrobatches)
	}
	if o.Microbatches > 0 && o.MaxSeqs > 0 {
		return nil, fmt.Errorf("microbatches = %d with max_seqs = %d: max_seqs caps dp_balanced's bins, which microbatches replaces; set one", o.Microbatches, o.MaxSeqs)
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

// Packing is Pack's result.
type Packing struct {
	// Bins are the sequence ids of each bin, in order; Packed is their count
	// before the padding.
	Bins   [][]int
	Packed int
	// Visits counts the sequences visited (one each, and one per step of the
	// padding's walk back over the bins): the plan's work.
	Visits int64
	// Padded says the bin count reached a multiple of multiple; when the
	// sequences ran out first (every bin one sequence) it did not, and Bins
	// are padded as far as they went.
	Padded bool
	// TooLong is the first sequence longer than the capacity (-1: none);
	// the other fields are then incomplete.
	TooLong int
}

// Pack is Megatron's dp_balanced packing of the sequences ids (indexes into
// lengths; nil: every sequence), in their order: next-fit into bins of capacity tokens (at most
// maxSeqs sequences each; 0: any), then the bin count padded to a multiple of
// multiple by moving the last sequence of the last bins holding more than one
// into bins of their own (Megatron asserts when it cannot). No ids give no
// bins.
func Pack(lengths, ids []int, capacity int64, maxSeqs, multiple int) Packing {
	pk := Packing{TooLong: -1}
	count := len(ids)
	if ids == nil {
		count = len(lengths)
	}
	if count == 0 {
		pk.Padded = true
		return pk
	}
	var cur []int
	var sum int64
	for i := range count {
		id := i
		if ids != nil {
			id = ids[i]
		}
		s := lengths[id]
		pk.Visits++
		if int64(s) > capacity {
			pk.TooLong = id
			return pk
		}
		if len(cur) > 0 && sum+int64(s) <= capacity && (maxSeqs == 0 || len(cur) < maxSeqs) {
			cur = append(cur, id)
			sum += int64(s)
			continue
		}
		if len(cur) > 0 {
			pk.Bins = append(pk.Bins, cur)
		}
		cur, sum = []int{id}, int64(s)
	}
	pk.Bins = append(pk.Bins, cur)
	pk.Packed = len(pk.Bins)
	pk.Padded = padBins(&pk, multiple)
	return pk
}

// padBins pads pk's bin count to a multiple of multiple by moving the last
// sequence of the last bins holding more than one into bins of their own,
// and reports whether it got there (false: every bin holds one sequence).
func padBins(pk *Packing, multiple int) bool {
	rem := len(pk.Bins) % multiple
	if rem == 0 {
		return true
	}
	toMove := multiple - rem
	for i := len(pk.Bins) - 1; toMove > 0; {
		if i < 0 {
			return false
		}
		pk.Visits++
		if len(pk.Bins[i]) > 1 {
			last := pk.Bins[i][len(pk.Bins[i])-1]
			pk.Bins[i] = pk.Bins[i][:len(pk.Bins[i])-1]
			pk.Bins = append(pk.Bins, []int{last})
			toMove--
		} else {
			i--
		}
	}
	return true
}

// MaxMicrobatches bounds Options.Microbatches.
const MaxMicrobatches = 1 << 16

// PackFirstFit packs the sequences into at least bins bins of capacity
// tokens, first-fit decreasing: the longest first (ties by id), each into
// the first bin with room, a new bin when none has; then the count padded to
// a multiple of multiple as Pack pads. Visits counts the bins looked at.
func PackFirstFit(lengths []int, capacity int64, bins, multiple int) Packing {
	pk := Packing{TooLong: -1}
	pk.Bins = make([][]int, bins)
	sums := make([]int64, bins)
	for _, i := range radix.LongestFirst(lengths) {
		id := int(i)
		s := int64(lengths[id])
		if s > capacity {
			pk.TooLong = id
			return pk
		}
		placed := false
		for b := range pk.Bins {
			pk.Visits++
			if sums[b]+s <= capacity {
				pk.Bins[b] = append(pk.Bins[b], id)
				sums[b] += s
				placed = true
				break
			}
		}
		if !placed {
			pk.Bins = append(pk.Bins, []int{id})
			sums = append(sums, s)
		}
	}
	pk.Bins = slices.DeleteFunc(pk.Bins, func(b []int) bool { return len(b) == 0 })
	pk.Packed = len(pk.Bins)
	pk.Padded = padBins(&pk, multiple)
	return pk
}

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
	n := 1
	if in.VPP > 1 {
		n = in.GroupSizeN()
	}
	multiple := dp * n
	var pk Packing
	if p.opts.Microbatches > 0 {
		pk = PackFirstFit(lengths, capacity, p.opts.Microbatches*dp, multiple)
	} else {
		pk = Pack(lengths, nil, capacity, p.opts.MaxSeqs, multiple)
	}
	work := pk.Visits
	if id := pk.TooLong; id >= 0 {
		s := lengths[id]
		why := fmt.Sprintf("a static CP group (cp·B = %d·%d)", cp, in.BudgetTokens)
		if p.opts.Degree == 0 && in.ContextTokens > 0 && s > in.ContextTokens {
			// The degree came from a context shorter than the sequence: blame it.
			why = sched.ContextTooShortWhy(in.ContextTokens, "a static CP group", cp, in.BudgetTokens)
		}
		return nil, &sched.ErrSequenceTooLong{Seq: id, Tokens: s, MaxTokens: int(capacity), Why: why}
	}
	if !pk.Padded {
		return nil, fmt.Errorf("static: %w (%d bins, multiple %d = dp %d × N %d, %d sequences)",
			ErrNotEnoughToPad, pk.Packed, multiple, dp, n, len(lengths))
	}
	bins, packed := pk.Bins, pk.Packed

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
