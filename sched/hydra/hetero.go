package hydra

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// HeteroName is the registry name of HyDra on mixed GPU kinds.
const HeteroName = "hydra-hetero"

// HeteroOptions are hydra-hetero's scenario options.
type HeteroOptions struct {
	// Cap forces C* (a power of two), as Options.Cap; 0 chooses it.
	Cap int `toml:"cap"`
	// Linear counts each rank's linear work (GEMMs and memory-bound ops, per
	// token on its kind) in its load beside core attention; false measures
	// attention alone, in seconds on each rank's kind.
	Linear bool `toml:"linear"`
}

// DefaultHeteroOptions count the linear work and choose C*.
func DefaultHeteroOptions() HeteroOptions { return HeteroOptions{Linear: true} }

// HeteroPolicy is hydra-hetero (see the package doc, "hydra-hetero").
type HeteroPolicy struct{ opts HeteroOptions }

var (
	_ sched.Policy   = (*HeteroPolicy)(nil)
	_ sched.Promiser = (*HeteroPolicy)(nil)
)

// NewHetero builds hydra-hetero.
func NewHetero(o HeteroOptions) (*HeteroPolicy, error) {
	if o.Cap != 0 && (!sched.IsPow2(o.Cap) || o.Cap > sched.MaxPoolRanks) {
		return nil, fmt.Errorf("cap = %d: must be 0 (closed-form C*) or a power of two in [1, %d]", o.Cap, sched.MaxPoolRanks)
	}
	return &HeteroPolicy{opts: o}, nil
}

// Name returns "hydra-hetero".
func (*HeteroPolicy) Name() string { return HeteroName }

// Promises: aligned power-of-two groups, every rank within its kind's budget.
func (*HeteroPolicy) Promises() sched.Promises {
	return sched.Promises{Aligned: true, WithinBudget: true}
}

// HeteroKind is one GPU kind as hydra-hetero measures its load: a sequence
// of s tokens on a group of k ranks of this kind loads each rank with
// (Attention·s² + Linear·s)/k, in units of the reference kind's attention
// seconds per token² (so the reference kind's attention weight is 1).
type HeteroKind struct {
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

// alignedBlockIn reports whether ranks [first, first+ranks) hold an aligned
// block of k ranks.
func alignedBlockIn(first, ranks, k int) bool {
	start := (first + k - 1) / k * k
	return start+k <= first+ranks
}

// load is L_k(S2, S1) = Attention·S2 + Linear·S1.
func (k *HeteroKind) load(squares, tokens float64) float64 {
	return k.Attention*squares + k.Linear*tokens
}

// HeteroTargets are hydra-hetero's closed form: Targets with the loads in
// units of the reference kind's attention seconds per token² (LoadTarget is
// Λ*, OverheadRatio θ, both in those units), and the kinds.
type HeteroTargets struct {
	Targets
	// Reference is the kind Λ* is measured on: the one quickest at the
	// longest sequence (least L_k(s_max)) among those whose own ranks can run
	// it alone at its memory degree.
	Reference string `json:"reference"`
	// Kinds are the pool's kinds in rank order.
	Kinds []HeteroKind `json:"kinds"`
}

// heteroKinds returns the pool's kinds as hydra-hetero measures them and the
// index of the reference kind: from in.Cluster (θ in its units), or one
// kind of weight 1 without linear work when there is none.
func heteroKinds(in sched.Inputs, linear bool, maxTokens int) ([]HeteroKind, int, float64) {
	c := in.Cluster
	if c == nil {
		return []HeteroKind{{Name: "unit", Ranks: in.PoolRanks, BudgetTokens: in.BudgetTokens, ParityTokens: in.BudgetTokens, Attention: 1}}, 0, in.OverheadRatio
	}
	s := float64(maxTokens)
	// The reference: the kind quickest at the longest sequence among those
	// whose own ranks hold an aligned block of its memory degree (so it can
	// run it alone); if none can, the slowest at it (whose load at C* every
	// block, spanning kinds or not, then meets).
	ref, refOK := -1, false
	var best float64
	first := 0
	for i, k := range c.Kinds {
		l := k.LinearSecondsPerToken
		if !linear {
			l = 0
		}
		x := k.AttentionSecondsPerToken2*s*s + l*s
		if alignedBlockIn(first, k.Ranks, sched.MemoryDegree(maxTokens, k.BudgetTokens)) && (!refOK || x < best) {
			ref, refOK, best = i, true, x
		}
		first += k.Ranks
	}
	if !refOK {
		for i, k := range c.Kinds {
			l := k.LinearSecondsPerToken
			if !linear {
				l = 0
			}
			if x := k.AttentionSecondsPerToken2*s*s + l*s; ref < 0 || x > best {
				ref, best = i, x
			}
		}
	}
	a := c.Kinds[ref].AttentionSecondsPerToken2
	out := make([]HeteroKind, len(c.Kinds))
	first = 0
	for i, k := range c.Kinds {
		out[i] = HeteroKind{Name: k.Name, First: first, Ranks: k.Ranks, BudgetTokens: k.BudgetTokens, Attention: k.AttentionSecondsPerToken2 / a}
		if i == ref {
			out[i].Attention = 1 // exactly
		}
		if linear {
			out[i].Linear = k.LinearSecondsPerToken / a
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
		out[i].ParityTokens = out[i].BudgetTokens
		if k := &out[i]; k.Linear > 0 && !math.IsInf(parity, 0) {
			k.ParityTokens = max(1, min(k.BudgetTokens, int(parity/k.Linear)))
		}
	}
	// θ/c is priced on the first kind: θ = θ/c · a_0, in units of a_ref.
	theta := in.OverheadRatio
	if ref != 0 {
		theta *= c.Kinds[0].AttentionSecondsPerToken2 / a
	}
	return out, ref, theta
}

// SolveHetero computes hydra-hetero's closed form (see the package doc). With
// one kind and no linear work it is Solve's, exactly.
func SolveHetero(lengths []int, in sched.Inputs, linear bool, forcedCap int) (HeteroTargets, error) {
	sums := BatchSums(lengths)
	kinds, ref, theta := heteroKinds(in, linear, sums.MaxTokens)
	ht := HeteroTargets{Reference: kinds[ref].Name, Kinds: kinds}
	if len(kinds) == 1 && kinds[0].Linear == 0 {
		one := in
		one.BudgetTokens, one.OverheadRatio = kinds[0].BudgetTokens, theta
		t, err := Solve(sums, one, forcedCap)
		ht.Targets = t
		return ht, err
	}
	budget := kinds[0].BudgetTokens
	for _, k := range kinds {
		budget = min(budget, k.BudgetTokens)
	}
	if sums.MaxTokens < 1 || sums.MaxTokens > MaxSequenceTokens {
		return ht, fmt.Errorf("hydra-hetero: s_max = %d tokens: must be in [1, %d] (%w)", sums.MaxTokens, MaxSequenceTokens, sched.ErrInvalidInput)
	}
	// C_mem and the engine limit: the reference kind's own when it can run
	// the longest sequence alone (its memory degree; its largest aligned
	// block), else the smallest budget's over the pool (every block, whatever
	// its kinds, holds it at C*).
	rk := &kinds[ref]
	memCap, limit := MemoryCap(sums.MaxTokens, budget), pow2Floor(in.DegreeLimit())
	if alignedBlockIn(rk.First, rk.Ranks, MemoryCap(sums.MaxTokens, rk.BudgetTokens)) {
		memCap = MemoryCap(sums.MaxTokens, rk.BudgetTokens)
		block := memCap
		for alignedBlockIn(rk.First, rk.Ranks, 2*block) {
			block *= 2
		}
		limit = min(limit, block)
	}
	t := Targets{OverheadRatio: theta, Bubble: Bubble(in.PP, in.VPP), MaxTokens: sums.MaxTokens, BudgetTokens: budget,
		MemoryCap: memCap, EngineLimit: limit}
	if t.MemoryCap > t.EngineLimit {
		return ht, fmt.Errorf("%w (%w): s_max = %d tokens at budget %d needs C_mem = %d ranks, but groups may have at most %d",
			ErrEngineLimit, sched.ErrInvalidInput, sums.MaxTokens, rk.BudgetTokens, t.MemoryCap, t.EngineLimit)
	}
	s1, s2 := float64(sums.Tokens), sums.squaredTokensFloat()
	lambda1 := kinds[ref].load(float64(sums.MaxTokens)*float64(sums.MaxTokens), float64(sums.MaxTokens))
	var rate float64 // Σ_k n_k / W_k
	var capacity int64
	for _, k := range kinds {
		rate += float64(k.Ranks) / k.load(s2, s1)
		capacity += int64(k.Ranks) * int64(k.ParityTokens)
	}
	micro := func(c int) (int, bool) {
		load := int(math.Ceil(float64(c) / (lambda1 * rate) * (1 - 1e-12)))
		token := int(ceilDiv(sums.Tokens, capacity))
		return max(load, token, 1), token > load
	}
	iter := func(c int) float64 {
		m, _ := micro(c)
		return (float64(m) + t.Bubble) * (lambda1/float64(c) + theta)
	}
	var cont float64
	switch {
	case t.Bubble == 0:
	case theta == 0:
		cont = math.Inf(1)
	default:
		cont = lambda1 * math.Sqrt(t.Bubble*rate/theta)
	}
	t.ContinuousCap = Real(cont)
	clamp := func(x int) int { return min(max(x, t.MemoryCap), t.EngineLimit) }
	switch {
	case !(cont >= 1):
		t.LowerCap, t.UpperCap = t.MemoryCap, t.MemoryCap
	case cont >= float64(t.EngineLimit):
		t.LowerCap, t.UpperCap = t.EngineLimit, t.EngineLimit
	default:
		frac, exp := math.Frexp(cont)
		lower := 1 << (exp - 1)
		upper := lower
		if frac != 0.5 {
			upper = lower * 2
		}
		t.LowerCap, t.UpperCap = clamp(lower), clamp(upper)
	}
	t.Cap = t.LowerCap
	if t.UpperCap != t.LowerCap && iter(t.UpperCap) < iter(t.LowerCap) {
		t.Cap = t.UpperCap
	}
	t.ClosedFormCap = t.Cap
	if forcedCap != 0 {
		if !sched.IsPow2(forcedCap) || forcedCap < t.MemoryCap || forcedCap > t.EngineLimit {
			return ht, fmt.Errorf("hydra-hetero: cap = %d: must be a power of two in [C_mem = %d, engine limit = %d] (%w)", forcedCap, t.MemoryCap, t.EngineLimit, sched.ErrInvalidInput)
		}
		t.Cap, t.ForcedCap = forcedCap, true
	}
	t.LoadTarget = lambda1 / float64(t.Cap)
	m, tokenBound := micro(t.Cap)
	t.Microbatches, t.Regime = m, LoadBound
	if tokenBound {
		t.Regime = TokenBound
	}
	ht.Targets = t
	return ht, nil
}

// Plan solves the closed form on the kinds, packs the batch by per-rank
// seconds and, with VPP, aligns the MB count as HyDra does.
func (p *HeteroPolicy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.CheckKinds(lengths); err != nil {
		var tooLong *sched.ErrSequenceTooLong
		if errors.As(err, &tooLong) {
			return nil, fmt.Errorf("%w: %w", ErrEngineLimit, err)
		}
		return nil, fmt.Errorf("hydra-hetero: %w", err)
	}
	ht, err := SolveHetero(lengths, in, p.opts.Linear, p.opts.Cap)
	if err != nil {
		return nil, err
	}
	hp := newHeteroPacker(lengths, in.PoolRanks, ht)
	if err := hp.pack(); err != nil {
		return nil, err
	}
	mbs, splits, steps, err := alignVPP(hp.b.mbs, lengths, in, ht.Targets)
	if err != nil {
		return nil, err
	}
	d := &HeteroDiagnostics{HeteroTargets: ht, RealizedMicrobatches: len(mbs), VPPSplits: splits, AlignSteps: steps,
		HeapOps: hp.heapOps, SequenceVisits: hp.visits, GroupVisits: hp.groupVisits}
	return &sched.Plan{
		Policy: HeteroName, PoolRanks: in.PoolRanks, Microbatches: mbs,
		WorkUnits:   hp.heapOps + hp.visits + hp.groupVisits + steps,
		StallWork:   sched.StallWork{HeapOps: hp.heapOps, SequenceVisits: hp.visits + steps, PoolVisits: hp.groupVisits},
		Diagnostics: d,
	}, nil
}

// HeteroDiagnostics explain a hydra-hetero plan.
type HeteroDiagnostics struct {
	HeteroTargets
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
func (d *HeteroDiagnostics) ChosenOption(key string) (float64, bool) {
	if key == "cap" {
		return float64(d.ClosedFormCap), true
	}
	return 0, false
}

// Summary lists the diagnostics in a fixed order.
func (d *HeteroDiagnostics) Summary() []sched.KV {
	g := func(f float64) string { return strconv.FormatFloat(f, 'g', 6, 64) }
	kv := []sched.KV{
		{Name: "reference kind", Value: d.Reference},
		{Name: "θ (ref attention tokens²)", Value: g(d.OverheadRatio)},
		{Name: "b (MB-times)", Value: g(d.Bubble)},
		{Name: "C_mem", Value: strconv.Itoa(d.MemoryCap)},
		{Name: "C*", Value: capText(d.Targets)},
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

// LoadTargetTokens2 returns Λ* (sched.LoadTargeter), in the reference kind's
// attention tokens².
func (d *HeteroDiagnostics) LoadTargetTokens2() float64 { return d.LoadTarget }

// heteroGroup is an open group of the hetero packer.
type heteroGroup struct {
	first, size     int
	squares, tokens float64 // Σ s², Σ s
	lo, hi          int     // the kinds it spans
}

// heteroPacker is hydra-hetero's placement (see the package doc): HyDra's
// piggyback packing with each group's load in seconds on its slowest kind.
type heteroPacker struct {
	t       HeteroTargets
	lengths []int
	order   []int
	placed  []bool
	free    *blockTree
	groups  []heteroGroup
	b       *planBuilder
	// minAttention and minLinear are the smallest weights over the kinds:
	// L_min(s) bounds what s adds to any group.
	minAttention, minLinear float64
	// roomBound and tokenBound bound the load and token room of the open
	// groups (exact after a failed scan, raised when a group opens).
	roomBound, tokenBound float64
	heapOps, visits       int64
	groupVisits           int64
}

func newHeteroPacker(lengths []int, poolRanks int, t HeteroTargets) *heteroPacker {
	p := &heteroPacker{t: t, lengths: lengths, order: make([]int, len(lengths)), placed: make([]bool, len(lengths)),
		free: newBlockTree(poolRanks), b: newPlanBuilder(poolRanks, len(lengths))}
	for i := range p.order {
		p.order[i] = i
	}
	slices.SortStableFunc(p.order, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	p.minAttention, p.minLinear = math.Inf(1), math.Inf(1)
	for _, k := range t.Kinds {
		p.minAttention = min(p.minAttention, k.Attention)
		p.minLinear = min(p.minLinear, k.Linear)
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

// perRank is a group's per-rank load: its slowest kind's, over its size.
func (p *heteroPacker) perRank(g *heteroGroup) float64 {
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
		p.free.reset()
		p.groups = p.groups[:0]
		p.roomBound, p.tokenBound = 0, 0
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
		doublings := p.backfill()
		w := waiting{remaining: remaining}
		for _, id := range p.order {
			if !p.placed[id] {
				w.id, w.tokens = id, p.lengths[id]
				w.degree = p.degree(p.kindAt(0), float64(w.tokens))
				break
			}
		}
		p.b.close(w, doublings)
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
		if p.free.maxFree() < k {
			continue
		}
		for from := 0; from < p.free.leaves; {
			first := p.free.lowestFrom(k, from)
			if first < 0 {
				break
			}
			lo, hi := p.kindAt(first), p.kindAt(first+k-1)
			if p.fits(lo, hi, k, s*s, s, false) {
				p.free.take(first, k)
				g := heteroGroup{first: first, size: k, squares: s * s, tokens: s, lo: lo, hi: hi}
				p.groups = append(p.groups, g)
				p.b.add(p.b.open(first, k), id)
				p.raiseBounds(&p.groups[len(p.groups)-1])
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
	// Piggyback.
	if p.minAttention*s*s+p.minLinear*s > p.roomBound || s > p.tokenBound {
		return false
	}
	best := -1
	var bestLoad float64
	p.roomBound, p.tokenBound = 0, 0
	for gi := range p.groups {
		g := &p.groups[gi]
		p.groupVisits++
		p.raiseBounds(g)
		if !p.fits(g.lo, g.hi, g.size, g.squares+s*s, g.tokens+s, true) {
			continue
		}
		l := p.perRank(g)
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
	p.b.add(int32(best), id)
	return true
}

// raiseBounds raises the open groups' room bounds to g's room.
func (p *heteroPacker) raiseBounds(g *heteroGroup) {
	room := p.capLoad(g.size) - p.perRank(g)*float64(g.size)
	var tokens float64
	for i := g.lo; i <= g.hi; i++ {
		tokens = max(tokens, float64(g.size)*float64(p.t.Kinds[i].ParityTokens)-g.tokens)
	}
	p.roomBound, p.tokenBound = max(p.roomBound, room), max(p.tokenBound, tokens)
}

// backfill doubles groups into free buddy blocks, smallest first (ties:
// lower per-rank load, then lower first rank), while the doubled group stays
// under C*, within every kind's budget, and no slower per rank than before
// (a buddy on a much slower kind would not help).
func (p *heteroPacker) backfill() int {
	if p.free.maxFree() == 0 {
		return 0
	}
	q := &heteroBackfill{p: p}
	for gi, g := range p.groups {
		if g.size < p.t.Cap {
			q.items = append(q.items, gi)
		}
	}
	heap.Init(q)
	p.heapOps += int64(len(q.items))
	doublings := 0
	for q.Len() > 0 {
		gi := q.items[0]
		g := &p.groups[gi]
		buddy := g.first ^ g.size
		first := g.first &^ g.size
		lo, hi := p.kindAt(first), p.kindAt(first+2*g.size-1)
		grown := heteroGroup{first: first, size: 2 * g.size, squares: g.squares, tokens: g.tokens, lo: lo, hi: hi}
		if buddy+g.size > p.free.leaves || !p.free.isFree(buddy, g.size) ||
			!p.fits(lo, hi, grown.size, g.squares, g.tokens, false) || p.perRank(&grown) > p.perRank(g) {
			heap.Pop(q)
			p.heapOps++
			continue
		}
		p.free.take(buddy, g.size)
		*g = grown
		p.b.double(int32(gi))
		doublings++
		p.heapOps++
		if g.size < p.t.Cap {
			heap.Fix(q, 0)
		} else {
			heap.Pop(q)
		}
	}
	return doublings
}

// heteroBackfill orders groups by (size, per-rank load, first rank).
type heteroBackfill struct {
	p     *heteroPacker
	items []int
}

func (q *heteroBackfill) Len() int { return len(q.items) }
func (q *heteroBackfill) Less(i, j int) bool {
	a, b := &q.p.groups[q.items[i]], &q.p.groups[q.items[j]]
	if a.size != b.size {
		return a.size < b.size
	}
	if la, lb := q.p.perRank(a), q.p.perRank(b); la != lb {
		return la < lb
	}
	return a.first < b.first
}
func (q *heteroBackfill) Swap(i, j int) { q.items[i], q.items[j] = q.items[j], q.items[i] }
func (q *heteroBackfill) Push(x any)    { q.items = append(q.items, x.(int)) }
func (q *heteroBackfill) Pop() any {
	x := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return x
}
