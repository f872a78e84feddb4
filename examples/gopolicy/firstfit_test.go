package firstfit

import (
	"math/rand/v2"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestValidPlans: on random batches every plan passes sched.Validate with
// the promises the policy declares, what the shared property test of
// sched/policies would check were it registered.
func TestValidPlans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		g := 1 << rng.IntN(7)
		in := sched.Inputs{PoolRanks: g, BudgetTokens: 1 << (8 + rng.IntN(6)), PP: 1, VPP: 1}
		lengths := make([]int, 1+rng.IntN(200))
		for i := range lengths {
			lengths[i] = 1 + rng.IntN(g*in.BudgetTokens)
		}
		plan, err := Policy{}.Plan(lengths, in)
		if err != nil {
			t.Fatal(err)
		}
		if err := sched.Validate(plan, lengths, in, Policy{}.Promises()); err != nil {
			t.Fatalf("G %d B %d: %v", g, in.BudgetTokens, err)
		}
	}
}
