package hydra

import (
	"math/rand/v2"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestPlanBoundsBelowPlans: on random batches the bounds PlanBounds gives
// before planning never exceed the plan's microbatches or, at ep = 1, its
// groups (each group one sync domain), for both policies and forced caps.
func TestPlanBoundsBelowPlans(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 60 {
		g := 1 << (3 + rng.IntN(5)) // 8..128 ranks
		b := 1024 << rng.IntN(3)
		in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1, VPP: 1, OverheadRatio: 1 << 20}
		var lengths []int
		for range 1 + rng.IntN(300) {
			lengths = append(lengths, 1+rng.IntN(b*min(g, 16)))
		}
		for _, newPol := range []func(Options) (*Policy, error){New, NewScan} {
			o := Options{}
			if rng.IntN(3) == 0 {
				o.Cap = 1 << rng.IntN(8)
			}
			p, err := newPol(o)
			if err != nil {
				t.Fatal(err)
			}
			mbs, domains, why := p.PlanBounds(lengths, in)
			plan, err := p.Plan(lengths, in)
			if err != nil {
				continue // a forced cap below C_mem: refused, nothing to bound
			}
			groups := 0
			for _, mb := range plan.Microbatches {
				groups += len(mb.Groups)
			}
			if mbs > int64(len(plan.Microbatches)) || domains > int64(groups) {
				t.Errorf("trial %d %s cap %d: bounds %d MBs, %d domains (%s); the plan has %d MBs, %d groups",
					trial, p.Name(), o.Cap, mbs, domains, why, len(plan.Microbatches), groups)
			}
			if mbs > 0 && why == "" {
				t.Errorf("trial %d: a bound without its reason", trial)
			}
		}
	}
}
