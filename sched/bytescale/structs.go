package bytescale

import "math"

// unitTree finds, in the sorted order of the units, the first unplaced unit in
// a range that needs at most a given number of ranks: a segment tree of the
// least rank count among the unplaced units of each node (MaxInt32 once all
// are placed). Query and removal are O(log U).
type unitTree struct {
	size int     // leaves, a power of two >= the units
	min  []int32 // node i: children 2i, 2i+1; leaves at size+j
}

func newUnitTree(ranks []int) unitTree {
	size := 1
	for size < len(ranks) {
		size *= 2
	}
	t := unitTree{size: size, min: make([]int32, 2*size)}
	for i := range t.min {
		t.min[i] = math.MaxInt32
	}
	for j, d := range ranks {
		t.min[size+j] = int32(d)
	}
	for i := size - 1; i >= 1; i-- {
		t.min[i] = min(t.min[2*i], t.min[2*i+1])
	}
	return t
}

// remove marks unit j placed.
func (t *unitTree) remove(j int) {
	i := t.size + j
	t.min[i] = math.MaxInt32
	for i /= 2; i >= 1; i /= 2 {
		t.min[i] = min(t.min[2*i], t.min[2*i+1])
	}
}

// first returns the lowest j in [lo, hi) whose unit is unplaced and needs at
// most maxRanks ranks, or -1.
func (t *unitTree) first(lo, hi, maxRanks int) int {
	if lo >= hi || t.min[1] > int32(min(maxRanks, math.MaxInt32-1)) {
		return -1
	}
	return t.search(1, 0, t.size, lo, hi, int32(min(maxRanks, math.MaxInt32-1)))
}

func (t *unitTree) search(node, nodeLo, nodeHi, lo, hi int, maxRanks int32) int {
	if nodeHi <= lo || hi <= nodeLo || t.min[node] > maxRanks {
		return -1
	}
	if nodeHi-nodeLo == 1 {
		return nodeLo
	}
	mid := (nodeLo + nodeHi) / 2
	if j := t.search(2*node, nodeLo, mid, lo, hi, maxRanks); j >= 0 {
		return j
	}
	return t.search(2*node+1, mid, nodeHi, lo, hi, maxRanks)
}

// slotHeap is an indexed min-heap of slots (lanes or pipeline groups) keyed by
// (estimated time, slot), so the least-loaded target is served first and a
// slot whose time changes is fixed or removed in place.
type slotHeap struct {
	time []float64 // by slot: the key, shared with the planner
	heap []int     // slots
	pos  []int     // by slot: index in heap, -1 when absent
	ops  int64     // pushes, pops, fixes and removals
}

func newSlotHeap(time []float64) *slotHeap {
	h := &slotHeap{time: time, pos: make([]int, len(time))}
	for i := range h.pos {
		h.pos[i] = -1
	}
	return h
}

func (h *slotHeap) less(i, j int) bool {
	a, b := h.heap[i], h.heap[j]
	return h.time[a] < h.time[b] || h.time[a] == h.time[b] && a < b
}

func (h *slotHeap) swap(i, j int) {
	h.heap[i], h.heap[j] = h.heap[j], h.heap[i]
	h.pos[h.heap[i]], h.pos[h.heap[j]] = i, j
}

func (h *slotHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(i, p) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *slotHeap) down(i int) {
	n := len(h.heap)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h.less(c+1, c) {
			c++
		}
		if !h.less(c, i) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

func (h *slotHeap) len() int { return len(h.heap) }

func (h *slotHeap) contains(s int) bool { return h.pos[s] >= 0 }

func (h *slotHeap) push(s int) {
	h.ops++
	h.pos[s] = len(h.heap)
	h.heap = append(h.heap, s)
	h.up(len(h.heap) - 1)
}

func (h *slotHeap) pop() int {
	s := h.heap[0]
	h.remove(s)
	return s
}

// remove takes slot s out of the heap.
func (h *slotHeap) remove(s int) {
	h.ops++
	i, last := h.pos[s], len(h.heap)-1
	if i != last {
		h.swap(i, last)
	}
	h.heap = h.heap[:last]
	h.pos[s] = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

// fix restores the order after slot s's time changed.
func (h *slotHeap) fix(s int) {
	h.ops++
	h.down(h.pos[s])
	h.up(h.pos[s])
}
