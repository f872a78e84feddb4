package mcore

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dcpsim/dcpsim/sched"
)

// capDelta is Megatron's _DYNAMIC_CP_WORKLOAD_CAP_DELTA.
const capDelta = 0.05

// group is one CP group of the micro-batch being built. Every member rank of a
// group holds the same items, so Megatron's per-rank exec time and packed length
// are one value per group.
type group struct {
	size   int
	load   float64 // Megatron's exec_times of each member: Σ s²/size
	packed float64 // Megatron's packing_sequence_len: Σ s/size
	pos    int32   // position in its size class
	seqs   int32   // items placed in it
}

// placement records that item id went to group g, in Megatron's append order.
type placement struct{ g, id int32 }

// builder runs next_hdp_group_packing_aware; its buffers are reused across calls
// (micro-batches) of one plan.
type builder struct {
	lengths []int
	ranks   int     // R = G
	limit   int     // largest CP degree allowed (G, or the engine's MaxDegree)
	budgetF float64 // float64(C)
	maxLv   int     // log2 of the largest power of two <= limit
	cpLog   []uint8 // per sequence: log2 of Megatron's dcp_gpus_needed

	// State of the micro-batch being built.
	groups  []group
	classes []sizeClass // by log2(size)
	used    []bool      // classes touched in this call
	topLv   int         // largest class index holding a group (-1: none)
	free    int         // ranks [free, R) are free
	maxLoad float64     // max over all ranks of exec time (free ranks hold 0)
	placed  []placement

	leftovers []int32
	work      int64
	diag      *Diagnostics
}

func newBuilder(lengths []int, cpLog []uint8, in sched.Inputs, diag *Diagnostics) *builder {
	limit := in.DegreeLimit()
	nClasses := bits.Len(uint(limit))
	return &builder{
		cpLog:   cpLog,
		maxLv:   nClasses - 1,
		lengths: lengths,
		ranks:   in.PoolRanks,
		limit:   limit,
		budgetF: float64(in.BudgetTokens),
		classes: make([]sizeClass, nClasses),
		used:    make([]bool, nClasses),
		diag:    diag,
	}
}

// invPow2[k] is 2^-k.
var invPow2 = func() (t [64]float64) {
	for k := range t {
		t[k] = math.Ldexp(1, -k)
	}
	return t
}()

// next builds one micro-batch from items (ids sorted by length, descending, as
// Megatron's stable sort leaves them) and returns it; b.leftovers holds the items
// left for the next call, in order.
func (b *builder) next(items []int32) (sched.Microbatch, error) {
	b.reset()
	b.work += int64(len(items)) // the call's sort of an already sorted list (Timsort: one run)
	b.work += int64(b.ranks)    // the per-rank lists it allocates

	first := items[0]
	tall := b.lengths[first]
	capLoad := float64(float64(tall)*b.budgetF) * (1 + capDelta)
	cp0 := 1 << b.cpLog[first]
	b.newGroup(first, cp0, pyWorkload(tall, cp0), pyDiv(tall, cp0))

	var capLeft, roomLeft int
	// A failed place changes nothing but the work count, and the next item
	// of the same length (items are sorted, so equal lengths are adjacent)
	// meets the same state until something is placed: it fails the same way,
	// with the same work, and is not searched again.
	var miss struct {
		ok       bool
		length   int
		placed   int // len(b.placed) when it failed: the state's version
		capped   bool
		workUsed int64
	}
	for _, id := range items[1:] {
		var placed, capped bool
		if s := b.lengths[id]; miss.ok && miss.length == s && miss.placed == len(b.placed) {
			capped = miss.capped
			b.work += miss.workUsed
		} else {
			before := b.work
			placed, capped = b.place(id, capLoad)
			if !placed {
				miss.ok, miss.length, miss.placed, miss.capped, miss.workUsed = true, s, len(b.placed), capped, b.work-before
			}
		}
		switch {
		case placed:
		case capped:
			b.leftovers = append(b.leftovers, id)
			capLeft++
		default:
			b.leftovers = append(b.leftovers, id)
			roomLeft++
		}
	}

	closed := "all placed"
	switch {
	case capLeft > 0:
		closed = "leftovers: cap"
	case roomLeft > 0:
		closed = "leftovers: no room"
	}

	// Fill empty ranks: widen_once until none is left, else the full-group fallback.
	for b.free < b.ranks {
		b.work += int64(b.free + 1) // any(not mb ...) stops at the first empty rank
		ok, err := b.widenOnce()
		if err != nil {
			return sched.Microbatch{}, err
		}
		if ok {
			continue
		}
		if b.ranks > b.limit {
			// Deviation: Megatron would widen past the engine's degree limit or fall
			// back to one group of all G ranks; the remaining ranks stay idle.
			b.diag.IdleRankSlots += b.ranks - b.free
			closed = "idle ranks: degree limit"
			return b.emit(closed), nil
		}
		seqs := b.fallback(items)
		return sched.Microbatch{Groups: []sched.Group{{FirstRank: 0, Size: b.ranks, Seqs: seqs}}, Closed: "fallback full group"}, nil
	}
	b.work += int64(b.ranks) // the any() scan that finds no empty rank
	return b.emit(closed), nil
}

func (b *builder) reset() {
	for i := range b.classes {
		if b.used[i] {
			b.classes[i].reset()
			b.used[i] = false
		}
	}
	b.groups = b.groups[:0]
	b.placed = b.placed[:0]
	b.leftovers = b.leftovers[:0]
	b.free = 0
	b.maxLoad = 0
	b.topLv = -1
}

func (b *builder) newGroup(id int32, cp int, w, a float64) {
	g := int32(len(b.groups))
	lv := bits.TrailingZeros(uint(cp))
	b.used[lv] = true
	b.topLv = max(b.topLv, lv)
	pos := b.classes[lv].add(g, a, w)
	b.groups = append(b.groups, group{size: cp, load: w, packed: a, pos: pos, seqs: 1})
	b.free += cp
	b.maxLoad = max(b.maxLoad, w)
	b.placed = append(b.placed, placement{g, id})
	b.work += int64(cp)
}

// place runs Megatron's candidate search for one item and applies the winner. It
// reports whether the item was placed and, if not, whether some candidate was
// rejected by the cap alone.
//
// Megatron enumerates, for cp = cp_min, 2·cp_min, ... <= R: every existing group of
// size cp that passes the packing check ("add"), then the cp lowest free ranks if
// there are that many ("new"); each candidate's projected maximum is the max over
// all ranks of exec time after adding s²/cp to its members, and the first
// candidate with the least projected maximum <= cap wins. All members of a group
// share one exec time and free ranks hold 0, so the projected maximum of adding to
// group g is max(load_g + w, maxLoad) and that of a new group is max(w, maxLoad):
// the least over a size class comes from the least load among the groups that
// fit, and the first group reaching it is found by a second query.
func (b *builder) place(id int32, capLoad float64) (placed, capped bool) {
	s := b.lengths[id]
	lvMin := int(b.cpLog[id])
	// w = s²/cp and a = s/cp as Python computes them: for s < 2³¹ the square is
	// exact in int64, rounded once to float64, and scaling by 2^-lv is exact.
	fast := s < 1<<31
	sq, sf := float64(int64(s)*int64(s)), float64(s)
	best := math.Inf(1)
	bestLv, bestNew := -1, false
	settled := false // best == maxLoad: nothing later can be strictly less
	nGroups := int64(len(b.groups))
	r64 := int64(b.ranks)
	for lv := lvMin; lv <= b.maxLv; lv++ {
		if lv > b.topLv && 1<<lv > b.ranks-b.free {
			// No group this large and too few free ranks: the remaining levels only
			// cost Megatron its walks and scans.
			b.work += int64(b.maxLv-lv+1) * (nGroups + r64)
			break
		}
		cp := 1 << lv
		b.work += nGroups + r64 // the walk over all groups and the free-rank scan
		cl := &b.classes[lv]
		var w, a float64
		if cl.n > 0 || !settled {
			if fast {
				w, a = sq*invPow2[lv], sf*invPow2[lv]
			} else {
				w, a = pyWorkload(s, cp), pyDiv(s, cp)
			}
		}
		if cl.n > 0 {
			fits := cl.countFits(a, b.budgetF)
			b.work += int64(fits) * r64 // one projected-max scan per group that fits
			if fits > 0 && !settled {
				minLoad := cl.minLoad(a, b.budgetF, math.Inf(1))
				proj := minLoad + w
				if proj < b.maxLoad {
					proj = b.maxLoad
				}
				if proj <= capLoad {
					if proj < best {
						best, bestLv, bestNew = proj, lv, false
					}
				} else {
					capped = true
				}
			}
		}
		if freeRanks := b.ranks - b.free; freeRanks >= cp {
			b.work += int64(freeRanks) + r64 // sort the free ranks, projected max
			if !settled {
				proj := max(w, b.maxLoad)
				if proj <= capLoad {
					if proj < best {
						best, bestLv, bestNew = proj, lv, true
					}
				} else {
					capped = true
				}
			}
		}
		settled = settled || best == b.maxLoad
	}
	if bestLv < 0 {
		return false, capped
	}
	if bestLv > lvMin {
		b.diag.Enlarged++
	}
	bestCP := 1 << bestLv
	w, a := pyWorkload(s, bestCP), pyDiv(s, bestCP)
	if bestNew {
		b.newGroup(id, bestCP, w, a)
		return true, false
	}
	cl := &b.classes[bestLv]
	gi := cl.first(a, b.budgetF, w, best)
	g := &b.groups[gi]
	old := g.packed
	g.load += w
	g.packed += a
	g.seqs++
	cl.update(g.pos, old, g.packed, g.load)
	b.maxLoad = max(b.maxLoad, g.load)
	b.placed = append(b.placed, placement{gi, id})
	b.work += int64(bestCP)
	return true, false
}

// widenOnce is Megatron's fill_empty_gpus_once: double the first (leftmost) group
// of the smallest size, capped at R, pushing the groups to its right into the
// empty tail. It reports false when no group can be widened.
func (b *builder) widenOnce() (bool, error) {
	empty := b.ranks - b.free
	nGroups := int64(len(b.groups))
	b.work += int64(b.ranks) + int64(empty) + nGroups // empty-rank scan, tail assert, set of sizes
	minSize := b.groups[0].size
	for _, g := range b.groups {
		minSize = min(minSize, g.size)
	}
	next := min(2*minSize, b.ranks)
	if next > b.limit {
		return false, nil // deviation: never widen past the engine's degree limit
	}
	needed := next - minSize
	start := 0
	for i := range b.groups {
		g := &b.groups[i]
		b.work++
		end := start + g.size - 1
		if g.size != minSize || end+needed >= b.ranks {
			start += g.size
			continue
		}
		if pushed := b.free - end - 1; needed > empty && pushed > 0 {
			return false, fmt.Errorf("mcore: %w: widening the CP-%d group on ranks %d..%d to %d ranks pushes %d occupied ranks past the pool of %d (Megatron's fill_empty_gpus_once raises IndexError)",
				ErrMegatronFails, minSize, start, end, next, pushed, b.ranks)
		}
		// Megatron rebuilds all per-rank lists and recomputes the widened ranks'
		// exec time over all their items; later groups shift right.
		b.work += int64(b.ranks) + int64(next)*int64(g.seqs) + nGroups
		g.size = next
		b.free += needed
		b.diag.Widenings++
		return true, nil
	}
	return false, nil
}

// fallback is Megatron's fill_with_full_dpxcp_group: discard the micro-batch and
// first-fit every item of the call (in order) into one group of all R ranks while
// Σ s/R <= C; the rest are the leftovers. It returns the selected items.
func (b *builder) fallback(items []int32) []int {
	b.diag.Fallbacks++
	b.work += int64(len(items)) + int64(b.ranks)
	b.leftovers = b.leftovers[:0]
	seqs := make([]int, 0, 8)
	var packed float64
	for _, id := range items {
		perRank := pyDiv(b.lengths[id], b.ranks)
		if packed+perRank <= b.budgetF {
			seqs = append(seqs, int(id))
			packed += perRank
		} else {
			b.leftovers = append(b.leftovers, id)
		}
	}
	return seqs
}

// emit turns the groups and placements into a micro-batch: groups by first rank
// (creation order), each group's sequences in append order.
func (b *builder) emit(closed string) sched.Microbatch {
	groups := make([]sched.Group, len(b.groups))
	seqs := make([]int, len(b.placed))
	off := 0
	start := 0
	for i, g := range b.groups {
		groups[i] = sched.Group{FirstRank: start, Size: g.size, Seqs: seqs[off : off : off+int(g.seqs)]}
		off += int(g.seqs)
		start += g.size
	}
	for _, p := range b.placed {
		gr := &groups[p.g]
		gr.Seqs = append(gr.Seqs, int(p.id))
	}
	return sched.Microbatch{Groups: groups, Closed: closed}
}
