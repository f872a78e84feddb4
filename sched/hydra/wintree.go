package hydra

import (
	"math"
	"math/bits"
)

// winnerTree is a tournament (winner) tree over the first ranks of one size
// class: an indexed min-queue of the items 0, 2^shift, 2·2^shift, … below its
// span, ordered by (key[item], item), with the same methods and the same top
// as a sched/internal/keyheap.Heap holding the same items. The heap packer
// uses one for each class's load and capacity queue instead of keyheap: a
// group there takes a sequence at the top and sinks most of the way down, and
// a heap's sift must pick the least child at each level before it knows the
// next level's address, while the tree's path from leaf to root is fixed, so
// the loads of a level do not wait on the comparisons of the one below.
// Measured (2 shared cores, interleaved runs): BenchmarkQueueFix, the
// placement pattern on 3,200 of 4,096 ranks, keyheap 90-100 ns a fix, winner
// tree 23 ns; sched/policies' BenchmarkPlan/hydra/G=4096, keyheap 34.5-37.3
// ms/plan, winner trees 24.4-25.5 ms (with sortLongestFirst's narrower digits,
// about 1 ms of it).
//
// Leaf l stands for item l<<shift; node 1 is the root, node leaves+l is leaf
// l, node i's children are 2i and 2i+1. Each node holds the least entry of its
// subtree; ties go to the left child, whose items are all lower, so the root
// is the least (key, item). Keys are stored offset by math.MinInt64, which
// maps [0, MaxInt64] onto [MinInt64, -1], so the zero entry (an absent leaf)
// loses to every key >= 0 and clear empties the tree.
//
// Adds are deferred: Add only stores the leaf, and the next other use of the
// tree (Top, Remove, Fix) replays the pending leaves' paths, or, when that is
// cheaper, recomputes every node above the span of leaves they cover, level
// by level. An MB opens its groups in a run, on the lowest free blocks, before
// any of them is queried, so one pass over a few thousand nodes replaces a
// path replay per group.
type winnerTree struct {
	key   []int64
	shift uint
	node  []winEntry
	count int
	dirty bool // some leaf was set since the last Clear
	// pending holds the leaves added since the tree was last settled, all
	// within [pendLo, pendHi].
	pending        []int32
	pendLo, pendHi int32
	depth          int // levels above the leaves
}

// winEntry is a node: the least stored key of its subtree and its leaf.
type winEntry struct {
	key  int64 // key + math.MinInt64; 0 when no leaf below is present
	leaf int32
}

// newWinnerTree returns an empty tree over the items i<<shift, i < leaves (a
// power of two), keyed by key (shared, not copied: change key[item] and call
// Fix(item)). Keys must be >= 0.
func newWinnerTree(key []int64, shift uint, leaves int) winnerTree {
	return winnerTree{key: key, shift: shift, node: make([]winEntry, 2*leaves),
		pending: make([]int32, 0, leaves), depth: bits.Len(uint(leaves)) - 1}
}

// Len returns how many items the tree holds.
func (t *winnerTree) Len() int { return t.count }

// Top returns the item of least (key, item); the tree must not be empty.
func (t *winnerTree) Top() int {
	if len(t.pending) > 0 {
		t.settle()
	}
	return int(t.node[1].leaf) << t.shift
}

// Add puts item i, not in the tree, into it, keyed by key[i].
func (t *winnerTree) Add(i int) {
	t.count++
	t.dirty = true
	l := int32(i >> t.shift)
	t.node[len(t.node)/2+int(l)] = winEntry{t.stored(i), l}
	if len(t.pending) == 0 {
		t.pendLo, t.pendHi = l, l
	}
	t.pendLo, t.pendHi = min(t.pendLo, l), max(t.pendHi, l)
	t.pending = append(t.pending, l)
}

// Remove takes item i, which is in the tree, out of it.
func (t *winnerTree) Remove(i int) {
	if len(t.pending) > 0 {
		t.settle()
	}
	t.count--
	t.set(i, 0)
}

// Fix restores the order after item i's key changed; i is in the tree.
func (t *winnerTree) Fix(i int) {
	if len(t.pending) > 0 {
		t.settle()
	}
	t.set(i, t.stored(i))
}

// stored returns item i's key as stored, offset by math.MinInt64.
func (t *winnerTree) stored(i int) int64 {
	k := t.key[i] + math.MinInt64
	if k >= 0 {
		panic("hydra: winnerTree key < 0")
	}
	return k
}

// Clear empties the tree.
func (t *winnerTree) Clear() {
	if t.dirty {
		clear(t.node)
		t.count, t.dirty, t.pending = 0, false, t.pending[:0]
	}
}

// settle brings the nodes above the pending leaves up to date: a path replay
// per leaf (depth nodes each), or every node above [pendLo, pendHi] (about
// twice its width, plus the levels), whichever touches fewer nodes. A replay
// recomputes each node of its path from both children, so replays in any
// order leave every common ancestor right.
func (t *winnerTree) settle() {
	node := t.node
	leaves := len(node) / 2
	lo, hi := leaves+int(t.pendLo), leaves+int(t.pendHi)
	if len(t.pending)*t.depth <= 2*(hi-lo+1)+2*t.depth {
		for _, l := range t.pending {
			j := leaves + int(l)
			t.set(int(l)<<t.shift, node[j].key)
		}
	} else {
		for lo > 1 {
			lo, hi = lo>>1, hi>>1
			for j := lo; j <= hi; j++ {
				w, r := node[2*j], node[2*j+1]
				if r.key < w.key {
					w = r
				}
				node[j] = w
			}
		}
	}
	t.pending = t.pending[:0]
}

// set stores item i's leaf with the stored key k and replays its matches up
// to the root: at each level the winner is the sibling if its key is less,
// else the entry carried up (ties: the left one).
func (t *winnerTree) set(i int, k int64) {
	t.dirty = true
	node := t.node
	j := len(node)/2 + i>>t.shift
	xk, xl := k, int32(i>>t.shift)
	node[j] = winEntry{xk, xl}
	for j > 1 {
		sib := node[j^1]
		// The sibling wins with a lesser key, or an equal one from the left
		// (j odd). Stored keys are <= 0, so +1 cannot overflow. Which side
		// wins is data: the compiler makes this two conditional moves, no
		// branch to mispredict.
		if sib.key < xk+int64(j&1) {
			xk, xl = sib.key, sib.leaf
		}
		j >>= 1
		node[j] = winEntry{xk, xl}
	}
}
