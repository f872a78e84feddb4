package sched

import (
	"errors"
	"fmt"
)

// maxProblems bounds how many problems Validate reports.
const maxProblems = 20

// Validate checks a plan against the batch and what its policy promises: every
// sequence placed exactly once, groups non-empty, inside [0, G) and ordered by
// first rank, no rank in two groups of one microbatch, in a plan of partial
// microbatches the ranks of each EP block (in.EP) in groups of the same number
// of microbatches, a group's CP × HP layout consistent with it (Layout.Check),
// offload ratios in [0, 1] and only where the job can offload (in.OffloadShare
// > 0, no layout), and, where promised, power-of-two aligned groups, per-rank
// tokens (Σ s/k, times 1 − r·OffloadShare for a group offloading at ratio r,
// or a layout's MemoryTokens) within B (each rank's own kind's budget when
// in.Cluster is set), and full coverage of the pool. The sequences are the
// plan's own Lengths when it set them (p.Trained). It returns every problem
// found (at most 20), joined. Every number of the plan is checked for range
// before it is used (a plan may come from a process outside dcpsim): its own
// Lengths as a batch's (checkTrained), group bounds without overflow, and
// WorkUnits and StallWork (StallWork.Check).
func Validate(p *Plan, lengths []int, in Inputs, pr Promises) error {
	var errs []error
	add := func(format string, args ...any) bool {
		errs = append(errs, fmt.Errorf(format, args...))
		return len(errs) < maxProblems
	}
	g := in.PoolRanks
	if p == nil {
		return errors.New("sched: nil plan")
	}
	if p.Lengths != nil {
		// A plan's own sequences are input like a batch's: checked before
		// they index or size anything.
		if err := checkTrained(p.Lengths); err != nil {
			return err
		}
	}
	lengths = p.Trained(lengths)
	if p.PoolRanks != g {
		add("plan spans %d ranks, the pool has %d", p.PoolRanks, g)
	}
	if p.WorkUnits < 0 {
		add("work_units = %d: must be >= 0", p.WorkUnits)
	}
	if err := p.StallWork.Check(); err != nil {
		add("%v", err)
	}
	placed := make([]int, len(lengths)) // 1 + microbatch of first placement; 0 = unplaced
	owner := make([]int, g)             // rank -> 1 + group index in the current MB
	count := make([]int, g)             // rank -> microbatches in which it is in a group
	for m, mb := range p.Microbatches {
		clear(owner)
		if len(mb.Groups) == 0 && !add("microbatch %d has no groups", m) {
			return errors.Join(errs...)
		}
		for gi, grp := range mb.Groups {
			// Compared without forming FirstRank+Size, which a hostile
			// plan's numbers near 2^63 would wrap.
			if grp.Size < 1 || grp.FirstRank < 0 || grp.FirstRank >= g || grp.Size > g-grp.FirstRank {
				if !add("microbatch %d group %d (first_rank %d, size %d): outside the pool [0, %d)", m, gi, grp.FirstRank, grp.Size, g) {
					return errors.Join(errs...)
				}
				continue
			}
			where := fmt.Sprintf("microbatch %d group %d (ranks %d..%d)", m, gi, grp.FirstRank, grp.LastRank())
			if gi > 0 && grp.FirstRank <= mb.Groups[gi-1].FirstRank {
				add("%s: groups not ordered by first rank", where)
			}
			if pr.Aligned && (!IsPow2(grp.Size) || grp.FirstRank%grp.Size != 0) {
				add("%s: size %d at rank %d is not a power-of-two aligned block", where, grp.Size, grp.FirstRank)
			}
			if len(grp.Seqs) == 0 {
				add("%s: no sequences", where)
			}
			for r := grp.FirstRank; r <= grp.LastRank(); r++ {
				if owner[r] != 0 {
					add("%s: rank %d is already in group %d of this microbatch", where, r, owner[r]-1)
					break
				}
				owner[r] = gi + 1
				count[r]++
			}
			var tokens float64
			var total int64
			for _, id := range grp.Seqs {
				if id < 0 || id >= len(lengths) {
					add("%s: sequence id %d outside the batch [0, %d)", where, id, len(lengths))
					continue
				}
				total += int64(lengths[id])
				if placed[id] != 0 {
					add("%s: sequence %d already placed in microbatch %d", where, id, placed[id]-1)
					continue
				}
				placed[id] = m + 1
				tokens += float64(lengths[id]) / float64(grp.Size)
			}
			if !(grp.Offload >= 0 && grp.Offload <= 1) {
				add("%s: offload ratio %v outside [0, 1]", where, grp.Offload)
			} else if grp.Offload > 0 && (in.OffloadShare == 0 || grp.Layout != nil) {
				add("%s: offload ratio %v, but the job cannot offload (offload_share = 0: no host-copy rates in the profile, or a CP × HP layout)", where, grp.Offload)
			}
			if grp.Layout != nil {
				validateLayout(grp, total, in, pr, where, add)
				continue
			}
			resident := ResidentTokens(tokens, grp.Offload, in.OffloadShare)
			budget := in.BudgetTokens
			if in.Cluster != nil { // every rank of the group within its own kind's budget
				budget = in.RankBudget(grp.FirstRank)
				for r := grp.FirstRank + 1; r <= grp.LastRank(); r++ {
					budget = min(budget, in.RankBudget(r))
				}
			}
			if pr.WithinBudget && resident > float64(budget)*(1+1e-12) {
				if grp.Offload > 0 {
					add("%s: %.1f tokens per rank, %.1f tokens' worth on the GPU at offload ratio %.3g, exceed the budget B = %d", where, tokens, resident, grp.Offload, budget)
				} else {
					add("%s: %.1f tokens per rank exceed the budget B = %d", where, tokens, budget)
				}
			}
		}
		if pr.CoversPool {
			for r, o := range owner {
				if o == 0 {
					add("microbatch %d: rank %d is in no group", m, r)
					break
				}
			}
		}
		if len(errs) >= maxProblems {
			return errors.Join(errs...)
		}
	}
	if ep := in.EPSize(); p.PartialMicrobatches && ep > 1 && g%ep == 0 {
		for b := 0; b < g; b += ep {
			for r := b + 1; r < b+ep; r++ {
				if count[r] != count[b] {
					add("EP block of ranks %d..%d: rank %d is in groups of %d microbatches, rank %d of %d; "+
						"the ranks of one EP group must run the same number of microbatches", b, b+ep-1, b, count[b], r, count[r])
					break
				}
			}
			if len(errs) >= maxProblems {
				return errors.Join(errs...)
			}
		}
	}
	for id, m := range placed {
		if m == 0 && !add("sequence %d (%d tokens) is not placed", id, lengths[id]) {
			break
		}
	}
	return errors.Join(errs...)
}

// validateLayout checks a group's CP × HP layout (Layout.Check) and, where
// the policy promises WithinBudget, every rank's activation memory
// (Layout.MemoryTokens) against its own kind's budget.
func validateLayout(grp Group, total int64, in Inputs, pr Promises, where string, add func(string, ...any) bool) {
	heads := in.HeadsPerRank()
	if err := grp.Layout.Check(grp, total, heads); err != nil {
		add("%s: %v", where, err)
		return
	}
	if !pr.WithinBudget {
		return
	}
	for i, mem := range grp.Layout.MemoryTokens(heads) {
		r := grp.FirstRank + i
		if b := in.RankBudget(r); mem > float64(b)*(1+1e-12) {
			add("%s: rank %d holds %.1f token-equivalents (%d tokens, %d heads): more than its budget %d",
				where, r, mem, grp.Layout.ShardTokens[i], grp.Layout.Heads[i], b)
			return
		}
	}
}

// checkTrained checks a plan's own Lengths as a batch's lengths are
// checked (Inputs.Check): at most MaxBatchSequences, each in [1,
// MaxSequenceTokens], Σ at most MaxBatchTokens.
func checkTrained(lengths []int) error {
	if len(lengths) == 0 || len(lengths) > MaxBatchSequences {
		return fmt.Errorf("lengths: %d sequences: must be in [1, %d]", len(lengths), MaxBatchSequences)
	}
	var total int64
	for i, s := range lengths {
		if s < 1 || s > MaxSequenceTokens {
			return fmt.Errorf("lengths[%d] = %d tokens: must be in [1, %d]", i, s, MaxSequenceTokens)
		}
		total += int64(s) // <= 10^7·2^25: no overflow
	}
	if total > MaxBatchTokens {
		return fmt.Errorf("lengths: %d tokens in all: must be <= %d", total, int64(MaxBatchTokens))
	}
	return nil
}
