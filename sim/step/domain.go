package step

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/dcpsim/dcpsim/sched"
)

// Domain is one sync domain: the contiguous HDP ranks [FirstRank,
// FirstRank+Size) that microbatch MB keeps in lock-step through its CP groups
// and EP blocks. It is the same on every pipeline stage.
type Domain struct {
	// Index is the domain's position in its Layout's Domains.
	Index int
	// MB is the microbatch's index in Plan.Microbatches.
	MB int
	// FirstRank is the domain's lowest HDP rank and Size its number of ranks.
	FirstRank, Size int
	// Groups are the MB's CP groups on the domain's ranks, ordered by
	// FirstRank (a subslice of the plan's; do not modify). Ranks of the domain
	// in no group are idle in the MB but held in step by their EP block.
	Groups []sched.Group
}

// LastRank is FirstRank+Size-1.
func (d *Domain) LastRank() int { return d.FirstRank + d.Size - 1 }

// Layout is a plan cut into sync domains for an expert-parallel size: what
// Run simulates and what a cost model prices ahead of the run (the same
// domains, by Index).
type Layout struct {
	// Plan is the plan laid out.
	Plan *sched.Plan
	// EP is the expert-parallel size (1: no EP coupling).
	EP int
	// Domains are every microbatch's sync domains, by MB then FirstRank;
	// Domains[i].Index == i.
	Domains []Domain
}

// NewLayout cuts plan into its sync domains for ep (Domains).
func NewLayout(plan *sched.Plan, ep int) (*Layout, error) {
	l := new(Layout)
	if err := l.Reset(plan, ep); err != nil {
		return nil, err
	}
	return l, nil
}

// Reset lays plan out for ep into l, reusing the storage of l's Domains (so
// a Result or anything else still holding them must not be used after); on
// an error l is left empty.
func (l *Layout) Reset(plan *sched.Plan, ep int) error {
	doms, err := appendDomains(l.Domains[:0], plan, ep)
	if err != nil {
		*l = Layout{Domains: l.Domains[:0]}
		return err
	}
	*l = Layout{Plan: plan, EP: ep, Domains: doms}
	return nil
}

// Domains returns the sync domains of every microbatch of plan, by MB then
// FirstRank, and checks the plan's groups: inside [0, PoolRanks), at least
// one rank, disjoint within an MB. A rank takes part in an MB if a group
// includes it or any rank of its EP block (the aligned block of ep
// consecutive ranks), or, unless plan.PartialMicrobatches, always (an EP
// block no group touches is then a domain without groups, which runs the MB
// empty); the domains are the connected components of the participating
// ranks under "same CP group" and "same EP block", i.e. a union-find over
// both — which, groups and blocks being intervals, are the merged overlapping
// intervals.
func Domains(plan *sched.Plan, ep int) ([]Domain, error) {
	return appendDomains(nil, plan, ep)
}

// appendDomains is Domains into out's storage (out empty).
func appendDomains(out []Domain, plan *sched.Plan, ep int) ([]Domain, error) {
	if plan == nil {
		return nil, fmt.Errorf("step: nil plan")
	}
	g := plan.PoolRanks
	switch {
	case g < 1:
		return nil, fmt.Errorf("step: plan spans %d ranks: need >= 1", g)
	case ep < 1:
		return nil, fmt.Errorf("step: ep = %d: need ep >= 1", ep)
	case g%ep != 0:
		return nil, fmt.Errorf("step: ep = %d does not divide the pool's %d ranks "+
			"(EP groups are aligned blocks of ep consecutive HDP ranks)", ep, g)
	}
	for k := range plan.Microbatches {
		groups := plan.Microbatches[k].Groups
		// next is the first rank of the MB not yet in a domain. Unless the plan's
		// MBs are partial, every EP block no group touches becomes an empty
		// domain before the next real one (and up to the pool's end): its ranks
		// run the MB empty, in pipeline step with the others.
		next := 0
		emit := func(d Domain) {
			for ; !plan.PartialMicrobatches && next < d.FirstRank; next += ep {
				out = append(out, Domain{MB: k, FirstRank: next, Size: ep})
			}
			if d.Size > 0 {
				out = append(out, d)
			}
			next = d.FirstRank + d.Size
		}
		if !slices.IsSortedFunc(groups, func(a, b sched.Group) int { return cmp.Compare(a.FirstRank, b.FirstRank) }) {
			return nil, fmt.Errorf("step: microbatch %d: groups not ordered by first_rank", k)
		}
		lo, hi := -1, -1 // the domain being built: ranks [lo, hi)
		first := 0       // its first group
		for i, gr := range groups {
			if gr.Size < 1 || gr.FirstRank < 0 || gr.LastRank() >= g {
				return nil, fmt.Errorf("step: microbatch %d group %d: ranks [%d, %d] outside the pool [0, %d)",
					k, i, gr.FirstRank, gr.LastRank(), g)
			}
			if i > 0 && gr.FirstRank <= groups[i-1].LastRank() {
				return nil, fmt.Errorf("step: microbatch %d: groups %d and %d share a rank", k, i-1, i)
			}
			// The group widened to whole EP blocks.
			a := gr.FirstRank / ep * ep
			b := (gr.LastRank()/ep + 1) * ep
			if a < hi { // overlaps the current domain (they share an EP block)
				hi = max(hi, b)
				continue
			}
			if hi >= 0 {
				emit(Domain{MB: k, FirstRank: lo, Size: hi - lo, Groups: groups[first:i]})
			}
			lo, hi, first = a, b, i
		}
		if hi >= 0 {
			emit(Domain{MB: k, FirstRank: lo, Size: hi - lo, Groups: groups[first:]})
		}
		emit(Domain{FirstRank: g}) // idle blocks up to the pool's end
	}
	for i := range out {
		out[i].Index = i
	}
	return out, nil
}
