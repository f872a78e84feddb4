package hydra

import "math/bits"

// blockTree tracks the free power-of-two aligned rank blocks of the open MB: a
// complete binary tree over P = pow2ceil(G) leaf ranks in which node n at level
// size covers the aligned block of that size, and largest[n] is the size of the
// largest free aligned block inside it (its own size when all of it is free).
// Ranks >= G are never free. Finding the lowest free k-aligned block, taking a
// block and testing a buddy cost O(log G); a new MB starts from a copy of the
// initial tree.
//
// Taking a block zeroes its node and recomputes its ancestors; its descendants go
// stale, which is safe: a search descends only through nodes with largest >= k > 0,
// and the only blocks tested with isFree are buddies of groups, which can never lie
// inside a taken block (that block would contain the group too).
type blockTree struct {
	leaves  int     // P
	largest []int32 // 1-based heap layout; len 2P
	initial []int32 // the all-free tree of the pool
}

func newBlockTree(poolRanks int) *blockTree {
	p := 1
	for p < poolRanks {
		p *= 2
	}
	t := &blockTree{leaves: p, largest: make([]int32, 2*p), initial: make([]int32, 2*p)}
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
	t.reset()
	return t
}

// reset frees every rank of the pool.
func (t *blockTree) reset() { copy(t.largest, t.initial) }

// maxFree returns the size of the largest free aligned block.
func (t *blockTree) maxFree() int { return int(t.largest[1]) }

// node returns the node of the aligned block [first, first+size).
func (t *blockTree) node(first, size int) int { return t.leaves/size + first/size }

// lowest returns the first rank of the lowest free k-aligned block; the caller
// has checked maxFree() >= k.
func (t *blockTree) lowest(k int) int {
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

// isFree reports whether the aligned block [first, first+size) is wholly free.
func (t *blockTree) isFree(first, size int) bool {
	return int(t.largest[t.node(first, size)]) == size
}

// take marks the aligned block [first, first+size) as used.
func (t *blockTree) take(first, size int) {
	n := t.node(first, size)
	t.largest[n] = 0
	for n > 1 {
		n /= 2
		t.largest[n] = max(t.largest[2*n], t.largest[2*n+1])
	}
}

// lowestFrom returns the first rank of the lowest free k-aligned block that
// starts at or after from, or -1 if none.
func (t *blockTree) lowestFrom(k, from int) int {
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
