package mcore

import "math"

// sizeClass indexes the groups of one CP size of the micro-batch being built, in
// creation order (the order Megatron's dict of groups walks them), so that the
// decisions Megatron takes by scanning every group and every rank are taken here
// in logarithmic time per query (on typical batches):
//
//   - a segment tree over creation order holds, per node, the least and largest
//     packed per-rank length and the least per-rank load of its groups, for the
//     "least load among groups that still fit" and "first group that fits with a
//     load at most X" queries, with pruning;
//   - sortedPacked holds the packed lengths in ascending order, to count the groups
//     that pass Megatron's packing check (each costs Megatron one projected-max
//     scan over the pool, which WorkUnits counts).
//
// Both predicates are float64 comparisons of sums, monotone in the stored value,
// so pruning on a node's minimum never drops a group that passes.
type sizeClass struct {
	n      int       // groups in the class
	leaves int       // leaf capacity (a power of two)
	minP   []float64 // per node: least packed length (+Inf for empty leaves)
	maxP   []float64 // per node: largest packed length (-Inf for empty leaves)
	minE   []float64 // per node: least per-rank load (+Inf for empty leaves)
	group  []int32   // class position -> group index in the micro-batch
}

// reset empties the class, keeping its memory.
func (c *sizeClass) reset() {
	if c.n == 0 {
		return
	}
	c.clearTree()
	c.n = 0
	c.group = c.group[:0]
}

func (c *sizeClass) clearTree() {
	inf := math.Inf(1)
	for i := range c.minP {
		c.minP[i], c.maxP[i], c.minE[i] = inf, -inf, inf
	}
}

// add appends group g with packed length p and load e; it returns g's position.
func (c *sizeClass) add(g int32, p, e float64) int32 {
	if c.n == c.leaves {
		c.grow()
	}
	pos := c.n
	c.n++
	c.group = append(c.group, g)
	c.set(pos, p, e)
	return int32(pos)
}

// grow doubles the leaf capacity and rebuilds the tree from the old leaves.
func (c *sizeClass) grow() {
	old := c.leaves
	oldMinP, oldMinE := c.minP, c.minE
	c.leaves = max(2*old, 16)
	c.minP = make([]float64, 2*c.leaves)
	c.maxP = make([]float64, 2*c.leaves)
	c.minE = make([]float64, 2*c.leaves)
	c.clearTree()
	for pos := range c.n {
		c.minP[c.leaves+pos] = oldMinP[old+pos]
		c.maxP[c.leaves+pos] = oldMinP[old+pos]
		c.minE[c.leaves+pos] = oldMinE[old+pos]
	}
	for i := c.leaves - 1; i >= 1; i-- {
		c.pull(i)
	}
}

func (c *sizeClass) pull(i int) {
	l, r := 2*i, 2*i+1
	c.minP[i] = min(c.minP[l], c.minP[r])
	c.maxP[i] = max(c.maxP[l], c.maxP[r])
	c.minE[i] = min(c.minE[l], c.minE[r])
}

// set stores position pos's packed length and load and updates the path to the root.
func (c *sizeClass) set(pos int, p, e float64) {
	i := c.leaves + pos
	c.minP[i], c.maxP[i], c.minE[i] = p, p, e
	for i >>= 1; i >= 1; i >>= 1 {
		c.pull(i)
	}
}

// update records that the group at pos went from packed length old to p (p >= old)
// and now has load e.
func (c *sizeClass) update(pos int32, old, p, e float64) {
	c.set(int(pos), p, e)
}

// countFits returns how many groups pass Megatron's packing check
// packed + a <= budget.
func (c *sizeClass) countFits(a, budget float64) int {
	return c.countAt(1, 0, c.leaves, a, budget)
}

func (c *sizeClass) countAt(i, lo, hi int, a, budget float64) int {
	if lo >= c.n || !(c.minP[i]+a <= budget) {
		return 0
	}
	if c.maxP[i]+a <= budget {
		return min(hi, c.n) - lo
	}
	mid := (lo + hi) / 2
	return c.countAt(2*i, lo, mid, a, budget) + c.countAt(2*i+1, mid, hi, a, budget)
}

// minLoad returns the least load among the groups with packed + a <= budget that
// is below best (best itself when there is none).
func (c *sizeClass) minLoad(a, budget, best float64) float64 {
	return c.minLoadAt(1, a, budget, best)
}

func (c *sizeClass) minLoadAt(i int, a, budget, best float64) float64 {
	if !(c.minE[i] < best) || !(c.minP[i]+a <= budget) {
		return best
	}
	if c.maxP[i]+a <= budget { // every group below fits (always so at a leaf)
		return c.minE[i]
	}
	l, r := 2*i, 2*i+1
	if c.minE[r] < c.minE[l] {
		l, r = r, l
	}
	best = c.minLoadAt(l, a, budget, best)
	return c.minLoadAt(r, a, budget, best)
}

// first returns the group index of the first group (creation order) with
// packed + a <= budget and load + w <= x, or -1.
func (c *sizeClass) first(a, budget, w, x float64) int32 {
	pos := c.firstAt(1, a, budget, w, x)
	if pos < 0 {
		return -1
	}
	return c.group[pos]
}

func (c *sizeClass) firstAt(i int, a, budget, w, x float64) int {
	if !(c.minP[i]+a <= budget) || !(c.minE[i]+w <= x) {
		return -1
	}
	if c.maxP[i]+a <= budget { // every group below fits: leftmost by load alone
		for i < c.leaves {
			if c.minE[2*i]+w <= x {
				i = 2 * i
			} else {
				i = 2*i + 1
			}
		}
		return i - c.leaves
	}
	if pos := c.firstAt(2*i, a, budget, w, x); pos >= 0 {
		return pos
	}
	return c.firstAt(2*i+1, a, budget, w, x)
}
