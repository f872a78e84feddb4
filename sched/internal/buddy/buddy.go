// Package buddy keeps the free power-of-two aligned rank blocks of one
// microbatch for HyDra's packers (sched/hydra, sched/hydrahetero): the
// Lowest free block of a size, taking a block and testing a buddy, each in
// O(log G).
package buddy

import "math/bits"

// Tree tracks the free power-of-two aligned rank blocks of the open MB: a
// complete binary tree over P = pow2ceil(G) leaf ranks in which node n at level
// size covers the aligned block of that size, and largest[n] is the size of the
// largest free aligned block inside it (its own size when all of it is free).
// Ranks >= G are never free. Finding the Lowest free k-aligned block, taking a
// block and testing a buddy cost O(log G); a new MB starts from a copy of the
// initial tree.
//
// Taking a block zeroes its node and recomputes its ancestors; its descendants go
// stale, which is safe: a search descends only through nodes with largest >= k > 0,
// and the only blocks tested with IsFree are buddies of groups, which can never lie
// inside a taken block (that block would contain the group too).
type Tree struct {
	leaves  int     // P
	largest []int32 // 1-based heap layout; len 2P
	initial []int32 // the all-free tree of the pool
}

// New returns the tree of a pool of poolRanks ranks, all free.
func New(poolRanks int) *Tree {
	p := 1
	for p < poolRanks {
		p *= 2
	}
	t := &Tree{leaves: p, largest: make([]int32, 2*p), initial: make([]int32, 2*p)}
	for r := range poolRanks {
		t.initial[p+r] = 1
	}
	for n := p - 1; n >= 1; n-- {
		l, r := t.initial[2*n], t.initial[2*n+1]
		// The children of node n (level bits.Len(n), root 1) have size P>>level.
		if int(l) == p>>bits.Len(uint(n)) && l == r {
			t.initial[n] = 2 * l // both halves wholly free
		} else {
			t.initial[n] = max(l, r)
		}
	}
	t.Reset()
	return t
}

// Reset frees every rank of the pool.
func (t *Tree) Reset() { copy(t.largest, t.initial) }

// MaxFree returns the size of the largest free aligned block.
func (t *Tree) MaxFree() int { return int(t.largest[1]) }

// Leaves returns P = pow2ceil(G), the ranks the tree spans (those >= G are
// never free).
func (t *Tree) Leaves() int { return t.leaves }

// node returns the node of the aligned block [first, first+size).
func (t *Tree) node(first, size int) int { return t.leaves/size + first/size }

// Lowest returns the first rank of the Lowest free k-aligned block; the caller
// has checked MaxFree() >= k.
func (t *Tree) Lowest(k int) int {
	n, size := 1, t.leaves
	for size > k {
		n *= 2
		if int(t.largest[n]) < k {
			n++
		}
		size /= 2
	}
	return (n - t.leaves/size) * size
}

// IsFree reports whether the aligned block [first, first+size) is wholly free.
func (t *Tree) IsFree(first, size int) bool {
	return int(t.largest[t.node(first, size)]) == size
}

// Take marks the aligned block [first, first+size) as used.
func (t *Tree) Take(first, size int) {
	n := t.node(first, size)
	t.largest[n] = 0
	for n > 1 {
		n /= 2
		t.largest[n] = max(t.largest[2*n], t.largest[2*n+1])
	}
}

// LowestFrom returns the first rank of the Lowest free k-aligned block that
// starts at or after from, or -1 if none.
func (t *Tree) LowestFrom(k, from int) int {
	var search func(n, size, lo int) int
	search = func(n, size, lo int) int {
		if int(t.largest[n]) < k || lo+size <= from {
			return -1
		}
		if size == k {
			return lo
		}
		if r := search(2*n, size/2, lo); r >= 0 {
			return r
		}
		return search(2*n+1, size/2, lo+size/2)
	}
	return search(1, t.leaves, 0)
}
