package hydra

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// Registry names of the two policies.
const (
	// Name is the heap-accelerated planner (spec §6).
	Name = "hydra"
	// ScanName is the linear-scan reference (spec §5); it makes the same plans.
	ScanName = "hydra-scan"
)

// Options are the scenario options of both policies.
type Options struct {
	// Cap forces C* to this power of two (for cap sweeps); 0 chooses the
	// closed-form C*. A forced cap must lie in [C_mem, engine limit] of each batch.
	Cap int `toml:"cap"`
}

// Policy is HyDra's load-driven DCP planner: closed-form targets (spec §1-4) and
// piggyback packing (spec §5), by heaps or by linear scans.
type Policy struct {
	name string
	opts Options
}

var (
	_ sched.Policy      = (*Policy)(nil)
	_ sched.Promiser    = (*Policy)(nil)
	_ sched.PlanBounder = (*Policy)(nil)
)

// DefaultOptions are the options of a scenario that gives none: the closed-form
// cap.
func DefaultOptions() Options { return Options{} }

// New builds the heap-accelerated policy "hydra".
func New(o Options) (*Policy, error) { return newPolicy(Name, o) }

// NewScan builds the linear-scan reference "hydra-scan".
func NewScan(o Options) (*Policy, error) { return newPolicy(ScanName, o) }

func newPolicy(name string, o Options) (*Policy, error) {
	if o.Cap != 0 && (!sched.IsPow2(o.Cap) || o.Cap > sched.MaxPoolRanks) {
		return nil, fmt.Errorf("cap = %d: must be 0 (closed-form C*) or a power of two in [1, %d]", o.Cap, sched.MaxPoolRanks)
	}
	return &Policy{name: name, opts: o}, nil
}

// Name returns "hydra" or "hydra-scan".
func (p *Policy) Name() string { return p.name }

// Promises: groups are power-of-two aligned blocks and every rank stays within B.
// Full coverage of the pool is not promised: backfill stops at C* and cannot
// always fill a free block (two size-1 groups on ranks 2 and 3 leave ranks 0-1 of
// a 4-rank pool idle: neither has a free buddy).
func (p *Policy) Promises() sched.Promises {
	return sched.Promises{Aligned: true, WithinBudget: true}
}

// PlanBounds bounds any plan of the batch from below, whatever its cap C (a
// power of two >= C_mem): every rank of an MB stays within Λ = s_max²/C, so
// M >= MicrobatchTarget at C_mem; its MBs span all G ranks and its sync
// domains lie inside aligned blocks of lcm(C, ep) <= C·ep ranks, so the
// iteration has at least ⌈S2/(s_max²·ep)⌉ domains. No bound (0, 0) when
// C_mem exceeds the engine's degree limit (Plan then names that limit).
func (p *Policy) PlanBounds(lengths []int, in sched.Inputs) (microbatches, domains int64, why string) {
	if len(lengths) == 0 || in.PoolRanks <= 0 || in.BudgetTokens <= 0 {
		return 0, 0, ""
	}
	sums := BatchSums(lengths)
	memCap := MemoryCap(sums.MaxTokens, in.BudgetTokens)
	if memCap > pow2Floor(in.DegreeLimit()) {
		return 0, 0, ""
	}
	if m, _ := MicrobatchTarget(sums, in.PoolRanks, in.BudgetTokens, memCap); m > 0 {
		microbatches = int64(m)
		why = fmt.Sprintf("HyDra's M(C_mem = %d) = %d", memCap, m)
	}
	den := new(big.Int).SetInt64(int64(sums.MaxTokens))
	den.Mul(den, den).Mul(den, big.NewInt(int64(in.EPSize())))
	q, r := new(big.Int).QuoRem(sums.SquaredTokens, den, new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(1))
	}
	domains = math.MaxInt64
	if q.IsInt64() {
		domains = q.Int64()
	}
	return microbatches, domains, why
}

// Plan solves the closed form, packs the batch and, with VPP, aligns the MB
// count to one the interleaved schedule accepts (AlignVPP).
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		var tooLong *sched.ErrSequenceTooLong
		if errors.As(err, &tooLong) && in.DegreeLimit() < in.PoolRanks {
			sMax := 0
			for _, s := range lengths {
				sMax = max(sMax, s)
			}
			return nil, fmt.Errorf("%w: s_max = %d tokens at B = %d needs C_mem = %d ranks, but groups may have at most %d (max_degree = %d): %w",
				ErrEngineLimit, sMax, in.BudgetTokens, MemoryCap(sMax, in.BudgetTokens), pow2Floor(in.DegreeLimit()), in.MaxDegree, err)
		}
		return nil, fmt.Errorf("hydra: %w", err)
	}
	sums := BatchSums(lengths)
	t, err := Solve(sums, in, p.opts.Cap)
	if err != nil {
		return nil, err
	}
	d := &Diagnostics{Targets: t}
	var b *PlanBuilder
	if p.name == ScanName {
		var ok bool
		b, d.ScanSteps, ok = packScanLimited(lengths, in.PoolRanks, t, ScanStepLimit)
		if !ok {
			return nil, fmt.Errorf("%w: it made more than %d steps (sequences, groups and ranks visited) on this batch of %d sequences on %d ranks and stopped; its work grows as sequences × ranks × microbatches: plan it with hydra (the same plans, heap-based)",
				ErrScanTooLarge, ScanStepLimit, len(lengths), in.PoolRanks)
		}
	} else {
		b, d.HeapOps, d.SequenceVisits = packHeap(lengths, in.PoolRanks, t)
	}
	mbs, splits, steps, err := AlignVPP(b.Microbatches(), lengths, in, t)
	if err != nil {
		return nil, err
	}
	d.VPPSplits, d.AlignSteps = splits, steps
	d.RealizedMicrobatches = len(mbs)
	stall := sched.StallWork{HeapOps: d.HeapOps, SequenceVisits: d.SequenceVisits + d.AlignSteps,
		PoolVisits: d.ScanSteps}
	PlanBuildWork(&stall, len(lengths), in.PoolRanks, mbs)
	return &sched.Plan{
		Policy:       p.name,
		PoolRanks:    in.PoolRanks,
		Microbatches: mbs,
		WorkUnits:    d.HeapOps + d.SequenceVisits + d.ScanSteps + d.AlignSteps,
		StallWork:    stall,
		Diagnostics:  d,
	}, nil
}

// Diagnostics explain a HyDra plan: the closed form (Targets), the realized MB
// count and the planner's work. Why each MB closed is in sched.Microbatch.Closed.
type Diagnostics struct {
	Targets
	// RealizedMicrobatches is the MB count of the plan (every stage uses it),
	// after VPP alignment.
	RealizedMicrobatches int `json:"realized_microbatches"`
	// VPPSplits counts the MBs that VPP alignment added (each split makes one MB
	// two) to reach a count legal for the interleaved schedule; the packed count is
	// RealizedMicrobatches − VPPSplits. Their halves' Closed starts "vpp split".
	VPPSplits int `json:"vpp_splits,omitempty"`
	// AlignSteps counts the MBs, groups, sequences and ranks VPP alignment visited
	// (both policies; included in the plan's WorkUnits).
	AlignSteps int64 `json:"align_steps,omitempty"`
	// HeapOps counts heap pushes, pops and fixes ("hydra" only).
	HeapOps int64 `json:"heap_ops"`
	// SequenceVisits counts sequences read by the placement loop, skip-search
	// probes included ("hydra" only).
	SequenceVisits int64 `json:"sequence_visits"`
	// ScanSteps counts the sequences, groups and ranks the linear reference
	// visited ("hydra-scan" only).
	ScanSteps int64 `json:"scan_steps,omitempty"`
}

// ChosenOption returns the closed form's C* for the option "cap"
// (sched.OptionChooser): what HyDra picks when the cap is not forced.
func (d *Diagnostics) ChosenOption(key string) (float64, bool) {
	if key == "cap" {
		return float64(d.ClosedFormCap), true
	}
	return 0, false
}

// LoadTargetTokens2 returns Λ* (sched.LoadTargeter).
func (d *Diagnostics) LoadTargetTokens2() float64 { return d.LoadTarget }

// Summary lists the diagnostics in a fixed order.
func (d *Diagnostics) Summary() []sched.KV {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	kv := []sched.KV{
		{Name: "θ/c (tokens²)", Value: g(d.OverheadRatio)},
		{Name: "b (MB-times)", Value: g(d.Bubble)},
		{Name: "C_mem", Value: strconv.Itoa(d.MemoryCap)},
		{Name: "engine limit", Value: strconv.Itoa(d.EngineLimit)},
		{Name: "continuous C*", Value: g(float64(d.ContinuousCap))},
		{Name: "C*", Value: CapText(d.Targets)},
		{Name: "Λ* (tokens²)", Value: g(d.LoadTarget)},
		{Name: "M*", Value: strconv.Itoa(d.Microbatches)},
		{Name: "realized M", Value: strconv.Itoa(d.RealizedMicrobatches)},
		{Name: "regime", Value: d.Regime},
		{Name: "heap ops", Value: strconv.FormatInt(d.HeapOps, 10)},
		{Name: "sequence visits", Value: strconv.FormatInt(d.SequenceVisits, 10)},
	}
	if d.ScanSteps > 0 {
		kv = append(kv, sched.KV{Name: "scan steps", Value: strconv.FormatInt(d.ScanSteps, 10)})
	}
	if d.VPPSplits > 0 {
		kv = append(kv,
			sched.KV{Name: "vpp splits", Value: fmt.Sprintf("%d (packed M %d)", d.VPPSplits, d.RealizedMicrobatches-d.VPPSplits)},
			sched.KV{Name: "align steps", Value: strconv.FormatInt(d.AlignSteps, 10)})
	}
	return kv
}

// CapText formats C* with how it was chosen: "256", "256 (forced)" or
// "256 (of 128, 256)" (the two powers of two evaluated).
func CapText(t Targets) string {
	switch {
	case t.ForcedCap:
		return strconv.Itoa(t.Cap) + " (forced)"
	case t.LowerCap == t.UpperCap:
		return strconv.Itoa(t.Cap)
	}
	return fmt.Sprintf("%d (of %d, %d)", t.Cap, t.LowerCap, t.UpperCap)
}
