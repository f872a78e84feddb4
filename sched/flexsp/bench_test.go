package flexsp

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/dcpsim/dcpsim/milp"
	"github.com/dcpsim/dcpsim/sched"
)

// clockedSolver sums the wall time of the solves it passes on.
type clockedSolver struct {
	s       milp.Solver
	mu      sync.Mutex
	seconds float64
	solves  int
}

func (c *clockedSolver) Solve(ctx context.Context, m *milp.Model, l milp.Limits) (*milp.Solution, error) {
	start := time.Now()
	sol, err := c.s.Solve(ctx, m, l)
	c.mu.Lock()
	c.seconds += time.Since(start).Seconds()
	c.solves++
	c.mu.Unlock()
	return sol, err
}

// hy3Costs are hy3-8k's token costs (costmodel.Model.TokenCosts of Hy3 on
// H800 at B = 8192, stage 1, rounded).
var hy3Costs = sched.TokenCosts{Source: "hy3 on H800 (costmodel, rounded)", AttentionSecondsPerToken2: 1.04e-9, LinearSecondsPerToken: 3.86e-5, FixedSeconds: 0.0074,
	AllToAll: []sched.DegreeSeconds{{Degree: 2, SecondsPerToken: 2.5e-6}, {Degree: 4, SecondsPerToken: 3.7e-6}, {Degree: 8, SecondsPerToken: 4.3e-6},
		{Degree: 16, SecondsPerToken: 1e-5}, {Degree: 32, SecondsPerToken: 1.76e-5}, {Degree: 64, SecondsPerToken: 2.7e-5}}}

// BenchmarkPlanHy3 plans one hy3-8k batch: 1,024 ranks per stage (8,192
// GPUs at tp1 pp8), B = 8192, 256K context, a long-256k batch of
// 134,217,728 tokens (16,384 per GPU) sampled as the scenario does, with the
// default options (two solves at a time). Metrics: seconds per plan (one
// iteration's planning), solver wall seconds per microbatch MILP and per
// iteration (summed over the solves, which overlap two at a time), MILPs
// per plan (every candidate count's microbatches) and the chosen
// microbatch count.
func BenchmarkPlanHy3(b *testing.B) {
	lengths := longBatch(b, 8192*16384, 262144, 1)
	in := sched.Inputs{PoolRanks: 1024, BudgetTokens: 8192, PP: 8, VPP: 1, EP: 8, ContextTokens: 262144}
	clock := &clockedSolver{s: testSolver(b)}
	p := buildTestPolicy(b, nil, sched.Env{Solver: clock, TokenCosts: &hy3Costs})
	var plan *sched.Plan
	var err error
	for b.Loop() {
		if plan, err = p.Plan(lengths, in); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(b.Elapsed().Seconds()/n, "s/plan")
	b.ReportMetric(clock.seconds/float64(max(clock.solves, 1)), "solve-s/microbatch")
	b.ReportMetric(clock.seconds/n, "solve-s/iteration")
	b.ReportMetric(float64(clock.solves)/n, "MILPs/plan")
	b.ReportMetric(float64(len(plan.Microbatches)), "MBs")
	b.ReportMetric(float64(len(lengths)), "seqs")
}
