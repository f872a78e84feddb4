package bytescale

import (
	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/internal/radix"
)

// unit is one assignment unit of Alg. 1: a long sequence alone on its D(s)
// ranks, or a best-fit bin of short sequences on one rank. The balance
// scheduler assigns units, never single short sequences.
type unit struct {
	seqs    []int   // sequence ids, longest first
	tokens  int64   // Σ s
	squares int64   // Σ s²
	ranks   int     // D(s) for a long sequence, 1 for a bin
	ratio   float64 // Eq. 3's offload ratio r of a long sequence on D(s) ranks (0: none, and every bin)
	key     int     // the id of its first (longest) sequence: unique, for ties
}

// timeModel estimates how long a rank spends on its share of a group. With
// the job's token costs (sched.Env.TokenCosts, the T(s) = α·s² + β·s + γ
// ByteScale profiles, §6.1) it is in seconds: a1·Σs²/k + a2·Σs/k + b1, the
// fixed b1 once per frame the rank runs. Without them (a --batches line
// that names no model) it is in tokens², units of c: Σs²/k plus the linear
// term (θ/c)·(Σs/k)/C.
type timeModel struct {
	// overheadRatio is θ/c (sched.Inputs.OverheadRatio), the scale of the
	// linear term without costs: a rank holding a full budget of tokens pays
	// θ/c.
	overheadRatio float64
	budgetTokens  float64
	// costs says a1, a2 and b1 are the job's (sched.TokenCosts).
	costs      bool
	a1, a2, b1 float64
}

// perRank is a group's per-rank time on k ranks.
func (m timeModel) perRank(squares, tokens int64, k int) float64 {
	if m.costs {
		return (m.a1*float64(squares)+m.a2*float64(tokens))/float64(k) + m.b1
	}
	return (float64(squares) + m.overheadRatio*float64(tokens)/m.budgetTokens) / float64(k)
}

// sequence is one sequence's whole time T(s) on one rank (its work summed
// over its ranks), what the bounded offload rule weighs against the
// balanced per-rank load.
func (m timeModel) sequence(s int) float64 {
	t := int64(s)
	if m.costs {
		return m.a1*float64(t*t) + m.a2*float64(t)
	}
	return float64(t*t) + m.overheadRatio*float64(t)/m.budgetTokens
}

// minRanks is D(s) = ⌈s/C⌉ for the tokens of a group (1 for a bin, which holds
// at most C).
func minRanks(tokens int64, budgetTokens int) int {
	return int(max(1, (tokens+int64(budgetTokens)-1)/int64(budgetTokens)))
}

// buildUnits is Alg. 1 (lines 1-9): every sequence of s >= C tokens becomes
// a unit of D(s) ranks at offload ratio r, rankOf(s) (⌈s/C⌉ and 0 without
// offload, Eq. 3's with it);
// the shorter ones are packed best-fit decreasing into bins of C tokens, one
// rank each. It returns the units (long ones in id order, then bins in
// opening order), the number of long units, and the work done: sequence
// visits and ordered-set operations.
func buildUnits(lengths []int, budgetTokens int, rankOf func(s int) (r float64, ranks int)) (units []unit, long int, visits, setOps int64) {
	// short holds (MaxSequenceTokens−s)<<32 | id, so an ascending sort puts
	// the longest first, ties by lower id (s <= 2^25 and id < 2^24 fit).
	var short []uint64
	for id, s := range lengths {
		visits++
		if s >= budgetTokens {
			r, d := rankOf(s)
			units = append(units, unit{seqs: []int{id}, tokens: int64(s), squares: int64(s) * int64(s),
				ranks: d, ratio: r, key: id})
			continue
		}
		short = append(short, uint64(sched.MaxSequenceTokens-s)<<32|uint64(id))
	}
	long = len(units)
	// Best-fit decreasing: longest first (ties: lower id), each into the open
	// bin with the least room that still holds it (ties: the earliest opened),
	// else into a new bin.
	short = radix.SortIndexed(short, make([]uint64, len(short)), 32) // as slices.Sort: O(N)
	var room binSet
	for _, key := range short {
		id := int(key & (1<<32 - 1))
		s := lengths[id]
		visits++
		b, ops := room.takeBestFit(s)
		setOps += ops
		if b < 0 {
			b = len(units)
			units = append(units, unit{ranks: 1, key: id})
			room.grow(b + 1)
		}
		u := &units[b]
		u.seqs = append(u.seqs, id)
		u.tokens += int64(s)
		u.squares += int64(s) * int64(s)
		if left := budgetTokens - int(u.tokens); left > 0 {
			setOps += room.insert(left, b)
		}
	}
	return units, long, visits, setOps
}

// binSet is the ordered set of open bins keyed by (room, bin index): a treap
// with deterministic priorities (a hash of the bin index), so best fit (the
// least room >= s, then the lowest index) is O(log n) per sequence. Node i is
// bin i; a bin is in the set only while it has room.
type binSet struct {
	left, right []int32
	room        []int
	root        int32
}

const nilNode = -1

// grow makes room for bins [0, n).
func (t *binSet) grow(n int) {
	if len(t.left) == 0 {
		t.root = nilNode
	}
	for len(t.left) < n {
		t.left = append(t.left, nilNode)
		t.right = append(t.right, nilNode)
		t.room = append(t.room, 0)
	}
}

// priority is a splitmix64 hash of the node index: random-looking, fixed.
func priority(i int32) uint64 {
	z := uint64(i) + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// less orders nodes by (room, index).
func (t *binSet) less(a int32, room int, b int32) bool {
	return t.room[a] < room || t.room[a] == room && a < b
}

// split cuts the treap at node n into the nodes ordered before (room, idx)
// and the rest.
func (t *binSet) split(n int32, room int, idx int32) (int32, int32) {
	if n == nilNode {
		return nilNode, nilNode
	}
	if t.less(n, room, idx) {
		l, r := t.split(t.right[n], room, idx)
		t.right[n] = l
		return n, r
	}
	l, r := t.split(t.left[n], room, idx)
	t.left[n] = r
	return l, n
}

// merge joins two treaps whose keys are ordered a < b.
func (t *binSet) merge(a, b int32) int32 {
	switch {
	case a == nilNode:
		return b
	case b == nilNode:
		return a
	case priority(a) > priority(b):
		t.right[a] = t.merge(t.right[a], b)
		return a
	}
	t.left[b] = t.merge(a, t.left[b])
	return b
}

// insert adds bin b with room left; it returns the operations counted (one).
func (t *binSet) insert(left, b int) int64 {
	t.room[b] = left
	t.left[b], t.right[b] = nilNode, nilNode
	l, r := t.split(t.root, left, int32(b))
	t.root = t.merge(t.merge(l, int32(b)), r)
	return 1
}

// takeBestFit removes and returns the bin with the least room >= s (ties: the
// lowest index), or -1 if none holds s; it returns the operations counted (a
// search, and a removal when found).
func (t *binSet) takeBestFit(s int) (int, int64) {
	if len(t.left) == 0 {
		return -1, 1
	}
	l, r := t.split(t.root, s, -1) // r: the bins with room >= s
	if r == nilNode {
		t.root = l
		return -1, 1
	}
	// Detach r's leftmost node.
	parent, n := int32(nilNode), r
	for t.left[n] != nilNode {
		parent, n = n, t.left[n]
	}
	if parent == nilNode {
		r = t.right[n]
	} else {
		t.left[parent] = t.right[n]
	}
	t.root = t.merge(l, r)
	return int(n), 2
}
