package wlbllm

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
)

// The microbatch layout: how many of an iteration's microbatches each DP
// replica runs. The ranks of one EP group must run the same count (their MoE
// all-to-alls couple them at every layer), so the replicas are taken in units
// of u = lcm(cp, ep)/cp consecutive replicas (u·cp ranks, whole EP groups and
// whole replicas) and every replica of a unit gets the same count. With
// vpp > 1 every count must be one Megatron's interleaved schedule runs
// (sched.CheckMicrobatchCount), or 0.

// minDocuments returns the fewest documents a layout needs: one microbatch on
// each replica of one unit, or with vpp > 1 the least legal count N on each.
func minDocuments(u, vpp, n int) int {
	if vpp > 1 {
		return u * n
	}
	return u
}

// layout returns each of the dp replicas' microbatch counts, for at most
// `most` microbatches in all (most >= minDocuments), u replicas per EP unit:
// the unit-slots ⌊most/u⌋ are shared out evenly, the lower units taking the
// remainder; with vpp > 1 every unit runs the largest legal count not above
// the even share, or, when the share is below the least legal count n, as
// many units as can run n each do so and the others none.
func layout(most, dp, u int, in sched.Inputs) ([]int, error) {
	units := dp / u
	slots := most / u
	unitCount := make([]int, units)
	if in.VPP > 1 {
		n := in.GroupSizeN()
		share := slots / units
		switch {
		case n < in.PP:
			return nil, fmt.Errorf("%w: wlb-llm: no microbatch count is legal for the interleaved schedule: N = %d < pp = %d",
				sched.ErrCannotPlan, n, in.PP)
		case share >= n:
			c := share
			if r := c % n; r != 0 && r < in.PP {
				c -= r
			}
			for i := range unitCount {
				unitCount[i] = c
			}
		case slots/n > 0:
			for i := range slots / n {
				unitCount[i] = n
			}
		default:
			return nil, fmt.Errorf("%w: wlb-llm: %d documents to train cannot give even one EP unit of %d replicas the %d microbatches each that the interleaved schedule needs (pp %d, vpp %d)",
				sched.ErrCannotPlan, most, u, n, in.PP, in.VPP)
		}
	} else {
		if slots == 0 {
			return nil, fmt.Errorf("%w: wlb-llm: %d documents to train cannot give each of the %d replicas one EP group couples a microbatch",
				sched.ErrCannotPlan, most, u)
		}
		for i := range unitCount {
			unitCount[i] = slots / units
			if i < slots%units {
				unitCount[i]++
			}
		}
	}
	counts := make([]int, dp)
	for r := range counts {
		counts[r] = unitCount[r/u]
	}
	return counts, nil
}
