package cphp

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
)

// Template is the planning model of one replica's layout: its view in token
// shares (summing to 1), per-token parts, and its capacity.
type Template struct {
	// View has Tokens in shares of one token and Heads as counts.
	View View
	// Parts are View's per-token parts (Model.Parts at s1 = s2 = 1).
	Parts Parts
	// Capacity is the most tokens one group of the replica may hold in a
	// microbatch within every rank's memory.
	Capacity int64
	// Fn, when set, times a group instead of Parts: for shares that depend
	// on the group's tokens (memory caps that bind as it fills).
	Fn func(s1, s2 float64) float64
}

// Seconds is the stage time of a group of the template holding s1 tokens
// with Σ s² = s2 (0 for none), without θ.
func (t *Template) Seconds(m *Model, s1, s2 float64) float64 {
	if s1 == 0 {
		return 0
	}
	if t.Fn != nil {
		return t.Fn(s1, s2)
	}
	return m.Seconds(t.Parts, s1, s2)
}

// Replica is one data-parallel replica: ranks [First, First+Size) and the
// template its groups are planned with.
type Replica struct {
	First, Size int
	T           *Template
}

// Packing is the sequences of a batch packed into microbatches of replicas.
type Packing struct {
	// Bins[m][j] are the ids replica j runs in microbatch m, longest first.
	Bins [][][]int
	// Tokens and Squares are each bin's Σ s and Σ s².
	Tokens, Squares [][]float64
	// Seconds is the modelled iteration: the busiest replica's Σ of its
	// bins' times, M·θ, and b = (pp−1)/vpp of the slowest bin.
	Seconds float64
	// Visits counts the sequences placed and the replicas and bins tried.
	Visits int64
}

// ErrTooLong is wrapped when a sequence exceeds every replica's capacity.
var ErrTooLong = fmt.Errorf("cphp: a sequence exceeds every replica's capacity (%w)", sched.ErrCannotPlan)

// Pack packs the batch into microbatches of the replicas: sequences longest
// first (ties: lower id); among the replicas of one template (a class), the
// one with the least modelled seconds so far (summed over its bins; ties: the
// lower replica) that has a bin with room; among the classes, the one whose
// replica would then finish earliest (ties: the class of the lower replica);
// in the replica, the bin with room whose time with the sequence is least
// (ties: the lower bin). It starts from the least count ⌈Σ s / Σ capacities⌉
// (raised to a count legal for the interleaved schedule when vpp > 1) and
// opens one more microbatch (the next legal count) when no bin has room. It
// fails, wrapping ErrTooLong, when a sequence fits no replica.
func Pack(m *Model, lengths []int, reps []Replica, in sched.Inputs) (*Packing, error) {
	return PackAtLeast(m, lengths, reps, in, 1)
}

// PackAtLeast is Pack starting from at least minMBs microbatches: more
// microbatches than the memory needs leave every group room to shift work
// to its faster ranks.
func PackAtLeast(m *Model, lengths []int, reps []Replica, in sched.Inputs, minMBs int) (*Packing, error) {
	return packOrdered(m, lengths, LongestFirst(lengths), reps, in, minMBs)
}

// LongestFirst returns the sequence ids by length, longest first (ties:
// lower id).
func LongestFirst(lengths []int) []int {
	order := make([]int, len(lengths))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	return order
}

// packOrdered is PackAtLeast with the longest-first order given.
func packOrdered(m *Model, lengths, order []int, reps []Replica, in sched.Inputs, minMBs int) (*Packing, error) {
	var total, capacity, longest int64
	for _, s := range lengths {
		total += int64(s)
	}
	for _, r := range reps {
		capacity += r.T.Capacity
		longest = max(longest, r.T.Capacity)
	}
	if len(order) > 0 && int64(lengths[order[0]]) > longest {
		return nil, fmt.Errorf("%w: sequence %d has %d tokens, the largest replica holds %d", ErrTooLong, order[0], lengths[order[0]], longest)
	}
	mbs := legal(max(minMBs, int(max(1, (total+capacity-1)/max(capacity, 1)))), in)
	if mbs < 1 {
		return nil, fmt.Errorf("cphp: no microbatch count is legal for pp = %d, vpp = %d, group size %d (%w)", in.PP, in.VPP, in.GroupSizeN(), sched.ErrCannotPlan)
	}
	nr := len(reps)
	p := &Packing{}
	st := &packState{m: m, reps: reps, p: p, sums: make([]float64, nr), minTokens: make([]float64, nr)}
	st.grow(mbs)
	// Classes: replicas sharing a template, each a heap by (Σ seconds, index).
	// The classes' heaps share one position array (a replica is in one).
	byTemplate := map[*Template]int{}
	family := keyheap.New(st.sums)
	for j, r := range reps {
		c, ok := byTemplate[r.T]
		if !ok {
			c = len(st.classes)
			byTemplate[r.T] = c
			st.classes = append(st.classes, family.Sibling(st.sums))
		}
		st.classes[c].Add(j)
	}
	for _, id := range order {
		s := float64(lengths[id])
		for !st.place(id, s) {
			next := legal(len(p.Bins)+1, in)
			if next <= len(p.Bins) || next > sched.MaxBatchSequences {
				return nil, fmt.Errorf("cphp: cannot open microbatch %d (%w)", len(p.Bins)+1, sched.ErrCannotPlan)
			}
			st.grow(next)
		}
	}
	var busiest, slowest float64
	for j, r := range reps {
		var sum float64
		for k := range p.Bins {
			t := r.T.Seconds(m, p.Tokens[k][j], p.Squares[k][j])
			sum += t
			slowest = max(slowest, t)
		}
		busiest = max(busiest, sum)
	}
	b := float64(in.PP-1) / float64(max(in.VPP, 1))
	p.Seconds = busiest + float64(len(p.Bins))*m.Overhead + b*slowest
	return p, nil
}

// packState is Pack's working state.
type packState struct {
	m         *Model
	reps      []Replica
	p         *Packing
	sums      []float64                // per replica: Σ of its bins' seconds
	seconds   [][]float64              // per bin and replica: its seconds
	minTokens []float64                // per replica: its emptiest bin's tokens
	classes   []*keyheap.Heap[float64] // by (Σ seconds, index)
	aside     []int
}

// grow opens microbatches up to count to (empty bins in every replica).
func (st *packState) grow(to int) {
	p, nr := st.p, len(st.reps)
	for len(p.Bins) < to {
		p.Bins = append(p.Bins, make([][]int, nr))
		p.Tokens = append(p.Tokens, make([]float64, nr))
		p.Squares = append(p.Squares, make([]float64, nr))
		st.seconds = append(st.seconds, make([]float64, nr))
	}
	clear(st.minTokens)
}

// place puts sequence id of s tokens into a bin (see Pack) and reports
// whether one had room.
func (st *packState) place(id int, s float64) bool {
	p := st.p
	bestJ, bestM, bestC := -1, -1, -1
	var bestTotal, bestSec float64
	for c, h := range st.classes {
		// The class's least-loaded replica with room.
		st.aside = st.aside[:0]
		j := -1
		for h.Len() > 0 {
			top := h.Top()
			p.Visits++
			if st.minTokens[top]+s <= float64(st.reps[top].T.Capacity) {
				j = top
				break
			}
			st.aside = append(st.aside, h.Take())
		}
		for _, a := range st.aside {
			h.Add(a)
		}
		if j < 0 {
			continue
		}
		t := st.reps[j].T
		mb, binNew := -1, 0.0
		for k := range p.Bins {
			// A bin's time only grows: one already as slow as the best so far
			// cannot be better.
			if p.Tokens[k][j]+s > float64(t.Capacity) || mb >= 0 && st.seconds[k][j] >= binNew {
				continue
			}
			sec := t.Seconds(st.m, p.Tokens[k][j]+s, p.Squares[k][j]+s*s)
			if mb < 0 || sec < binNew {
				mb, binNew = k, sec
			}
		}
		after := st.sums[j] - st.seconds[mb][j] + binNew
		if bestJ < 0 || after < bestTotal || after == bestTotal && j < bestJ {
			bestJ, bestM, bestC, bestTotal, bestSec = j, mb, c, after, binNew
		}
	}
	if bestJ < 0 {
		return false
	}
	p.Visits++
	p.Bins[bestM][bestJ] = append(p.Bins[bestM][bestJ], id)
	p.Tokens[bestM][bestJ] += s
	p.Squares[bestM][bestJ] += s * s
	st.sums[bestJ] = bestTotal
	st.seconds[bestM][bestJ] = bestSec
	lo := p.Tokens[0][bestJ]
	for k := range p.Bins {
		lo = min(lo, p.Tokens[k][bestJ])
	}
	st.minTokens[bestJ] = lo
	st.classes[bestC].Fix(bestJ)
	return true
}

// legal returns the least microbatch count >= n the pipeline schedule runs
// (n itself with vpp = 1), or 0 when none is.
func legal(n int, in sched.Inputs) int {
	if in.VPP <= 1 {
		return n
	}
	c, ok := sched.LegalMicrobatchCount(n, in.PP, in.GroupSizeN())
	if !ok {
		return 0
	}
	return c
}

// Microbatches turns a packing into the plan's microbatches: microbatch m
// holds one group per replica with a non-empty bin, its layout from
// layoutOf(replica, bin's sequences, Σ s, Σ s²) (nil: no layout). An empty
// microbatch is dropped; with vpp > 1 that would change a legal count, and
// it fails with sched.ErrCannotPlan instead.
func Microbatches(p *Packing, reps []Replica, lengths []int, in sched.Inputs,
	layoutOf func(j int, seqs []int, tokens int64, squares float64) *sched.Layout) ([]sched.Microbatch, error) {
	var out []sched.Microbatch
	for k, bins := range p.Bins {
		var mb sched.Microbatch
		for j, seqs := range bins {
			if len(seqs) == 0 {
				continue
			}
			var tokens int64
			for _, id := range seqs {
				tokens += int64(lengths[id])
			}
			g := sched.Group{FirstRank: reps[j].First, Size: reps[j].Size, Seqs: seqs}
			if layoutOf != nil {
				g.Layout = layoutOf(j, seqs, tokens, p.Squares[k][j])
			}
			mb.Groups = append(mb.Groups, g)
		}
		if len(mb.Groups) == 0 {
			if in.VPP > 1 {
				return nil, fmt.Errorf("cphp: microbatch %d of %d is empty, and the interleaved schedule needs the count (%w)", k, len(p.Bins), sched.ErrCannotPlan)
			}
			continue
		}
		mb.Closed = fmt.Sprintf("microbatch %d of %d: %d replicas hold sequences", k+1, len(p.Bins), len(mb.Groups))
		out = append(out, mb)
	}
	return out, nil
}

// Apportion splits total into len(weights) integers proportional to the
// weights (each >= 0, not all 0): the floors, then one more to the largest
// remainders (ties: the lower index). Equal weights give the first
// total mod n entries one more than the rest.
func Apportion(total int64, weights []float64) []int64 {
	n := len(weights)
	out := make([]int64, n)
	if n == 0 {
		return out
	}
	var sum float64
	equal := true
	for _, w := range weights {
		sum += w
		equal = equal && w == weights[0]
	}
	if equal || !(sum > 0) {
		for i := range out {
			out[i] = total / int64(n)
			if int64(i) < total%int64(n) {
				out[i]++
			}
		}
		return out
	}
	type rem struct {
		i int
		r float64
	}
	rems := make([]rem, n)
	var used int64
	for i, w := range weights {
		exact := float64(total) * w / sum
		out[i] = int64(exact)
		used += out[i]
		rems[i] = rem{i, exact - float64(out[i])}
	}
	slices.SortStableFunc(rems, func(a, b rem) int { return cmp.Compare(b.r, a.r) })
	for k := 0; used < total; k = (k + 1) % n {
		out[rems[k].i]++
		used++
	}
	for used > total { // rounding of huge totals: take back from the largest
		i := slices.Index(out, slices.Max(out))
		out[i]--
		used--
	}
	return out
}

// EqualLayout is the even CP × HP layout of size ranks in HP groups of u
// (u divides size; heads divisible by u): the tokens split evenly over the
// HP groups (the first tokens mod r one more), each chunk evenly over its u
// ranks (likewise), so chunks differ by at most one token and no rank holds
// more than ⌈tokens/size⌉; every rank runs heads/u heads.
func EqualLayout(size, u int, tokens int64, heads int) *sched.Layout {
	r := size / u
	l := &sched.Layout{HPGroups: make([]int, r), ShardTokens: make([]int, size), Heads: make([]int, size)}
	for h, chunk := range Apportion(tokens, make([]float64, r)) {
		l.HPGroups[h] = u
		for i, t := range Apportion(chunk, make([]float64, u)) {
			l.ShardTokens[h*u+i] = int(t)
			l.Heads[h*u+i] = heads / u
		}
	}
	return l
}

// EqualView is the view of EqualLayout in token shares.
func EqualView(first, size, u, heads int) View {
	v := View{First: first, HPGroups: make([]int, size/u), Tokens: make([]float64, size), Heads: make([]float64, size)}
	for h := range v.HPGroups {
		v.HPGroups[h] = u
	}
	for i := range size {
		v.Tokens[i] = 1 / float64(size)
		v.Heads[i] = float64(heads / u)
	}
	return v
}

// Candidates are the (P, u) factorizations a pool of g ranks offers: P a
// divisor of g that is a power of two, or g itself; u a power of two
// dividing P and heads. They come P ascending, u descending.
func Candidates(g, heads int) [][2]int {
	var out [][2]int
	for p := 1; p <= g; p++ {
		if g%p != 0 || (!sched.IsPow2(p) && p != g) {
			continue
		}
		for u := sched.Pow2Ceil(p); u >= 1; u /= 2 {
			if p%u == 0 && heads%u == 0 {
				out = append(out, [2]int{p, u})
			}
		}
	}
	return out
}

// Choice is the factorization a search chose and its packing.
type Choice struct {
	// P is the group size (the CP × HP degree) and U the HP group size.
	P, U int
	// Replicas are the G/P replicas and Packing the batch packed into them.
	Replicas []Replica
	Packing  *Packing
	// Tried counts the factorizations packed; Visits their packings' visits.
	Tried  int
	Visits int64
}

// Build returns the template of a replica of size ranks from first in HP
// groups of u ranks, or nil when the replica cannot run the factorization.
type Build func(first, size, u int) *Template

// Search packs the batch under every candidate factorization (Candidates,
// filtered by a forced P or U when > 0), each at the least microbatch count
// M0 its memory allows and at M0+1 and 2·M0 (more
// microbatches hold fewer tokens each, which lets a planner that shares by
// capability move work off slow ranks their memory would otherwise fill),
// and keeps the packing that models the shortest iteration (ties: the
// earlier candidate, P ascending, then U descending, then fewer
// microbatches). Replicas with the same kinds at the same node offset share
// one template. It fails when no candidate can hold the batch's longest
// sequence.
func Search(m *Model, lengths []int, in sched.Inputs, forcedP, forcedU int, build Build) (*Choice, error) {
	var best *Choice
	var tried int
	var visits int64
	var lastErr error
	order := LongestFirst(lengths)
	lastP := 0
	for _, c := range Candidates(in.PoolRanks, m.Heads) {
		p, u := c[0], c[1]
		if forcedP > 0 && p != forcedP || forcedU > 0 && u != forcedU || p > in.DegreeLimit() {
			continue
		}
		if m.free && p == lastP {
			continue // free links: every u of a P packs and times alike, and ties keep the first
		}
		lastP = p
		reps, ok := m.replicas(p, u, build)
		if !ok {
			continue
		}
		pk, err := packOrdered(m, lengths, order, reps, in, 1)
		tried++
		if err != nil {
			lastErr = err
			continue
		}
		visits += pk.Visits
		m0, last := len(pk.Bins), 0
		for _, n := range []int{m0, m0 + 1, 2 * m0} {
			if n <= last || n > len(lengths) {
				continue // a count already tried, or more microbatches than sequences
			}
			last = n
			if n > m0 {
				more, err := packOrdered(m, lengths, order, reps, in, n)
				tried++
				if err != nil {
					continue
				}
				visits += more.Visits
				pk = more
			}
			if best == nil || pk.Seconds < best.Packing.Seconds*(1-1e-12) {
				best = &Choice{P: p, U: u, Replicas: reps, Packing: pk}
			}
		}
	}
	if best == nil {
		if lastErr == nil {
			lastErr = fmt.Errorf("cphp: no factorization of %d ranks (forced P %d, u %d; %d heads) (%w)", in.PoolRanks, forcedP, forcedU, m.Heads, sched.ErrCannotPlan)
		}
		return nil, lastErr
	}
	best.Tried, best.Visits = tried, visits
	return best, nil
}

// replicas cuts the pool into replicas of p ranks with templates from build,
// shared by replicas of the same pattern; false when one cannot run.
func (m *Model) replicas(p, u int, build Build) ([]Replica, bool) {
	cache := map[string]*Template{}
	reps := make([]Replica, 0, m.PoolRanks/p)
	for first := 0; first+p <= m.PoolRanks; first += p {
		key := m.pattern(first, p)
		t, ok := cache[key]
		if !ok {
			t = build(first, p, u)
			cache[key] = t
		}
		if t == nil {
			return nil, false
		}
		reps = append(reps, Replica{First: first, Size: p, T: t})
	}
	return reps, true
}

// pattern names what a replica's template depends on: its offset in its
// node and its ranks' kinds (run-length).
func (m *Model) pattern(first, size int) string {
	b := make([]byte, 0, 32)
	b = fmt.Appendf(b, "%d", first%max(m.RanksPerNode, 1))
	for r := first; r < first+size; {
		k := m.kindOf[r]
		n := 0
		for r < first+size && m.kindOf[r] == k {
			r++
			n++
		}
		b = fmt.Appendf(b, "/%d×%d", k, n)
	}
	return string(b)
}
