// Package keyheap is a min-heap of the items 0..n-1 ordered by a key slice
// the caller owns (ties: the lower item), that keeps each item's position so
// an item whose key changed can be fixed or removed where it stands. The
// sifting is container/heap's; this package adds only the positions and an
// operation count, which planners report as work.
package keyheap

import (
	"cmp"
	"container/heap"
)

// Heap is an indexed min-heap over items 0..len(key)-1 keyed by key[item].
// The zero value is not usable; build one with New or Full.
type Heap[K cmp.Ordered] struct {
	key   []K
	items []int32
	pos   []int32 // by item: index in items, -1 when absent
	// Ops counts the additions, removals and fixes made.
	Ops int64
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
	h := &Heap[K]{key: key, items: make([]int32, len(key)), pos: make([]int32, len(key)), Ops: int64(len(key))}
	for i := range key {
		h.items[i], h.pos[i] = int32(i), int32(i)
	}
	heap.Init(h)
	return h
}

// Len returns how many items the heap holds (heap.Interface).
func (h *Heap[K]) Len() int { return len(h.items) }

// Less orders by key, then by item (heap.Interface).
func (h *Heap[K]) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	if c := cmp.Compare(h.key[a], h.key[b]); c != 0 {
		return c < 0
	}
	return a < b
}

// Swap swaps two positions and keeps the items' positions (heap.Interface).
func (h *Heap[K]) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.pos[h.items[i]], h.pos[h.items[j]] = int32(i), int32(j)
}

// Push appends item x, an int (heap.Interface; use Add).
func (h *Heap[K]) Push(x any) {
	i := x.(int)
	h.pos[i] = int32(len(h.items))
	h.items = append(h.items, int32(i))
}

// Pop drops the last item and returns nil (heap.Interface; use Take or
// Remove, which know the item without boxing it).
func (h *Heap[K]) Pop() any {
	last := len(h.items) - 1
	h.pos[h.items[last]] = -1
	h.items = h.items[:last]
	return nil
}

// Contains reports whether item i is in the heap.
func (h *Heap[K]) Contains(i int) bool { return h.pos[i] >= 0 }

// Top returns the item of least key; the heap must not be empty.
func (h *Heap[K]) Top() int { return int(h.items[0]) }

// Add puts item i, not in the heap, into it.
func (h *Heap[K]) Add(i int) {
	h.Ops++
	h.pos[i] = int32(len(h.items))
	h.items = append(h.items, int32(i))
	heap.Fix(h, len(h.items)-1)
}

// Take removes and returns the item of least key; the heap must not be
// empty.
func (h *Heap[K]) Take() int {
	i := h.Top()
	h.Remove(i)
	return i
}

// Remove takes item i, which is in the heap, out of it.
func (h *Heap[K]) Remove(i int) {
	h.Ops++
	heap.Remove(h, int(h.pos[i]))
}

// Fix restores the order after item i's key changed; i is in the heap.
func (h *Heap[K]) Fix(i int) {
	h.Ops++
	heap.Fix(h, int(h.pos[i]))
}
