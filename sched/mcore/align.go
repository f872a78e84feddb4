package mcore

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
)

// aligner runs Megatron's align_sample_id_groups on the micro-batches of a plan.
type aligner struct {
	ranks, limit int
	work         int64
	diag         *Diagnostics
}

// align splits tail micro-batches until their count is a multiple of n: walking
// from the last micro-batch backwards (wrapping to the new last one), a
// micro-batch of two or more CP groups is cut at the first group boundary at or
// after rank R/2; the part after the cut, moved to rank 0, replaces it and the
// part before the cut is appended at the end; both are refilled by doubling CP
// groups. A full backwards pass without a split is Megatron's assertion failure.
func (al *aligner) align(mbs []sched.Microbatch, n int) ([]sched.Microbatch, error) {
	remainder := (n - len(mbs)%n) % n
	i := len(mbs) - 1
	attempts := 0
	for remainder > 0 {
		if i < 0 {
			if attempts >= len(mbs) {
				return nil, fmt.Errorf("mcore: %w: %d micro-batches need %d more to reach a multiple of N = %d, and none of them has two CP groups to split (Megatron's align_sample_id_groups asserts)",
					ErrCannotAlign, len(mbs), remainder, n)
			}
			i = len(mbs) - 1
		}
		tail, head, ok, err := al.split(mbs[i])
		if err != nil {
			return nil, err
		}
		if ok {
			mbs[i] = tail
			mbs = append(mbs, head)
			remainder--
			attempts = 0
			al.diag.VPPSplits++
		} else {
			attempts++
		}
		i--
	}
	return mbs, nil
}

// split is Megatron's split_group. It returns the part after the cut (tail) and
// the part before it (head), each refilled, or ok = false for a single group.
func (al *aligner) split(mb sched.Microbatch) (tail, head sched.Microbatch, ok bool, err error) {
	gs := mb.Groups
	al.work += int64(al.ranks) // the walk over the ranks to find the CP groups
	for j := 1; j < len(gs); j++ {
		if gs[j].Size > gs[j-1].Size {
			return tail, head, false, fmt.Errorf("mcore: %w: CP group sizes not decreasing along the ranks (%d then %d; Megatron's split_group asserts)",
				ErrMegatronFails, gs[j-1].Size, gs[j].Size)
		}
	}
	if len(gs) < 2 {
		return tail, head, false, nil
	}
	k, cut := 0, 0
	for cut < al.ranks/2 && k < len(gs)-1 { // the k < len-1 bound only matters with idle ranks
		cut += gs[k].Size
		k++
	}
	headGroups, err := al.fill(append([]sched.Group(nil), gs[:k]...))
	if err != nil {
		return tail, head, false, err
	}
	tailGroups, err := al.fill(append([]sched.Group(nil), gs[k:]...))
	if err != nil {
		return tail, head, false, err
	}
	return sched.Microbatch{Groups: tailGroups, Closed: "vpp split"}, sched.Microbatch{Groups: headGroups, Closed: "vpp split"}, true, nil
}

// fill is Megatron's fill_empty_by_expanding_cp on groups packed from rank 0: while
// ranks are empty, double the leftmost group of the trailing run of equal-size
// groups (the group right after the last size decrease), or the first group when
// all sizes are equal and it fits the empty ranks; groups to the right shift.
func (al *aligner) fill(gs []sched.Group) ([]sched.Group, error) {
	empty := al.ranks
	for _, g := range gs {
		empty -= g.Size
	}
	for empty > 0 {
		al.work += int64(al.ranks)
		grow := -1
		prev := 0
		for j := len(gs) - 1; j >= 0; j-- {
			size := gs[j].Size
			if size > prev && prev != 0 {
				if prev > empty {
					return nil, fmt.Errorf("mcore: %w: doubling a CP-%d group needs %d empty ranks, %d are left (Megatron's fill_empty_by_expanding_cp would lengthen the micro-batch)",
						ErrMegatronFails, prev, prev, empty)
				}
				grow = j + 1
				break
			}
			if size <= empty && j == 0 {
				grow = 0
				break
			}
			prev = size
		}
		if grow < 0 {
			return nil, fmt.Errorf("mcore: %w: no CP group fits the %d empty ranks (Megatron's fill_empty_by_expanding_cp loops forever)", ErrMegatronFails, empty)
		}
		size := gs[grow].Size
		if 2*size > al.limit {
			al.diag.IdleRankSlots += empty // deviation: never past the degree limit
			break
		}
		gs[grow].Size = 2 * size
		empty -= size
	}
	start := 0
	for j := range gs {
		gs[j].FirstRank = start
		start += gs[j].Size
	}
	return gs, nil
}
