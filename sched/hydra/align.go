package hydra

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"

	"github.com/dcpsim/dcpsim/sched"
)

// ErrCannotAlign reports that no MB count legal for Megatron's interleaved
// schedule can be reached: the group size N is below pp, or the batch has fewer
// sequences than the least legal count (every MB needs one). It wraps
// sched.ErrCannotPlan (and so sched.ErrInvalidInput).
var ErrCannotAlign = fmt.Errorf("hydra: no legal microbatch count for the interleaved schedule (%w)", sched.ErrCannotPlan)

// mbInfo is what the split choice reads of one MB.
type mbInfo struct {
	groups, seqs int
	// The largest per-rank load of the MB is loadSquares/loadSize (Σ s² over the
	// ranks of its most loaded group).
	loadSquares int64
	loadSize    int
	origin      int // index of the packed MB it descends from
}

// splittable reports whether the MB can become two non-empty MBs.
func (i mbInfo) splittable() bool { return i.groups >= 2 || i.seqs >= 2 }

// compareSplit orders candidates for splitting: more groups first, then the
// larger max per-rank load. It returns > 0 when a goes before b.
func compareSplit(a, b mbInfo) int {
	if a.groups != b.groups {
		return a.groups - b.groups
	}
	return compareLoad(a.loadSquares, a.loadSize, b.loadSquares, b.loadSize)
}

// compareLoad compares the per-rank loads aSquares/aSize and bSquares/bSize
// exactly (cross-multiplied in 128 bits): > 0 when a's is larger.
func compareLoad(aSquares int64, aSize int, bSquares int64, bSize int) int {
	ahi, alo := bits.Mul64(uint64(aSquares), uint64(bSize))
	bhi, blo := bits.Mul64(uint64(bSquares), uint64(aSize))
	switch {
	case ahi != bhi:
		if ahi > bhi {
			return 1
		}
		return -1
	case alo != blo:
		if alo > blo {
			return 1
		}
		return -1
	}
	return 0
}

// aligner raises the MB count of a packed plan to a legal one for the
// interleaved schedule (see the package doc, "VPP alignment").
type aligner struct {
	lengths   []int
	poolRanks int
	cap       int    // C*: backfill never doubles past it
	busy      []bool // rank map of the half being backfilled
	steps     int64  // MBs, groups, sequences and ranks visited
}

// AlignVPP returns mbs with its count raised to the least count legal for
// Megatron's interleaved schedule, the number of MBs it added and the work it
// did (HyDra's rule, by s² loads; hydra-hetero aligns with it too). With in.VPP = 1, or a count that is already legal, mbs is returned as it
// is (and no work is counted). mbs is modified in place (and may be
// reallocated); the sequence id slices of the packed groups are never written.
func AlignVPP(mbs []sched.Microbatch, lengths []int, in sched.Inputs, t Targets) ([]sched.Microbatch, int, int64, error) {
	if in.VPP <= 1 {
		return mbs, 0, 0, nil
	}
	n, pp, m := in.GroupSizeN(), in.PP, len(mbs)
	want, ok := sched.LegalMicrobatchCount(m, pp, n)
	if !ok {
		return nil, 0, 0, fmt.Errorf("%w: vpp = %d needs a microbatch group size N in [pp, M] (Megatron's interleaved schedule), but N = %d < pp = %d: no count is legal (packed M = %d)",
			ErrCannotAlign, in.VPP, n, pp, m)
	}
	if want == m {
		return mbs, 0, 0, nil
	}
	if want > len(lengths) {
		return nil, 0, 0, fmt.Errorf("%w: vpp = %d, pp = %d, N = %d: packed M = %d is not legal (needs N <= M and M mod N = 0 or >= pp) and the least legal count is %d, but the batch has only %d sequences (every MB needs one)",
			ErrCannotAlign, in.VPP, pp, n, m, want, len(lengths))
	}
	a := &aligner{lengths: lengths, poolRanks: in.PoolRanks, cap: t.Cap, busy: make([]bool, in.PoolRanks)}
	info := make([]mbInfo, m, want)
	for i, mb := range mbs {
		info[i] = a.stat(mb, i)
	}
	for len(mbs) < want {
		best := -1
		for i, inf := range info {
			a.steps++
			if inf.splittable() && (best < 0 || compareSplit(inf, info[best]) >= 0) { // ties: the later MB
				best = i
			}
		}
		if best < 0 { // unreachable: want <= len(lengths) leaves an MB with two sequences
			return nil, 0, 0, fmt.Errorf("%w: no MB of %d has two sequences", ErrCannotAlign, len(mbs))
		}
		first, second := a.split(mbs[best], info[best].origin)
		mbs[best] = first
		mbs = slices.Insert(mbs, best+1, second)
		info[best] = a.stat(first, info[best].origin)
		info = slices.Insert(info, best+1, a.stat(second, info[best].origin))
	}
	return mbs, want - m, a.steps, nil
}

// stat reads the MB's group and sequence counts and its largest per-rank load.
func (a *aligner) stat(mb sched.Microbatch, origin int) mbInfo {
	inf := mbInfo{groups: len(mb.Groups), loadSize: 1, origin: origin}
	for _, g := range mb.Groups {
		a.steps++
		var squares int64
		for _, id := range g.Seqs {
			a.steps++
			s := int64(a.lengths[id])
			squares += s * s
		}
		inf.seqs += len(g.Seqs)
		if compareLoad(squares, g.Size, inf.loadSquares, inf.loadSize) > 0 {
			inf.loadSquares, inf.loadSize = squares, g.Size
		}
	}
	return inf
}

// split makes two MBs of mb: with two or more groups, the groups at even
// positions (in FirstRank order) and those at odd positions, each on its ranks;
// with one group, two groups on its ranks running its sequences at even and at
// odd positions (longest-first order kept). Both halves are then backfilled.
func (a *aligner) split(mb sched.Microbatch, origin int) (first, second sched.Microbatch) {
	var halves [2][]sched.Group
	what := "groups"
	if len(mb.Groups) >= 2 {
		for j, g := range mb.Groups {
			a.steps++
			halves[j%2] = append(halves[j%2], g)
		}
	} else {
		what = "sequences"
		g := mb.Groups[0]
		var seqs [2][]int
		for j, id := range g.Seqs {
			a.steps++
			seqs[j%2] = append(seqs[j%2], id)
		}
		for h := range halves {
			halves[h] = []sched.Group{{FirstRank: g.FirstRank, Size: g.Size, Seqs: seqs[h]}}
		}
	}
	var out [2]sched.Microbatch
	for h, groups := range halves {
		doublings, idle := a.backfill(groups)
		out[h] = sched.Microbatch{Groups: groups, Closed: splitReason(origin, h, what, doublings, idle)}
	}
	return out[0], out[1]
}

// backfill is spec §5's backfill on finished groups (sorted by FirstRank): it
// doubles groups below C* into their buddy block while that block is wholly free
// and inside the pool, and returns the doublings and the ranks left idle. It grows
// each group as far as it goes, in rank order, instead of always the smallest
// group first: the result is the same. Two groups that can double at the same
// time have disjoint parent blocks, so either doubling leaves the other possible
// and the two orders meet in the same state; and a group that cannot double
// never can later (ranks are only taken). Every maximal sequence of doublings
// therefore ends in the same plan (the tests compare with smallest-first).
// Doubling keeps the groups in FirstRank order: the ranks it adds were free.
func (a *aligner) backfill(groups []sched.Group) (doublings, idle int) {
	clear(a.busy)
	a.steps += int64(a.poolRanks)
	idle = a.poolRanks
	for _, g := range groups {
		a.steps += int64(g.Size)
		for r := g.FirstRank; r <= g.LastRank(); r++ {
			a.busy[r] = true
		}
		idle -= g.Size
	}
	for i := range groups {
		g := &groups[i]
		for g.Size < a.cap {
			a.steps++
			buddy := g.FirstRank ^ g.Size
			if buddy+g.Size > a.poolRanks || !a.free(buddy, g.Size) {
				break
			}
			for r := buddy; r < buddy+g.Size; r++ {
				a.busy[r] = true
			}
			idle -= g.Size
			g.FirstRank &^= g.Size
			g.Size *= 2
			doublings++
		}
	}
	return doublings, idle
}

// free reports whether ranks [first, first+size) are all free.
func (a *aligner) free(first, size int) bool {
	for r := first; r < first+size; r++ {
		a.steps++
		if a.busy[r] {
			return false
		}
	}
	return true
}

// splitReason is the Closed text of one half of a split, e.g. "vpp split of
// packed MB 2: odd-position groups; backfill: 1 doublings, 0 idle ranks".
func splitReason(origin, half int, what string, doublings, idle int) string {
	b := make([]byte, 0, 96)
	b = append(b, "vpp split of packed MB "...)
	b = strconv.AppendInt(b, int64(origin), 10)
	if half == 0 {
		b = append(b, ": even-position "...)
	} else {
		b = append(b, ": odd-position "...)
	}
	b = append(b, what...)
	b = append(b, "; backfill: "...)
	b = strconv.AppendInt(b, int64(doublings), 10)
	b = append(b, " doublings, "...)
	b = strconv.AppendInt(b, int64(idle), 10)
	b = append(b, " idle ranks"...)
	return string(b)
}
