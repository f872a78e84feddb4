// Package firstfit is docs/policies.md's example of a policy in Go: each sequence
// gets the smallest power-of-two CP degree whose share fits the budget and
// joins the first group of its degree with room, else the first free aligned
// block of a microbatch, else a new microbatch.
package firstfit

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
)

// Policy is the first-fit policy; it has no options.
type Policy struct{}

// Name is its registry name.
func (Policy) Name() string { return "firstfit" }

// Promises are what every plan keeps, which sched.Validate then checks.
func (Policy) Promises() sched.Promises { return sched.Promises{Aligned: true, WithinBudget: true} }

// Plan places every sequence once, longest first.
func (Policy) Plan(lengths []int, in sched.Inputs) (*sched.Plan, error) {
	g, b := in.PoolRanks, float64(in.BudgetTokens)
	order := make([]int, len(lengths))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return cmp.Or(cmp.Compare(lengths[y], lengths[x]), cmp.Compare(x, y)) })
	type group struct {
		first, size int
		load        float64
		seqs        []int
	}
	var mbs [][]*group
	for _, id := range order {
		k := 1
		for float64(lengths[id]) > b*float64(k) {
			if k *= 2; k > min(g, in.DegreeLimit()) {
				return nil, fmt.Errorf("%w: sequence %d (%d tokens) fits no group", sched.ErrCannotPlan, id, lengths[id])
			}
		}
		share := float64(lengths[id]) / float64(k)
		var at *group
	search:
		for m := 0; ; m++ {
			if m == len(mbs) {
				mbs = append(mbs, nil)
			}
			used := make([]bool, g)
			for _, gr := range mbs[m] {
				if gr.size == k && gr.load+share <= b {
					at = gr
					break search
				}
				for r := gr.first; r < gr.first+gr.size; r++ {
					used[r] = true
				}
			}
			for first := 0; first+k <= g; first += k {
				if !slices.Contains(used[first:first+k], true) {
					at = &group{first: first, size: k}
					mbs[m] = append(mbs[m], at)
					break search
				}
			}
		}
		at.load += share
		at.seqs = append(at.seqs, id)
	}
	plan := &sched.Plan{Policy: "firstfit", PoolRanks: g}
	for _, mb := range mbs {
		slices.SortFunc(mb, func(x, y *group) int { return cmp.Compare(x.first, y.first) })
		var groups []sched.Group
		for _, gr := range mb {
			groups = append(groups, sched.Group{FirstRank: gr.first, Size: gr.size, Seqs: gr.seqs})
		}
		plan.Microbatches = append(plan.Microbatches, sched.Microbatch{Groups: groups})
	}
	return plan, nil
}
