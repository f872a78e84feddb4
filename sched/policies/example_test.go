package policies_test

import (
	"fmt"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// Plan one batch with a registered policy: eight sequences on a pool of 16
// ranks of 8K tokens each, and what the plan is made of.
func ExampleNew() {
	p, err := policies.New("hydra")
	if err != nil {
		panic(err)
	}
	lengths := []int{65536, 32768, 16384, 8192, 4096, 2048, 1024, 512}
	in := sched.Inputs{PoolRanks: 16, BudgetTokens: 8192, PP: 1, VPP: 1, OverheadRatio: 1 << 24}
	plan, err := p.Plan(lengths, in)
	if err != nil {
		panic(err)
	}
	for i, mb := range plan.Microbatches {
		for _, g := range mb.Groups {
			fmt.Printf("microbatch %d: ranks %d-%d hold sequences %v\n", i, g.FirstRank, g.LastRank(), g.Seqs)
		}
	}
	// Output:
	// microbatch 0: ranks 0-7 hold sequences [0]
	// microbatch 0: ranks 8-11 hold sequences [1]
	// microbatch 0: ranks 12-13 hold sequences [2]
	// microbatch 0: ranks 14-14 hold sequences [3]
	// microbatch 0: ranks 15-15 hold sequences [4 5 6 7]
}
