package step

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
)

// hashed prices each domain op by a hash of its stage, chunk, microbatch and
// first rank (1-64 µs forward, backward 1-2× that), with a P2P time per
// domain, per-stage gradient sync and optimizer times, a planner stall and an
// exposed-communication share: every answer the engine asks for differs, so
// an op run at the wrong time or on the wrong ranks shows in the Result.
type hashed struct{ stall float64 }

func mix(xs ...int) uint64 {
	h := uint64(1469598103934665603)
	for _, x := range xs {
		h ^= uint64(x)
		h *= 1099511628211
		h ^= h >> 29
	}
	return h
}

func (hashed) ChunkSeconds(s, c int, d *Domain) (float64, float64) {
	h := mix(s, c, d.MB, d.FirstRank, d.Size)
	f := float64(1+h%64) * 1e-6
	return f, f * (1 + float64(h>>8%100)/100)
}
func (h hashed) ChunkExposedCommSeconds(s, c int, d *Domain) (float64, float64) {
	f, b := h.ChunkSeconds(s, c, d)
	return f / 4, b / 3
}
func (hashed) P2PSeconds(from, to, c int, d *Domain, b bool) float64 {
	return float64(mix(from, to, c, d.MB, d.FirstRank)%8) * 1e-7
}
func (hashed) GradSyncSeconds(s int) float64  { return float64(s+1) * 3e-6 }
func (hashed) OptimizerSeconds(s int) float64 { return float64(s+2) * 1e-6 }
func (h hashed) PlannerStallSeconds() float64 { return h.stall }

// testPlans calls check, trials times, on every policy's plan of a random
// batch and on a random plan of partial microbatches (each a few disjoint
// groups anywhere in the pool, so ranks run different counts), each with a
// random pp, vpp and ep, and for the policies' a random planner stall (0 for
// the random plans); seed fixes the sequence.
func testPlans(t *testing.T, seed uint64, trials int, check func(name string, plan *sched.Plan, pp, vpp, ep int, stall float64)) {
	t.Helper()
	x := seed
	rnd := func(n int) int {
		x = x*6364136223846793005 + 1442695040888963407
		return int(x>>33) % n
	}
	for trial := range trials {
		for _, name := range policies.Names() {
			pol, err := policies.New(name)
			if errors.Is(err, sched.ErrEnvMissing) {
				continue // FlexSP needs a MILP solver: its plans are checked in sched/flexsp and experiment
			}
			if err != nil {
				t.Fatal(err)
			}
			g := []int{4, 8, 16, 64}[trial%4]
			pp, vpp, ep := []int{1, 2, 4}[rnd(3)], []int{1, 2}[rnd(2)], []int{1, 2, 4}[rnd(3)]
			const budget = 4096
			lengths := make([]int, 8+rnd(60))
			for i := range lengths {
				lengths[i] = 64 + rnd(budget*g/2)
			}
			plan, err := pol.Plan(lengths, sched.Inputs{PoolRanks: g, BudgetTokens: budget, PP: pp, VPP: vpp, OverheadRatio: 1 << 20})
			if err != nil {
				continue
			}
			check(name, plan, pp, vpp, ep, float64(rnd(3))*1e-5)
		}
		g := 4 * (1 + rnd(6))
		plan := &sched.Plan{PoolRanks: g, PartialMicrobatches: rnd(4) > 0}
		for range 1 + rnd(12) {
			var mb sched.Microbatch
			for r := rnd(3); r < g; r += 1 + rnd(4) {
				size := 1 + rnd(min(4, g-r))
				mb.Groups = append(mb.Groups, sched.Group{FirstRank: r, Size: size, Seqs: []int{rnd(5)}})
				r += size - 1
			}
			plan.Microbatches = append(plan.Microbatches, mb)
		}
		check("random", plan, 1+rnd(3), 1+rnd(2), []int{1, 2, 4}[rnd(3)], 0)
	}
}

// TestRunMatchesPerRankOracle: Run (ranks advanced by class) gives exactly the
// Result or the error of the per-rank engine it replaced, on the policies'
// plans and on random partial plans (different microbatch counts, deadlocks,
// illegal counts, idle ranks), with one Runner reused across all of them.
func TestRunMatchesPerRankOracle(t *testing.T) {
	var r Runner
	runs, fails := 0, 0
	check := func(name string, plan *sched.Plan, pp, vpp, ep int, costs Costs) {
		t.Helper()
		l, err := NewLayout(plan, ep)
		if err != nil {
			return
		}
		want, werr := oracleRun(l, pp, vpp, costs)
		got, gerr := r.Run(l, pp, vpp, costs)
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("%s (pp %d vpp %d ep %d): error %v, per-rank engine %v", name, pp, vpp, ep, gerr, werr)
		}
		if werr != nil {
			fails++
			return
		}
		runs++
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s (pp %d vpp %d ep %d, %d MBs): Result differs from the per-rank engine's", name, pp, vpp, ep, len(plan.Microbatches))
		}
	}
	testPlans(t, 11, 30, func(name string, plan *sched.Plan, pp, vpp, ep int, stall float64) {
		check(name, plan, pp, vpp, ep, hashed{stall: stall})
	})
	t.Logf("%d runs and %d errors compared", runs, fails)
	if runs < 100 || fails < 5 {
		t.Errorf("%d runs compared, %d errors compared: want at least 100 and 5", runs, fails)
	}
	// The Runner keeps no caller's data.
	if r.l != nil || r.costs != nil || r.res != nil || r.ref != nil {
		t.Error("the Runner holds the last Run's layout, costs or result")
	}
}
