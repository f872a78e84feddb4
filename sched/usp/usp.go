// Package usp is the equal-share CP × HP baseline of HexiSeq's evaluation
// (Liang et al., arXiv 2605.07569, "state-of-the-art CP and HP
// baselines"): USP's unified sequence parallelism (Fang and Zhao, arXiv
// 2405.07719), Ulysses (head parallelism) inside groups of u ranks and ring
// attention across them, with every device treated as equal. Plain ring
// (u = 1) and plain Ulysses (u = P) are its corner cases.
//
// # The plan
//
// The pool splits into G/P data-parallel replicas of P consecutive ranks;
// each replica runs its sequences with a CP × HP layout (sched.Layout) of
// HP groups of u ranks in which every rank holds an equal share of the
// tokens (the first Σ s mod P ranks one more) and H/u of the H query heads.
// Every rank is held to the smallest kind's budget B (Inputs.BudgetTokens):
// a group holds at most P·B tokens.
//
// The factorization (P, u) is chosen per batch as the best one: every P that
// is a power of two dividing G (and G itself), every power of two u dividing
// P and H, is packed (cphp.Pack: longest first into the replica that would
// finish earliest, its least-loaded bin with room) and timed with the
// planning model (cphp) of the cluster as USP sees it (Equal): every device
// of its slowest kind, whose pace equal shares run at, with the slowest
// links and the smallest budget. So the baseline is the best equal-share
// factorization for the cluster, not one picked blind, and its packing
// gives every replica the same work. Options force P or u.
//
// WorkUnits counts the packings' visits over every factorization tried;
// StallWork counts only the chosen packing's sequence visits (the
// factorization is fixed for a job shape: a USP job runs one).
package usp

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/cphp"
)

// Name is the registry name of the policy.
const Name = "usp"

// Options are the policy's scenario options ([run.options.usp]).
type Options struct {
	// Degree forces the group size P (a power of two dividing G, or G); 0
	// chooses the best.
	Degree int `toml:"degree"`
	// Ulysses forces the HP (Ulysses) group size u (a power of two dividing
	// P and the heads); 0 chooses the best. 1 is plain ring attention, u = P
	// plain Ulysses.
	Ulysses int `toml:"ulysses"`
}

// DefaultOptions choose the factorization per batch.
func DefaultOptions() Options { return Options{} }

// Policy is USP with equal shares.
type Policy struct{ opts Options }

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// New builds the policy from its options.
func New(o Options) (*Policy, error) {
	if err := cphp.CheckForced(o.Degree, o.Ulysses); err != nil {
		return nil, err
	}
	return &Policy{opts: o}, nil
}

// Name returns "usp".
func (*Policy) Name() string { return Name }

// Promises: every rank within the (smallest kind's) budget.
func (*Policy) Promises() sched.Promises { return sched.Promises{WithinBudget: true} }

// Plan chooses the factorization and packs the batch.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.Check(lengths); err != nil {
		return nil, fmt.Errorf("usp: %w", err)
	}
	m := cphp.NewModel(Equal(in))
	heads := m.Heads
	build := func(first, size, u int) *cphp.Template {
		v := cphp.EqualView(first, size, u, heads)
		return &cphp.Template{View: v, Parts: m.Parts(v, 1, 1), Capacity: int64(size) * int64(in.BudgetTokens)}
	}
	c, err := cphp.Search(m, lengths, in, p.opts.Degree, p.opts.Ulysses, build)
	if err != nil {
		return nil, fmt.Errorf("usp: %w", err)
	}
	mbs, err := cphp.Microbatches(c.Packing, c.Replicas, lengths, in, func(_ int, _ []int, tokens int64, _ float64) *sched.Layout {
		return cphp.EqualLayout(c.P, c.U, tokens, heads)
	})
	if err != nil {
		return nil, fmt.Errorf("usp: %w", err)
	}
	d := &Diagnostics{Factorization: c.Factorization(in.PoolRanks)}
	return &sched.Plan{
		Policy: Name, PoolRanks: in.PoolRanks, Microbatches: mbs,
		WorkUnits: c.Visits, StallWork: sched.StallWork{SequenceVisits: int64(len(lengths))},
		Diagnostics: d,
	}, nil
}

// Equal returns in with every rank of its cluster's slowest kind (the
// largest attention time per token², then linear time per token; ties the
// earlier kind) and the smallest budget: the cluster as USP sees it, every
// device alike. Equal shares run at the slowest rank's pace, so its kind is
// the one an equal-share planner must plan for. Without a cluster, in.
func Equal(in sched.Inputs) sched.Inputs {
	c := in.Cluster
	if c == nil {
		return in
	}
	slow := c.Kinds[0]
	for _, k := range c.Kinds[1:] {
		if k.AttentionSecondsPerToken2 > slow.AttentionSecondsPerToken2 ||
			k.AttentionSecondsPerToken2 == slow.AttentionSecondsPerToken2 && k.LinearSecondsPerToken > slow.LinearSecondsPerToken {
			slow = k
		}
	}
	for _, k := range c.Kinds {
		slow.NVLinkBytesPerSecond = min(slow.NVLinkBytesPerSecond, k.NVLinkBytesPerSecond)
		slow.NICBytesPerSecond = min(slow.NICBytesPerSecond, k.NICBytesPerSecond)
		slow.RingNICBytesPerSecond = min(slow.RingNICBytesPerSecond, k.RingNICBytesPerSecond)
		slow.IntraLatencySeconds = max(slow.IntraLatencySeconds, k.IntraLatencySeconds)
		slow.InterLatencySeconds = max(slow.InterLatencySeconds, k.InterLatencySeconds)
	}
	slow.Ranks, slow.BudgetTokens = in.PoolRanks, in.BudgetTokens
	eq := *c
	eq.Kinds = []sched.DeviceKind{slow}
	in.Cluster = &eq
	return in
}

// Diagnostics explain a USP plan: the factorization chosen.
type Diagnostics struct {
	cphp.Factorization
}
