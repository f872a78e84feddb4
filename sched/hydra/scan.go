package hydra

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
)

// ScanStepLimit bounds the steps (sequences, groups and ranks visited) of one
// hydra-scan plan: the linear reference's work grows as sequences × ranks ×
// microbatches (5·10^9 steps, 11 s, for 10^5 sequences on 2^20 ranks; hours
// at the --batches maxima), so a batch past it is refused, deterministically,
// after about 5 s (some 2.2 ns a step). hydra plans the same batch the same
// way in milliseconds. A variable only so benchmarks of the reference at scale
// can raise it (0: no bound); nothing else sets it.
var ScanStepLimit int64 = 1 << 31

// ErrScanTooLarge is wrapped by hydra-scan's error on a batch past
// ScanStepLimit; it matches sched.ErrInvalidInput.
var ErrScanTooLarge = fmt.Errorf("%w: the linear-scan reference (hydra-scan) is bounded", sched.ErrInvalidInput)

// scanGroup is an open CP group of the linear reference: its rank block and the
// Σ s² (tokens²) and Σ s (tokens) of its sequences.
type scanGroup struct {
	first, size     int
	squares, tokens int64
}

// scanPacker is the plain linear-scan reference of spec §5 (policy "hydra-scan"):
// every decision is a scan over all ranks or all open groups. It shares nothing
// with the heap packer but the closed form and the plan builder, so the tests that
// compare the two check the heaps, the free-block tree and the skipping.
type scanPacker struct {
	t         Targets
	poolRanks int
	lengths   []int
	order     []int // sequence ids, longest first, ties by lower id
	degree    []int // degree[id] = cp(lengths[id])
	placed    []bool
	busy      []bool // rank is in a group of the open MB
	groups    []scanGroup
	b         *PlanBuilder
	steps     int64 // sequences, groups and ranks visited
	limit     int64 // stop once steps pass it (0: no limit)
}

// packScan plans the batch with the linear reference, unbounded.
func packScan(lengths []int, poolRanks int, t Targets) (*PlanBuilder, int64) {
	b, steps, _ := packScanLimited(lengths, poolRanks, t, 0)
	return b, steps
}

// packScanLimited is packScan stopping once more than limit steps were made
// (0: no limit); ok is false when it stopped.
func packScanLimited(lengths []int, poolRanks int, t Targets, limit int64) (b *PlanBuilder, steps int64, ok bool) {
	p := &scanPacker{
		t: t, poolRanks: poolRanks, lengths: lengths,
		order:  make([]int, len(lengths)),
		degree: make([]int, len(lengths)),
		placed: make([]bool, len(lengths)),
		busy:   make([]bool, poolRanks),
		b:      NewPlanBuilder(poolRanks, len(lengths)),
		limit:  limit,
	}
	for i := range p.order {
		p.order[i] = i
		p.degree[i] = t.Degree(lengths[i])
	}
	slices.SortStableFunc(p.order, func(a, b int) int { return cmp.Compare(lengths[b], lengths[a]) })
	remaining := len(lengths)
	for remaining > 0 {
		clear(p.busy)
		p.groups = p.groups[:0]
		for _, id := range p.order {
			if p.placed[id] {
				continue
			}
			if limit > 0 && p.steps > limit {
				return p.b, p.steps, false
			}
			p.steps++
			if p.place(id) {
				p.placed[id] = true
				remaining--
			}
		}
		doublings := p.backfill()
		if limit > 0 && p.steps > limit {
			return p.b, p.steps, false
		}
		w := Waiting{Remaining: remaining}
		for _, id := range p.order {
			if !p.placed[id] {
				w.ID, w.Tokens, w.Degree = id, lengths[id], p.degree[id]
				break
			}
		}
		p.b.Close(w, doublings)
	}
	return p.b, p.steps, true
}

// place puts sequence id into the open MB if it fits (spec §5): a new group on the
// lowest free k-aligned block, else the smallest feasible open group of size >= k
// (ties: lower Σ s², i.e. lower per-rank load at equal size, then lower first
// rank). It reports whether the sequence was placed.
func (p *scanPacker) place(id int) bool {
	s := int64(p.lengths[id])
	k := p.degree[id]
	for first := 0; first+k <= p.poolRanks; first += k {
		if p.free(first, k) {
			for r := first; r < first+k; r++ {
				p.busy[r] = true
			}
			p.groups = append(p.groups, scanGroup{first: first, size: k, squares: s * s, tokens: s})
			p.b.Add(p.b.Open(first, k), id)
			return true
		}
	}
	best := -1
	for gi, g := range p.groups {
		p.steps++
		if g.size < k || g.squares+s*s > p.t.capSquares(g.size) || g.tokens+s > satMul(int64(p.t.BudgetTokens), int64(g.size)) {
			continue
		}
		if best < 0 || less3(g.size, g.squares, g.first, p.groups[best].size, p.groups[best].squares, p.groups[best].first) {
			best = gi
		}
	}
	if best < 0 {
		return false
	}
	p.groups[best].squares += s * s
	p.groups[best].tokens += s
	p.b.Add(int32(best), id)
	return true
}

// free reports whether ranks [first, first+size) are all free.
func (p *scanPacker) free(first, size int) bool {
	for r := first; r < first+size; r++ {
		p.steps++
		if p.busy[r] {
			return false
		}
	}
	return true
}

// backfill repeatedly doubles the smallest group below C* whose buddy block is
// free (ties: lower Σ s², then lower first rank) and returns how many doublings it
// made.
func (p *scanPacker) backfill() int {
	doublings := 0
	for {
		if p.limit > 0 && p.steps > p.limit {
			return doublings // the caller stops
		}
		best := -1
		for gi, g := range p.groups {
			p.steps++
			if g.size >= p.t.Cap {
				continue
			}
			buddy := g.first ^ g.size
			if buddy+g.size > p.poolRanks || !p.free(buddy, g.size) {
				continue
			}
			if best < 0 || less3(g.size, g.squares, g.first, p.groups[best].size, p.groups[best].squares, p.groups[best].first) {
				best = gi
			}
		}
		if best < 0 {
			return doublings
		}
		g := &p.groups[best]
		buddy := g.first ^ g.size
		for r := buddy; r < buddy+g.size; r++ {
			p.busy[r] = true
		}
		g.first &^= g.size
		g.size *= 2
		p.b.Double(int32(best))
		doublings++
	}
}

// less3 orders (size, squares, first) lexicographically.
func less3(aSize int, aSquares int64, aFirst int, bSize int, bSquares int64, bFirst int) bool {
	if aSize != bSize {
		return aSize < bSize
	}
	if aSquares != bSquares {
		return aSquares < bSquares
	}
	return aFirst < bFirst
}

// satMul returns a·b for a, b >= 0, saturated at the largest int64.
func satMul(a, b int64) int64 {
	if b != 0 && a > (1<<63-1)/b {
		return 1<<63 - 1
	}
	return a * b
}
