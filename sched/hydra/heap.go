package hydra

import (
	"math"
	"math/bits"
	"sort"
	"sync"

	"github.com/dcpsim/dcpsim/sched/internal/buddy"
	"github.com/dcpsim/dcpsim/sched/internal/keyheap"
	"github.com/dcpsim/dcpsim/sched/internal/radix"
)

// heapGroup is an open CP group of the heap packer; its Σ s² and Σ s are
// heapPacker.squares and .tokens at its first rank.
type heapGroup struct {
	first, size int
}

// heapPacker is the heap-accelerated packer of spec §6 (policy "hydra"). Its
// decisions are those of scanPacker, one for one; see the package doc for the
// structures and why each skip is exact.
type heapPacker struct {
	t        Targets
	topClass int // log2(C*)
	// order holds the sequences longest first, ties by lower id, as
	// (MaxSequenceTokens−s)<<32 | id (see seqAt).
	order []uint64
	// next is a union-find over positions: next[i] == i while position i is
	// unplaced, so find(i) is the first unplaced position >= i (N if none).
	next []int32
	// classStart[c] is the first position whose degree is <= 2^c; degree class c
	// holds positions [classStart[c], classStart[c-1]) (classStart[-1] = N).
	classStart []int
	capSquares []int64 // per class: the most Σ s² a group of that size may hold
	capTokens  []int64 // per class: B·size, the most Σ s it may hold
	groups     []heapGroup
	// squares and tokens are Σ s² (tokens²) and Σ s (tokens) of the open MB's
	// group starting at each rank: the keys of the heaps, whose items are
	// first ranks (so ties go to the lowest first rank).
	squares, tokens []int64
	rankGroup       []int32 // first rank -> index in groups, for the open MB's groups
	classes         []classHeaps
	// backfillQ holds, per class below C*, the groups backfill may still
	// double, by (Σ s², first rank): the class order is the size order.
	backfillQ []*keyheap.Heap[int64]
	free      *buddy.Tree
	b         *PlanBuilder
	heapOps   int64 // pushes, pops and fixes
	visits    int64 // sequences read by the placement loop and its skip searches
}

// classHeaps are the heaps of one size class of open groups (items: first
// ranks), each a winnerTree (the paper's heaps, with the same choices and the
// same counted operations). Every group of the class is in exactly one of
// them.
type classHeaps struct {
	// load: least Σ s² (the per-rank load at this size) first, then lowest first
	// rank. A group changes only when it is the top and takes a sequence, and is
	// then fixed in place; token-infeasible groups are purged lazily, when they
	// surface, by demotion to capacity.
	load winnerTree
	// capacity: most token room first (key Σ s, the size being fixed); the groups
	// demoted from load, re-admitted once the sequences are short enough.
	capacity winnerTree
}

// packScratch is the heap packer's working storage apart from the plan it
// returns: the sort's two buffers, the union-find, the builder's open-MB
// arrays, the per-rank keys, the queues and the buddy tree. Plans take one
// from packScratches and give it back, so a plan allocates little more
// than the plan itself: at G = 4096 (181K sequences) these are about 6 MB,
// whose allocation, zeroing and collection cost a fifth of a plan. Every
// part is set before it is read (the queues and the tree are cleared at
// each MB, the builder's arrays are empty between plans), so what a
// scratch held before changes no plan.
type packScratch struct {
	items, tmp     []uint64 // sortLongestFirst's buffers
	next           []int32
	seqs, seqGroup []int32 // PlanBuilder's, empty
	// The pool's parts, for poolRanks ranks and classes size classes.
	poolRanks, classes int
	byFirst            []int32 // PlanBuilder's, all -1
	squares, tokens    []int64
	rankGroup          []int32
	classHeaps         []classHeaps
	backfillQ          []*keyheap.Heap[int64]
	free               *buddy.Tree
}

// packScratches pools packScratch values for packHeap.
var packScratches sync.Pool

// getPackScratch returns a scratch for n sequences on poolRanks ranks in
// classes size classes.
func getPackScratch(n, poolRanks, classes int) *packScratch {
	sc, _ := packScratches.Get().(*packScratch)
	if sc == nil {
		sc = &packScratch{}
	}
	if cap(sc.items) < n {
		sc.items, sc.tmp = make([]uint64, n), make([]uint64, n)
		sc.next = make([]int32, n+1)
		sc.seqs, sc.seqGroup = make([]int32, 0, n), make([]int32, 0, n)
	}
	if sc.poolRanks != poolRanks || sc.classes != classes {
		sc.poolRanks, sc.classes = poolRanks, classes
		sc.byFirst = make([]int32, poolRanks)
		for r := range sc.byFirst {
			sc.byFirst[r] = -1
		}
		sc.squares, sc.tokens, sc.rankGroup = make([]int64, poolRanks), make([]int64, poolRanks), make([]int32, poolRanks)
		sc.free = buddy.New(poolRanks)
		leaves := sc.free.Leaves()
		sc.classHeaps = make([]classHeaps, classes)
		sc.backfillQ = make([]*keyheap.Heap[int64], classes)
		for c := range sc.classHeaps {
			sc.classHeaps[c] = classHeaps{
				load:     newWinnerTree(sc.squares, uint(c), leaves>>c),
				capacity: newWinnerTree(sc.tokens, uint(c), leaves>>c),
			}
			if c == 0 {
				sc.backfillQ[c] = keyheap.New(sc.squares)
			} else {
				sc.backfillQ[c] = sc.backfillQ[0].Sibling(sc.squares)
			}
		}
	}
	for _, q := range sc.backfillQ {
		q.Clear() // empty already: each MB's backfill drains its queues
	}
	return sc
}

// packHeap plans the batch with the heap packer. The builder it returns
// holds the closed MBs only (Microbatches).
func packHeap(lengths []int, poolRanks int, t Targets) (*PlanBuilder, int64, int64) {
	n := len(lengths)
	topClass := bits.TrailingZeros(uint(t.Cap))
	classes := topClass + 1
	sc := getPackScratch(n, poolRanks, classes)
	b := &PlanBuilder{poolRanks: poolRanks, seqIDs: make([]int, n), byFirst: sc.byFirst, seqs: sc.seqs[:0], seqGroup: sc.seqGroup[:0]}
	p := &heapPacker{
		t:         t,
		topClass:  topClass,
		next:      sc.next[:n+1],
		free:      sc.free,
		b:         b,
		groups:    make([]heapGroup, 0, min(poolRanks, n)),
		squares:   sc.squares,
		tokens:    sc.tokens,
		rankGroup: sc.rankGroup,
		classes:   sc.classHeaps,
		backfillQ: sc.backfillQ,
	}
	clear(p.squares)
	clear(p.tokens)
	p.order = sortInto(lengths, sc.items[:n], sc.tmp[:n])
	for i := range p.next {
		p.next[i] = int32(i)
	}
	p.classStart = make([]int, classes)
	p.capSquares = make([]int64, classes)
	p.capTokens = make([]int64, classes)
	for c := range classes {
		k := 1 << c
		p.capSquares[c] = t.capSquares(k)
		p.capTokens[c] = satMul(int64(t.BudgetTokens), int64(k))
		if c < p.topClass {
			// Degree(s) <= k  <=>  s <= k·B and s² <= capSquares(k).
			longest := min(p.capTokens[c], isqrt(p.capSquares[c]))
			p.classStart[c] = sort.Search(n, func(i int) bool { return p.tokensAt(i) <= longest })
		}
	}
	// Placement queues are winner trees over each class's aligned first ranks
	// (cleared at each MB); the backfill heaps are one keyheap family sharing
	// one position array (emptied at each MB's end).
	p.pack()
	b.seqs, b.seqGroup, b.byFirst = nil, nil, nil // empty; the scratch's again
	p.order = nil
	packScratches.Put(sc)
	return b, p.heapOps, p.visits
}

// sortLongestFirst returns the sequences ordered by length descending, ties by
// lower id, each as (MaxSequenceTokens−s)<<32 | id (see seqAt): a stable LSD
// radix sort of those items in id order over the key bits in which some
// lengths differ (radix.SortIndexed), O(N). slices.Sort of the same keys
// took about 25 ms at G = 4096 (181K sequences), this 2.4-2.9 ms.
func sortLongestFirst(lengths []int) []uint64 {
	return sortInto(lengths, make([]uint64, len(lengths)), make([]uint64, len(lengths)))
}

// sortInto is sortLongestFirst in the buffers items and tmp (of
// len(lengths) each); the result is one of them.
func sortInto(lengths []int, items, tmp []uint64) []uint64 {
	for id, s := range lengths {
		items[id] = uint64(MaxSequenceTokens-s)<<32 | uint64(id)
	}
	return radix.SortIndexed(items, tmp, 32)
}

// seqAt decodes an item of sortLongestFirst: the sequence id and its length.
func seqAt(item uint64) (id int, tokens int64) {
	return int(uint32(item)), MaxSequenceTokens - int64(item>>32)
}

// tokensAt returns the length of the sequence at position i.
func (p *heapPacker) tokensAt(i int) int64 { return MaxSequenceTokens - int64(p.order[i]>>32) }

// find returns the first unplaced position >= i (path halving).
func (p *heapPacker) find(i int) int {
	for int(p.next[i]) != i {
		p.next[i] = p.next[p.next[i]]
		i = int(p.next[i])
	}
	return i
}

// classRange returns the positions of degree class c.
func (p *heapPacker) classRange(c int) (lo, hi int) {
	hi = len(p.order)
	if c > 0 {
		hi = p.classStart[c-1]
	}
	return p.classStart[c], hi
}

// pack runs Algorithm 1 MB by MB. Within an MB it walks the degree classes from
// the widest down, and within a class the unplaced sequences longest first, which
// is the global order of the scan. Sequences that cannot be placed are not
// visited one by one: when the next one fits nowhere, the walk jumps past every
// sequence longer than bound(), which the scan would visit and reject in the same
// state.
func (p *heapPacker) pack() {
	remaining := len(p.order)
	for remaining > 0 {
		p.free.Reset()
		p.groups = p.groups[:0]
		for c := range p.classes {
			p.classes[c].load.Clear()
			p.classes[c].capacity.Clear()
		}
		for c := p.topClass; c >= 0; c-- {
			lo, hi := p.classRange(c)
			for pos := p.find(lo); pos < hi; pos = p.find(pos + 1) {
				p.visits++
				if p.free.MaxFree() >= 1<<c {
					p.open(c, pos)
				} else {
					target := p.feasibleClass(c, p.tokensAt(pos))
					for target < 0 && pos < hi {
						// No group takes this sequence; jump to the next one short
						// enough for some group to take, by the tops of the heaps.
						if pos = p.skip(pos, hi, p.bound(c)); pos < hi {
							p.visits++
							target = p.feasibleClass(c, p.tokensAt(pos))
						}
					}
					if pos >= hi {
						break
					}
					p.piggyback(target, pos)
				}
				p.next[pos] = int32(pos + 1)
				remaining--
			}
		}
		doublings := p.backfill()
		w := Waiting{Remaining: remaining}
		if remaining > 0 {
			pos := p.find(0)
			id, tokens := seqAt(p.order[pos])
			w.ID, w.Tokens, w.Degree = id, int(tokens), p.t.Degree(int(tokens))
		}
		p.b.Close(w, doublings)
	}
}

// skip returns the first unplaced position in (pos, hi) whose length is <= longest
// (hi if none), knowing tokensAt(pos) > longest: a galloping search, then a binary
// search inside the last gallop step. Lengths do not increase along positions.
func (p *heapPacker) skip(pos, hi int, longest int64) int {
	lo, end := pos, hi // tokensAt(lo) > longest; end == hi or tokensAt(end) <= longest
	for step := 1; lo+step < hi; step *= 2 {
		p.visits++
		if p.tokensAt(lo+step) <= longest {
			end = lo + step
			break
		}
		lo += step
	}
	i := lo + 1 + sort.Search(end-lo-1, func(i int) bool {
		p.visits++
		return p.tokensAt(lo+1+i) <= longest
	})
	return p.find(i)
}

// bound returns an upper bound on the longest sequence any open group of class
// >= c can take, right after feasibleClass(c, s) failed (so every such class is
// ready for s). A group in a load heap has Σ s² >= its top's, so it takes no
// sequence longer than ⌊√(capSquares − top Σ s²)⌋; a demoted group has at most the
// capacity top's token room. Both are < s, so the skip always moves on.
func (p *heapPacker) bound(c int) int64 {
	var longest int64
	for ; c <= p.topClass; c++ {
		h := &p.classes[c]
		if h.load.Len() > 0 {
			longest = max(longest, isqrt(p.capSquares[c]-p.squares[h.load.Top()]))
		}
		if h.capacity.Len() > 0 {
			longest = max(longest, p.capTokens[c]-p.tokens[h.capacity.Top()])
		}
	}
	return longest
}

// open starts a group of degree class c on the lowest free aligned block with the
// sequence at position pos.
func (p *heapPacker) open(c, pos int) {
	k := 1 << c
	first := p.free.Lowest(k)
	p.free.Take(first, k)
	id, s := seqAt(p.order[pos])
	gi := p.b.Open(first, k)
	p.groups = append(p.groups, heapGroup{first: first, size: k})
	p.squares[first], p.tokens[first] = s*s, s
	p.rankGroup[first] = gi
	p.classes[c].load.Add(first)
	p.heapOps++
	p.b.Add(gi, id)
}

// feasibleClass returns the smallest class >= c holding a group that can take a
// sequence of s tokens, -1 if none, leaving that class's least-loaded feasible
// group at the top of its load heap.
func (p *heapPacker) feasibleClass(c int, s int64) int {
	for ; c <= p.topClass; c++ {
		if p.ready(c, s) {
			return c
		}
	}
	return -1
}

// ready prepares class c for a sequence of s tokens and reports whether one of
// its groups can take it. It re-admits the demoted groups with token room for s
// (sequences only shrink, so a re-admitted group stays token-feasible until it
// takes a sequence) and demotes token-infeasible groups as they surface at the top
// of the load heap. The top is then the token-feasible group with the least Σ s²
// (ties: lowest first rank); if it breaks Λ*, every token-feasible group does.
func (p *heapPacker) ready(c int, s int64) bool {
	h := &p.classes[c]
	for h.capacity.Len() > 0 {
		first := h.capacity.Top()
		if p.capTokens[c]-p.tokens[first] < s {
			break
		}
		h.capacity.Remove(first)
		h.load.Add(first)
		p.heapOps += 2
	}
	for h.load.Len() > 0 {
		first := h.load.Top()
		if p.capTokens[c]-p.tokens[first] >= s {
			return p.squares[first]+s*s <= p.capSquares[c]
		}
		h.load.Remove(first)
		h.capacity.Add(first)
		p.heapOps += 2
	}
	return false
}

// piggyback adds the sequence at position pos to the top of class c's load heap,
// made ready for it by feasibleClass.
func (p *heapPacker) piggyback(c, pos int) {
	id, s := seqAt(p.order[pos])
	h := &p.classes[c].load
	first := h.Top()
	p.squares[first] += s * s
	p.tokens[first] += s
	h.Fix(first)
	p.heapOps++
	p.b.Add(p.rankGroup[first], id)
}

// backfill doubles groups into free buddy blocks, smallest first (ties: lower
// Σ s², then lower first rank), until none below C* has a free buddy. A group
// whose buddy is taken is dropped for good: blocks are only ever taken. The
// queue is one heap per class, walked from the smallest: a doubled group
// joins the next class, so the least group of the lowest non-empty class is
// always the least of all. Each group queued, dropped or doubled counts one
// heap operation.
func (p *heapPacker) backfill() int {
	if p.free.MaxFree() == 0 {
		return 0 // no free rank: nothing to double into
	}
	for _, g := range p.groups {
		if g.size < p.t.Cap && p.free.IsFree(g.first^g.size, g.size) {
			c := bits.TrailingZeros(uint(g.size))
			p.backfillQ[c].Add(g.first)
			p.heapOps++
		}
	}
	doublings := 0
	for c, q := range p.backfillQ {
		for q.Len() > 0 {
			first := q.Take()
			p.heapOps++
			size := 1 << c
			buddy := first ^ size
			if !p.free.IsFree(buddy, size) {
				continue
			}
			p.free.Take(buddy, size)
			gi := p.rankGroup[first]
			grown := first &^ size
			p.squares[grown], p.tokens[grown], p.rankGroup[grown] = p.squares[first], p.tokens[first], gi
			p.groups[gi] = heapGroup{first: grown, size: 2 * size}
			p.b.Double(gi)
			doublings++
			if 2*size < p.t.Cap {
				p.backfillQ[c+1].Add(grown)
			}
		}
	}
	return doublings
}

// isqrt returns ⌊√x⌋ for x >= 0 (x < 0 gives 0).
func isqrt(x int64) int64 {
	if x <= 0 {
		return 0
	}
	r := int64(math.Sqrt(float64(x)))
	for r*r > x {
		r--
	}
	for (r+1)*(r+1) <= x {
		r++
	}
	return r
}
