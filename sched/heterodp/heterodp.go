package heterodp

import (
	"cmp"
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/static"
)

// Name is the registry name of the policy.
const Name = "hetero-dp"

// Options are the policy's scenario options ([run.options.hetero-dp]).
type Options struct {
	// Proportional splits the batch across kinds by their speed (each kind's
	// planning model); false weights every kind as the first, an equal split
	// per rank (the ablation of the speed weighting).
	Proportional bool `toml:"proportional"`
	// Layout forces the plan on several kinds: "per-kind" (static CP inside
	// each kind) or "pool" (static CP over the whole pool); "" chooses the
	// faster in the planning model, per-kind when only it plans.
	Layout string `toml:"layout"`
}

// DefaultOptions split by speed and choose the plan.
func DefaultOptions() Options { return Options{Proportional: true} }

// Policy is heterogeneity-aware data parallelism with static CP per kind.
type Policy struct{ opts Options }

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// New builds the policy from its options.
func New(o Options) (*Policy, error) {
	switch o.Layout {
	case "", LayoutPerKind, LayoutPool:
		return &Policy{opts: o}, nil
	}
	return nil, fmt.Errorf("layout = %q: must be \"\" (choose), %q or %q", o.Layout, LayoutPerKind, LayoutPool)
}

// Name returns "hetero-dp".
func (*Policy) Name() string { return Name }

// Promises: every rank within its own kind's budget. Groups are aligned to
// their kind's first rank, not always to rank 0 (see the package doc), and
// a kind that runs out of microbatches leaves its ranks out of the rest.
func (*Policy) Promises() sched.Promises { return sched.Promises{WithinBudget: true} }

// kind is one GPU kind's replicas and what the split gave them.
type kind struct {
	name                 string
	first, ranks, budget int
	// attn and lin are L·a_k and L·l_k, seconds per token² and per token
	// of the stage (0 without a cluster).
	attn, lin        float64
	degree, replicas int
	capped           bool
	seqs             int
	tokens           int64
	finish           float64 // Σ t_k(s)/replicas, seconds
	bins             [][]int
	packed, multiple int
}

// capacity is the most tokens one of the kind's groups holds: d_k·B_k.
func (k *kind) capacity() int64 { return int64(k.degree) * int64(k.budget) }

// seconds is t_k(s)/n_k: what a sequence of s tokens adds to the kind's
// projected finish.
func (k *kind) seconds(s int) float64 {
	x := float64(s)
	return (k.attn*x*x + k.lin*x) / float64(k.degree) / float64(k.replicas)
}

// Plan splits the batch across kinds and packs each kind as static CP does,
// or, on several kinds, plans static CP over the whole pool when that is
// the only plan or the faster one in the planning model (see the package
// doc).
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.CheckKinds(lengths); err != nil {
		return nil, fmt.Errorf("hetero-dp: %w", err)
	}
	context := in.ContextTokens
	if context == 0 {
		context = slices.Max(lengths)
	}
	kinds, err := p.kinds(in, context)
	if err != nil {
		return nil, err
	}
	if len(kinds) == 1 {
		c := &candidate{lengths: lengths, kinds: kinds, owner: make([]int, len(lengths))}
		for _, s := range lengths {
			kinds[0].seqs++
			kinds[0].tokens += int64(s)
			kinds[0].finish += kinds[0].seconds(s)
		}
		if err := c.pack(in, true); err != nil {
			return nil, err
		}
		d := c.diagnostics(p.opts.Proportional)
		d.Layout = LayoutPerKind
		return c.plan(in, c.work, c.work.SequenceVisits, d), nil
	}
	var local, pool *candidate
	localErr, poolErr := errNotTried, errNotTried
	if p.opts.Layout != LayoutPool {
		local, localErr = p.perKind(lengths, in, kinds)
	}
	if p.opts.Layout != LayoutPerKind {
		pool, poolErr = p.overPool(lengths, in, context)
	}
	var work int64
	for _, c := range []*candidate{local, pool} {
		if c != nil {
			c.evaluate(in)
			work += c.work.SequenceVisits + c.work.PoolVisits + c.work.SortSteps + c.evaluations
		}
	}
	chosen, layout := local, LayoutPerKind
	switch {
	case local == nil && pool == nil:
		if p.opts.Layout == LayoutPool {
			return nil, poolErr
		}
		return nil, localErr
	case local == nil || pool != nil && pool.seconds < local.seconds:
		chosen, layout = pool, LayoutPool
	}
	d := chosen.diagnostics(p.opts.Proportional)
	d.Layout, d.Forced = layout, p.opts.Layout != ""
	if local != nil {
		d.PerKindSeconds = local.seconds
	} else {
		d.PerKindRefused = localErr.Error()
	}
	if pool != nil {
		d.PoolSeconds = pool.seconds
	} else {
		d.PoolRefused = poolErr.Error()
	}
	// A job runs one of the two plans (the choice is per job shape, as
	// usp's factorization): only the chosen one's loop stalls it.
	return chosen.plan(in, chosen.work, work, d), nil
}

// errNotTried is the refusal of a plan Options.Layout rules out.
var errNotTried = errors.New("not tried (options.layout)")

// candidate is one plan in the making: its kinds (one, "pool", for static
// CP over the whole pool), which kind each sequence went to, the work of a
// Python loop making it, and its modelled seconds.
type candidate struct {
	lengths     []int
	kinds       []kind
	owner       []int
	work        sched.StallWork
	mbs         int
	seconds     float64
	evaluations int64
}

// perKind is the kind-local plan: the split across kinds, then each kind
// packed as static CP.
func (p *Policy) perKind(lengths []int, in sched.Inputs, kinds []kind) (*candidate, error) {
	c := &candidate{lengths: lengths, kinds: kinds, owner: make([]int, len(lengths))}
	if err := c.split(in); err != nil {
		return nil, err
	}
	if err := c.pack(in, false); err != nil {
		return nil, err
	}
	return c, nil
}

// overPool is static CP over the whole pool, blind to the kinds as
// sched/static is (every rank at the smallest budget), its groups timed at
// the slowest kind's attention and linear seconds.
func (p *Policy) overPool(lengths []int, in sched.Inputs, context int) (*candidate, error) {
	k := kind{name: "pool", ranks: in.PoolRanks, budget: in.BudgetTokens}
	layers := float64(in.Cluster.Layers)
	for _, dk := range in.Cluster.Kinds {
		k.budget = min(k.budget, dk.BudgetTokens) // BudgetTokens is the smallest already
		if !p.opts.Proportional {
			dk = in.Cluster.Kinds[0]
		}
		k.attn, k.lin = max(k.attn, layers*dk.AttentionSecondsPerToken2), max(k.lin, layers*dk.LinearSecondsPerToken)
	}
	need, limit := sched.MemoryDegree(context, k.budget), in.DegreeLimit()
	if need > limit || k.ranks%need != 0 {
		return nil, fmt.Errorf("%w: hetero-dp over the pool: static CP degree %d (cp·B >= context %d at B = %d) must divide the pool G = %d and be <= the engine limit %d",
			sched.ErrInvalidInput, need, context, k.budget, k.ranks, limit)
	}
	k.degree, k.replicas = need, k.ranks/need
	c := &candidate{lengths: lengths, kinds: []kind{k}, owner: make([]int, len(lengths))}
	for _, s := range lengths {
		c.kinds[0].seqs++
		c.kinds[0].tokens += int64(s)
		c.kinds[0].finish += c.kinds[0].seconds(s)
	}
	if err := c.pack(in, true); err != nil {
		return nil, err
	}
	return c, nil
}

// evaluate sets the candidate's modelled seconds as cphp.Pack times a
// packing: the busiest replica's sum over its bins (L·(a·Σs² + l·Σs)/d on
// its kind) plus M·θ and the pipeline bubble (pp−1)/vpp of the slowest bin.
// Compute only: both plans run Ulysses at their degrees, whose all-to-alls
// the choice leaves out.
func (c *candidate) evaluate(in sched.Inputs) {
	var busiest, slowest float64
	for i := range c.kinds {
		k := &c.kinds[i]
		for j := range k.replicas {
			var sum float64
			for b := j; b < len(k.bins); b += k.replicas {
				c.evaluations++
				var s1, s2 float64
				for _, id := range k.bins[b] {
					x := float64(c.lengths[id])
					s1 += x
					s2 += x * x
				}
				t := (k.attn*s2 + k.lin*s1) / float64(k.degree)
				sum += t
				slowest = max(slowest, t)
			}
			busiest = max(busiest, sum)
		}
	}
	bubble := float64(in.PP-1) / float64(max(in.VPP, 1))
	c.seconds = busiest + float64(c.mbs)*in.Cluster.OverheadSeconds + bubble*slowest
}

// plan is the candidate's sched.Plan with its stall work w and work units.
func (c *candidate) plan(in sched.Inputs, w sched.StallWork, workUnits int64, d *Diagnostics) *sched.Plan {
	out := &sched.Plan{Policy: Name, PoolRanks: in.PoolRanks, StallWork: w, WorkUnits: workUnits, Diagnostics: d}
	for m := range c.mbs {
		var mb sched.Microbatch
		for i := range c.kinds {
			k := &c.kinds[i]
			for j := range k.replicas {
				if b := m*k.replicas + j; b < len(k.bins) && len(k.bins[b]) > 0 {
					mb.Groups = append(mb.Groups, sched.Group{FirstRank: k.first + j*k.degree, Size: k.degree, Seqs: k.bins[b]})
				}
			}
		}
		out.Microbatches = append(out.Microbatches, mb)
	}
	return out
}

// kinds returns the pool's kinds in rank order with their degrees and
// replicas (one kind of G ranks and budget B without a cluster). With one
// kind it refuses what static refuses: a degree past the engine's limit or
// not dividing the pool.
func (p *Policy) kinds(in sched.Inputs, context int) ([]kind, error) {
	c := in.Cluster
	var out []kind
	if c == nil {
		out = []kind{{name: "pool", ranks: in.PoolRanks, budget: in.BudgetTokens}}
	} else {
		ref := c.Kinds[0]
		first := 0
		for _, dk := range c.Kinds {
			a, l := dk.AttentionSecondsPerToken2, dk.LinearSecondsPerToken
			if !p.opts.Proportional {
				a, l = ref.AttentionSecondsPerToken2, ref.LinearSecondsPerToken
			}
			layers := float64(c.Layers)
			out = append(out, kind{name: dk.Name, first: first, ranks: dk.Ranks, budget: dk.BudgetTokens, attn: layers * a, lin: layers * l})
			first += dk.Ranks
		}
	}
	limit := in.DegreeLimit()
	for i := range out {
		k := &out[i]
		need := sched.MemoryDegree(context, k.budget)
		if len(out) == 1 {
			if need > limit || k.ranks%need != 0 {
				return nil, fmt.Errorf("%w: hetero-dp: static CP degree %d (cp·B >= context %d at B = %d) must divide the pool G = %d and be <= the engine limit %d",
					sched.ErrInvalidInput, need, in.ContextTokens, k.budget, k.ranks, limit)
			}
			k.degree = need
		} else {
			widest := pow2Floor(min(k.ranks, limit))
			k.degree, k.capped = min(need, widest), need > widest
		}
		k.replicas = k.ranks / k.degree
	}
	return out, nil
}

// pow2Floor is the largest power of two <= n (n >= 1).
func pow2Floor(n int) int { return 1 << (bits.Len(uint(n)) - 1) }

// split assigns every sequence, longest first, to the kind that holds it
// whose projected finish with it is least (see the package doc), and counts
// the work of a Python loop doing so.
func (c *candidate) split(in sched.Inputs) error {
	lengths, kinds, w := c.lengths, c.kinds, &c.work
	order := make([]int, len(lengths))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	w.SortSteps += sortSteps(len(lengths))
	for _, id := range order {
		s := lengths[id]
		w.SequenceVisits++
		best := -1
		var bestFinish float64
		for i := range kinds {
			w.PoolVisits++
			k := &kinds[i]
			if int64(s) > k.capacity() {
				continue
			}
			if f := k.finish + k.seconds(s); best < 0 || f < bestFinish {
				best, bestFinish = i, f
			}
		}
		if best < 0 {
			var widest int64
			for i := range kinds {
				widest = max(widest, kinds[i].capacity())
			}
			why := fmt.Sprintf("the widest static CP group inside one kind (max over its %d kinds of d_k·B_k)", len(kinds))
			if in.ContextTokens > 0 && s > in.ContextTokens {
				why = sched.ContextTooShortWhy(in.ContextTokens, "every kind's static CP group", kinds[0].degree, kinds[0].budget)
			}
			return &sched.ErrSequenceTooLong{Seq: id, Tokens: s, MaxTokens: int(widest), Why: why}
		}
		k := &kinds[best]
		c.owner[id] = best
		k.finish = bestFinish
		k.seqs++
		k.tokens += int64(s)
	}
	return nil
}

// sortSteps is n·⌈log₂ n⌉ (0 for n <= 1), the unit of a longest-first sort.
func sortSteps(n int) int64 {
	if n <= 1 {
		return 0
	}
	return int64(n) * int64(bits.Len(uint(n-1)))
}

// pack is static CP's dp_balanced packing (static.Pack) of every kind's
// sequences (owner says whose), each kind's in the batch's order: next-fit
// into bins of d_k·B_k tokens, then the kind's bin count padded to a multiple
// of its replicas times N (vpp > 1, else 1). Strict (one kind, or static over
// the pool), a batch too small to pad is refused as static refuses it; else
// the kind pads as far as its sequences go, and the plan's microbatch count
// must then still be legal for the schedule.
func (c *candidate) pack(in sched.Inputs, strict bool) error {
	lengths, kinds := c.lengths, c.kinds
	n := 1
	if in.VPP > 1 {
		n = in.GroupSizeN()
	}
	ids := make([][]int, len(kinds))
	for ki := range ids {
		ids[ki] = []int{} // not nil: nil would mean every sequence to static.Pack
	}
	for id := range lengths {
		ids[c.owner[id]] = append(ids[c.owner[id]], id)
	}
	padded := true
	for ki := range kinds {
		k := &kinds[ki]
		k.multiple = k.replicas * n
		pk := static.Pack(lengths, ids[ki], k.capacity(), 0, k.multiple)
		c.work.SequenceVisits += pk.Visits
		if id := pk.TooLong; id >= 0 {
			s := lengths[id]
			why := fmt.Sprintf("a static CP group (cp·B = %d·%d)", k.degree, k.budget)
			if in.ContextTokens > 0 && s > in.ContextTokens {
				why = sched.ContextTooShortWhy(in.ContextTokens, "a static CP group", k.degree, k.budget)
			}
			return &sched.ErrSequenceTooLong{Seq: id, Tokens: s, MaxTokens: int(k.capacity()), Why: why}
		}
		k.bins, k.packed = pk.Bins, pk.Packed
		if !pk.Padded {
			if strict {
				return fmt.Errorf("hetero-dp: %w (%d bins, multiple %d = dp %d × N %d, %d sequences)",
					static.ErrNotEnoughToPad, k.packed, k.multiple, k.replicas, n, len(lengths))
			}
			padded = false
		}
	}
	for i := range kinds {
		c.mbs = max(c.mbs, sched.CeilDiv(len(kinds[i].bins), kinds[i].replicas))
	}
	if !padded && in.VPP > 1 {
		if err := sched.CheckMicrobatchCount(in.PP, in.VPP, c.mbs, in.GroupSizeN()); err != nil {
			return fmt.Errorf("hetero-dp: %d microbatches (the kinds' most), a kind too small to pad: %v (%w)", c.mbs, err, sched.ErrCannotPlan)
		}
	}
	return nil
}
