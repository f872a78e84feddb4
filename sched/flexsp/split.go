package flexsp

import (
	"cmp"
	"math"
	"slices"

	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
)

// deal places items on n identical groups, longest processing time first:
// items come heaviest first (weights[i] seconds, tokens[i] of a group's
// memory), each goes to the group of least time load among those with room
// for its tokens (ties: the lowest group). It returns each item's group, or
// ok = false when an item fits no group. This is how an aggregated class's
// sequences become groups (list scheduling: without the memory check every
// group ends within one item of the class's mean load). ops counts heap
// operations.
func deal(weights []float64, tokens []int64, n int, capacity int64) (group []int, ok bool, ops int64) {
	load := make([]float64, n)
	h := keyheap.Full(load) // by (time load, index); equal loads: nothing moves
	free := make([]int64, n)
	for g := range n {
		free[g] = capacity
	}
	group = make([]int, len(weights))
	var skipped []int
	for i, w := range weights {
		placed := -1
		for h.Len() > 0 {
			g := h.Take()
			ops++
			if free[g] >= tokens[i] {
				placed = g
				break
			}
			skipped = append(skipped, g)
		}
		if placed < 0 {
			return nil, false, ops
		}
		group[i] = placed
		load[placed] += w
		free[placed] -= tokens[i]
		h.Add(placed)
		for _, g := range skipped {
			h.Add(g)
		}
		ops += int64(1 + len(skipped))
		skipped = skipped[:0]
	}
	return group, true, ops
}

// startGroup is one CP group of a heuristic solution: its size and how
// many sequences of each bucket it holds.
type startGroup struct {
	Degree int
	counts []int
	load   float64 // b1 + Σ w
}

// dealClass deals a class's bucketed sequences (counts per bucket) onto n
// groups of size d (LPT with the memory check) and returns the groups, or
// nil when a sequence fits no group.
func (p *mbProblem) dealClass(d, n int, counts []int) ([]startGroup, int64) {
	var weights []float64
	var tokens []int64
	var bucketOf []int
	for q := len(p.buckets) - 1; q >= 0; q-- {
		for range counts[q] {
			weights = append(weights, p.timing.seqSeconds(p.buckets[q].Boundary, d))
			tokens = append(tokens, int64(p.buckets[q].Boundary))
			bucketOf = append(bucketOf, q)
		}
	}
	g, ok, ops := deal(weights, tokens, n, int64(d)*int64(p.budget))
	if !ok {
		return nil, ops
	}
	out := make([]startGroup, n)
	for i := range out {
		out[i] = startGroup{Degree: d, counts: make([]int, len(p.buckets)), load: p.timing.b1}
	}
	for i, gi := range g {
		out[gi].counts[bucketOf[i]]++
		out[gi].load += weights[i]
	}
	return out, ops
}

// groupsCmax is the largest group time.
func groupsCmax(groups []startGroup) float64 {
	c := 0.0
	for _, g := range groups {
		c = max(c, g.load)
	}
	return c
}

// homogeneousStart is the public code's initial solution
// (generate_balanced_initial_solution): every group of one size d, the
// bucketed sequences dealt onto the pool/d groups; it tries each candidate
// size every bucket may run on (and whose groups tile the pool when
// fillPool) and keeps the one with the least Cmax (nil when none works).
// A size whose bound b1 + max(mean load, costliest sequence) cannot beat
// bar (the best Cmax known so far; +Inf for none) is not dealt: its deal
// could not be kept.
func (p *mbProblem) homogeneousStart(bar float64) (best []startGroup, ops int64) {
	all := make([]int, len(p.buckets))
	items := 0
	for q, b := range p.buckets {
		all[q] = b.Count
		items += b.Count
	}
	for _, d := range p.degrees {
		n := p.pool / d
		if n < 1 || p.fillPool && (n*d != p.pool || items < n) || minDegree(p.buckets[len(p.buckets)-1].Boundary, p.budget) > d {
			continue
		}
		var work, costliest float64
		for _, b := range p.buckets {
			w := p.timing.seqSeconds(b.Boundary, d)
			work += float64(b.Count) * w
			costliest = max(costliest, w)
		}
		if best != nil {
			bar = min(bar, groupsCmax(best))
		}
		if p.timing.b1+max(work/float64(n), costliest) >= bar {
			continue
		}
		groups, o := p.dealClass(d, n, all)
		ops += o
		if groups != nil && (best == nil || groupsCmax(groups) < groupsCmax(best)) {
			best = groups
		}
	}
	return best, ops
}

// proportionalStart is a mixed-size solution for the time target the pool
// affords: for a per-group time budget T, every bucket goes to the smallest
// size on which one of its sequences alone fits T (the least all-to-all:
// rank-seconds a1·s² + (a2 + u_d)·s grow with d), and each size gets the
// groups its work, its memory and its long sequences need (the aggregated
// class's rows); the least T whose groups fit the pool is found by
// bisection, the sequences dealt onto the groups, and with fillPool the
// ranks left over become more groups where sequences remain to fill them.
// nil when no T fits or a deal fails.
func (p *mbProblem) proportionalStart() ([]startGroup, int64) {
	var ops int64
	plan := func(t float64) (classOf []int, n map[int]int, ok bool) {
		classOf = make([]int, len(p.buckets))
		n = map[int]int{}
		work := map[int]float64{}
		tokens := map[int]int64{}
		for q, b := range p.buckets {
			classOf[q] = 0
			for _, d := range p.degrees {
				if p.eligible(q, d) && p.timing.seqSeconds(b.Boundary, d) <= t {
					classOf[q] = d
					break
				}
			}
			if classOf[q] == 0 {
				return nil, nil, false
			}
			work[classOf[q]] += float64(b.Count) * p.timing.seqSeconds(b.Boundary, classOf[q])
			tokens[classOf[q]] += int64(b.Count) * int64(b.Boundary)
		}
		ranks := 0
		for _, d := range p.degrees {
			if work[d] == 0 && tokens[d] == 0 {
				continue
			}
			capacity := int64(d) * int64(p.budget)
			need := max(int(math.Ceil(work[d]/t-1e-9)), int((tokens[d]+capacity-1)/capacity))
			for k := 1; k <= maxCardinality; k++ {
				long := 0
				for q, b := range p.buckets {
					if classOf[q] == d && int64(b.Boundary)*int64(k+1) > capacity {
						long += b.Count
					}
				}
				need = max(need, (long+k-1)/k)
			}
			n[d] = max(need, 1)
			ranks += d * n[d]
		}
		return classOf, n, ranks <= p.pool
	}
	lo, hi := 0.0, 0.0
	for _, b := range p.buckets {
		hi += float64(b.Count) * p.timing.seqSeconds(b.Boundary, p.degrees[len(p.degrees)-1])
	}
	hi = max(hi, 1e-12)
	if _, _, ok := plan(hi); !ok {
		return nil, ops
	}
	for range 60 {
		mid := (lo + hi) / 2
		if _, _, ok := plan(mid); ok {
			hi = mid
		} else {
			lo = mid
		}
		ops++
	}
	classOf, n, _ := plan(hi)
	used := 0
	for d, k := range n {
		used += d * k
	}
	var groups []startGroup
	for _, d := range p.degrees {
		k, ok := n[d]
		if !ok {
			continue
		}
		counts := make([]int, len(p.buckets))
		items := 0
		for q, b := range p.buckets {
			if classOf[q] == d {
				counts[q] = b.Count
				items += b.Count
			}
		}
		if p.fillPool { // spend the spare ranks on this size while sequences remain
			for used+d <= p.pool && k < items && p.pool-used >= d {
				k++
				used += d
			}
		}
		g, o := p.dealClass(d, k, counts)
		ops += o
		for g == nil && used+d <= p.pool && k < items {
			// The mean fits but the packing does not: one more group.
			k++
			used += d
			g, o = p.dealClass(d, k, counts)
			ops += o
		}
		if g == nil {
			return nil, ops
		}
		groups = append(groups, g...)
	}
	if p.fillPool && used != p.pool {
		return nil, ops
	}
	return groups, ops
}

// start maps a heuristic solution onto the model's variables: each size's
// explicit groups take its heaviest groups (the symmetry rows order them by
// load), its aggregated class the rest; Cmax is the largest group time. It
// returns nil when the solution does not fit the model (more groups of a
// size than the model holds).
func (fm *formulation) start(groups []startGroup) []float64 {
	v := make([]float64, fm.model.NumVars())
	bySize := map[int][]startGroup{}
	for _, g := range groups {
		bySize[g.Degree] = append(bySize[g.Degree], g)
	}
	for _, gs := range bySize {
		slices.SortStableFunc(gs, func(a, b startGroup) int { return cmp.Compare(b.load, a.load) })
	}
	v[fm.cmax] = groupsCmax(groups)
	for _, c := range fm.classes {
		gs := bySize[c.Degree]
		if len(gs) == 0 {
			continue
		}
		take := min(c.Max, len(gs))
		if c.Explicit {
			v[c.bits[0]] = 1
		} else {
			for j, b := range c.bits {
				if take>>j&1 == 1 {
					v[b] = 1
					v[c.cbits[j]] = v[fm.cmax]
				}
			}
		}
		for _, g := range gs[:take] {
			for q, x := range c.x {
				if x >= 0 {
					v[x] += float64(g.counts[q])
				}
			}
		}
		bySize[c.Degree] = gs[take:]
	}
	for _, gs := range bySize {
		if len(gs) > 0 {
			return nil
		}
	}
	return v
}
