package bytescale

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
)

// alignVPP makes every microbatch count legal for Megatron's interleaved
// schedule when Inputs.VPP > 1 (see the package doc): the slots are then
// lock-step pipeline groups, and each group's count m > 0 becomes
// sched.LegalMicrobatchCount(m, pp, N) by splitting phases, never merging
// them. It returns the number of splits.
func (p *planner) alignVPP() (int, error) {
	if p.in.VPP <= 1 {
		return 0, nil
	}
	n, pp := p.in.GroupSizeN(), p.in.PP
	bySlot := make([][]int, len(p.slotFirst))
	for f, fr := range p.frames {
		bySlot[fr.slot] = append(bySlot[fr.slot], f)
	}
	splits := 0
	for s, frames := range bySlot {
		m := p.phaseCount(frames)
		if m == 0 {
			continue
		}
		want, ok := sched.LegalMicrobatchCount(m, pp, n)
		if !ok {
			return 0, fmt.Errorf("%w: bytescale: vpp = %d needs a microbatch group size N >= pp = %d, got N = %d (no count is legal)",
				sched.ErrCannotPlan, p.in.VPP, pp, n)
		}
		for ; m < want; m++ {
			where := fmt.Sprintf("pipeline group %d (lanes %d..%d)", s, p.slotFirst[s], p.slotFirst[s]+p.slotLanes[s]-1)
			if err := p.splitBest(frames, where, n, want); err != nil {
				return splits, err
			}
			splits++
		}
	}
	return splits, nil
}

// phaseCount is the number of phases (microbatches) of the frames.
func (p *planner) phaseCount(frames []int) int {
	c := 0
	for _, f := range frames {
		c += len(p.frames[f].phases)
	}
	return c
}

// splitBest splits, among the frames' phases holding two or more sequences,
// the one with the most sequences (ties: the longer estimated time, then the
// later) into two consecutive phases on the same ranks: its groups go
// alternately to the two halves, or, for a phase of one group, that group's
// sequences alternate; each half is widened to cover the frame. where names the
// slot for the error.
func (p *planner) splitBest(frames []int, where string, n, want int) error {
	bestF, bestPh, bestSeqs, bestTime := -1, -1, 0, 0.0
	for _, f := range frames {
		for ph, groups := range p.frames[f].phases {
			p.visits++
			seqs := 0
			for _, g := range groups {
				seqs += len(g.seqs)
			}
			if seqs < 2 {
				continue
			}
			t := p.phaseTime(groups)
			if seqs > bestSeqs || seqs == bestSeqs && t >= bestTime {
				bestF, bestPh, bestSeqs, bestTime = f, ph, seqs, t
			}
		}
	}
	if bestF < 0 {
		return fmt.Errorf("%w: bytescale: %s runs %d microbatches; vpp = %d needs %d (the least count legal for the interleaved schedule, N = %d, pp = %d) and no microbatch holds two sequences to split",
			sched.ErrCannotPlan, where, p.phaseCount(frames), p.in.VPP, want, n, p.in.PP)
	}
	fr := &p.frames[bestF]
	groups := fr.phases[bestPh]
	var halves [2][]fgroup
	if len(groups) >= 2 {
		for i, g := range groups {
			g.ranks = g.minRanks
			halves[i%2] = append(halves[i%2], g)
			p.visits++
		}
	} else {
		a, b := p.halve(groups[0])
		halves = [2][]fgroup{{a}, {b}}
	}
	ranks := fr.lanes * p.ep
	for i := range halves {
		free := ranks
		for _, g := range halves[i] {
			free -= g.ranks
		}
		var err error
		if halves[i], err = p.widen(halves[i], free); err != nil {
			return err
		}
	}
	fr.phases[bestPh] = halves[0]
	fr.phases = append(fr.phases[:bestPh+1], append([][]fgroup{halves[1]}, fr.phases[bestPh+1:]...)...)
	return nil
}
