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
