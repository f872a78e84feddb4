package bytescale

// The engine check imports sim/step in a test only, as sched/hydra's
// align_test imports sim/pipeline: sched's non-test code never imports sim.

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sim/step"
)

// TestPlansRunOnTheEngine: plans of random batches, with EP blocks, pipeline
// stages and virtual chunks, validate and run through sim/step in load mode
// without a deadlock or an illegal microbatch count: ranks that share a
// microbatch hold it at the same position of their lists (package doc,
// "Microbatch counts and the pipeline").
func TestPlansRunOnTheEngine(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pol, _ := New(DefaultOptions(), sched.Env{})
	n := 20_000
	if testing.Short() {
		n = 2_000
	}
	ran := 0
	for i := range n {
		ep := 1 << rng.IntN(4)
		g := ep * (1 + rng.IntN(16))
		b := 64 << rng.IntN(5)
		in := sched.Inputs{PoolRanks: g, BudgetTokens: b, PP: 1 + rng.IntN(4), VPP: 1 + rng.IntN(2), EP: ep,
			OverheadRatio: float64(rng.IntN(3)) * float64(b*b)}
		lengths := make([]int, 1+rng.IntN(200))
		for j := range lengths {
			lengths[j] = 1 + int(float64(g*b)*rng.Float64()/float64(uint(1)<<rng.IntN(10)))
		}
		plan, err := pol.Plan(lengths, in)
		if errors.Is(err, sched.ErrCannotPlan) {
			continue
		}
		if err != nil {
			t.Fatalf("case %d %+v: %v", i, in, err)
		}
		if err := sched.Validate(plan, lengths, in, pol.Promises()); err != nil {
			t.Fatalf("case %d %+v: %v", i, in, err)
		}
		l, err := step.NewLayout(plan, ep)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := step.Run(l, in.PP, in.VPP, step.LoadCosts{Lengths: lengths, PP: in.PP, VPP: in.VPP}); err != nil {
			t.Fatalf("case %d %+v, lengths %v: %v", i, in, lengths, err)
		}
		ran++
	}
	if ran < n*9/10 {
		t.Errorf("only %d of %d cases planned", ran, n)
	}
}
