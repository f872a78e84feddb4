package hydra

import (
	"math/rand/v2"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
)

// TestRandomPlanBuildWork: on random cases (VPP alignment included) both
// policies' plan-building counts are those of their realized microbatches,
// and equal: the counts depend on the plan alone, not on how it was searched.
func TestRandomPlanBuildWork(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	for range 300 {
		c := randomCase(rng)
		h, s, ok := planBoth(t, c)
		if !ok {
			continue
		}
		var want sched.StallWork
		PlanBuildWork(&want, len(c.lengths), c.in.PoolRanks, h.Microbatches)
		for _, p := range []*sched.Plan{h, s} {
			got := p.StallWork
			got.HeapOps, got.SequenceVisits, got.PoolVisits = 0, 0, 0
			if got != want {
				t.Fatalf("%v, %s: plan-building work %+v, want %+v", c, p.Policy, got, want)
			}
		}
		if want.BatchSlots != int64(c.in.PoolRanks)*int64(len(h.Microbatches)) || want.GroupSequences != int64(len(c.lengths)) {
			t.Fatalf("%v: slots %d for %d MBs, group sequences %d for %d sequences", c, want.BatchSlots, len(h.Microbatches), want.GroupSequences, len(c.lengths))
		}
	}
}
