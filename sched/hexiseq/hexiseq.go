package hexiseq

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/cphp"
)

// Name is the registry name of the policy.
const Name = "hexiseq"

// MaxRounds bounds the coordinate descent's rounds per group.
const MaxRounds = 1 << 12

// Options are the policy's scenario options ([run.options.hexiseq]).
type Options struct {
	// Degree forces the group size P; 0 chooses.
	Degree int `toml:"degree"`
	// Ulysses forces the HP group size u; 0 chooses.
	Ulysses int `toml:"ulysses"`
	// Rounds bounds the coordinate descent per group (stage 3); 0 turns it
	// off (stage 2's split alone).
	Rounds int `toml:"rounds"`
}

// DefaultOptions choose P and u and descend up to 256 rounds.
func DefaultOptions() Options { return Options{Rounds: 256} }

// Policy is HexiSeq's planner.
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
	if o.Rounds < 0 || o.Rounds > MaxRounds {
		return nil, fmt.Errorf("rounds = %d: must be in [0, %d] (0: no coordinate descent)", o.Rounds, MaxRounds)
	}
	return &Policy{opts: o}, nil
}

// Name returns "hexiseq".
func (*Policy) Name() string { return Name }

// Promises: every rank within its own kind's budget.
func (*Policy) Promises() sched.Promises { return sched.Promises{WithinBudget: true} }

// Plan runs the three stages (see the package doc).
func (p *Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	if err := in.CheckKinds(lengths); err != nil {
		return nil, fmt.Errorf("hexiseq: %w", err)
	}
	m := cphp.NewModel(in)
	pl := &planner{m: m, in: in, rounds: p.opts.Rounds}
	var s1, s2 float64
	for _, s := range lengths {
		s1 += float64(s)
		s2 += float64(s) * float64(s)
	}
	rho := s2 / max(s1, 1)
	build := func(first, size, u int) *cphp.Template { return pl.template(first, size, u, rho) }
	c, err := cphp.Search(m, lengths, in, p.opts.Degree, p.opts.Ulysses, build)
	if err != nil {
		return nil, fmt.Errorf("hexiseq: %w", err)
	}
	d := &Diagnostics{Factorization: c.Factorization(in.PoolRanks)}
	var layoutErr error
	mbs, err := cphp.Microbatches(c.Packing, c.Replicas, lengths, in, func(j int, _ []int, tokens int64, squares float64) *sched.Layout {
		r := c.Replicas[j]
		l, moves, evals, err := pl.layout(r.First, r.Size, c.U, tokens, squares)
		if err != nil && layoutErr == nil {
			layoutErr = err
		}
		d.Moves += moves
		d.Evaluations += evals
		if l != nil && !pl.oneKind(r.First, r.Size) {
			d.AsymmetricGroups++
		}
		return l
	})
	if err == nil {
		err = layoutErr
	}
	if err != nil {
		return nil, fmt.Errorf("hexiseq: %w", err)
	}
	return &sched.Plan{
		Policy: Name, PoolRanks: in.PoolRanks, Microbatches: mbs,
		WorkUnits:   c.Visits + d.Evaluations,
		StallWork:   sched.StallWork{SequenceVisits: int64(len(lengths)) + d.Evaluations},
		Diagnostics: d,
	}, nil
}

// planner holds one plan's model and options.
type planner struct {
	m      *cphp.Model
	in     sched.Inputs
	rounds int
}

// oneKind reports whether ranks [first, first+size) are all of one kind.
func (pl *planner) oneKind(first, size int) bool {
	k := pl.m.KindIndex(first)
	for r := first + 1; r < first+size; r++ {
		if pl.m.KindIndex(r) != k {
			return false
		}
	}
	return true
}

// heads is stage 2's head split of every HP group of u ranks from first:
// n_i ∝ 1/a_k by largest remainders.
func (pl *planner) heads(first, size, u int) []int {
	out := make([]int, 0, size)
	w := make([]float64, u)
	for at := 0; at < size; at += u {
		for i := range u {
			w[i] = 1 / pl.m.Kind(first+at+i).AttentionSecondsPerToken2
		}
		for _, n := range cphp.Apportion(int64(pl.m.Heads), w) {
			out = append(out, int(n))
		}
	}
	return out
}

// capability returns, per HP group, stage 2's weight 1/(Ā_h + ρ·C_h) and the
// most tokens its chunk may hold within memory, cap_h = min(Σ B_k,
// min_{n_i>0} B_k·H/n_i).
func (pl *planner) capability(first, size, u int, heads []int, rho float64) (weights []float64, caps []int64) {
	hf := float64(pl.m.Heads)
	for at := 0; at < size; at += u {
		var inv, c float64
		var budget int64
		limit := int64(math.MaxInt64)
		for i := at; i < at+u; i++ {
			k := pl.m.Kind(first + i)
			inv += 1 / k.LinearSecondsPerToken
			c = max(c, k.AttentionSecondsPerToken2*float64(heads[i])/hf)
			b := int64(k.BudgetTokens)
			budget += b
			if heads[i] > 0 {
				limit = min(limit, b*int64(pl.m.Heads)/int64(heads[i]))
			}
		}
		lin := 0.0
		if inv > 0 && !math.IsInf(inv, 0) {
			lin = 1 / inv
		}
		weights = append(weights, 1/(lin+rho*c))
		caps = append(caps, min(budget, limit))
	}
	return weights, caps
}

// template is stage 2's split of a replica in token shares, for packing.
func (pl *planner) template(first, size, u int, rho float64) *cphp.Template {
	m := pl.m
	if pl.oneKind(first, size) {
		v := cphp.EqualView(first, size, u, m.Heads)
		budget := int64(m.Kind(first).BudgetTokens)
		return &cphp.Template{View: v, Parts: m.Parts(v, 1, 1), Capacity: int64(size) * budget}
	}
	heads := pl.heads(first, size, u)
	weights, caps := pl.capability(first, size, u, heads, rho)
	var capacity int64
	for _, c := range caps {
		capacity += c
	}
	v := pl.view(first, size, u, heads, weights, caps, 1)
	t := &cphp.Template{View: v, Parts: m.Parts(v, 1, 1), Capacity: capacity}
	// Below free tokens no cap binds and the per-token parts are exact;
	// above, the memory caps flatten the split: time the group at its own
	// tokens.
	free := math.Inf(1)
	at := 0
	for h, x := range v.HPGroups {
		var chunk float64
		for i := at; i < at+x; i++ {
			chunk += v.Tokens[i]
			free = min(free, float64(m.Kind(first+i).BudgetTokens)/v.Tokens[i])
		}
		free = min(free, float64(caps[h])/chunk)
		at += x
	}
	t.Fn = func(s1, s2 float64) float64 {
		if s1 <= free {
			return m.Seconds(t.Parts, s1, s2)
		}
		return m.ExactSeconds(m.Parts(pl.view(first, size, u, heads, weights, caps, s1), s1, s2))
	}
	return t
}

// view is stage 2's split of s1 tokens in continuous shares: chunks by the
// HP groups' weights under their caps, each chunk by its ranks' linear speed
// under their budgets (water-filled); s1 = 1 with no cap binding gives the
// shares of one token.
func (pl *planner) view(first, size, u int, heads []int, weights []float64, caps []int64, s1 float64) cphp.View {
	m := pl.m
	v := cphp.View{First: first, Tokens: make([]float64, size), Heads: make([]float64, size)}
	capsF := make([]float64, len(caps))
	for h, c := range caps {
		capsF[h] = float64(c)
		if s1 <= 1 {
			capsF[h] = math.Inf(1)
		}
	}
	chunks := waterfillFloat(s1, weights, capsF)
	w := make([]float64, u)
	b := make([]float64, u)
	for h, chunk := range chunks {
		v.HPGroups = append(v.HPGroups, u)
		for i := range u {
			k := m.Kind(first + h*u + i)
			w[i], b[i] = 1/k.LinearSecondsPerToken, float64(k.BudgetTokens)
			if s1 <= 1 {
				b[i] = math.Inf(1)
			}
		}
		for i, x := range waterfillFloat(chunk, w, b) {
			v.Tokens[h*u+i] = x
			v.Heads[h*u+i] = float64(heads[h*u+i])
		}
	}
	return v
}

// waterfillFloat splits total proportionally to weights with no share above
// its cap (shares that would pass are pinned at their caps and the rest
// split again); when the caps hold less than total, every share is its cap.
func waterfillFloat(total float64, weights, caps []float64) []float64 {
	n := len(weights)
	out := make([]float64, n)
	pinned := make([]bool, n)
	left := total
	for range n + 1 {
		var wSum float64
		for i := range n {
			if !pinned[i] {
				wSum += weights[i]
			}
		}
		over := false
		for i := range n {
			if pinned[i] {
				continue
			}
			out[i] = left * weights[i] / wSum
			if out[i] > caps[i] {
				pinned[i], out[i], over = true, caps[i], true
				left -= caps[i]
			}
		}
		if !over || wSum == 0 {
			break
		}
	}
	return out
}

// layout is the layout of a replica's group holding tokens tokens with
// Σ s² = squares: the equal layout on one kind, else stage 2's integer split
// refined by stage 3. It returns the descent's applied moves and evaluations.
func (pl *planner) layout(first, size, u int, tokens int64, squares float64) (*sched.Layout, int64, int64, error) {
	m := pl.m
	if pl.oneKind(first, size) {
		return cphp.EqualLayout(size, u, tokens, m.Heads), 0, 0, nil
	}
	heads := pl.heads(first, size, u)
	weights, caps := pl.capability(first, size, u, heads, squares/max(float64(tokens), 1))
	chunks := waterfill(tokens, weights, caps)
	if chunks == nil {
		return nil, 0, 0, fmt.Errorf("replica of ranks [%d, %d): %d tokens exceed its memory (%w)", first, first+size, tokens, sched.ErrCannotPlan)
	}
	l := &sched.Layout{ShardTokens: make([]int, size), Heads: heads}
	for h, chunk := range chunks {
		l.HPGroups = append(l.HPGroups, u)
		w := make([]float64, u)
		b := make([]int64, u)
		for i := range u {
			k := m.Kind(first + h*u + i)
			w[i], b[i] = 1/k.LinearSecondsPerToken, int64(k.BudgetTokens)
		}
		for i, t := range waterfill(chunk, w, b) {
			l.ShardTokens[h*u+i] = int(t)
		}
	}
	// Start from the better of stage 2's split and the equal one (when the
	// equal one fits memory): with slow links a longer chunk on fast ranks
	// can cost more in ring steps than it saves in compute.
	if m.Heads%u == 0 {
		eq := cphp.EqualLayout(size, u, tokens, m.Heads)
		if pl.fitsMemory(first, eq) && pl.seconds(first, eq, float64(tokens), squares) < pl.seconds(first, l, float64(tokens), squares) {
			l = eq
		}
	}
	moves, evals := pl.descend(first, l, float64(tokens), squares, weights)
	return l, moves, evals, nil
}

// fitsMemory reports whether every rank of l (a group from first) is within
// its kind's budget.
func (pl *planner) fitsMemory(first int, l *sched.Layout) bool {
	for i, mem := range l.MemoryTokens(pl.m.Heads) {
		if mem > float64(pl.m.Kind(first+i).BudgetTokens) {
			return false
		}
	}
	return true
}

// seconds is the planning model's time of layout l of a group from first.
func (pl *planner) seconds(first int, l *sched.Layout, s1, s2 float64) float64 {
	v := cphp.View{First: first, HPGroups: l.HPGroups, Tokens: make([]float64, len(l.ShardTokens)), Heads: make([]float64, len(l.Heads))}
	for i := range l.ShardTokens {
		v.Tokens[i], v.Heads[i] = float64(l.ShardTokens[i]), float64(l.Heads[i])
	}
	return pl.m.ExactSeconds(pl.m.Parts(v, s1, s2))
}

// waterfill splits total into integers proportional to weights, none above
// its cap: shares that would pass their caps are pinned there and the rest
// split again; nil when the caps hold less than total.
func waterfill(total int64, weights []float64, caps []int64) []int64 {
	n := len(weights)
	out := make([]int64, n)
	pinned := make([]bool, n)
	var room int64
	for _, c := range caps {
		room += c
	}
	if room < total {
		return nil
	}
	left := total
	for {
		var idx []int
		var w []float64
		for i := range n {
			if !pinned[i] {
				idx = append(idx, i)
				w = append(w, weights[i])
			}
		}
		split := cphp.Apportion(left, w)
		over := false
		for k, i := range idx {
			if split[k] > caps[i] {
				pinned[i], out[i], over = true, caps[i], true
				left -= caps[i]
			}
		}
		if !over {
			for k, i := range idx {
				out[i] = split[k]
			}
			return out
		}
	}
}

// Diagnostics explain a HexiSeq plan: the factorization chosen (its
// ModelledSeconds with stage 2's split) and the descent's work.
type Diagnostics struct {
	cphp.Factorization
	// AsymmetricGroups counts the groups that mix kinds (the others run the
	// equal layout); Moves and Evaluations are the descent's.
	AsymmetricGroups int   `json:"asymmetric_groups"`
	Moves            int64 `json:"descent_moves"`
	Evaluations      int64 `json:"descent_evaluations"`
}

// Summary lists the diagnostics.
func (d *Diagnostics) Summary() []sched.KV {
	return append(d.Factorization.Summary(),
		sched.KV{Name: "asymmetric groups", Value: strconv.Itoa(d.AsymmetricGroups)},
		sched.KV{Name: "descent moves / evaluations", Value: fmt.Sprintf("%d / %d", d.Moves, d.Evaluations)},
	)
}
