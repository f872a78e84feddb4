package hydra

import "container/heap"

// keyHeap is a container/heap of open groups of one size class, ordered by a key
// (Σ s² or Σ s) and then by first rank. The group is found from its first rank,
// which is unique within an MB. Two layouts implement it: packedHeap, one uint64
// per group, used whenever key<<bits(G−1) fits 64 bits (every realistic plan:
// s_max = 256K at G = 8192 needs 36+13 bits); pairHeap otherwise. Sifting is
// container/heap's; packing only makes its Less one integer comparison.
type keyHeap interface {
	heap.Interface
	// add appends (key, first) at the end; the caller sifts it with heap.Fix.
	add(key uint64, first int)
	// top returns the root.
	top() (key uint64, first int)
	// setTopKey changes the root's key; the caller sifts it with heap.Fix.
	setTopKey(key uint64)
	// dropTop moves the last item to the root; the caller sifts it with heap.Fix.
	dropTop()
	// clear empties the heap, keeping its storage.
	clear()
}

// packedHeap stores key<<shift | first.
type packedHeap struct {
	items []uint64
	shift uint
}

func (h *packedHeap) Len() int           { return len(h.items) }
func (h *packedHeap) Less(i, j int) bool { return h.items[i] < h.items[j] }
func (h *packedHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }

// Push and Pop satisfy heap.Interface; the packer uses add and dropTop with
// heap.Fix instead, which do not box the item into an interface.
func (h *packedHeap) Push(x any) { h.items = append(h.items, x.(uint64)) }
func (h *packedHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func (h *packedHeap) add(key uint64, first int) {
	h.items = append(h.items, key<<h.shift|uint64(first))
}
func (h *packedHeap) top() (uint64, int) {
	return h.items[0] >> h.shift, int(h.items[0] & (1<<h.shift - 1))
}
func (h *packedHeap) setTopKey(key uint64) {
	h.items[0] = key<<h.shift | h.items[0]&(1<<h.shift-1)
}
func (h *packedHeap) dropTop() {
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
}
func (h *packedHeap) clear() { h.items = h.items[:0] }

// fixPacked re-establishes the heap order after items[i] changed: container/heap's
// own Fix algorithm (sift down, else up), specialised to []uint64. It exists for
// speed alone: one runs per placement, and through heap.Interface each costs
// 230-270 ns at G = 4096 against ~110 ns here (BenchmarkPlan/hydra/G=4096), the
// difference between missing and meeting the 50 ms planning target.
// TestPackedFixMatchesContainerHeap pins it to container/heap.
func (h *packedHeap) fixPacked(i int) {
	items := h.items
	n := len(items)
	// Sift down.
	i0, x := i, items[i]
	for {
		l := 2*i + 1
		if l >= n || l < 0 {
			break
		}
		c := l
		if r := l + 1; r < n && items[r] < items[l] {
			c = r
		}
		if items[c] >= x {
			break
		}
		items[i] = items[c]
		i = c
	}
	items[i] = x
	if i > i0 {
		return
	}
	// Sift up.
	for i > 0 {
		parent := (i - 1) / 2
		if items[parent] <= x {
			break
		}
		items[i] = items[parent]
		i = parent
	}
	items[i] = x
}

// keyFirst is one item of a pairHeap.
type keyFirst struct {
	key   uint64
	first int
}

// pairHeap stores (key, first) pairs: the layout for keys too wide to pack.
type pairHeap struct{ items []keyFirst }

func (h *pairHeap) Len() int { return len(h.items) }
func (h *pairHeap) Less(i, j int) bool {
	a, b := &h.items[i], &h.items[j]
	return a.key < b.key || a.key == b.key && a.first < b.first
}
func (h *pairHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }

// Push and Pop satisfy heap.Interface (see packedHeap).
func (h *pairHeap) Push(x any) { h.items = append(h.items, x.(keyFirst)) }
func (h *pairHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

func (h *pairHeap) add(key uint64, first int) {
	h.items = append(h.items, keyFirst{key: key, first: first})
}
func (h *pairHeap) top() (uint64, int)   { return h.items[0].key, h.items[0].first }
func (h *pairHeap) setTopKey(key uint64) { h.items[0].key = key }
func (h *pairHeap) dropTop() {
	n := len(h.items) - 1
	h.items[0] = h.items[n]
	h.items = h.items[:n]
}
func (h *pairHeap) clear() { h.items = h.items[:0] }
