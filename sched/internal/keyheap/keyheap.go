// Package keyheap is the indexed min-heap of sched's planners: the items
// 0..n-1 ordered by a key slice the caller owns (ties: the lower item), with
// each item's position kept so an item whose key changed can be fixed or
// removed where it stands. Every heap in sched is one of these: HyDra's
// backfill queues and hydra-hetero's group heaps, cphp's replicas, FlexSP's
// groups, ByteScale's slots, WLB-LLM's microbatches. (HyDra's placement
// queues are sched/hydra's winner trees, 4× faster a fix on that loop's
// pattern and tested against this package.)
//
// The sifting is written here, once, rather than through container/heap,
// whose Less and Swap are interface calls the compiler cannot inline: on a
// placement loop's pattern (the top of 4096 items takes a load and sinks,
// once per sequence placed) a fix through container/heap costs 2.2-2.8× this
// package's (BenchmarkFix). The heap is 4-ary with each entry's key cached
// beside its item, so a level reads four children from one or two cache
// lines and picks the least without an unpredictable branch. The tests
// drive it and a container/heap reference with the same operations and
// check that they agree (and a fuzz target does the same).
package keyheap

import "cmp"

// Heap is an indexed min-heap over items 0..len(key)-1 ordered by
// (key[item], item). Keys must not be NaN. The zero value is not usable;
// build one with New, Full or Sibling.
type Heap[K cmp.Ordered] struct {
	key []K
	// heap is a 4-ary heap of (key, item), the key copied in when the item is
	// added or fixed so a sift reads each child with one load.
	heap []entry[K]
	pos  []int32 // by item: index in heap, -1 when absent (shared by siblings)
	// Ops counts the additions, removals and fixes made (Full counts one per
	// item).
	Ops int64
}

// arity is the heap's branching factor: four children sit in one or two
// cache lines, and the tree is half as deep as a binary heap's.
const arity = 4

// entry is one heap slot: an item and its key when last added or fixed.
type entry[K cmp.Ordered] struct {
	key  K
	item int32
}

// precedes is the heap order: lesser key, then lower item.
func precedes[K cmp.Ordered](a, b entry[K]) bool {
	return a.key < b.key || a.key == b.key && a.item < b.item
}

// New returns an empty heap over the items of key; key is shared, not
// copied: change key[i] and call Fix(i).
func New[K cmp.Ordered](key []K) *Heap[K] {
	h := &Heap[K]{key: key, pos: make([]int32, len(key))}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

// Full returns a heap holding every item of key, heapified (one operation
// per item).
func Full[K cmp.Ordered](key []K) *Heap[K] {
	n := len(key)
	h := &Heap[K]{key: key, heap: make([]entry[K], n), pos: make([]int32, n), Ops: int64(n)}
	for i, k := range key {
		h.heap[i], h.pos[i] = entry[K]{key: k, item: int32(i)}, int32(i)
	}
	for i := (n - 2) / arity; i >= 0; i-- {
		h.down(i)
	}
	return h
}

// Sibling returns an empty heap over the same items ordered by key (as long
// as h's), sharing h's positions: an item may be in only one heap of a
// family at a time, and moving it between them needs no position array per
// heap. Its Ops count is its own.
func (h *Heap[K]) Sibling(key []K) *Heap[K] {
	if len(key) != len(h.pos) {
		panic("keyheap: Sibling's keys are not as many as the heap's items")
	}
	return &Heap[K]{key: key, pos: h.pos}
}

// Len returns how many items the heap holds.
func (h *Heap[K]) Len() int { return len(h.heap) }

// Contains reports whether item i is in the heap (or, for siblings, in one
// of its family).
func (h *Heap[K]) Contains(i int) bool { return h.pos[i] >= 0 }

// Top returns the item of least key; the heap must not be empty.
func (h *Heap[K]) Top() int { return int(h.heap[0].item) }

// Add puts item i, in no heap of its family, into h, keyed by key[i].
func (h *Heap[K]) Add(i int) {
	h.Ops++
	n := len(h.heap)
	h.heap = append(h.heap, entry[K]{key: h.key[i], item: int32(i)})
	h.pos[i] = int32(n)
	h.up(n)
}

// Take removes and returns the item of least key; the heap must not be
// empty.
func (h *Heap[K]) Take() int {
	i := h.Top()
	h.Remove(i)
	return i
}

// Remove takes item i, which is in h, out of it.
func (h *Heap[K]) Remove(i int) {
	h.Ops++
	at := int(h.pos[i])
	last := len(h.heap) - 1
	h.pos[i] = -1
	moved := h.heap[last]
	h.heap = h.heap[:last]
	if at == last {
		return
	}
	h.heap[at] = moved
	h.pos[moved.item] = int32(at)
	if !h.down(at) {
		h.up(at)
	}
}

// Fix restores the order after item i's key changed; i is in h.
func (h *Heap[K]) Fix(i int) {
	h.Ops++
	at := int(h.pos[i])
	h.heap[at].key = h.key[i]
	if !h.down(at) {
		h.up(at)
	}
}

// Clear empties the heap, keeping its storage; it counts no operation.
func (h *Heap[K]) Clear() {
	for _, e := range h.heap {
		h.pos[e.item] = -1
	}
	h.heap = h.heap[:0]
}

// up moves the entry at index j towards the root while it precedes its
// parent, carrying it in a hole instead of swapping at every level.
func (h *Heap[K]) up(j int) {
	heap, pos := h.heap, h.pos
	x := heap[j]
	for j > 0 {
		parent := (j - 1) / arity
		p := heap[parent]
		if !precedes(x, p) {
			break
		}
		heap[j] = p
		pos[p.item] = int32(j)
		j = parent
	}
	heap[j] = x
	pos[x.item] = int32(j)
}

// down moves the entry at index i towards the leaves while its least child
// precedes it, and reports whether it moved. The least of four children is
// found without a branch (two pairs, then their winners), so the only
// branch a level is the predictable one that stops the sift.
func (h *Heap[K]) down(i int) bool {
	heap, pos := h.heap, h.pos
	n := len(heap)
	i0, x := i, heap[i]
	for {
		c := arity*i + 1
		if c >= n || c < 0 {
			break
		}
		var m entry[K]
		if c+arity <= n {
			ch := heap[c : c+arity : c+arity]
			a := before(ch[1], ch[0])
			b := 2 + before(ch[3], ch[2])
			w := b ^ (a^b)&-before(ch[a], ch[b])
			c += w
			m = ch[w]
		} else {
			m = heap[c]
			for j := c + 1; j < n; j++ {
				if precedes(heap[j], m) {
					c, m = j, heap[j]
				}
			}
		}
		if !precedes(m, x) {
			break
		}
		heap[i] = m
		pos[m.item] = int32(i)
		i = c
	}
	heap[i] = x
	pos[x.item] = int32(i)
	return i > i0
}

// before is precedes as 0 or 1, computed without a branch: equal keys are
// common (HyDra's groups of one equal-length sequence), so a tie test the
// predictor must guess cost more than it saved.
func before[K cmp.Ordered](a, b entry[K]) int {
	return b2i(a.key < b.key) | b2i(a.key == b.key)&b2i(a.item < b.item)
}

// b2i is 1 for true, 0 for false (the compiler emits a SETcc, no branch).
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
