package step_test

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dcpsim/dcpsim/sched"
	"github.com/dcpsim/dcpsim/sched/policies"
	"github.com/dcpsim/dcpsim/sim"
	"github.com/dcpsim/dcpsim/sim/pipeline"
	"github.com/dcpsim/dcpsim/sim/step"
)

// uniform gives every domain op the same forward and backward chunk time.
type uniform struct{ f, b float64 }

func (u uniform) ChunkSeconds(_, _ int, _ *step.Domain) (float64, float64) { return u.f, u.b }
func (uniform) P2PSeconds(_, _, _ int, _ *step.Domain, _ bool) float64     { return 0 }
func (uniform) GradSyncSeconds(int) float64                                { return 0 }
func (uniform) OptimizerSeconds(int) float64                               { return 0 }

// onePerRank is a plan of m microbatches on g ranks, every rank a CP group of
// its own holding sequence seq(k, r).
func onePerRank(g, m int, seq func(k, r int) int) *sched.Plan {
	p := &sched.Plan{PoolRanks: g}
	for k := range m {
		var mb sched.Microbatch
		for r := range g {
			mb.Groups = append(mb.Groups, sched.Group{FirstRank: r, Size: 1, Seqs: []int{seq(k, r)}})
		}
		p.Microbatches = append(p.Microbatches, mb)
	}
	return p
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }

// TestInterleaved1F1BBubble: equal microbatches and free communication give
// the closed form (m·v + p − 1)·(t_f + t_b)/v exactly, and a PP bubble of
// (p−1)/(m·v+p−1) of the iteration, on every legal (p, v, m).
func TestInterleaved1F1BBubble(t *testing.T) {
	const f, b = 3e-6, 5e-6 // per chunk: t_f = v·f, t_b = v·b
	legal := 0
	for p := 1; p <= 5; p++ {
		for v := 1; v <= 3; v++ {
			for m := 1; m <= 12; m++ {
				if _, err := pipeline.New(p, v, m, 0); err != nil {
					continue
				}
				legal++
				for _, g := range []int{1, 4} {
					res, err := step.Simulate(onePerRank(g, m, func(int, int) int { return 0 }), p, v, 1, uniform{f, b})
					if err != nil {
						t.Fatalf("p %d v %d m %d: %v", p, v, m, err)
					}
					want := sim.Nanos(m*v+p-1) * (sim.FromSeconds(f) + sim.FromSeconds(b))
					if res.Iteration != want {
						t.Errorf("p %d v %d m %d g %d: iteration %d ns, want %d", p, v, m, g, res.Iteration, want)
					}
					if w := float64(p-1) / float64(m*v+p-1); !near(res.PPBubbleShare, w) || res.DPBubbleShare != 0 {
						t.Errorf("p %d v %d m %d: PP bubble %v DP %v, want %v and 0", p, v, m, res.PPBubbleShare, res.DPBubbleShare, w)
					}
				}
			}
		}
	}
	if legal < 60 {
		t.Fatalf("only %d legal (p, v, m)", legal)
	}
}

// TestOneStageIsSumOfMBs: with pp = 1 a rank's ops run back to back. Loads in
// load mode: lengths 1000 and 2000 give s² = 1e6 and 4e6 tokens², so a
// microbatch costs 3·s²·1e-12 s = 3 µs or 12 µs. Rank 0 holds seq 0,1,0 (3+12+3
// = 18 µs), rank 1 seq 1,1,1 (36 µs); ep = 1 keeps them independent.
func TestOneStageIsSumOfMBs(t *testing.T) {
	plan := onePerRank(2, 3, func(k, r int) int {
		if r == 1 || k == 1 {
			return 1
		}
		return 0
	})
	res, err := step.Simulate(plan, 1, 1, 1, step.LoadCosts{Lengths: []int{1000, 2000}, PP: 1, VPP: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iteration != 36000 {
		t.Errorf("iteration %d ns, want 36000", res.Iteration)
	}
	r0 := res.Stages[0].Ranks[0]
	if r0.Busy != 18000 || r0.LastBackwardEnd != 18000 || r0.DPBubble != 18000 || r0.PPBubble != 0 {
		t.Errorf("rank 0: %+v", r0)
	}
	if want := []float64{12e-6, 12e-6, 12e-6}; !reflect.DeepEqual(res.MBSeconds, want) {
		t.Errorf("MB seconds %v, want %v", res.MBSeconds, want)
	}
	if !near(res.DPBubbleShare, 0.25) || res.PPBubbleShare != 0 { // 18 of 2·36 µs
		t.Errorf("bubbles PP %v DP %v, want 0 and 0.25", res.PPBubbleShare, res.DPBubbleShare)
	}
}

// TestEPBarrier: one microbatch on 4 ranks, rank 0 holding a 2000-token
// sequence (load 4e6: F 4 µs, B 8 µs), ranks 1..3 a 1000-token one (1 µs,
// 2 µs). With ep = 2 the EP blocks {0,1} and {2,3} are the domains: rank 1 is
// held by rank 0 for 12 µs, ranks 2,3 finish at 3 µs and wait 9 µs for the
// gradient sync: DP bubble (9+9)/(4·12) = 0.375. With ep = 1 rank 1 is free
// too: (9+9+9)/48 = 0.5625. With ep = 4 all four move together: no DP bubble.
func TestEPBarrier(t *testing.T) {
	plan := onePerRank(4, 1, func(_, r int) int { return min(r, 1) })
	costs := step.LoadCosts{Lengths: []int{2000, 1000}, PP: 1, VPP: 1}
	for _, tc := range []struct {
		ep      int
		domains int
		busy    []sim.Nanos
		dp      float64
	}{
		{1, 4, []sim.Nanos{12000, 3000, 3000, 3000}, 0.5625},
		{2, 2, []sim.Nanos{12000, 12000, 3000, 3000}, 0.375},
		{4, 1, []sim.Nanos{12000, 12000, 12000, 12000}, 0},
	} {
		res, err := step.Simulate(plan, 1, 1, tc.ep, costs)
		if err != nil {
			t.Fatal(err)
		}
		var busy []sim.Nanos
		for _, r := range res.Stages[0].Ranks {
			busy = append(busy, r.Busy)
		}
		if res.Iteration != 12000 || len(res.Domains) != tc.domains || !reflect.DeepEqual(busy, tc.busy) ||
			!near(res.DPBubbleShare, tc.dp) || res.PPBubbleShare != 0 {
			t.Errorf("ep %d: iteration %d, %d domains, busy %v, DP %v PP %v; want 12000, %d, %v, %v, 0",
				tc.ep, res.Iteration, len(res.Domains), busy, res.DPBubbleShare, res.PPBubbleShare, tc.domains, tc.busy, tc.dp)
		}
	}
}

// TestIdleRankJoinsEPBlock: a microbatch whose only group is rank 0 still
// involves rank 1 (same EP block of 2); ranks 2,3 take no part when the plan's
// MBs are partial, and run it empty (an idle domain, zero time) otherwise.
func TestIdleRankJoinsEPBlock(t *testing.T) {
	plan := &sched.Plan{PoolRanks: 4, PartialMicrobatches: true, Microbatches: []sched.Microbatch{
		{Groups: []sched.Group{{FirstRank: 0, Size: 1, Seqs: []int{0}}}},
		{Groups: []sched.Group{{FirstRank: 0, Size: 4, Seqs: []int{0}}}},
	}}
	doms, err := step.Domains(plan, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(doms) != 2 || doms[0].FirstRank != 0 || doms[0].Size != 2 || doms[1].Size != 4 {
		t.Fatalf("domains %+v", doms)
	}
	res, err := step.Simulate(plan, 1, 1, 2, step.LoadCosts{Lengths: []int{2000}, PP: 1, VPP: 1})
	if err != nil {
		t.Fatal(err)
	}
	var counts []int
	for _, r := range res.Stages[0].Ranks {
		counts = append(counts, r.Microbatches)
	}
	// MB 0: 12 µs on ranks 0,1; MB 1: load 4e6/4 = 1e6, 3 µs on all.
	if !reflect.DeepEqual(counts, []int{2, 2, 1, 1}) || res.Iteration != 15000 {
		t.Errorf("counts %v iteration %d, want [2 2 1 1] and 15000", counts, res.Iteration)
	}

	plan.PartialMicrobatches = false
	doms, err = step.Domains(plan, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(doms) != 3 || doms[1].FirstRank != 2 || doms[1].Size != 2 || len(doms[1].Groups) != 0 || doms[2].Size != 4 {
		t.Fatalf("global plan: domains %+v, want [0,2) with the group, [2,4) idle, then the MB-1 domain", doms)
	}
	res, err = step.Simulate(plan, 1, 1, 2, step.LoadCosts{Lengths: []int{2000}, PP: 1, VPP: 1})
	if err != nil {
		t.Fatal(err)
	}
	counts = counts[:0]
	for _, r := range res.Stages[0].Ranks {
		counts = append(counts, r.Microbatches)
	}
	if !reflect.DeepEqual(counts, []int{2, 2, 2, 2}) || res.Iteration != 15000 || res.Stages[0].Ranks[2].Busy != 3000 {
		t.Errorf("global plan: counts %v iteration %d rank 2 %+v, want [2 2 2 2], 15000, busy 3000", counts, res.Iteration, res.Stages[0].Ranks[2])
	}
}

// TestDPBubbleTwoStages: pp = 2, v = 1, two ranks, two microbatches each, ep
// = 1. Load mode with pp = 2: rank 1 holds 2000-token sequences (load 4e6: F =
// 4e6·1e-12/2 = 2 µs, B = 4 µs), rank 0 1000-token ones (F = 0.5 µs, B = 1 µs).
// 1F1B with p = 2, m = 2: stage 0 runs F0 F1 B0 B1, stage 1 F0 B0 F1 B1.
// Rank 1 (slow): stage 0 F0 [0,2] F1 [2,4]; stage 1 F0 [2,4] B0 [4,8] F1
// [8,10] B1 [10,14]; stage 0 B0 [8,12] B1 [14,18]. Rank 0 is the same scaled
// by 1/4: stage 0 ends at 4.5 µs, stage 1 at 3.5 µs. Gradient syncs start at
// 18 (stage 0) and 14 (stage 1); T = 18 µs.
// DP bubbles: stage 0 rank 0 18 − 4.5 = 13.5, stage 1 rank 0 14 − 3.5 = 10.5,
// rank 1 none: DP = 24/(4·18) = 1/3. Busy per stage: rank 0 2·1.5 = 3 µs,
// rank 1 2·6 = 12 µs. PP = T − busy − DP: stage 0 rank 0 18 − 3 − 13.5 = 1.5,
// stage 1 rank 0 18 − 3 − 10.5 = 4.5, rank 1 6 on each stage: 18/72 = 1/4.
func TestDPBubbleTwoStages(t *testing.T) {
	plan := onePerRank(2, 2, func(_, r int) int { return 1 - r })
	res, err := step.Simulate(plan, 2, 1, 1, step.LoadCosts{Lengths: []int{2000, 1000}, PP: 2, VPP: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Iteration != 18000 || res.Stages[0].GradSyncStart != 18000 || res.Stages[1].GradSyncStart != 14000 {
		t.Fatalf("iteration %d, syncs %d %d; want 18000, 18000, 14000",
			res.Iteration, res.Stages[0].GradSyncStart, res.Stages[1].GradSyncStart)
	}
	if r := res.Stages[1].Ranks[0]; r.LastBackwardEnd != 3500 || r.DPBubble != 10500 || r.PPBubble != 4500 || r.Busy != 3000 {
		t.Errorf("stage 1 rank 0: %+v", r)
	}
	if !near(res.DPBubbleShare, 1.0/3) || !near(res.PPBubbleShare, 0.25) {
		t.Errorf("DP %v PP %v, want 1/3 and 1/4", res.DPBubbleShare, res.PPBubbleShare)
	}
	if want := []float64{6e-6, 6e-6}; !reflect.DeepEqual(res.MBSeconds, want) {
		t.Errorf("MB seconds %v, want %v", res.MBSeconds, want)
	}
	// The op detail agrees: stage 1, rank 1's domain of MB 1 (domain 3), B at [10, 14] µs.
	if op := res.Ops[res.OpIndex(1, 3, 0, true)]; op.Start != 10000 || op.End != 14000 {
		t.Errorf("stage 1 B1 of rank 1: %+v", op)
	}
}

// TestDifferentMBCounts: ranks 0,1 run three microbatches, ranks 2,3 two
// (MBs that cover only half the pool), pp = 2: each half follows its own
// schedule.
func TestDifferentMBCounts(t *testing.T) {
	half := func(first int) sched.Microbatch {
		return sched.Microbatch{Groups: []sched.Group{{FirstRank: first, Size: 2, Seqs: []int{0}}}}
	}
	plan := &sched.Plan{PoolRanks: 4, PartialMicrobatches: true, Microbatches: []sched.Microbatch{half(0), half(2), half(0), half(2), half(0)}}
	res, err := step.Simulate(plan, 2, 1, 2, uniform{1e-6, 2e-6})
	if err != nil {
		t.Fatal(err)
	}
	// (m + p − 1)·(f + b): 4·3 = 12 µs for ranks 0,1 and 3·3 = 9 µs for ranks 2,3.
	if res.Iteration != 12000 || res.Stages[0].Ranks[2].LastBackwardEnd != 9000 || res.Stages[0].Ranks[2].Microbatches != 2 {
		t.Errorf("iteration %d, rank 2 %+v", res.Iteration, res.Stages[0].Ranks[2])
	}
	if _, err := step.Simulate(plan, 2, 2, 2, uniform{1e-6, 2e-6}); err == nil || !strings.Contains(err.Error(), "rank 0 runs 3 microbatches") {
		t.Errorf("illegal count for v = 2: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	plan := onePerRank(4, 2, func(int, int) int { return 0 })
	for name, run := range map[string]func() error{
		"ep":    func() error { _, err := step.Simulate(plan, 1, 1, 3, uniform{1, 1}); return err },
		"m":     func() error { _, err := step.Simulate(plan, 4, 2, 1, uniform{1, 1}); return err },
		"cost":  func() error { _, err := step.Simulate(plan, 1, 1, 1, uniform{-1, 1}); return err },
		"seq":   func() error { _, err := step.Simulate(plan, 1, 1, 1, step.LoadCosts{PP: 1, VPP: 1}); return err },
		"empty": func() error { _, err := step.Simulate(&sched.Plan{PoolRanks: 2}, 1, 1, 1, uniform{1, 1}); return err },
		"ranges": func() error {
			_, err := step.Domains(&sched.Plan{PoolRanks: 2, Microbatches: []sched.Microbatch{{Groups: []sched.Group{{FirstRank: 1, Size: 2}}}}}, 1)
			return err
		},
	} {
		if err := run(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// scaled multiplies domain hot's op durations by 3.
type scaled struct {
	step.Costs
	hot int // MB
}

func (c scaled) ChunkSeconds(s, ch int, d *step.Domain) (float64, float64) {
	f, b := c.Costs.ChunkSeconds(s, ch, d)
	if d.MB == c.hot {
		return 3 * f, 3 * b
	}
	return f, b
}

// TestPropertiesOnPolicyPlans runs the real policies on pseudo-random batches:
// no deadlock, iteration ≥ every rank's busy time and own work, busy + PP +
// DP = 1 in load mode, more work never shortens the iteration, deterministic.
func TestPropertiesOnPolicyPlans(t *testing.T) {
	x := uint64(7)
	rnd := func(n int) int {
		x = x*6364136223846793005 + 1442695040888963407
		return int(x>>33) % n
	}
	runs := 0
	for trial := range 40 {
		for _, name := range policies.Names() {
			pol, err := policies.New(name)
			if errors.Is(err, sched.ErrEnvMissing) {
				continue // FlexSP needs a MILP solver: its plans are checked in sched/flexsp and experiment
			}
			if err != nil {
				t.Fatal(err)
			}
			g := []int{4, 8, 16}[trial%3]
			pp := []int{1, 2, 4}[rnd(3)]
			vpp := []int{1, 2}[rnd(2)]
			ep := []int{1, 2, 4}[rnd(3)]
			const budget = 4096
			lengths := make([]int, 8+rnd(40))
			for i := range lengths {
				lengths[i] = 64 + rnd(budget*g/2)
			}
			in := sched.Inputs{PoolRanks: g, BudgetTokens: budget, PP: pp, VPP: vpp, OverheadRatio: 1 << 20}
			plan, err := pol.Plan(lengths, in)
			if err != nil {
				continue // e.g. static cannot pad m to a multiple of dp·N for this batch
			}
			costs := step.LoadCosts{Lengths: plan.Trained(lengths), PP: pp, VPP: vpp}
			res, err := step.Simulate(plan, pp, vpp, ep, costs)
			if err != nil {
				if strings.Contains(err.Error(), "pipeline: interleaved schedule") {
					continue // the policy left an m Megatron rejects for this (p, v)
				}
				t.Fatalf("%s trial %d (G %d pp %d vpp %d ep %d, %d MBs): %v", name, trial, g, pp, vpp, ep, len(plan.Microbatches), err)
			}
			runs++
			// Own work of a rank: Σ over its MBs of 3·load·1e-12/pp (its stage's share).
			own := make([]float64, g)
			for _, mb := range plan.Microbatches {
				for _, gr := range mb.Groups {
					for r := gr.FirstRank; r <= gr.LastRank(); r++ {
						own[r] += 3 * costs.Load(gr) * 1e-12 / float64(pp)
					}
				}
			}
			var busyShare float64
			for s := range pp {
				for r, rr := range res.Stages[s].Ranks {
					if rr.Busy > res.Iteration || own[r] > res.IterationSeconds()+float64(4*vpp*len(plan.Microbatches))*1e-9 {
						t.Errorf("%s trial %d: stage %d rank %d busy %d own %g > iteration %d", name, trial, s, r, rr.Busy, own[r], res.Iteration)
					}
					busyShare += float64(rr.Busy) / float64(res.Iteration) / float64(pp*g)
				}
			}
			if !near(busyShare+res.PPBubbleShare+res.DPBubbleShare, 1) {
				t.Errorf("%s trial %d: busy %v + PP %v + DP %v != 1", name, trial, busyShare, res.PPBubbleShare, res.DPBubbleShare)
			}
			again, err := step.Simulate(plan, pp, vpp, ep, costs)
			if err != nil || !reflect.DeepEqual(res, again) {
				t.Errorf("%s trial %d: second run differs (%v)", name, trial, err)
			}
			heavier, err := step.Simulate(plan, pp, vpp, ep, scaled{costs, rnd(len(plan.Microbatches))})
			if err != nil || heavier.Iteration < res.Iteration {
				t.Errorf("%s trial %d: more work gave %v < %v (%v)", name, trial, heavier.Iteration, res.Iteration, err)
			}
		}
	}
	if runs < 80 {
		t.Errorf("only %d simulated plans", runs)
	}
}

func TestCostErrorsAreErrors(t *testing.T) {
	_, err := step.Simulate(onePerRank(1, 1, func(int, int) int { return 0 }), 1, 1, 1, uniform{math.NaN(), 0})
	if err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Fatalf("NaN cost: %v", err)
	}
}

// stalled is uniform with a planner stall and a fixed exposed-communication
// share of every op.
type stalled struct {
	uniform
	stall, comm float64
}

func (s stalled) PlannerStallSeconds() float64 { return s.stall }
func (s stalled) ChunkExposedCommSeconds(_, _ int, _ *step.Domain) (float64, float64) {
	return s.comm * s.f, s.comm * s.b
}

// TestPlannerStallAndCommSplit: the planner's stall delays the whole
// iteration by exactly its length and is its own share; the exposed
// communication splits busy time; the six shares sum to 1.
func TestPlannerStallAndCommSplit(t *testing.T) {
	plan := onePerRank(4, 4, func(int, int) int { return 0 })
	base, err := step.Simulate(plan, 2, 1, 1, uniform{1e-6, 2e-6})
	if err != nil {
		t.Fatal(err)
	}
	res, err := step.Simulate(plan, 2, 1, 1, stalled{uniform{1e-6, 2e-6}, 5e-6, 0.25})
	if err != nil {
		t.Fatal(err)
	}
	// 1F1B, p = 2, m = 4: (m + p − 1)·(f + b) = 15 µs, then +5 µs of stall.
	if base.Iteration != 15000 || res.Iteration != 20000 || res.PlannerStall != 5000 {
		t.Fatalf("iteration %d → %d, stall %d; want 15000 → 20000, 5000", base.Iteration, res.Iteration, res.PlannerStall)
	}
	for i := range base.Ops {
		if res.Ops[i].Start != base.Ops[i].Start+5000 || res.Ops[i].End != base.Ops[i].End+5000 {
			t.Fatalf("op %d: %+v, want %+v shifted by 5 µs", i, res.Ops[i], base.Ops[i])
		}
	}
	if !near(res.StallShare, 0.25) || !near(res.PPBubbleShare, base.PPBubbleShare*15/20) || res.DPBubbleShare != 0 {
		t.Errorf("stall %v PP %v DP %v; want 0.25, %v, 0", res.StallShare, res.PPBubbleShare, base.PPBubbleShare*15/20, res.DPBubbleShare)
	}
	// Busy 12 µs per rank: 3 µs of it exposed communication.
	if r := res.Stages[0].Ranks[0]; r.Busy != 12000 || r.ExposedComm != 3000 {
		t.Errorf("rank 0: %+v, want busy 12000 with 3000 exposed", r)
	}
	if !near(res.ExposedCommShare, 3.0/20) || !near(res.ComputeShare, 9.0/20) {
		t.Errorf("comm %v compute %v, want 0.15 and 0.45", res.ExposedCommShare, res.ComputeShare)
	}
	if sum := res.ComputeShare + res.ExposedCommShare + res.PPBubbleShare + res.DPBubbleShare + res.StallShare + res.SyncShare; !near(sum, 1) {
		t.Errorf("shares sum to %v", sum)
	}
	if _, err := step.Simulate(plan, 2, 1, 1, stalled{uniform{1e-6, 2e-6}, 0, 1.5}); err == nil || !strings.Contains(err.Error(), "exposed communication") {
		t.Errorf("comm above the op: %v", err)
	}
	if _, err := step.Simulate(plan, 2, 1, 1, stalled{uniform{1e-6, 2e-6}, math.NaN(), 0}); err == nil || !strings.Contains(err.Error(), "planner stall") {
		t.Errorf("NaN stall: %v", err)
	}
}

// TestSizeLimits: an iteration past MaxOps, MaxRankStages or MaxMemberships is
// refused before anything is allocated, naming the numbers (vpp 10^9 on two
// ranks used to die of out-of-memory at 23 GB).
func TestSizeLimits(t *testing.T) {
	whole := func(g, m int) *sched.Plan { // m microbatches, each one group over the pool
		p := &sched.Plan{PoolRanks: g}
		for range m {
			p.Microbatches = append(p.Microbatches, sched.Microbatch{Groups: []sched.Group{{FirstRank: 0, Size: g, Seqs: []int{0}}}})
		}
		return p
	}
	// Rank r of k takes part in k−r microbatches: k distinct counts, whose
	// schedules hold k(k+1) ops at pp = vpp = 1, while the domain ops are 2k.
	staircase := func(k int) *sched.Plan {
		p := &sched.Plan{PoolRanks: k, PartialMicrobatches: true}
		for j := range k {
			p.Microbatches = append(p.Microbatches, sched.Microbatch{Groups: []sched.Group{{FirstRank: 0, Size: k - j, Seqs: []int{j}}}})
		}
		return p
	}
	for _, c := range []struct {
		name    string
		plan    *sched.Plan
		pp, vpp int
		want    string
	}{
		{"vpp 10^9", onePerRank(2, 2, func(int, int) int { return 0 }), 2, 1_000_000_000,
			"pp·domains·vpp·2 = 2·4·1000000000·2 = 16000000000 ops in the iteration: more than the engine's limit of 16777216"},
		{"pp 10^9", whole(2, 1), 1_000_000_000, 1, "pp·ranks = 1000000000·2 = 2000000000 (stage, rank) pairs: more than the engine's limit of 4194304"},
		{"saturated", whole(2, 1), 1 << 62, 1 << 62, "= more than 9223372036854775806 (stage, rank) pairs"},
		{"rank-stages", whole(1<<20, 1), 8, 1, "pp·ranks = 8·1048576 = 8388608 (stage, rank) pairs"},
		{"memberships", whole(1<<20, 65), 1, 1, "65 domains hold 68157440 rank-microbatch memberships: more than the engine's limit of 67108864"},
		{"schedules", staircase(5000), 1, 1, "the pipeline schedules of the ranks' "},
	} {
		_, err := step.Simulate(c.plan, c.pp, c.vpp, 1, uniform{1, 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// The staircase below the schedule limit runs.
	if _, err := step.Simulate(staircase(100), 1, 1, 1, uniform{1, 1}); err != nil {
		t.Errorf("staircase(100): %v", err)
	}
}
