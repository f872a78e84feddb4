package hydrahetero

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/hydra"
	"github.com/dcpsim/dcpsim/sched/internal/buddy"
	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
)

// Name is the registry name of HyDra on mixed GPU kinds.
const Name = "hydra-hetero"

// Options are hydra-hetero's scenario options.
type Options struct {
	// Cap forces C* (a power of two), as Options.Cap; 0 chooses it.
	Cap int `toml:"cap"`
	// Linear counts each rank's linear work (GEMMs and memory-bound ops, per
	// token on its kind) in its load beside core attention; false measures
	// attention alone, in seconds on each rank's kind.
	Linear bool `toml:"linear"`
}

// DefaultOptions count the linear work and choose C*.
func DefaultOptions() Options { return Options{Linear: true} }

// Policy is hydra-hetero (see the package doc, "hydra-hetero").
type Policy struct{ opts Options }

var (
	_ sched.Policy   = (*Policy)(nil)
	_ sched.Promiser = (*Policy)(nil)
)

// New builds hydra-hetero.
func New(o Options) (*Policy, error) {
	if o.Cap != 0 && (!sched.IsPow2(o.Cap) || o.Cap > sched.MaxPoolRanks) {
		return nil, fmt.Errorf("cap = %d: must be 0 (closed-form C*) or a power of two in [1, %d]", o.Cap, sched.MaxPoolRanks)
	}
	return &Policy{opts: o}, nil
}

// Name returns "hydra-hetero".
func (*Policy) Name() string { return Name }

// Promises: aligned power-of-two groups, every rank within its kind's budget.
func (*Policy) Promises() sched.Promises {
	return sched.Promises{Aligned: true, WithinBudget: true}
}

// Kind is one GPU kind as hydra-hetero measures its load: a sequence
// of s tokens on a group of k ranks of this kind loads each rank with
// (Attention·s² + Linear·s)/k, in units of the reference kind's attention
// seconds per token² (so the reference kind's attention weight is 1).
type Kind struct {
	// Name is the kind's profile name.
	Name string `json:"name"`
	// First and Ranks are the kind's ranks [First, First+Ranks).
	First int `json:"first"`
	Ranks int `json:"ranks"`
	// BudgetTokens is the kind's per-rank token budget (its memory).
	BudgetTokens int `json:"budget_tokens"`
	// ParityTokens is the most tokens a rank of this kind holds in a group
	// of several sequences: its budget, or fewer on a kind whose linear work
	// at full budget would take longer than the quickest kind's at its own
	// (min_k Linear_k·B_k / Linear); a group of one sequence is held only to
	// the budget.
	ParityTokens int `json:"parity_tokens"`
	// Attention is a_k/a_ref and Linear is l_k/a_ref (tokens).
	Attention float64 `json:"attention_weight"`
	Linear    float64 `json:"linear_tokens"`
}

// load is L_k(S2, S1) = Attention·S2 + Linear·S1.
func (k *Kind) load(squares, tokens float64) float64 {
	return k.Attention*squares + k.Linear*tokens
}

// Targets are hydra-hetero's closed form: hydra.Targets with the loads in
// units of the reference kind's attention seconds per token² (LoadTarget is
// Λ*, OverheadRatio θ, both in those units), and the kinds.
type Targets struct {
	hydra.Targets
	// Reference is the kind Λ* is measured on: the slowest kind of the block
	// of C* ranks where the longest sequence runs quickest.
	Reference string `json:"reference"`
	// Kinds are the pool's kinds in rank order.
	Kinds []Kind `json:"kinds"`
}

// rawKinds returns the pool's kinds with their load weights in seconds
// (Attention a_k per token², Linear l_k per token, per layer; Linear 0
// without the linear term), their parity tokens, and θ in seconds (θ/c of
// the first kind times its a); without a Cluster, one unit kind of
// attention weight 1, and θ = θ/c.
func rawKinds(in sched.Inputs, linear bool) ([]Kind, float64) {
	c := in.Cluster
	if c == nil {
		return []Kind{{Name: "unit", Ranks: in.PoolRanks, BudgetTokens: in.BudgetTokens, ParityTokens: in.BudgetTokens, Attention: 1}}, in.OverheadRatio
	}
	out := make([]Kind, len(c.Kinds))
	first := 0
	for i, k := range c.Kinds {
		out[i] = Kind{Name: k.Name, First: first, Ranks: k.Ranks, BudgetTokens: k.BudgetTokens, Attention: k.AttentionSecondsPerToken2}
		if linear {
			out[i].Linear = k.LinearSecondsPerToken
		}
		first += k.Ranks
	}
	// Token parity: no kind's full ranks slower than the quickest kind's.
	parity := math.Inf(1)
	for _, k := range out {
		if k.Linear > 0 {
			parity = min(parity, k.Linear*float64(k.BudgetTokens))
		}
	}
	for i := range out {
		k := &out[i]
		k.ParityTokens = k.BudgetTokens
		if k.Linear > 0 && !math.IsInf(parity, 0) {
			k.ParityTokens = max(1, min(k.BudgetTokens, int(parity/k.Linear)))
		}
	}
	return out, in.OverheadRatio * c.Kinds[0].AttentionSecondsPerToken2
}

// normalize expresses the kinds' weights and θ in units of kind ref's
// attention weight (which becomes exactly 1).
func normalize(kinds []Kind, ref int, theta float64) ([]Kind, float64) {
	a := kinds[ref].Attention
	out := slices.Clone(kinds)
	for i := range out {
		out[i].Attention /= a
		out[i].Linear /= a
	}
	out[ref].Attention = 1
	return out, theta / a
}

// kindSpan returns the first and last kind a block [first, first+k) spans.
func kindSpan(kinds []Kind, first, k int) (lo, hi int) {
	at := func(r int) int {
		for i := len(kinds) - 1; i > 0; i-- {
			if r >= kinds[i].First {
				return i
			}
		}
		return 0
	}
	return at(first), at(first + k - 1)
}

// bestBlock returns, for groups of c ranks, the least load per rank the
// longest sequence (s tokens) can run at: over the aligned blocks of c ranks
// whose every kind's budget holds s/c, the block's slowest kind's load
// L_k(s)/c; and that kind. ok is false when no block holds s.
func bestBlock(kinds []Kind, poolRanks, c, s int) (load float64, ref int, ok bool) {
	sq, sf := float64(s)*float64(s), float64(s)
	for first := 0; first+c <= poolRanks; first += c {
		lo, hi := kindSpan(kinds, first, c)
		worst, slow, fits := -1.0, -1, true
		for i := lo; i <= hi; i++ {
			if int64(s) > int64(c)*int64(kinds[i].BudgetTokens) {
				fits = false
				break
			}
			if l := kinds[i].load(sq, sf); l > worst {
				worst, slow = l, i
			}
		}
		if fits && (!ok || worst < load) {
			load, ref, ok = worst, slow, true
		}
		if lo == hi && first+c < kinds[lo].First+kinds[lo].Ranks {
			// The rest of this kind's blocks are alike: skip to its end.
			first = max(first, (kinds[lo].First+kinds[lo].Ranks)/c*c-c)
		}
	}
	if ok {
		load /= float64(c)
	}
	return load, ref, ok
}

// Solve computes hydra-hetero's closed form (see the package doc). With
// one kind and no linear work it is hydra.Solve's, exactly.
func Solve(lengths []int, in sched.Inputs, linear bool, forcedCap int) (Targets, error) {
	sums := hydra.BatchSums(lengths)
	kinds, theta := rawKinds(in, linear)
	if len(kinds) == 1 && kinds[0].Linear == 0 {
		kinds, theta = normalize(kinds, 0, theta)
		one := in
		one.BudgetTokens, one.OverheadRatio = kinds[0].BudgetTokens, theta
		t, err := hydra.Solve(sums, one, forcedCap)
		return Targets{Targets: t, Reference: kinds[0].Name, Kinds: kinds}, err
	}
	if sums.MaxTokens < 1 || sums.MaxTokens > hydra.MaxSequenceTokens {
		return Targets{}, fmt.Errorf("hydra-hetero: s_max = %d tokens: must be in [1, %d] (%w)", sums.MaxTokens, hydra.MaxSequenceTokens, sched.ErrInvalidInput)
	}
	budget := kinds[0].BudgetTokens
	for _, k := range kinds {
		budget = min(budget, k.BudgetTokens)
	}
	t := hydra.Targets{Bubble: hydra.Bubble(in.PP, in.VPP), MaxTokens: sums.MaxTokens, BudgetTokens: budget, EngineLimit: pow2Floor(in.DegreeLimit())}
	// Λ(C) per power of two C: the longest sequence at its best block of C.
	type capLoad struct {
		c, ref int
		load   float64 // seconds per rank
	}
	var caps []capLoad
	for c := 1; c <= t.EngineLimit; c *= 2 {
		if l, ref, ok := bestBlock(kinds, in.PoolRanks, c, sums.MaxTokens); ok {
			caps = append(caps, capLoad{c, ref, l})
		}
	}
	if len(caps) == 0 {
		return Targets{}, fmt.Errorf("%w (%w): s_max = %d tokens fits no aligned block of at most %d ranks within its kinds' budgets",
			hydra.ErrEngineLimit, sched.ErrInvalidInput, sums.MaxTokens, t.EngineLimit)
	}
	t.MemoryCap = caps[0].c
	s1, s2 := float64(sums.Tokens), sums.SquaredTokensFloat()
	var rate float64 // Σ_k n_k / W_k, seconds⁻¹
	var capacity int64
	for _, k := range kinds {
		rate += float64(k.Ranks) / k.load(s2, s1)
		capacity += int64(k.Ranks) * int64(k.ParityTokens)
	}
	micro := func(load float64) (int, bool) {
		l := int(math.Ceil(1 / (load * rate) * (1 - 1e-12)))
		token := int(ceilDiv(sums.Tokens, capacity))
		return max(l, token, 1), token > l
	}
	best := -1
	var bestT float64
	for i, cl := range caps {
		m, _ := micro(cl.load)
		if tt := (float64(m) + t.Bubble) * (cl.load + theta); best < 0 || tt < bestT {
			best, bestT = i, tt
		}
	}
	chosen := caps[best]
	t.Cap, t.ClosedFormCap = chosen.c, chosen.c
	t.LowerCap, t.UpperCap, t.ContinuousCap = chosen.c, chosen.c, hydra.Real(chosen.c)
	if forcedCap != 0 {
		i := slices.IndexFunc(caps, func(cl capLoad) bool { return cl.c == forcedCap })
		if !sched.IsPow2(forcedCap) || i < 0 {
			return Targets{}, fmt.Errorf("hydra-hetero: cap = %d: must be a power of two in [C_mem = %d, engine limit = %d] at which a block holds s_max (%w)",
				forcedCap, t.MemoryCap, t.EngineLimit, sched.ErrInvalidInput)
		}
		chosen = caps[i]
		t.Cap, t.ForcedCap = forcedCap, true
	}
	kinds, theta = normalize(kinds, chosen.ref, theta)
	t.OverheadRatio = theta
	sm := float64(sums.MaxTokens)
	t.LoadTarget = kinds[chosen.ref].load(sm*sm, sm) / float64(t.Cap)
	m, tokenBound := micro(chosen.load)
	t.Microbatches, t.Regime = m, hydra.LoadBound
	if tokenBound {
		t.Regime = hydra.TokenBound
	}
	return Targets{Targets: t, Reference: kinds[chosen.ref].Name, Kinds: kinds}, nil
}

// MaxPackWork bounds sequences × target microbatches (M*) of one plan: the
// placement reads every sequence left in every microbatch, so its time grows
// with their product (10^6 sequences × 330 microbatches: 22 s; the --batches
// maxima, 10^7 sequences, would take hours). A batch past it is refused
// before packing; at the bound a plan takes about 4 s. The shipped scenarios'
// batches are below 10^5, the G = 8192 benchmark's 4·10^6. Packing itself
// stops at 4 × MaxPackWork sequence reads, should the realized microbatches
// run far past M*.
const MaxPackWork = 1 << 26

// Plan solves the closed form on the kinds, packs the batch by per-rank
// seconds and, with VPP, aligns the MB count as HyDra does.
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.CheckKinds(lengths); err != nil {
		var tooLong *sched.ErrSequenceTooLong
		if errors.As(err, &tooLong) {
			return nil, fmt.Errorf("%w: %w", hydra.ErrEngineLimit, err)
		}
		return nil, fmt.Errorf("hydra-hetero: %w", err)
	}
	ht, err := Solve(lengths, in, p.opts.Linear, p.opts.Cap)
	if err != nil {
		return nil, err
	}
	if work := int64(len(lengths)) * int64(ht.Microbatches); work > MaxPackWork {
		return nil, fmt.Errorf("hydra-hetero: %d sequences × %d target microbatches = %d: more than %d, its bound (%w): its placement reads every sequence left in every microbatch (some 65 ns each), so this batch would plan for about %.0f s; split the batch, or plan it with hydra",
			len(lengths), ht.Microbatches, work, int64(MaxPackWork), sched.ErrInvalidInput, float64(work)*65e-9)
	}
	hp := newHeteroPacker(lengths, in.PoolRanks, ht)
	if err := hp.pack(); err != nil {
		return nil, err
	}
	mbs, splits, steps, err := hydra.AlignVPP(hp.b.Microbatches(), lengths, in, ht.Targets)
	if err != nil {
		return nil, err
	}
	d := &Diagnostics{Targets: ht, RealizedMicrobatches: len(mbs), VPPSplits: splits, AlignSteps: steps,
		HeapOps: hp.heapOps, SequenceVisits: hp.visits, GroupVisits: hp.groupVisits}
	stall := sched.StallWork{HeapOps: hp.heapOps, SequenceVisits: hp.visits + steps, PoolVisits: hp.groupVisits}
	hydra.PlanBuildWork(&stall, len(lengths), in.PoolRanks, mbs)
	return &sched.Plan{
		Policy: Name, PoolRanks: in.PoolRanks, Microbatches: mbs,
		WorkUnits:   hp.heapOps + hp.visits + hp.groupVisits + steps,
		StallWork:   stall,
		Diagnostics: d,
	}, nil
}

// Diagnostics explain a hydra-hetero plan.
type Diagnostics struct {
	Targets
	// RealizedMicrobatches, VPPSplits and AlignSteps are as Diagnostics'.
	RealizedMicrobatches int   `json:"realized_microbatches"`
	VPPSplits            int   `json:"vpp_splits,omitempty"`
	AlignSteps           int64 `json:"align_steps,omitempty"`
	// HeapOps counts the backfill heap's operations, SequenceVisits the
	// sequences the placement loop read, GroupVisits the open groups its
	// piggyback scans read.
	HeapOps        int64 `json:"heap_ops"`
	SequenceVisits int64 `json:"sequence_visits"`
	GroupVisits    int64 `json:"group_visits"`
}

// ChosenOption returns the closed form's C* for "cap" (sched.OptionChooser).
func (d *Diagnostics) ChosenOption(key string) (float64, bool) {
	if key == "cap" {
		return float64(d.ClosedFormCap), true
	}
	return 0, false
}

// Summary lists the diagnostics in a fixed order.
func (d *Diagnostics) Summary() []sched.KV {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	kv := []sched.KV{
		{Name: "reference kind", Value: d.Reference},
		{Name: "θ (ref attention tokens²)", Value: g(d.OverheadRatio)},
		{Name: "b (MB-times)", Value: g(d.Bubble)},
		{Name: "C_mem", Value: strconv.Itoa(d.MemoryCap)},
		{Name: "C*", Value: hydra.CapText(d.Targets.Targets)},
		{Name: "Λ* (ref attention tokens²)", Value: g(d.LoadTarget)},
		{Name: "M*", Value: strconv.Itoa(d.Microbatches)},
		{Name: "realized M", Value: strconv.Itoa(d.RealizedMicrobatches)},
	}
	for _, k := range d.Kinds {
		kv = append(kv, sched.KV{Name: "kind " + k.Name, Value: fmt.Sprintf("%d ranks, B %d (parity %d), attention ×%s, linear %s tokens",
			k.Ranks, k.BudgetTokens, k.ParityTokens, g(k.Attention), g(k.Linear))})
	}
	return kv
}

// heteroGroup is an open group of the hetero packer.
type heteroGroup struct {
	first, size     int
	squares, tokens float64 // Σ s², Σ s
	lo, hi          int     // the kinds it spans
	class           int
}

// heteroClass holds the open groups of one size and span of kinds. A class
// of one kind keeps them in two heaps (items: first ranks), as HyDra's
// packer does: load, least per-rank load first (then lowest first rank), and
// demoted, the groups that lacked token room for an earlier (longer)
// sequence, most room first; the load heap's top, once ready, is the
// class's best group, and if its load cannot take a sequence no group of
// the class can. A class spanning kinds (its groups' loads weigh its kinds
// differently) is scanned.
type heteroClass struct {
	size, lo, hi  int
	load, demoted *keyheap.Heap[float64]
	all           []int // a spanning class's groups
}

// heteroPacker is hydra-hetero's placement (see the package doc): HyDra's
// piggyback packing with each group's load in seconds on its slowest kind.
type heteroPacker struct {
	t       Targets
	lengths []int
	order   []int
	placed  []bool
	free    *buddy.Tree
	groups  []heteroGroup
	// perRank and tokens are the per-rank load and Σ s of the open MB's
	// group starting at each rank (the heaps' keys), rankGroup its index in
	// groups; family is the placement heaps' shared positions, backfillQ the
	// backfill queue per size class (log2 size).
	perRank, tokens []float64
	rankGroup       []int
	family          *keyheap.Heap[float64]
	backfillQ       []*keyheap.Heap[float64]
	classes         []heteroClass
	classOf         map[[3]int]int // (size, lo, hi) -> index in classes, for the open MB
	b               *hydra.PlanBuilder
	heapOps, visits int64
	groupVisits     int64
}

func newHeteroPacker(lengths []int, poolRanks int, t Targets) *heteroPacker {
	p := &heteroPacker{t: t, lengths: lengths, order: make([]int, len(lengths)), placed: make([]bool, len(lengths)),
		free: buddy.New(poolRanks), b: hydra.NewPlanBuilder(poolRanks, len(lengths))}
	for i := range p.order {
		p.order[i] = i
	}
	slices.SortStableFunc(p.order, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	p.classOf = map[[3]int]int{}
	p.perRank, p.tokens, p.rankGroup = make([]float64, poolRanks), make([]float64, poolRanks), make([]int, poolRanks)
	p.family = keyheap.New(p.perRank)
	p.backfillQ = make([]*keyheap.Heap[float64], bits.Len(uint(t.Cap)))
	p.backfillQ[0] = keyheap.New(p.perRank)
	for c := 1; c < len(p.backfillQ); c++ {
		p.backfillQ[c] = p.backfillQ[0].Sibling(p.perRank)
	}
	return p
}

// kindAt returns the index of rank r's kind.
func (p *heteroPacker) kindAt(r int) int {
	for i := len(p.t.Kinds) - 1; i > 0; i-- {
		if r >= p.t.Kinds[i].First {
			return i
		}
	}
	return 0
}

// capLoad is Λ*·k, the most load a group of k ranks may hold: exact when Λ*
// is s_max²/C* and k divides C*.
func (p *heteroPacker) capLoad(k int) float64 {
	if k <= p.t.Cap {
		return p.t.LoadTarget * float64(p.t.Cap) / float64(p.t.Cap/k)
	}
	return p.t.LoadTarget * float64(k)
}

// fits reports whether a group spanning kinds [lo, hi] of k ranks holding
// squares and tokens stays within Λ*·k and every kind's budget (its parity
// tokens when the group holds several sequences).
func (p *heteroPacker) fits(lo, hi, k int, squares, tokens float64, several bool) bool {
	limit := p.capLoad(k)
	for i := lo; i <= hi; i++ {
		kind := &p.t.Kinds[i]
		b := kind.BudgetTokens
		if several {
			b = kind.ParityTokens
		}
		if kind.load(squares, tokens) > limit || tokens > float64(k)*float64(b) {
			return false
		}
	}
	return true
}

// perRankLoad is a group's per-rank load: its slowest kind's, over its size.
func (p *heteroPacker) perRankLoad(g *heteroGroup) float64 {
	var l float64
	for i := g.lo; i <= g.hi; i++ {
		l = max(l, p.t.Kinds[i].load(g.squares, g.tokens))
	}
	return l / float64(g.size)
}

// degree is cp_k(s) on kind i: the smallest power of two, at least the
// memory degree, whose group keeps s within Λ*, capped at C*.
func (p *heteroPacker) degree(i int, s float64) int {
	kind := &p.t.Kinds[i]
	k := sched.MemoryDegree(int(s), kind.BudgetTokens)
	for k < p.t.Cap && kind.load(s*s, s) > p.capLoad(k) {
		k *= 2
	}
	return min(k, p.t.Cap)
}

// pack places the batch MB by MB. It fails, wrapping sched.ErrCannotPlan,
// if an MB would take no sequence (which the closed form rules out: the
// longest sequence fits alone at C* on the reference kind, or on any block).
func (p *heteroPacker) pack() error {
	remaining := len(p.order)
	for remaining > 0 {
		p.free.Reset()
		p.groups = p.groups[:0]
		for _, cl := range p.classes {
			if cl.load != nil {
				cl.load.Clear()
				cl.demoted.Clear()
			}
		}
		p.classes = p.classes[:0]
		clear(p.classOf)
		for _, id := range p.order {
			if p.placed[id] {
				continue
			}
			p.visits++
			if p.place(id) {
				p.placed[id] = true
				remaining--
			}
		}
		if len(p.groups) == 0 {
			return fmt.Errorf("hydra-hetero: no group can take any of the %d sequences left (%w)", remaining, sched.ErrCannotPlan)
		}
		if p.visits > 4*MaxPackWork {
			return fmt.Errorf("hydra-hetero: the placement read %d sequences, more than 4 × %d, with %d of %d sequences left (%w): split the batch, or plan it with hydra",
				p.visits, int64(MaxPackWork), remaining, len(p.order), sched.ErrInvalidInput)
		}
		doublings := p.backfill()
		w := hydra.Waiting{Remaining: remaining}
		for _, id := range p.order {
			if !p.placed[id] {
				w.ID, w.Tokens = id, p.lengths[id]
				w.Degree = p.degree(p.kindAt(0), float64(w.Tokens))
				break
			}
		}
		p.b.Close(w, doublings)
	}
	return nil
}

// place opens a group for sequence id on the smallest feasible free block at
// one of the kinds' degrees for it, else adds it to the smallest feasible
// open group (ties: lower per-rank load, then lower first rank), else
// leaves it for the next MB.
func (p *heteroPacker) place(id int) bool {
	s := float64(p.lengths[id])
	kinds := p.t.Kinds
	// Open: the kinds' degrees, smallest first.
	var degrees []int
	for i := range kinds {
		if d := p.degree(i, s); !slices.Contains(degrees, d) {
			degrees = append(degrees, d)
		}
	}
	slices.Sort(degrees)
	for _, k := range degrees {
		if p.free.MaxFree() < k {
			continue
		}
		for from := 0; from < p.free.Leaves(); {
			first := p.free.LowestFrom(k, from)
			if first < 0 {
				break
			}
			lo, hi := p.kindAt(first), p.kindAt(first+k-1)
			if p.fits(lo, hi, k, s*s, s, false) {
				p.free.Take(first, k)
				p.openGroup(heteroGroup{first: first, size: k, squares: s * s, tokens: s, lo: lo, hi: hi})
				p.b.Add(p.b.Open(first, k), id)
				return true
			}
			// Skip every block of this size overlapping a kind that cannot take s.
			next := first + k
			for i := lo; i <= hi; i++ {
				kd := &kinds[i]
				if kd.load(s*s, s) > p.capLoad(k) || s > float64(k)*float64(kd.BudgetTokens) {
					next = max(next, kd.First+kd.Ranks)
				}
			}
			from = next
		}
	}
	// Piggyback: the best group of each class, the smallest size first, then
	// the least per-rank load, then the lowest first rank.
	best := -1
	var bestLoad float64
	for c := range p.classes {
		gi := p.candidate(c, s)
		if gi < 0 {
			continue
		}
		g := &p.groups[gi]
		l := p.perRankLoad(g)
		if best < 0 || g.size < p.groups[best].size || g.size == p.groups[best].size && (l < bestLoad || l == bestLoad && g.first < p.groups[best].first) {
			best, bestLoad = gi, l
		}
	}
	if best < 0 {
		return false
	}
	g := &p.groups[best]
	g.squares += s * s
	g.tokens += s
	p.perRank[g.first], p.tokens[g.first] = p.perRankLoad(g), g.tokens
	if cl := &p.classes[g.class]; cl.lo == cl.hi {
		cl.load.Fix(g.first) // its load grew
		p.heapOps++
	}
	p.b.Add(int32(best), id)
	return true
}

// openGroup adds a new group of the open MB to its class (made if new).
func (p *heteroPacker) openGroup(g heteroGroup) {
	key := [3]int{g.size, g.lo, g.hi}
	c, ok := p.classOf[key]
	if !ok {
		c = len(p.classes)
		p.classOf[key] = c
		cl := heteroClass{size: g.size, lo: g.lo, hi: g.hi}
		if g.lo == g.hi {
			cl.load, cl.demoted = p.family.Sibling(p.perRank), p.family.Sibling(p.tokens)
		}
		p.classes = append(p.classes, cl)
	}
	g.class = c
	p.groups = append(p.groups, g)
	gi := len(p.groups) - 1
	p.rankGroup[g.first] = gi
	p.perRank[g.first], p.tokens[g.first] = p.perRankLoad(&g), g.tokens
	cl := &p.classes[c]
	if cl.lo == cl.hi {
		cl.load.Add(g.first)
		p.heapOps++
	} else {
		cl.all = append(cl.all, gi)
	}
}

// candidate returns class c's best group that can take a sequence of s
// tokens within Λ* and its kinds' parity tokens (-1 if none). A class of one
// kind first re-admits the demoted groups with token room for s (sequences
// only get shorter within an MB, so they keep it) and demotes the load
// heap's tops without it; its top is then the least-loaded group with room,
// and if its load cannot take s, none can. A spanning class is scanned.
func (p *heteroPacker) candidate(c int, s float64) int {
	cl := &p.classes[c]
	if cl.lo != cl.hi {
		best := -1
		for _, gi := range cl.all {
			g := &p.groups[gi]
			p.groupVisits++
			if !p.fits(g.lo, g.hi, g.size, g.squares+s*s, g.tokens+s, true) {
				continue
			}
			if best < 0 {
				best = gi
				continue
			}
			if l, lb := p.perRankLoad(g), p.perRankLoad(&p.groups[best]); l < lb || l == lb && g.first < p.groups[best].first {
				best = gi
			}
		}
		return best
	}
	room := float64(cl.size) * float64(p.t.Kinds[cl.lo].ParityTokens)
	for cl.demoted.Len() > 0 && room-p.tokens[cl.demoted.Top()] >= s {
		cl.load.Add(cl.demoted.Take())
		p.heapOps += 2
	}
	for cl.load.Len() > 0 {
		first := cl.load.Top()
		gi := p.rankGroup[first]
		g := &p.groups[gi]
		p.groupVisits++
		if room-g.tokens >= s {
			if p.fits(g.lo, g.hi, g.size, g.squares+s*s, g.tokens+s, true) {
				return gi
			}
			return -1
		}
		cl.demoted.Add(cl.load.Take())
		p.heapOps += 2
	}
	return -1
}

// backfill doubles groups into free buddy blocks, smallest first (ties:
// lower per-rank load, then lower first rank), while the doubled group stays
// under C*, within every kind's budget, and no slower per rank than before
// (a buddy on a much slower kind would not help). The queue is one heap per
// size, walked from the smallest: a doubled group joins the next size, so
// the least group of the smallest non-empty size is the least of all. Each
// group queued, dropped or doubled counts one heap operation.
func (p *heteroPacker) backfill() int {
	if p.free.MaxFree() == 0 {
		return 0
	}
	for _, g := range p.groups {
		if g.size < p.t.Cap {
			p.backfillQ[bits.TrailingZeros(uint(g.size))].Add(g.first)
			p.heapOps++
		}
	}
	doublings := 0
	for c, q := range p.backfillQ {
		for q.Len() > 0 {
			gi := p.rankGroup[q.Take()]
			g := &p.groups[gi]
			buddy := g.first ^ g.size
			first := g.first &^ g.size
			lo, hi := p.kindAt(first), p.kindAt(first+2*g.size-1)
			grown := heteroGroup{first: first, size: 2 * g.size, squares: g.squares, tokens: g.tokens, lo: lo, hi: hi}
			p.heapOps++
			if buddy+g.size > p.free.Leaves() || !p.free.IsFree(buddy, g.size) ||
				!p.fits(lo, hi, grown.size, g.squares, g.tokens, false) || p.perRankLoad(&grown) > p.perRankLoad(g) {
				continue
			}
			p.free.Take(buddy, g.size)
			*g = grown
			p.rankGroup[first] = gi
			p.b.Double(int32(gi))
			doublings++
			if g.size < p.t.Cap {
				p.perRank[first] = p.perRankLoad(g)
				p.backfillQ[c+1].Add(first)
			}
		}
	}
	return doublings
}

// ceilDiv returns ⌈a/b⌉ for a >= 1, b >= 1.
func ceilDiv(a, b int64) int64 { return 1 + (a-1)/b }

// pow2Floor returns the largest power of two <= n (n >= 1).
func pow2Floor(n int) int { return 1 << (bits.Len(uint(n)) - 1) }
